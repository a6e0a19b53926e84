// Helpers shared by the [contraction] tests: run one node through shape
// inference and the reference executor, and plain index arithmetic for the
// naive loops the tests compare against.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reference/executor.h"
#include "tests/test_util.h"

namespace graphc::testing::contraction {

// Builds a graph with one `op` node whose inputs are graph inputs (nullopt:
// omitted optional input), runs it and returns the output.
inline ir::Tensor run_op(ir::OpKind op, const std::vector<std::optional<ir::Tensor>>& ins,
                         ir::AttributeMap a = {}) {
  GraphBuilder b;
  std::vector<ir::ValueId> ids;
  std::map<std::string, ir::Tensor> feeds;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i]) {
      ids.push_back(ir::kNoValue);
      continue;
    }
    std::string name = fmt::format("in{}", i);
    ids.push_back(b.input(name, ins[i]->dtype(), ins[i]->shape()));
    feeds[name] = *ins[i];
  }
  ir::ValueId y = b.node(op, ids, std::move(a));
  b.output(y);
  ir::Graph g = b.build();
  auto result = reference::execute(g, feeds);
  if (!result.ok()) throw std::runtime_error("execute failed: " + result.status().message());
  return result->at(g.value(y).name);
}

// Runs only shape inference for one `op` node on inputs of the given
// dtypes/shapes; returns the Status.
inline Status infer_op(ir::OpKind op, const std::vector<std::pair<ir::DType, ir::Shape>>& ins,
                       ir::AttributeMap a = {}) {
  GraphBuilder b;
  std::vector<ir::ValueId> ids;
  for (size_t i = 0; i < ins.size(); ++i)
    ids.push_back(b.input(fmt::format("in{}", i), ins[i].first, ins[i].second));
  b.output(b.node(op, ids, std::move(a)));
  return ir::infer_shapes(b.graph());
}

inline bool mentions(const Status& st, const std::string& text) {
  return st.message().find(text) != std::string::npos;
}

// Row-major flat offset of a multi-index.
inline int64_t flat(const ir::Shape& shape, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

// Tolerance for comparing a computation in dtype `t` against a double oracle.
inline double tolerance_for(ir::DType t, double magnitude) {
  switch (t) {
    case ir::DType::kFloat64: return 1e-9 * magnitude;
    case ir::DType::kFloat32: return 1e-5 * magnitude;
    case ir::DType::kFloat16: return 2e-3 * magnitude;
    case ir::DType::kBFloat16: return 1.6e-2 * magnitude;
    default: return 0;
  }
}

}  // namespace graphc::testing::contraction
