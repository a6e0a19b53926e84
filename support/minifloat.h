// The narrow float formats ONNX defines (float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz,
// float4 e2m1) <-> double, exactly as ONNX's reference (ml_dtypes) converts:
// round to nearest, ties to even; saturate clamps to the largest finite value,
// otherwise an overflow becomes inf (e5m2) or NaN (formats without inf).
// Each value is one byte (float4 in the low 4 bits).
#pragma once

#include <cstdint>

namespace graphc {

enum class MiniFloat : uint8_t { kE4M3FN, kE4M3FNUZ, kE5M2, kE5M2FNUZ, kE2M1 };

double minifloat_to_double(MiniFloat f, uint8_t bits);
uint8_t double_to_minifloat(MiniFloat f, double v, bool saturate);
double minifloat_max(MiniFloat f);  // largest finite value

}  // namespace graphc
