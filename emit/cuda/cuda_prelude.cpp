// How each dtype looks in generated CUDA (storage, compute type, literals,
// conversions) and the device helpers the op expressions call. The helpers
// mirror reference/kernels_elementwise_util.h and the reference kernels line
// for line, so GPU results can be compared with the reference executor.
#include <fmt/format.h>

#include <bit>
#include <cmath>

#include "emit/cuda/cuda_ops.h"

namespace graphc::emit::cuda {

using ir::DType;

std::string compute_type(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16: return "float";
    case DType::kFloat64: return "double";
    case DType::kInt8: return "signed char";
    case DType::kInt16: return "short";
    case DType::kInt32: return "int";
    case DType::kInt64: return "long long";
    case DType::kUInt8: return "unsigned char";
    case DType::kUInt16: return "unsigned short";
    case DType::kUInt32: return "unsigned int";
    case DType::kUInt64: return "unsigned long long";
    case DType::kBool: return "bool";
    // Narrow types travel as their stored byte (cuda_narrow.cpp converts them).
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1:
    case DType::kUInt4:
    case DType::kUInt2: return "unsigned char";
    case DType::kInt4:
    case DType::kInt2: return "signed char";
    default: return "";
  }
}

std::string storage_type(DType t) {
  if (t == DType::kFloat16) return "__half";
  if (t == DType::kBFloat16) return "__nv_bfloat16";
  if (t == DType::kBool) return "unsigned char";
  return compute_type(t);
}

std::string load_expr(DType t, const std::string& s) {
  if (t == DType::kFloat16) return "__half2float(" + s + ")";
  if (t == DType::kBFloat16) return "__bfloat162float(" + s + ")";
  if (t == DType::kBool) return "(" + s + " != 0)";
  return s;
}

std::string store_expr(DType t, const std::string& v) {
  // Round to nearest even, as the reference's float_to_half_bits / float_to_bf16_bits.
  if (t == DType::kFloat16) return "__float2half_rn(" + v + ")";
  if (t == DType::kBFloat16) return "__float2bfloat16_rn(" + v + ")";
  if (t == DType::kBool) return "(unsigned char)(" + v + " ? 1 : 0)";
  return v;
}

namespace {
// Decimal text that reads back to exactly `v` and always parses as floating.
std::string decimal(double v, int digits) {
  std::string s = fmt::format("{:.{}g}", v, digits);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

std::string literal(DType t, double v) {
  if (auto mf = ir::minifloat_of(t))  // the code, as the host's Tensor::set_f64 stores it
    return fmt::format("((unsigned char)0x{:x})", double_to_minifloat(*mf, v, true));
  if (t == DType::kFloat64) {
    if (!std::isfinite(v))
      return fmt::format("__longlong_as_double(0x{:016x}LL)", std::bit_cast<uint64_t>(v));
    return decimal(v, 17);
  }
  if (ir::is_float(t)) {
    auto f = static_cast<float>(v);
    if (!std::isfinite(f))
      return fmt::format("__uint_as_float(0x{:08x}u)", std::bit_cast<uint32_t>(f));
    return decimal(f, 9) + "f";
  }
  if (t == DType::kBool) return v != 0.0 ? "true" : "false";
  return fmt::format("(({}){})", compute_type(t), decimal(v, 17));
}

std::string int_literal(DType t, int64_t v) {
  if (ir::is_float(t) || ir::is_narrow_float(t)) return literal(t, static_cast<double>(v));
  if (t == DType::kBool) return v != 0 ? "true" : "false";
  if (v == INT64_MIN) return fmt::format("(({})(-9223372036854775807LL - 1))", compute_type(t));
  return fmt::format("(({}){}LL)", compute_type(t), v);
}

std::string uint_literal(DType t, uint64_t v) {
  if (!ir::is_unsigned_integer(t)) return int_literal(t, static_cast<int64_t>(v));
  return fmt::format("(({}){}ULL)", compute_type(t), v);
}

std::string convert_expr(DType from, DType to, const std::string& v, bool saturate) {
  if (is_narrow(from) || is_narrow(to)) return narrow_convert_expr(from, to, v, saturate);
  std::string to_c = compute_type(to);
  if (compute_type(from) == to_c) return v;  // fp16 -> fp32 is float -> float
  if (to == DType::kBool) return "(" + v + " != (" + compute_type(from) + ")0)";
  if ((to == DType::kInt8 || to == DType::kUInt8) && compute_type(from) == "float")
    return byte_convert_expr(to, v);
  if (ir::is_integer(to) && ir::is_float(from)) {
    static const char* names[] = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"};
    int idx = 0;
    switch (to) {
      case DType::kInt8: idx = 0; break;
      case DType::kInt16: idx = 1; break;
      case DType::kInt32: idx = 2; break;
      case DType::kInt64: idx = 3; break;
      case DType::kUInt8: idx = 4; break;
      case DType::kUInt16: idx = 5; break;
      case DType::kUInt32: idx = 6; break;
      default: idx = 7; break;
    }
    return fmt::format("g_f2i_{}((double)({}))", names[idx], v);
  }
  return "((" + to_c + ")(" + v + "))";  // int -> int modular, to float: round to nearest
}

const std::string& device_prelude() {
  static const std::string text =
      R"(// graphc device helpers: integer arithmetic wraps like numpy, conversions and
// special cases follow graphc's reference executor.
#define G_HD __device__ __forceinline__
template <class T> G_HD T g_add(T a, T b) { return (T)((unsigned long long)a + (unsigned long long)b); }
template <class T> G_HD T g_sub(T a, T b) { return (T)((unsigned long long)a - (unsigned long long)b); }
template <class T> G_HD T g_mul(T a, T b) { return (T)((unsigned long long)a * (unsigned long long)b); }
template <class T> G_HD T g_neg(T a) { return g_sub((T)0, a); }
template <class T> G_HD T g_max2(T a, T b) { return (a < b) ? b : a; }  // std::max
template <class T> G_HD T g_min2(T a, T b) { return (b < a) ? b : a; }  // std::min
// Max/Min of variadic inputs: NaN in either operand gives NaN (numpy).
template <class T> G_HD T g_vmax(T acc, T v) { if (acc != acc) return acc; if (v != v) return v; return v > acc ? v : acc; }
template <class T> G_HD T g_vmin(T acc, T v) { if (acc != acc) return acc; if (v != v) return v; return v < acc ? v : acc; }
template <class T> G_HD T g_clip_lo(T v, T lo) { return v < lo ? lo : v; }  // NaN passes
template <class T> G_HD T g_clip_hi(T v, T hi) { return v > hi ? hi : v; }
// Integer division and modulo truncate; INT_MIN / -1 wraps. By zero gives 0:
// the reference reports an error, a kernel cannot.
template <class T> G_HD T g_sdiv(T a, T b) { return b == (T)0 ? (T)0 : b == (T)-1 ? g_neg(a) : (T)(a / b); }
template <class T> G_HD T g_udiv(T a, T b) { return b == (T)0 ? (T)0 : (T)(a / b); }
template <class T> G_HD T g_smod(T x, T y, bool c_fmod) {
  if (y == (T)0 || y == (T)-1) return (T)0;
  T r = (T)(x % y);
  if (!c_fmod && r != (T)0 && ((r < (T)0) != (y < (T)0))) r = (T)(r + y);
  return r;
}
template <class T> G_HD T g_umod(T x, T y) { return y == (T)0 ? (T)0 : (T)(x % y); }
G_HD float g_pymod(float x, float y) {
  float r = fmodf(x, y);
  if (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) return r + y;
  return r == 0.0f ? copysignf(0.0f, y) : r;
}
G_HD double g_pymod(double x, double y) {
  double r = fmod(x, y);
  if (r != 0.0 && ((r < 0.0) != (y < 0.0))) return r + y;
  return r == 0.0 ? copysign(0.0, y) : r;
}
// Two branches so exp never overflows.
G_HD float g_sigmoid(float v) { if (v >= 0.0f) return 1.0f / (1.0f + expf(-v)); float e = expf(v); return e / (1.0f + e); }
G_HD double g_sigmoid(double v) { if (v >= 0.0) return 1.0 / (1.0 + exp(-v)); double e = exp(v); return e / (1.0 + e); }
G_HD float g_softplus(float v) { return v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v)); }
G_HD double g_softplus(double v) { return v > 0.0 ? v + log1p(exp(-v)) : log1p(exp(v)); }
// Integer power, wrapping; a negative exponent gives the truncated real result.
template <class T> G_HD T g_ipow(T x, unsigned long long e, bool neg_exp, bool signed_base) {
  if (neg_exp) {
    if (x == (T)1) return (T)1;
    if (signed_base && x == (T)-1) return (T)((e % 2ull == 0ull) ? 1 : -1);
    return (T)0;
  }
  T r = (T)1;
  while (e) { if (e & 1ull) r = g_mul(r, x); x = g_mul(x, x); e >>= 1; }
  return r;
}
// BitShift: arithmetic signed right shift; a negative amount or one >= the
// bit width leaves only the sign fill.
template <class T, class U> G_HD T g_shift(T x, T y, bool left, bool sgn) {
  const unsigned long long bits = sizeof(T) * 8;
  const bool neg = sgn && x < (T)0;
  if ((sgn && y < (T)0) || (unsigned long long)y >= bits) return (!left && neg) ? (T)-1 : (T)0;
  if (left) return (T)(U)((U)x << y);
  if (!neg) return (T)((U)x >> y);
  return (T)(U)~((U)(~(U)x) >> y);
}
// Float -> integer as numpy's astype on x86-64 (reference float_to_int).
G_HD int g_f2i_i32(double v) {
  const double lim = 2147483648.0;
  if (!(v > -lim - 1.0 && v < lim)) return -2147483647 - 1;
  double t = trunc(v);
  if (t < -lim) return -2147483647 - 1;
  return (int)t;
}
G_HD long long g_f2i_i64(double v) {
  const double lim = 9223372036854775808.0;
  if (!(v > -lim - 1.0 && v < lim)) return -9223372036854775807LL - 1;
  double t = trunc(v);
  if (t < -lim) return -9223372036854775807LL - 1;
  return (long long)t;
}
G_HD signed char g_f2i_i8(double v) { return (signed char)g_f2i_i32(v); }
G_HD short g_f2i_i16(double v) { return (short)g_f2i_i32(v); }
G_HD unsigned char g_f2i_u8(double v) { return (unsigned char)g_f2i_i32(v); }
G_HD unsigned short g_f2i_u16(double v) { return (unsigned short)g_f2i_i32(v); }
G_HD unsigned int g_f2i_u32(double v) {
  const unsigned int half = 2147483648u;
  if (v != v) return half;
  double t = trunc(v);
  if (t < -2147483648.0) return half;
  if (t >= 4294967296.0) return 0u;
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return (unsigned int)(long long)t;
  return t < 0.0 ? half : 0u;
}
G_HD unsigned long long g_f2i_u64(double v) {
  const unsigned long long half = 1ull << 63;
  if (v != v) return half;
  double t = trunc(v);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return (unsigned long long)(long long)t;
  if (t >= 9223372036854775808.0 && t < 18446744073709551616.0) return (unsigned long long)t;
  return t < 0.0 ? half : 0ull;
}
)";
  return text;
}

}  // namespace graphc::emit::cuda
