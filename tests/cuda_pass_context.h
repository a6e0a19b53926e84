// An optimizer context for the CUDA target, as graphc build makes one: the
// channels-last and split-library-epilogues passes ask it what cuDNN and
// cuBLASLt take. A plain PassContext (no target) skips both.
#pragma once

#include <catch2/catch.hpp>

#include <memory>

#include "optimizer/pass.h"
#include "target/cuda/cuda_target.h"

namespace graphc::testing {

inline optimizer::PassContext cuda_pass_context(const target::CudaOptions& options = {}) {
  optimizer::PassContext ctx;
  ctx.target = std::make_shared<target::CudaTarget>(options);
  return ctx;
}

// `g` through the passes with --int8-gemm's int8/float8 GEMMs and convs on
// (off in graphc build by default), for the target `lowering` describes.
inline ir::Graph optimized_int8_gemm(const ir::Graph& g, const target::CudaOptions& lowering = {},
                                     optimizer::Precision precision = optimizer::Precision::kFp32) {
  ir::Graph opt = g;
  optimizer::PassContext ctx = cuda_pass_context(lowering);
  ctx.int8_gemm = true;
  ctx.precision = precision;
  Status st = optimizer::run_passes(opt, ctx);
  INFO(st.message());
  REQUIRE(st.ok());
  return opt;
}

}  // namespace graphc::testing
