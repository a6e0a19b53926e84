// The by-value block a Loop's control kernel takes after its pointers
// (emit/cuda/cuda_loop_control.h writes the kernel, runtime/loop_launch.cpp
// passes the block): the same 16 bytes on both sides.
#pragma once

#include <cstdint>

namespace graphc::engine {

struct LoopLaunchParams {
  uint64_t handle = 0;  // the WHILE node's CUgraphConditionalHandle (mode kLoopModeGraph)
  int32_t mode = 0;     // kLoopModeStep | kLoopModeGraph
  int32_t pad = 0;
};
static_assert(sizeof(LoopLaunchParams) == 16, "the control kernel's parameter layout");

// End of an iteration: the next iteration number and the body's condition
// (else: iteration 0 and the Loop's condition input).
inline constexpr int32_t kLoopModeStep = 1;
// Inside a CUDA graph: also set the WHILE node's handle.
inline constexpr int32_t kLoopModeGraph = 2;

}  // namespace graphc::engine
