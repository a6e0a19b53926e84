// Internal to runtime/: the timing loop behind ExecutionContext::profile.
#pragma once

#include <functional>
#include <vector>

#include "runtime/engine_impl.h"

namespace graphc::runtime {

// Names, kinds and ONNX nodes of every step of `e`'s launch sequence: its
// launches, then its final output copies (median fields zero).
std::vector<LaunchTiming> profile_step_names(const Engine::Impl& e);

// Runs `launch_step(i)` for every step, options.warmup_iterations +
// options.iterations times, each between two CUDA events on `stream`, with
// the stream held back while a chunk of steps is enqueued; fills the medians
// of `steps`. Synchronizes `stream` before returning, also on errors.
Expected<LaunchProfile> profile_launch_steps(const DriverApi& api, std::vector<LaunchTiming> steps,
                                             const ProfileOptions& options, CUstream stream,
                                             const std::function<Status(size_t)>& launch_step);

// The fastest of `reps` runs of each of `ways` (each enqueues one launch's
// work on `stream`; captured once into a CUDA graph, whose launches are
// timed), in ms, the ways interleaved so clock changes hit them alike.
// Synchronizes `stream`. For choosing between two implementations of one
// launch at run time (cuDNN's attention or the generated kernel at a
// shape); each way must be capturable (cuDNN run once before).
Expected<std::vector<float>> fastest_runs_ms(const DriverApi& api, CUstream stream,
                                             const std::vector<std::function<Status()>>& ways,
                                             int reps);

}  // namespace graphc::runtime
