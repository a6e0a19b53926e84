#include "target/fp8_gemm_rules.h"

#include "target/cuda/cuda_target.h"

namespace graphc::target {

Status fp8_gemm_target_takes(const Target* target, int64_t m, int64_t n, int64_t k) {
  if (!target) return Status::ok_status();
  const auto* cuda = dynamic_cast<const CudaTarget*>(target);
  if (!cuda) return unsupported("the {} target has no float8 GEMM", target->name());
  RETURN_IF_ERROR(cublaslt_fp8_arch_ok(cuda->options().min_sm));
  return cublaslt_fp8_takes(m, n, k, cuda->options().gemm);
}

}  // namespace graphc::target
