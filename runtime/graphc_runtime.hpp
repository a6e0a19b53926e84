// graphc runtime C++ API: RAII classes over the C API (graphc_runtime.h),
// header-only, so the library's binary interface stays the C one (stable,
// and the only symbols libgraphc_runtime exports) while C++ programs get
// destructors, std::string/std::vector and exceptions. Every failed call
// throws graphc::Error carrying the C status and graphc's message.
//
//   graphc::Engine engine("model.engine");            // device 0
//   graphc::Context ctx = engine.create_context();
//   ctx.set_tensor_address("x", device_ptr);           // optional: else its own buffer
//   ctx.enqueue(stream);  ctx.synchronize();
//
// An Engine may be shared by threads; use one Context per thread, as with
// the C API (docs/runtime-api.md).
#ifndef GRAPHC_RUNTIME_HPP_
#define GRAPHC_RUNTIME_HPP_

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graphc_runtime.h"

namespace graphc {

class Error : public std::runtime_error {
 public:
  Error(graphc_status status, const std::string& what)
      : std::runtime_error(std::string(graphc_status_name(status)) + ": " + what),
        status_(status) {}
  graphc_status status() const noexcept { return status_; }

 private:
  graphc_status status_;
};

namespace detail {
inline void check(graphc_status status) {
  if (status != GRAPHC_OK) throw Error(status, graphc_last_error());
}
struct EngineDeleter {
  void operator()(graphc_engine* e) const noexcept { graphc_engine_destroy(e); }
};
struct ContextDeleter {
  void operator()(graphc_context* c) const noexcept { graphc_context_destroy(c); }
};
}  // namespace detail

struct Binding {
  std::string name;
  bool is_input = false;
  int32_t dtype = 0;  // graphc_dtype (ONNX numbering)
  std::vector<int64_t> shape;
  uint64_t bytes = 0;  // exact size of the binding's buffer
};

struct LaunchTiming {
  std::string name, kind, onnx_nodes;  // onnx_nodes ", "-separated
  double median_us = 0, min_us = 0, max_us = 0;
};

class Context;

// A loaded engine: code for this GPU, weights uploaded once. Copies share it.
class Engine {
 public:
  explicit Engine(const std::string& path, int device = 0) {
    graphc_engine* e = nullptr;
    detail::check(graphc_engine_load_on_device(path.c_str(), device, &e));
    handle_.reset(e, detail::EngineDeleter());
  }

  // Inputs first (graph order), then outputs.
  std::vector<Binding> bindings() const {
    int32_t n = 0;
    detail::check(graphc_engine_num_bindings(handle_.get(), &n));
    std::vector<Binding> out;
    for (int32_t i = 0; i < n; ++i) {
      graphc_binding_info info{};
      detail::check(graphc_engine_binding_info(handle_.get(), i, &info));
      out.push_back({info.name, info.is_input != 0, info.dtype,
                     std::vector<int64_t>(info.shape, info.shape + info.rank), info.bytes});
    }
    return out;
  }

  int32_t binding_index(const std::string& name) const {
    int32_t index = -1;
    detail::check(graphc_engine_binding_index(handle_.get(), name.c_str(), &index));
    return index;
  }

  inline Context create_context() const;

  // The weights of the engine file at `path` (the same engine but for its
  // weights: graphc refit), in place; no context may run meanwhile
  // (graphc_engine_refit).
  void refit(const std::string& path) {
    detail::check(graphc_engine_refit(handle_.get(), path.c_str()));
  }

  // Shape ranges: how many profiles (1 for fixed shapes) and an input's
  // min/opt/max shapes in one of them.
  int32_t num_profiles() const {
    int32_t n = 0;
    detail::check(graphc_engine_num_profiles(handle_.get(), &n));
    return n;
  }
  struct InputRange {
    std::vector<int64_t> min, opt, max;
  };
  InputRange input_range(const std::string& name, int32_t profile = 0) const {
    InputRange r{std::vector<int64_t>(GRAPHC_MAX_RANK), std::vector<int64_t>(GRAPHC_MAX_RANK),
                 std::vector<int64_t>(GRAPHC_MAX_RANK)};
    int32_t rank = 0;
    detail::check(graphc_engine_input_range(handle_.get(), name.c_str(), profile, r.min.data(),
                                            r.opt.data(), r.max.data(), &rank));
    for (auto* v : {&r.min, &r.opt, &r.max}) v->resize(static_cast<size_t>(rank));
    return r;
  }

  graphc_engine* get() const noexcept { return handle_.get(); }

 private:
  std::shared_ptr<graphc_engine> handle_;
};

// Per-thread execution state: its own arena, buffers and CUDA graph.
class Context {
 public:
  explicit Context(const Engine& engine) {
    graphc_context* c = nullptr;
    detail::check(graphc_context_create(engine.get(), &c));
    handle_.reset(c);
  }

  // Caller-owned device memory (CUdeviceptr / cudaMalloc pointer) for a
  // binding; nullptr restores the context's own buffer.
  void set_tensor_address(const std::string& name, void* device_ptr) {
    detail::check(graphc_context_set_tensor_address(handle_.get(), name.c_str(), device_ptr));
  }
  void* tensor_address(const std::string& name) const {
    void* ptr = nullptr;
    detail::check(graphc_context_get_tensor_address(handle_.get(), name.c_str(), &ptr));
    return ptr;
  }

  // Shape ranges: the profile, an input's shape from the next enqueue on,
  // and any binding's shape at the inputs' current shapes.
  void set_profile(int32_t profile) {
    detail::check(graphc_context_set_profile(handle_.get(), profile));
  }
  void set_input_shape(const std::string& name, const std::vector<int64_t>& dims) {
    detail::check(graphc_context_set_input_shape(handle_.get(), name.c_str(), dims.data(),
                                                 static_cast<int32_t>(dims.size())));
  }
  std::vector<int64_t> tensor_shape(const std::string& name) const {
    std::vector<int64_t> dims(GRAPHC_MAX_RANK);
    int32_t rank = 0;
    detail::check(graphc_context_get_tensor_shape(handle_.get(), name.c_str(), dims.data(),
                                                  GRAPHC_MAX_RANK, &rank, nullptr));
    dims.resize(static_cast<size_t>(rank));
    return dims;
  }
  uint64_t tensor_bytes(const std::string& name) const {
    int64_t dims[GRAPHC_MAX_RANK];
    int32_t rank = 0;
    uint64_t bytes = 0;
    detail::check(graphc_context_get_tensor_shape(handle_.get(), name.c_str(), dims,
                                                  GRAPHC_MAX_RANK, &rank, &bytes));
    return bytes;
  }

  // `stream`: a CUstream / cudaStream_t, or nullptr for the context's own.
  void enqueue(void* stream = nullptr) {
    detail::check(graphc_context_enqueue(handle_.get(), stream));
  }
  void synchronize() { detail::check(graphc_context_synchronize(handle_.get())); }

  // Host buffers in binding order, each exactly its binding's bytes.
  void run_host(const std::vector<std::pair<const void*, uint64_t>>& inputs,
                const std::vector<std::pair<void*, uint64_t>>& outputs) {
    std::vector<const void*> in_ptrs;
    std::vector<uint64_t> in_bytes;
    for (const auto& [p, n] : inputs) {
      in_ptrs.push_back(p);
      in_bytes.push_back(n);
    }
    std::vector<void*> out_ptrs;
    std::vector<uint64_t> out_bytes;
    for (const auto& [p, n] : outputs) {
      out_ptrs.push_back(p);
      out_bytes.push_back(n);
    }
    detail::check(graphc_context_run_host(handle_.get(), in_ptrs.data(), in_bytes.data(),
                                          static_cast<int32_t>(in_ptrs.size()), out_ptrs.data(),
                                          out_bytes.data(), static_cast<int32_t>(out_ptrs.size())));
  }

  // Every launch timed on its own over `iterations` runs (median per launch).
  std::vector<LaunchTiming> profile(int32_t iterations = 100) {
    int32_t n = 0;
    detail::check(graphc_context_profile(handle_.get(), iterations, &n));
    std::vector<LaunchTiming> out;
    for (int32_t i = 0; i < n; ++i) {
      graphc_launch_timing t{};
      detail::check(graphc_context_profile_launch(handle_.get(), i, &t));
      out.push_back({t.name, t.kind, t.onnx_nodes, t.median_us, t.min_us, t.max_us});
    }
    return out;
  }

  graphc_context* get() const noexcept { return handle_.get(); }

 private:
  std::unique_ptr<graphc_context, detail::ContextDeleter> handle_;
};

inline Context Engine::create_context() const { return Context(*this); }

// The runtime library's version ("0.1.0").
inline std::string runtime_version() { return graphc_runtime_version(); }

}  // namespace graphc

#endif  // GRAPHC_RUNTIME_HPP_
