// Which MatMulInteger nodes the generated int8 tensor-core GEMM takes as they
// are (emit/cuda/cuda_gemm_int8.cpp): int8 x int8 with no zero points, A of
// rank >= 2 and a 2-D B, int32 out. The quantized rewrites leave these in the
// graph (lower-integer-contractions makes every other one an int32 MatMul).
#pragma once

#include "ir/graph.h"
#include "support/status.h"

namespace graphc::target {

// OK when the int8 tensor-core GEMM takes `n`; else why not.
Status int8_gemm_takes(const ir::Graph& g, const ir::Node& n);

}  // namespace graphc::target
