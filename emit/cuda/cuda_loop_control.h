// The control kernel of a Loop on a run-time trip count or condition
// (emit/plan/loop_plan.cpp). One thread; the runtime launches it before the
// loop (mode 0: iteration 0, the condition from the Loop's input) and at the
// end of every iteration of the body (mode 1: the next iteration number, the
// condition the body gave). Either way it stores the iteration number and
// condition the body reads, and whether to run the body (again) both in a
// flag (for a host-driven loop) and, when the runtime says it captures a CUDA
// graph (mode bit 2), in the WHILE node's conditional handle.
//
//   entry(const int64/int32* trip_count,   if the Loop has M
//         const unsigned char* cond_in,    if the Loop has cond
//         const unsigned char* body_cond,  the body's condition output
//         long long* iter, unsigned char* cond, int* flag,
//         GraphcLoopLaunch launch)         by value: engine::LoopLaunchParams
#pragma once

#include <cstdint>
#include <string>

#include "engine_format/loop_params.h"
#include "ir/dtype.h"
#include "support/status.h"

namespace graphc::emit {

struct LoopControlKernel {
  std::string entry;
  std::string source;
};

// `trip_count`: kUndefined when the Loop has no M, else its integer dtype
// (int64 or int32; others are refused).
Expected<LoopControlKernel> loop_control_kernel(ir::DType trip_count, bool has_cond);

}  // namespace graphc::emit
