// Helpers shared by the data-movement reference kernels
// (kernels_data_movement.cpp, kernels_gather_scatter.cpp, kernels_generators.cpp):
// byte copies by element size, a strided copy, index reading with bounds
// checks, and typed element arithmetic for the reductions of ScatterElements /
// ScatterND and for CumSum.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "ir/shape_inference.h"
#include "reference/kernels.h"
#include "support/half.h"

namespace graphc::reference::dm {

inline void copy_bytes(uint8_t* dst, const uint8_t* src, int64_t count, size_t esz) {
  if (count > 0) std::memcpy(dst, src, static_cast<size_t>(count) * esz);
}

// Writes out[i] = in[base + sum_d idx_d * strides[d]] for every out multi-index,
// row-major. Strides may be 0 (broadcast) or negative (reversed slices).
void strided_copy(uint8_t* dst, const ir::Shape& out_shape, const uint8_t* src, int64_t base,
                  const std::vector<int64_t>& strides, size_t esz);

// Reads index `i` of an int32/int64 tensor, wraps a negative value by `dim`
// and checks the result lies in [0, dim).
Expected<int64_t> read_index(const ir::Tensor& indices, int64_t i, int64_t dim, const char* what);

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };
Expected<Reduction> parse_reduction(const std::string& name);

// Typed element access for arithmetic: fp16/bf16 are computed in float,
// integers wrap modulo 2^bits (no signed-overflow UB), bool uses or/and.
struct Half {};
struct BF16 {};
template <typename T>
struct Elem {
  using Acc = T;
  static Acc load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  static void store(uint8_t* p, Acc v) { std::memcpy(p, &v, sizeof(T)); }
  static Acc add(Acc a, Acc b) {
    if constexpr (std::is_same_v<T, bool>)
      return a || b;
    else if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else
      return a + b;
  }
  static Acc mul(Acc a, Acc b) {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    else
      return a * b;
  }
};
template <>
struct Elem<Half> {
  using Acc = float;
  static Acc load(const uint8_t* p) {
    uint16_t b;
    std::memcpy(&b, p, 2);
    return half_bits_to_float(b);
  }
  static void store(uint8_t* p, Acc v) {
    uint16_t b = float_to_half_bits(v);
    std::memcpy(p, &b, 2);
  }
  static Acc add(Acc a, Acc b) { return a + b; }
  static Acc mul(Acc a, Acc b) { return a * b; }
};
template <>
struct Elem<BF16> {
  using Acc = float;
  static Acc load(const uint8_t* p) {
    uint16_t b;
    std::memcpy(&b, p, 2);
    return bf16_bits_to_float(b);
  }
  static void store(uint8_t* p, Acc v) {
    uint16_t b = float_to_bf16_bits(v);
    std::memcpy(p, &b, 2);
  }
  static Acc add(Acc a, Acc b) { return a + b; }
  static Acc mul(Acc a, Acc b) { return a * b; }
};

// Calls f(T{}) with the element type of `dt` (Half/BF16 tags for 16-bit floats).
template <typename F>
Status visit_dtype(ir::DType dt, F&& f) {
  using ir::DType;
  switch (dt) {
    case DType::kFloat32: f(float{}); break;
    case DType::kFloat64: f(double{}); break;
    case DType::kFloat16: f(Half{}); break;
    case DType::kBFloat16: f(BF16{}); break;
    case DType::kInt8: f(int8_t{}); break;
    case DType::kInt16: f(int16_t{}); break;
    case DType::kInt32: f(int32_t{}); break;
    case DType::kInt64: f(int64_t{}); break;
    case DType::kUInt8: f(uint8_t{}); break;
    case DType::kUInt16: f(uint16_t{}); break;
    case DType::kUInt32: f(uint32_t{}); break;
    case DType::kUInt64: f(uint64_t{}); break;
    case DType::kBool: f(bool{}); break;
    default: return unsupported("dtype {} is not supported here", ir::dtype_name(dt));
  }
  return Status::ok_status();
}

// dst = reduce(dst, src) for one element of dtype `dt` (kNone: dst = src).
void reduce_into(ir::DType dt, Reduction r, uint8_t* dst, const uint8_t* src);

}  // namespace graphc::reference::dm
