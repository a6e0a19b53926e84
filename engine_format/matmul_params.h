// The cuBLASLt matmul descriptor an engine records in LibraryCall.params
// (library "cublasLt", op "matmul"). Everything the runtime needs to set up
// the call without the graph: dtypes, transposes, sizes, strided batches,
// leading dimensions, epilogue, scalars and compute type. The bytes are a
// fixed little-endian layout with a version in front, so the format is
// independent of the compiler and checked field by field on read.
//
// Semantics (row-major, as graphc stores tensors), for b in [0, batch):
//   D[b] = act(alpha * op(A[b]) op(B[b]) + beta * C[b] + bias)
// op(A) is M x K (A stored K x M when trans_a), op(B) is K x N (stored N x K
// when trans_b); X[b] starts at b * stride_x elements (0: one matrix shared by
// every batch); bias has N elements, broadcast over rows and batches.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "support/status.h"

namespace graphc::engine {

enum class MatmulEpilogue : uint8_t { kNone = 0, kRelu = 1, kGeluTanh = 2 };
// kI32: int8 A and B, int32 accumulation, scale and D (cuBLASLt's IMMA path).
// A float8 matmul computes in kF32.
enum class MatmulCompute : uint8_t { kF32 = 0, kF32FastTf32 = 1, kI32 = 2 };

// Version 2 (the int8 GEMM, docs/int8.md) has version 1's layout and also
// admits dtype 3 (int8 A and B, int32 D, compute kI32) in cuBLASLt's IMMA form:
// B stored N x K (trans_b), A not transposed, N, K and the leading dims
// multiples of 4, no C, bias or epilogue, alpha 1. Float calls keep writing
// version 1, so their engines are the bytes they were.
// Version 3 (the fp8 GEMM, docs/int8.md) has the same layout and admits only
// dtype 17 (float8 e4m3fn A and B, compute kF32) in cuBLASLt's FP8 form: B
// stored N x K (trans_b), A not transposed, one matrix (batch 1), N, K and the
// leading dims multiples of 16, no C, bias or epilogue; alpha (the per-tensor
// dequantize scales) any finite nonzero value. The first reserved byte holds
// D's dtype (`d_type`: 1 float32, 10 float16, 16 bfloat16).
// Version 4 (the fp8 GEMM with cuBLASLt's own epilogue, docs/int8.md) is
// version 3 plus what cuBLASLt's FP8 kernels fuse: an N-bias, C (beta), Relu
// or the tanh GELU, and a float8 e4m3fn D (d_type 17) that cuBLASLt scales by
// `d_scale` (the next QuantizeLinear's 1 / y_scale) and rounds, saturating.
// Its second reserved byte holds C's and the bias's dtype where D is float8
// (`c_type`: 10 or 16, cuBLASLt's FP8 table); else C and the bias are D's
// dtype, and a float32 D takes no bias (cuBLASLt wants it bfloat16). An f64
// `d_scale` follows beta (0 unless D is float8). Float8 calls that need none
// of this keep writing version 3.
struct MatmulParams {
  static constexpr uint32_t kVersion = 1;
  static constexpr uint32_t kVersionInt8 = 2;
  static constexpr uint32_t kVersionFp8 = 3;
  static constexpr uint32_t kVersionFp8Epilogue = 4;
  // A, B, C, D and bias: ONNX 1 (float), 10 (float16) or 16 (bfloat16); or 3
  // (int8 A and B, int32 D: version 2); or 17 (float8 e4m3fn A and B, float32
  // D: version 3).
  int32_t dtype = 1;
  MatmulCompute compute = MatmulCompute::kF32;
  bool trans_a = false, trans_b = false;
  bool has_c = false, has_bias = false;
  MatmulEpilogue epilogue = MatmulEpilogue::kNone;
  int32_t d_type = 0;  // a float8 matmul's D: ONNX 1, 10 or 16 (version 3), 17 (version 4); else 0
  int32_t c_type = 0;  // a float8 matmul's C and bias where D is float8: 10 or 16; else 0
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t lda = 0, ldb = 0, ldc = 0;  // row-major leading dims of A, B and C/D as stored
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;  // elements between batches
  double alpha = 1.0, beta = 0.0;
  double d_scale = 0.0;  // what cuBLASLt multiplies a float8 D by before rounding; else 0

  // Kernel args: A, B, then C if has_c, bias if has_bias, then D.
  int num_args() const { return 3 + (has_c ? 1 : 0) + (has_bias ? 1 : 0); }
  int c_arg() const { return has_c ? 2 : -1; }
  int bias_arg() const { return has_bias ? (has_c ? 3 : 2) : -1; }
  int d_arg() const { return num_args() - 1; }
  bool int8() const { return dtype == 3; }
  bool fp8() const { return dtype == 17; }
  // A float8 matmul writing float8 e4m3 (scaled by d_scale) rather than float.
  bool fp8_output() const { return fp8() && d_type == 17; }
  // ONNX dtype of each operand: A and B `dtype`; C, D and bias the same, but
  // int32 (6) for an int8 matmul and `d_type` for a float8 one (C and bias: c_dtype()).
  int32_t d_dtype() const { return int8() ? 6 : fp8() ? d_type : dtype; }
  // ONNX dtype of C and the bias: D's, but `c_type` where D is float8.
  int32_t c_dtype() const { return fp8_output() ? c_type : d_dtype(); }
  // A float8 matmul needing version 4: cuBLASLt's epilogue or a float8 D.
  bool fp8_epilogue() const {
    return fp8() && (has_c || has_bias || epilogue != MatmulEpilogue::kNone || d_type == 17);
  }

  // Elements each operand spans in memory (the last batch's end).
  int64_t a_extent() const;
  int64_t b_extent() const;
  int64_t c_extent() const;
  int64_t d_extent() const;

  bool operator==(const MatmulParams&) const = default;
};

std::string encode_matmul_params(const MatmulParams& p);
// Checks version, size and every field (dtypes, enums, positive sizes,
// leading dims that fit, strides that do not overlap D's batches, sizes whose
// extents do not overflow); an invalid_engine error names the field.
Expected<MatmulParams> decode_matmul_params(std::string_view bytes);

std::string_view matmul_epilogue_name(MatmulEpilogue e);  // "none", "relu", "gelu_tanh"
// "fp32 [2x] 128x768x3072 A^T bias+gelu_tanh" for reports.
std::string describe_matmul(const MatmulParams& p);

}  // namespace graphc::engine
