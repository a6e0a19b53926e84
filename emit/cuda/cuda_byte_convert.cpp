// Float -> int8/uint8 conversions in generated CUDA (QuantizeLinear's last
// Cast, Cast to an 8-bit integer) in float arithmetic: the general float ->
// integer helpers (g_f2i_*, cuda_prelude.cpp) go through double, three FP64
// conversions per element where one float -> int32 conversion gives the same
// bits. The helpers are included only by kernels that call them, as the
// narrow-type ones (cuda_narrow.cpp), so other kernels' source is unchanged.
#include "emit/cuda/cuda_ops.h"

namespace graphc::emit::cuda {

namespace {

const std::string& byte_prelude() {
  static const std::string text = R"(// graphc float -> int8/uint8: g_f2i_i8/u8 of the float's (exact) double:
// truncate toward zero to int32, keep the low byte; NaN and values outside
// int32 give INT_MIN there, whose low byte is 0.
G_HD int g_b8_f2i32(float v) { return v >= -2147483648.0f && v < 2147483648.0f ? (int)v : 0; }
G_HD signed char g_b8_f2i8(float v) { return (signed char)g_b8_f2i32(v); }
G_HD unsigned char g_b8_f2u8(float v) { return (unsigned char)g_b8_f2i32(v); }
)";
  return text;
}

}  // namespace

std::string byte_convert_expr(ir::DType to, const std::string& v) {
  return (to == ir::DType::kInt8 ? "g_b8_f2i8(" : "g_b8_f2u8(") + v + ")";
}

std::string conversion_preludes(const std::string& text) {
  std::string s;
  if (text.find("g_nw_") != std::string::npos) s += narrow_prelude();
  if (text.find("g_b8_") != std::string::npos) s += byte_prelude();
  return s;
}

}  // namespace graphc::emit::cuda
