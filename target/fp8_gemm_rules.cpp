#include "target/fp8_gemm_rules.h"

#include <cmath>

#include "target/cuda/cuda_target.h"

namespace graphc::target {

using ir::DType;

Status fp8_gemm_target_takes(const Target* target, int64_t m, int64_t n, int64_t k) {
  if (!target) return Status::ok_status();
  const auto* cuda = dynamic_cast<const CudaTarget*>(target);
  if (!cuda) return unsupported("the {} target has no float8 GEMM", target->name());
  RETURN_IF_ERROR(cublaslt_fp8_arch_ok(cuda->options().min_sm));
  return cublaslt_fp8_takes(m, n, k, cuda->options().gemm);
}

Status fp8_epilogue_bias_ok(DType d) {
  if (d == DType::kFloat16 || d == DType::kBFloat16) return Status::ok_status();
  return unsupported(
      "a {} bias (cuBLASLt's FP8 GEMM with a float32 D takes a bfloat16 bias; rounding it "
      "would change the result)",
      ir::dtype_name(d));
}

Status fp8_epilogue_quantize_ok(DType from, DType to, double y_scale, bool saturate,
                                bool c_or_bias) {
  if (to != DType::kFloat8E4M3FN)
    return unsupported("a QuantizeLinear to {} (cuBLASLt's FP8 D here: float8e4m3fn)",
                       ir::dtype_name(to));
  if (!saturate)
    return unsupported("a QuantizeLinear with saturate=0 (cuBLASLt's float8 D saturates)");
  if (!(y_scale > 0) || !std::isfinite(y_scale) || !std::isfinite(1.0 / y_scale))
    return unsupported("a QuantizeLinear scale {} (positive, finite, with a finite inverse)",
                       y_scale);
  if (from != DType::kFloat16 && from != DType::kBFloat16 && from != DType::kFloat32)
    return unsupported("a QuantizeLinear of {}", ir::dtype_name(from));
  if (from == DType::kFloat32 && c_or_bias)
    return unsupported(
        "a float8 D with a float32 C or bias (cuBLASLt takes them float16/bfloat16 there)");
  return Status::ok_status();
}

}  // namespace graphc::target
