// What the runtime executes, independent of how it was stored: one code image
// for this device, where every tensor lives, and the launch list. The engine
// reader (engine_format/) fills it from a validated engine file; tests can
// build one directly.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/status.h"

namespace graphc::runtime {

struct TensorSlot {
  enum class Location { kArena, kWeights, kInput, kOutput };
  std::string name;
  Location location = Location::kArena;
  int64_t offset = 0;  // into the arena or the weights; unused for inputs/outputs
  int64_t bytes = 0;
};

struct Launch {
  int32_t module = -1;  // index into Executable::images (-1 for a copy)
  std::string
      entry;  // kernel function name in the module; "" = copy args[0] -> args[1] (dst's bytes)
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t shared_bytes = 0;
  std::vector<int32_t> args;  // tensor slot indices, passed as device pointers in order
};

struct Executable {
  std::vector<std::string> images;  // CUBIN or PTX text for this device, one per module
  std::vector<TensorSlot> tensors;
  std::vector<Launch> launches;
  int64_t arena_bytes = 0;
  std::string weights;                   // copied to the device once
  std::vector<int32_t> inputs, outputs;  // slot indices, in binding order
};

struct RunOptions {
  bool cuda_graph = true;  // replay the launch sequence as one CUDA graph
};

// One loaded engine on device 0: module, weights and arena allocated once.
// Not thread-safe: use one Session per thread (each has its own arena).
class Session {
 public:
  static Expected<std::unique_ptr<Session>> create(const Executable& exe, RunOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Host bytes in (one per input slot, exact sizes), host bytes out.
  Status run(const std::vector<std::string>& inputs, std::vector<std::string>& outputs);
  // Device time of the last run's launch sequence, in milliseconds (CUDA events).
  float last_gpu_ms() const { return last_ms_; }
  // Runs the launches `iterations` times back to back (inputs already on the
  // device); returns each iteration's CUDA-event time in milliseconds.
  Expected<std::vector<float>> time_iterations(int iterations);

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  Status enqueue();
  std::unique_ptr<Impl> impl_;
  float last_ms_ = 0;
};

}  // namespace graphc::runtime
