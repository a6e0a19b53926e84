#include "driver/gpu_execute.h"

#include <cstring>

#include "driver/engine_build.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "runtime/engine_loader.h"
#include "runtime/session.h"

namespace graphc::driver {

Expected<std::string> device_arch() {
  ASSIGN_OR_RETURN(int sm, runtime::device_compute_capability(0));
  return fmt::format("sm_{}", sm);
}

Expected<std::map<std::string, ir::Tensor>> execute_on_gpu(
    const ir::Graph& graph, const std::map<std::string, ir::Tensor>& feeds,
    const emit::LowerOptions& options) {
  ASSIGN_OR_RETURN(int sm, runtime::device_compute_capability(0));
  // Exactly the engine path (one module per distinct kernel, through the
  // NVRTC cache), without the file: what runs here is what an engine runs.
  BuildOptions build;
  build.archs = {fmt::format("sm_{}", sm)};
  build.lower = options;
  build.compile.cache_dir = emit::default_cache_dir();
  ASSIGN_OR_RETURN(engine::EngineContents contents, build_engine(graph, build));
  ASSIGN_OR_RETURN(runtime::Executable exe, runtime::executable_from_engine(contents, sm));
  ASSIGN_OR_RETURN(auto session, runtime::Session::create(exe));
  std::vector<std::string> in_bytes;
  for (ir::ValueId v : graph.inputs) {
    const auto& name = graph.value(v).name;
    auto it = feeds.find(name);
    if (it == feeds.end()) return invalid_argument("no data for input '{}'", name);
    in_bytes.emplace_back(reinterpret_cast<const char*>(it->second.data()), it->second.byte_size());
  }
  std::vector<std::string> out_bytes;
  RETURN_IF_ERROR(session->run(in_bytes, out_bytes));
  std::map<std::string, ir::Tensor> outputs;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.outputs[i]);
    ir::Tensor t(v.dtype, v.shape);
    if (t.byte_size() != out_bytes[i].size())
      return internal_error("output '{}': {} bytes from the GPU, {} expected", v.name,
                            out_bytes[i].size(), t.byte_size());
    if (t.byte_size()) std::memcpy(t.mutable_data(), out_bytes[i].data(), t.byte_size());
    outputs[v.name] = std::move(t);
  }
  return outputs;
}

}  // namespace graphc::driver
