// Lists the op types a model file contains, for the per-operator table; works
// for models graphc refuses too.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "onnx/onnx.pb.h"

namespace graphc::conformance {

std::vector<std::string> model_op_types(const std::filesystem::path& model_path) {
  std::ifstream in(model_path, std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) return {};
  std::set<std::string> ops;
  for (const auto& n : model.graph().node()) {
    std::string dom = n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".";
    ops.insert(dom + n.op_type());
  }
  return {ops.begin(), ops.end()};
}

}  // namespace graphc::conformance
