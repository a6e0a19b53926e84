// Whether the engine's target runs fuse-qdq-matmul's float8 GEMM (a
// MatMulInteger of float8 e4m3fn operands, float32 out): graphc has no
// generated float8 GEMM, so the pass asks before it rewrites and keeps the
// float GEMM (Q/DQ as elementwise ops) where the answer is no.
#pragma once

#include <cstdint>

#include "support/status.h"
#include "target/target.h"

namespace graphc::target {

// OK when the target takes an M x N x K float8 GEMM: the CUDA target's
// cuBLASLt FP8 GEMM (sm_89 or newer for every --arch, --gemm, N and K
// multiples of 16, large enough in auto mode); else why not. OK without a
// target (a graph for the reference executor).
Status fp8_gemm_target_takes(const Target* target, int64_t m, int64_t n, int64_t k);

}  // namespace graphc::target
