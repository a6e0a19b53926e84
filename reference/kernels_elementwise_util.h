// Shared helpers of the elementwise reference kernels (kernels_unary.cpp,
// kernels_binary.cpp, kernels_elementwise_other.cpp): typed dtype dispatch,
// numpy broadcasting offsets and numpy-like float -> integer conversion.
//
// Every dtype is visited through a small traits type: `storage` is the C++
// type of one stored element, `compute` the type arithmetic is done in.
// float16/bfloat16 are stored as their bits and computed in float; bool is
// stored as one byte and computed as bool; every other type computes in itself,
// so integer arithmetic is exact (never through double).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "reference/kernels.h"
#include "support/half.h"

namespace graphc::reference::ew {

template <typename S>
struct Plain {
  using storage = S;
  using compute = S;
  static S load(S s) { return s; }
  static S store(S c) { return c; }
};
struct Half {
  using storage = uint16_t;
  using compute = float;
  static float load(uint16_t s) { return half_bits_to_float(s); }
  static uint16_t store(float c) { return float_to_half_bits(c); }
};
struct BHalf {
  using storage = uint16_t;
  using compute = float;
  static float load(uint16_t s) { return bf16_bits_to_float(s); }
  static uint16_t store(float c) { return float_to_bf16_bits(c); }
};
struct Bool {
  using storage = uint8_t;
  using compute = bool;
  static bool load(uint8_t s) { return s != 0; }
  static uint8_t store(bool c) { return c ? 1 : 0; }
};

// Which families a dispatch accepts.
enum Family : unsigned {
  kFloats = 1,    // float16, bfloat16, float32, float64
  kSigned = 2,    // int8 .. int64
  kUnsigned = 4,  // uint8 .. uint64
  kBools = 8,
  kInts = kSigned | kUnsigned,
  kNumeric = kFloats | kInts,
  kAll = kNumeric | kBools,
};

// Calls f(Traits{}) for the traits of `t` when its family is in `Families`;
// otherwise an error naming the op and the dtype. Only the accepted families
// are instantiated, so `f` may use operations valid only for them.
template <unsigned Families, typename F>
Status visit(ir::DType t, const char* op, F&& f) {
  using ir::DType;
  if constexpr ((Families & kFloats) != 0) {
    if (t == DType::kFloat32) return f(Plain<float>{});
    if (t == DType::kFloat64) return f(Plain<double>{});
    if (t == DType::kFloat16) return f(Half{});
    if (t == DType::kBFloat16) return f(BHalf{});
  }
  if constexpr ((Families & kSigned) != 0) {
    if (t == DType::kInt8) return f(Plain<int8_t>{});
    if (t == DType::kInt16) return f(Plain<int16_t>{});
    if (t == DType::kInt32) return f(Plain<int32_t>{});
    if (t == DType::kInt64) return f(Plain<int64_t>{});
  }
  if constexpr ((Families & kUnsigned) != 0) {
    if (t == DType::kUInt8) return f(Plain<uint8_t>{});
    if (t == DType::kUInt16) return f(Plain<uint16_t>{});
    if (t == DType::kUInt32) return f(Plain<uint32_t>{});
    if (t == DType::kUInt64) return f(Plain<uint64_t>{});
  }
  if constexpr ((Families & kBools) != 0) {
    if (t == DType::kBool) return f(Bool{});
  }
  return unsupported("{}: the reference kernel does not handle dtype {}", op, ir::dtype_name(t));
}

template <typename T>
inline const typename T::storage* in_data(const ir::Tensor& t) {
  return t.data_as<typename T::storage>();
}
template <typename T>
inline typename T::storage* out_data(ir::Tensor& t) {
  return t.mutable_data_as<typename T::storage>();
}

template <typename C>
inline constexpr bool kIsFloat = std::is_floating_point_v<C>;
template <typename C>
inline constexpr bool kIsBool = std::is_same_v<C, bool>;
template <typename C>
inline constexpr bool kIsInt = std::is_integral_v<C> && !kIsBool<C>;

// Wrap-around integer arithmetic without signed-overflow UB.
template <typename C>
C wrap_add(C a, C b) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename C>
C wrap_sub(C a, C b) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename C>
C wrap_mul(C a, C b) {
  // uint16 * uint16 promotes to int and can overflow; go through uint64.
  return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <typename C>
C wrap_neg(C a) {
  return wrap_sub<C>(C{0}, a);
}

// Float -> integer as numpy's astype does on x86-64 (C casts): values whose
// truncation fits the target truncate toward zero. Outside that range:
//  - int32/int64 targets give the "integer indefinite" INT_MIN (NaN, +-inf too);
//  - 8/16-bit targets convert through int32 and keep the low bits
//    (300.7 -> int8 44, -1.5 -> uint8 255; NaN/inf -> 0);
//  - uint32 targets wrap values in [-2^31, 2^32) (-1.5 -> UINT32_MAX); uint64
//    targets wrap values in [-2^63, 2^64); NaN and more negative values give
//    2^(bits-1), larger values (and +inf) give 0.
// (numpy gives 0 for a float16 NaN/-inf cast to uint32; out-of-range casts
// are implementation-defined in ONNX.)
template <typename I>
I float_to_int(double v) {
  constexpr double k2p31 = 2147483648.0, k2p63 = 9223372036854775808.0,
                   k2p64 = 18446744073709551616.0;
  if constexpr (std::is_same_v<I, int64_t> || std::is_same_v<I, int32_t>) {
    constexpr double lim = std::is_same_v<I, int64_t> ? k2p63 : k2p31;
    if (!(v > -lim - 1.0 && v < lim)) return std::numeric_limits<I>::min();
    double t = std::trunc(v);
    if (t < -lim) return std::numeric_limits<I>::min();
    return static_cast<I>(t);
  } else if constexpr (sizeof(I) <= 2) {
    int32_t w = float_to_int<int32_t>(v);
    return static_cast<I>(w);  // modular (C++20)
  } else {
    static_assert(std::is_unsigned_v<I>);
    constexpr I half = I{1} << (sizeof(I) * 8 - 1);
    if (std::isnan(v)) return half;
    double t = std::trunc(v);
    if constexpr (std::is_same_v<I, uint32_t>) {
      if (t < -k2p31) return half;
      if (t >= 4294967296.0) return I{0};
    }
    if (t >= -k2p63 && t < k2p63) return static_cast<I>(static_cast<int64_t>(t));
    if (std::is_same_v<I, uint64_t> && t >= k2p63 && t < k2p64)
      return static_cast<I>(static_cast<uint64_t>(t));
    return t < 0 ? half : I{0};
  }
}

// Converts one computed value of type From to type To (both compute types):
// float -> int as above, anything -> bool is "nonzero" (NaN is true),
// int -> float and float -> float by C++ conversion (round to nearest).
template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsBool<To>) {
    return v != From{0};
  } else if constexpr (kIsInt<To> && kIsFloat<From>) {
    return float_to_int<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);  // int->int is modular in C++20
  }
}

// Flat input offsets for every output element under numpy broadcasting.
// `in_shape` must broadcast to `out_shape` (the shape rule checked it).
inline std::vector<int64_t> broadcast_offsets(const ir::Shape& out_shape,
                                              const ir::Shape& in_shape) {
  int64_t n = ir::shape_numel(out_shape);
  std::vector<int64_t> offs(static_cast<size_t>(n));
  if (in_shape == out_shape) {
    for (int64_t i = 0; i < n; ++i) offs[static_cast<size_t>(i)] = i;
    return offs;
  }
  if (n == 0) return offs;
  auto strides = strides_of(in_shape);
  std::vector<int64_t> idx(out_shape.size(), 0);
  int64_t i = 0;
  do {
    offs[static_cast<size_t>(i++)] = broadcast_offset(idx, in_shape, strides);
  } while (next_index(idx, out_shape));
  return offs;
}

}  // namespace graphc::reference::ew
