// Helpers of the elementwise tests: run one node on given tensors through
// shape inference and the reference executor, and make small tensors.
#pragma once

#include <catch2/catch.hpp>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "reference/executor.h"
#include "support/half.h"
#include "tests/test_util.h"

namespace graphc::ewtest {

using ir::AttributeMap;
using ir::DType;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;

// Runs `op` on `ins` (nullopt = omitted optional input). Inputs are graph
// inputs fed at run time, or build-time constants when `as_constants` (then
// constant propagation evaluates the node during shape inference).
inline Expected<std::vector<Tensor>> run_op(OpKind op,
                                            const std::vector<std::optional<Tensor>>& ins,
                                            AttributeMap a = {}, int num_outputs = 1,
                                            bool as_constants = false) {
  testing::GraphBuilder b;
  std::vector<ir::ValueId> ids;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < ins.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (!ins[i]) {
      ids.push_back(ir::kNoValue);
    } else if (as_constants) {
      ids.push_back(b.constant(name, *ins[i]));
    } else {
      ids.push_back(b.input(name, ins[i]->dtype(), ins[i]->shape()));
      feeds[name] = *ins[i];
    }
  }
  b.node(op, ids, std::move(a), num_outputs);
  ir::Graph& g = b.graph();
  std::vector<ir::ValueId> outs = g.nodes.back().outputs;
  for (ir::ValueId o : outs) g.outputs.push_back(o);
  ir::ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  RETURN_IF_ERROR(ir::infer_shapes(g, opts));
  ASSIGN_OR_RETURN(auto results, reference::execute(g, feeds));
  std::vector<Tensor> out;
  for (ir::ValueId o : outs) out.push_back(results.at(g.value(o).name));
  return out;
}

// The single output of `op`; fails the test case (REQUIRE) on an error.
inline Tensor run1(OpKind op, const std::vector<std::optional<Tensor>>& ins, AttributeMap a = {}) {
  auto r = run_op(op, ins, std::move(a));
  INFO(r.status().message());
  REQUIRE(r.ok());
  return (*r)[0];
}

// Shape inference only, on inputs of the given dtypes/shapes; returns its Status.
inline Status infer_only(OpKind op, const std::vector<std::pair<DType, Shape>>& ins,
                         AttributeMap a = {}, int num_outputs = 1) {
  testing::GraphBuilder b;
  std::vector<ir::ValueId> ids;
  for (size_t i = 0; i < ins.size(); ++i)
    ids.push_back(b.input("in" + std::to_string(i), ins[i].first, ins[i].second));
  b.node(op, ids, std::move(a), num_outputs);
  return ir::infer_shapes(b.graph(), {});
}

template <typename T>
Tensor make(DType dt, const std::vector<T>& values, Shape shape) {
  Tensor t(dt, std::move(shape));
  REQUIRE(static_cast<size_t>(t.numel()) == values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      t.set_f64(static_cast<int64_t>(i), values[i]);
    else if constexpr (std::is_unsigned_v<T>)
      t.set_u64(static_cast<int64_t>(i), values[i]);
    else
      t.set_i64(static_cast<int64_t>(i), static_cast<int64_t>(values[i]));
  }
  return t;
}

inline Tensor f32(const std::vector<double>& v, Shape s) { return make(DType::kFloat32, v, s); }
inline Tensor f64(const std::vector<double>& v, Shape s) { return make(DType::kFloat64, v, s); }
inline Tensor i64(const std::vector<int64_t>& v, Shape s) { return make(DType::kInt64, v, s); }
inline Tensor i32(const std::vector<int64_t>& v, Shape s) { return make(DType::kInt32, v, s); }
inline Tensor boolean(const std::vector<int64_t>& v, Shape s) { return make(DType::kBool, v, s); }

inline Tensor rnd(DType dt, Shape s, double lo = -2.0, double hi = 2.0) {
  return testing::random_tensor(dt, s, testing::test_rng(), lo, hi);
}

// Flat index of `in_shape` element for output multi-index `idx` under numpy
// broadcasting, computed independently of the reference helpers.
inline int64_t bcast_index(const std::vector<int64_t>& idx, const Shape& in_shape) {
  size_t lead = idx.size() - in_shape.size();
  int64_t flat = 0;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    int64_t i = in_shape[d] == 1 ? 0 : idx[lead + d];
    flat = flat * in_shape[d] + i;
  }
  return flat;
}

// Multi-index of flat position `i` in `shape`.
inline std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace graphc::ewtest
