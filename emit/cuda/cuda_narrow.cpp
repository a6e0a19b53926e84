// The narrow element types in generated CUDA: float8 (e4m3fn, e4m3fnuz, e5m2,
// e5m2fnuz), float4e2m1 and int4/uint4/int2/uint2, one byte per element as
// graphc stores them. Kernels carry them as their bits (float types) or as
// the sign-extended byte (integers); only conversions look inside, through
// the device functions below, which compute exactly what the host's
// support/minifloat.cpp and ir::wrap_sub_byte compute (the reference
// executor's Cast and QuantizeLinear): round to nearest even, saturate or
// overflow per format. A float source converts in float and integer
// arithmetic, or on sm_89+ through the hardware's e4m3/e5m2 cvt (one
// instruction; the double path cost ~30 FP64 operations per element, which
// made float8 quantize kernels compute-bound at a fifth of memory speed); a
// double source keeps the double path. tests/emu/narrow_conversion_emu.cpp
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
    // As the host's double_to_minifloat (float4 always saturates): a float
    // source is exact as it is, anything else goes through double.
    const char* sat = saturate || to == DType::kFloat4E2M1 ? "true" : "false";
    if (compute_type(value_type) == "float")
      return fmt::format("g_nw_encode_f<{}>({}, {})", format_args(to), value, sat);
    return fmt::format("g_nw_encode<{}>((double)({}), {})", format_args(to), value, sat);
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
// A format's codes: its NaN and its largest finite magnitude (the sign bit,
// 1 << (EB + MB), above both).
template <int EB, int MB, int KIND> G_HD unsigned g_nw_nan() {
  return KIND == 1 ? 0x80u : KIND == 3 ? 0x8u : (1u << (EB + MB)) - 1u;
}
template <int EB, int MB, int KIND> G_HD unsigned g_nw_top() {
  return KIND == 0 ? (1u << (EB + MB)) - 2u
       : KIND == 2 ? (((1u << EB) - 1u) << MB) - 1u
                   : (1u << (EB + MB)) - 1u;
}
// The byte of `sign` and a rounded magnitude `code`, which may pass the
// largest finite one: saturated, inf or NaN per format and `sat`.
template <int EB, int MB, int KIND> G_HD unsigned char g_nw_pack(unsigned sign, unsigned code, bool sat) {
  const unsigned top = g_nw_top<EB, MB, KIND>(), nan = g_nw_nan<EB, MB, KIND>();
  if (code > top) {
    if (sat || KIND == 3) return (unsigned char)(sign | top);
    if (KIND == 2) return (unsigned char)(sign | (top + 1u));  // inf
    return (unsigned char)(KIND == 1 ? nan : (sign | nan));
  }
  if (code == 0u && KIND == 1) return 0;  // fnuz has no negative zero
  return (unsigned char)(sign | code);
}
template <int EB, int MB, int BIAS, int KIND> G_HD unsigned char g_nw_encode(double v, bool sat) {
  const unsigned signbit = 1u << (EB + MB);
  const unsigned top = g_nw_top<EB, MB, KIND>();
  if (v != v) return (unsigned char)g_nw_nan<EB, MB, KIND>();
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
  return g_nw_pack<EB, MB, KIND>(sign, code, sat);
}
// g_nw_encode of a float (exact: a float is its double) in float and integer
// arithmetic: round to nearest even by integer addition on the float's bits.
template <int EB, int MB, int BIAS, int KIND> G_HD unsigned char g_nw_encode_fsoft(float v, bool sat) {
  const unsigned signbit = 1u << (EB + MB);
  const unsigned top = g_nw_top<EB, MB, KIND>();
  const unsigned u = __float_as_uint(v), a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (unsigned char)g_nw_nan<EB, MB, KIND>();
  const unsigned sign = (u >> 31) != 0u ? signbit : 0u;
  unsigned code;
  if (a >= (unsigned)((int)(top >> MB) - BIAS + 128) << 23) {
    code = top + 1u;  // 2^(largest exponent + 1) and up, inf included
  } else if (a < (unsigned)(128 - BIAS) << 23) {
    // Subnormal: |v| in units of the smallest one (x 2^(MB - 1 + BIAS), exact), rounded.
    code = (unsigned)rintf(__uint_as_float(a) * __uint_as_float((unsigned)(126 + MB + BIAS) << 23));
  } else {
    const unsigned r = a + (1u << (22 - MB)) - 1u + ((a >> (23 - MB)) & 1u);
    code = (r >> (23 - MB)) - ((unsigned)(127 - BIAS) << MB);  // a carry moves to the exponent
  }
  return g_nw_pack<EB, MB, KIND>(sign, code, sat);
}
#if !defined(GRAPHC_HOST_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define G_NW_CVT 1
// sm_89+: float -> e4m3 (EB 4) / e5m2 (EB 5) in one instruction, rounding to
// nearest even and saturating (inf to the largest finite). The kernel
// emulator's shim (tests/emu/cuda_host_shim.h) models it on the host.
template <int EB> G_HD unsigned char g_nw_cvt(float v) {
  unsigned short r;
  if (EB == 4) asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %1;" : "=h"(r) : "f"(v));
  else asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %1;" : "=h"(r) : "f"(v));
  return (unsigned char)r;
}
#endif
// A float to narrow float bits: the hardware's saturating e4m3fn / e5m2
// conversion where there is one (NaN given the host's code, whatever the
// hardware keeps of its sign), else g_nw_encode_fsoft.
template <int EB, int MB, int BIAS, int KIND> G_HD unsigned char g_nw_encode_f(float v, bool sat) {
#ifdef G_NW_CVT
  if (sat && ((EB == 4 && MB == 3 && BIAS == 7 && KIND == 0) || (EB == 5 && MB == 2 && BIAS == 15 && KIND == 2)))
    return v != v ? (unsigned char)g_nw_nan<EB, MB, KIND>() : g_nw_cvt<EB>(v);
#endif
  return g_nw_encode_fsoft<EB, MB, BIAS, KIND>(v, sat);
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
