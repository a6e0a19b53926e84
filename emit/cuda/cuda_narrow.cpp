// The narrow element types in generated CUDA: float8 (e4m3fn, e4m3fnuz, e5m2,
// e5m2fnuz), float4e2m1 and int4/uint4/int2/uint2, one byte per element as
// graphc stores them. Kernels carry them as their bits (float types) or as
// the sign-extended byte (integers); only conversions look inside, through
// the device functions below, which compute exactly what the host's
// support/minifloat.cpp and ir::wrap_sub_byte compute (the reference
// executor's Cast and QuantizeLinear): round to nearest even in double,
// saturate or overflow per format. tests/emu/narrow_conversion_emu.cpp
// checks them against the host functions on every byte and a float sweep.
#include <fmt/format.h>

#include "emit/cuda/cuda_ops.h"

namespace graphc::emit::cuda {

using ir::DType;

bool is_narrow(DType t) { return ir::is_narrow_float(t) || ir::is_sub_byte_integer(t); }

namespace {

// Template arguments of g_nw_decode/g_nw_encode: exponent bits, mantissa
// bits, bias, kind (0: fn, NaN at S.1111.111; 1: fnuz, NaN 0x80, no -0;
// 2: IEEE-like with inf; 3: no inf/NaN, e2m1).
std::string format_args(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN: return "4, 3, 7, 0";
    case DType::kFloat8E4M3FNUZ: return "4, 3, 8, 1";
    case DType::kFloat8E5M2: return "5, 2, 15, 2";
    case DType::kFloat8E5M2FNUZ: return "5, 2, 16, 1";
    default: return "2, 1, 1, 3";  // float4e2m1
  }
}

// An 8-bit integer type holding the same values (for conversions out).
DType byte_integer(DType t) { return ir::is_signed_integer(t) ? DType::kInt8 : DType::kUInt8; }

}  // namespace

std::string narrow_convert_expr(DType from, DType to, const std::string& v, bool saturate) {
  // The source value as the host sees it: a float (exact) or an integer.
  std::string value = v;
  DType value_type = from;
  if (ir::is_narrow_float(from)) {
    value = fmt::format("g_nw_decode<{}>({})", format_args(from), v);
    value_type = DType::kFloat32;  // every narrow float value is exact in float
  } else if (ir::is_sub_byte_integer(from)) {
    value_type = byte_integer(from);
  }
  if (ir::is_narrow_float(to)) {
    // Through double, as the host's double_to_minifloat (float4 always saturates).
    return fmt::format("g_nw_encode<{}>((double)({}), {})", format_args(to), value,
                       saturate || to == DType::kFloat4E2M1 ? "true" : "false");
  }
  if (ir::is_sub_byte_integer(to)) {
    // Floats truncate as numpy's astype to int64, integers keep their value; then wrapped.
    std::string i64 = ir::is_float(value_type) ? fmt::format("g_f2i_i64((double)({}))", value)
                                               : fmt::format("(long long)({})", value);
    return fmt::format("(({})g_nw_wrap<{}, {}>({}))", compute_type(to), ir::sub_byte_bits(to),
                       ir::is_signed_integer(to) ? "true" : "false", i64);
  }
  return convert_expr(value_type, to, value);
}

const std::string& narrow_prelude() {
  static const std::string text = R"(// graphc narrow types: float8/float4 bits <-> float as graphc's host
// conversions (round to nearest even; saturate, inf or NaN on overflow per format).
template <int EB, int MB, int BIAS, int KIND> G_HD float g_nw_decode(unsigned char bits) {
  const unsigned signbit = 1u << (EB + MB);
  const unsigned b = bits & (2u * signbit - 1u);
  if (KIND == 1 && b == signbit) return __uint_as_float(0x7fc00000u);
  const unsigned mag = b & (signbit - 1u), e = mag >> MB, m = mag & ((1u << MB) - 1u);
  if (KIND == 0 && mag == signbit - 1u) return __uint_as_float(0x7fc00000u);
  const bool neg = (b & signbit) != 0u;
  if (KIND == 2 && e == (1u << EB) - 1u)
    return m != 0u ? __uint_as_float(0x7fc00000u) : __uint_as_float(neg ? 0xff800000u : 0x7f800000u);
  const float v = e == 0u ? ldexpf((float)m, 1 - BIAS - MB)
                          : ldexpf((float)(m | (1u << MB)), (int)e - BIAS - MB);
  return neg ? -v : v;
}
template <int EB, int MB, int BIAS, int KIND> G_HD unsigned char g_nw_encode(double v, bool sat) {
  const unsigned signbit = 1u << (EB + MB);
  const unsigned nan = KIND == 1 ? 0x80u : KIND == 3 ? 0x8u : signbit - 1u;
  const unsigned top = KIND == 0 ? signbit - 2u
                     : KIND == 2 ? (((1u << EB) - 1u) << MB) - 1u
                                 : signbit - 1u;  // the largest finite code
  if (v != v) return (unsigned char)nan;
  const unsigned sign = (v < 0.0 || (v == 0.0 && 1.0 / v < 0.0)) ? signbit : 0u;
  const double a = fabs(v);
  unsigned code;
  if (a >= ldexp(1.0, (int)(top >> MB) - BIAS + 1)) {
    code = top + 1u;  // beyond every finite code's binade (inf included)
  } else if (a < ldexp(1.0, 1 - BIAS)) {
    code = (unsigned)rint(ldexp(a, MB - 1 + BIAS));  // subnormal; may round up to the first normal
  } else {
    int e;
    const double f = frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
    code = ((unsigned)(e - 1 + BIAS) << MB) + (unsigned)rint(ldexp(f, MB + 1)) - (1u << MB);
  }
  if (code > top) {
    if (sat || KIND == 3) return (unsigned char)(sign | top);
    if (KIND == 2) return (unsigned char)(sign | (top + 1u));  // inf
    return (unsigned char)(KIND == 1 ? nan : (sign | nan));
  }
  if (code == 0u && KIND == 1) return 0;  // fnuz has no negative zero
  return (unsigned char)(sign | code);
}
// int4/uint4/int2/uint2: the low BITS of v, sign-extended for the signed types.
template <int BITS, bool SIGNED> G_HD unsigned char g_nw_wrap(long long v) {
  const unsigned long long mask = (1ull << BITS) - 1ull;
  unsigned long long low = (unsigned long long)v & mask;
  if (SIGNED && (low >> (BITS - 1)) != 0ull) low |= ~mask;
  return (unsigned char)low;
}
)";
  return text;
}

}  // namespace graphc::emit::cuda
