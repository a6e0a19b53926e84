// Whether the engine's target runs fuse-qdq-matmul's float8 GEMM (a
// MatMulInteger of float8 e4m3fn operands, float32 out): graphc has no
// generated float8 GEMM, so the pass asks before it rewrites and keeps the
// float GEMM (Q/DQ as elementwise ops) where the answer is no. And which of
// the ops after it cuBLASLt's FP8 GEMM computes itself (version 4 of the
// matmul descriptor), so that a QDQ layer is one library call.
#pragma once

#include <cstdint>

#include "ir/dtype.h"
#include "support/status.h"
#include "target/target.h"

namespace graphc::target {

// OK when the target takes an M x N x K float8 GEMM: the CUDA target's
// cuBLASLt FP8 GEMM (sm_89 or newer for every --arch, --gemm, N and K
// multiples of 16, large enough in auto mode); else why not. OK without a
// target (a graph for the reference executor).
Status fp8_gemm_target_takes(const Target* target, int64_t m, int64_t n, int64_t k);

// cuBLASLt's FP8 epilogue (sm_89/sm_90; cuBLAS's FP8 type table). After
// alpha * A.B in float32 it computes, in this order: the rounding to D's
// float16/bfloat16 (the Cast --precision puts there), + an N-bias, + C
// (beta 1), Relu or the tanh GELU, and a float8 e4m3fn D scaled by
// CUBLASLT_MATMUL_DESC_D_SCALE_POINTER and rounded to nearest even,
// saturating: a following QuantizeLinear (expand-quantize's Div by its
// per-tensor y_scale and saturating Cast) with d_scale = 1 / y_scale.
// Each rule says why not, for `graphc inspect`.

// A bias of D's dtype `d`: cuBLASLt takes one with a float16/bfloat16 D; with
// a float32 D it takes only a bfloat16 bias, and rounding graphc's float32
// bias to bfloat16 would change the result.
Status fp8_epilogue_bias_ok(ir::DType d);

// The QuantizeLinear after the epilogue as cuBLASLt's float8 D: `from` the
// dtype of the value it quantizes (the epilogue's: C and bias are that type),
// `to` the quantized type, `y_scale` its scale (per tensor), `saturate` its
// attribute, `c_or_bias` whether C or a bias is taken. A float8 D takes C and
// bias only as float16/bfloat16 (a float32 epilogue value is fine without).
Status fp8_epilogue_quantize_ok(ir::DType from, ir::DType to, double y_scale, bool saturate,
                                bool c_or_bias);

// Why a per-column weight scale (the Mul by s_w[n] / max(s_w) after the GEMM)
// stays a generated kernel.
inline constexpr const char* kFp8PerColumnScaleReason =
    "per-column weight scales stay a generated Mul (cuBLASLt's outer-vector FP8 scaling, "
    "CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, runs on sm_90 only and scales both operands "
    "by device vectors; not used yet)";

}  // namespace graphc::target
