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

}  // namespace graphc::runtime
