// What the Python extension needs from graphc, in standard C++ types only:
// build and inspect through the CLI's own functions (cmd/build_pipeline.h,
// cmd/inspect_model.h), engines and contexts through the runtime's C++
// classes. The extension (python/src/module.cpp) includes nothing else of
// graphc, so it compiles against this header and a prebuilt archive alone
// (scripts/gpu_python_session.sh builds it that way on the GPU machine).
// Every failure throws graphc::py::Error; nothing here touches Python.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace graphc::py {

// A graphc Status as an exception: `code` is the ErrorCode's snake_case name
// ("invalid_argument", "not_found", ..., and "no_device" for a missing CUDA
// driver or GPU); what() is graphc's message.
class Error : public std::runtime_error {
 public:
  Error(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// The model: a file, or its bytes (`display_name` names it in errors).
struct ModelSource {
  std::string path;
  std::string bytes;
  std::string display_name = "<model bytes>";
};

// The flags `graphc build` and `graphc inspect` share, spelled as the CLI's.
struct CompileFlags {
  std::vector<std::string> shapes;  // "name:1x3x224x224" (or "name:scalar")
  // Shape ranges, as --min-shape/--opt-shape/--max-shape ("name:1x8x64") for
  // profile 0 and --shape-profile ("name:MIN/OPT/MAX,...") for each further one.
  std::vector<std::string> min_shapes, opt_shapes, max_shapes, profiles;
  std::string precision = "fp32";   // fp32, fp16, bf16
  bool convert_io = false;
  std::vector<std::string> disable_passes;
  bool no_optimize = false;
  std::string gemm = "auto", conv = "auto", attention = "auto";
  bool allow_tf32 = false;
};

struct BuildRequest {
  ModelSource model;
  CompileFlags flags;
  std::vector<std::string> archs;  // empty: this machine's GPU
  std::string output;              // set: write the engine here atomically
  bool tune = false;
  std::string timing_cache;
  bool nvrtc_cache = true;
  int jobs = 0;
};

// The engine's bytes, or "" when written to request.output.
std::string build(const BuildRequest& request);

// The `graphc inspect --json` document of a model or an engine (by its magic).
std::string inspect_json(const ModelSource& model, const CompileFlags& flags);

struct Binding {
  std::string name;
  bool is_input = false;
  int32_t dtype = 0;  // ONNX TensorProto numbering
  std::vector<int64_t> shape;
  int64_t bytes = 0;
};

// The bindings of an engine file or engine bytes, read without a GPU.
std::vector<Binding> engine_bindings(const ModelSource& engine);

class Context;

// An engine loaded on one device; shared by any number of contexts and threads.
class Engine {
 public:
  static std::shared_ptr<Engine> load(const ModelSource& engine, int device);
  ~Engine();

  const std::vector<Binding>& bindings() const;
  int device() const;
  std::string device_name() const;
  int64_t weights_bytes() const;
  int64_t arena_bytes() const;
  std::unique_ptr<Context> create_context() const;
  // Shape ranges: whether the engine serves them, how many profiles (1 for
  // fixed shapes) and an input's (min, opt, max) shapes in one.
  bool has_shape_ranges() const;
  int num_profiles() const;
  std::vector<std::vector<int64_t>> input_range(const std::string& name, int profile) const;

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One thread's execution state (ExecutionContext): not for two threads at once.
class Context {
 public:
  ~Context();

  // Device pointers, one per binding in binding order (inputs, then
  // outputs), each at least the binding's bytes. Enqueues on `stream` (0: the
  // context's own) and, with `synchronize`, waits for it.
  void run_device(const std::vector<uint64_t>& addresses, uint64_t stream, bool synchronize);

  // Host pointers, one per binding in binding order, each exactly the
  // binding's bytes: copies in, runs, copies out and waits.
  void run_host(const std::vector<uint64_t>& addresses);

  void synchronize();
  uint64_t stream() const;  // the context's own CUstream

  // Engines with shape ranges: the profile, each input's shape (binding
  // order; checked against the profile), and every binding's shape and bytes
  // at the inputs' current shapes (binding order).
  void set_profile(int profile);
  void set_input_shapes(const std::vector<std::vector<int64_t>>& shapes);
  std::vector<std::vector<int64_t>> binding_shapes();
  std::vector<int64_t> binding_bytes();

  // The C++ baseline for the Python overhead: mean host µs per enqueue of
  // `iterations` enqueues on `stream` with the given device addresses bound,
  // then a synchronize (outside the timing).
  double time_enqueue_us(const std::vector<uint64_t>& addresses, uint64_t stream, int iterations);

  struct Impl;
  explicit Context(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphc::py
