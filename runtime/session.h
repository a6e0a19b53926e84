// Session: the simplest way to run an Executable once or in a timing loop
// (one Engine and one ExecutionContext together, host bytes in and out).
// driver::execute_on_gpu and tests use it; programs that share an engine
// between threads use Engine + ExecutionContext (runtime/engine.h) directly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/executable.h"
#include "support/status.h"

namespace graphc::runtime {

struct RunOptions {
  bool cuda_graph = true;  // replay the launch sequence as one CUDA graph
};

// Not thread-safe: use one Session per thread (each has its own arena).
class Session {
 public:
  static Expected<std::unique_ptr<Session>> create(const Executable& exe, RunOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Host bytes in (one per input binding, exact sizes), host bytes out.
  Status run(const std::vector<std::string>& inputs, std::vector<std::string>& outputs);
  // Device time of the last run's launch sequence, in milliseconds (CUDA events).
  float last_gpu_ms() const { return last_ms_; }
  // Runs the launches `iterations` times back to back (inputs already on the
  // device); returns each iteration's CUDA-event time in milliseconds.
  Expected<std::vector<float>> time_iterations(int iterations);

  Engine& engine() { return *engine_; }
  ExecutionContext& context() { return *context_; }

 private:
  Session() = default;
  std::shared_ptr<Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  std::unique_ptr<GpuTimer> timer_;
  float last_ms_ = 0;
};

}  // namespace graphc::runtime
