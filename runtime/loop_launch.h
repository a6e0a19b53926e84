// Running a Loop of the launch sequence (a control kernel with
// KernelLaunch::loop_body, then its body; emit/plan/loop_plan.h). Two ways:
//
//  - In a CUDA graph (capture): the control kernel (mode 0) sets a
//    conditional handle, a WHILE conditional node follows it, and its body
//    graph is captured from a stream of its own (cuStreamBeginCaptureToGraph):
//    the body's launches, then the control kernel again (mode 1), which sets
//    the handle for the next iteration. The whole loop runs on the GPU inside
//    the engine's one graph; nested loops nest the same way.
//  - Host-driven, where the driver has no conditional nodes (before CUDA
//    12.4) or the context runs without a CUDA graph: the control kernel
//    writes its decision to a flag the host reads after each launch (one
//    stream synchronization per iteration). Chosen over a predicated unroll
//    to a build-time maximum: the same engine file runs either way, any trip
//    count is exact, and nothing runs for iterations that do not happen.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "engine_format/loop_params.h"
#include "runtime/cuda_driver.h"
#include "support/status.h"

namespace graphc::runtime {

struct LoopRun {
  const DriverApi& api;
  CUcontext context = nullptr;
  size_t body_begin = 0, body_end = 0;  // launch indices of the body
  CUdeviceptr flag = 0;                 // the control kernel's int32 flag
  // Launches the control kernel with `params` on `stream`.
  std::function<Status(CUstream, const engine::LoopLaunchParams&)> control;
  // Launches [begin, end) on `stream` (nested loops included).
  std::function<Status(size_t begin, size_t end, CUstream)> body;
  // A stream for capturing the body (one per nesting depth), owned elsewhere.
  CUstream body_stream = nullptr;
};

// Captures the loop into the graph `stream` is capturing.
Status capture_loop(const LoopRun& run, CUstream stream);
// Runs the loop from the host (synchronizes `stream` once per iteration).
Status run_loop_on_host(const LoopRun& run, CUstream stream);

}  // namespace graphc::runtime
