// Small helpers for the data-movement tests (data_movement_test.cpp,
// data_movement_index_test.cpp).
#pragma once

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ir/shape_inference.h"
#include "reference/executor.h"
#include "tests/test_util.h"

namespace graphc::testing::dm {

inline ir::Tensor ints(std::vector<int64_t> v) {
  auto n = static_cast<int64_t>(v.size());
  return ir::Tensor::from_i64(v, {n});
}

inline ir::Attribute ai(int64_t v) { return ir::Attribute::of_int(v); }
inline ir::Attribute as(std::string v) { return ir::Attribute::of_string(std::move(v)); }
inline ir::Attribute ais(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }

// Shape inference with constant propagation; returns the Status (no throw).
inline Status infer(GraphBuilder& b) {
  ir::ShapeInferenceOptions o;
  o.evaluator = reference::constant_evaluator();
  return ir::infer_shapes(b.graph(), o);
}

// Marks `outs` as graph outputs, infers shapes and runs the graph on `feeds`.
inline Expected<std::vector<ir::Tensor>> run(GraphBuilder& b, std::vector<ir::ValueId> outs,
                                             const std::map<std::string, ir::Tensor>& feeds) {
  for (auto o : outs) b.output(o);
  RETURN_IF_ERROR(infer(b));
  ASSIGN_OR_RETURN(auto res, reference::execute(b.graph(), feeds));
  std::vector<ir::Tensor> out;
  for (auto o : outs) out.push_back(res.at(b.graph().value(o).name));
  return out;
}

inline Expected<ir::Tensor> run1(GraphBuilder& b, ir::ValueId out,
                                 const std::map<std::string, ir::Tensor>& feeds) {
  ASSIGN_OR_RETURN(auto v, run(b, {out}, feeds));
  return v[0];
}

// Element i of a equals element j of b, byte for byte.
inline bool same_elem(const ir::Tensor& a, int64_t i, const ir::Tensor& b, int64_t j) {
  size_t esz = ir::dtype_size(a.dtype());
  return a.dtype() == b.dtype() && std::memcmp(a.data() + static_cast<size_t>(i) * esz,
                                               b.data() + static_cast<size_t>(j) * esz, esz) == 0;
}

// Flat row-major offset of a multi-index.
inline int64_t flat(const std::vector<int64_t>& idx, const ir::Shape& shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

// Multi-index of a flat offset.
inline std::vector<int64_t> unflat(int64_t i, const ir::Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

inline int64_t rand_int(int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(test_rng());
}

inline ir::Shape rand_shape(size_t rank, int64_t lo = 1, int64_t hi = 4) {
  ir::Shape s(rank);
  for (auto& d : s) d = rand_int(lo, hi);
  return s;
}

inline const std::vector<ir::DType>& all_dtypes() {
  using ir::DType;
  static const std::vector<DType> v = {
      DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
      DType::kInt16,   DType::kInt32,   DType::kInt64,   DType::kUInt8,    DType::kUInt16,
      DType::kUInt32,  DType::kUInt64,  DType::kBool};
  return v;
}

}  // namespace graphc::testing::dm
