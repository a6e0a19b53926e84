// An optimizer context for the CUDA target, as graphc build makes one: the
// channels-last and split-library-epilogues passes ask it what cuDNN and
// cuBLASLt take. A plain PassContext (no target) skips both.
#pragma once

#include <memory>

#include "optimizer/pass.h"
#include "target/cuda/cuda_target.h"

namespace graphc::testing {

inline optimizer::PassContext cuda_pass_context(const target::CudaOptions& options = {}) {
  optimizer::PassContext ctx;
  ctx.target = std::make_shared<target::CudaTarget>(options);
  return ctx;
}

}  // namespace graphc::testing
