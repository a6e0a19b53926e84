// The C API (runtime/graphc_runtime.h) over runtime::Engine /
// ExecutionContext: Status becomes a graphc_status plus a per-thread message;
// no exception crosses the C boundary.
#include "runtime/graphc_runtime.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "support/version.h"

// Handles carry a magic number so a NULL, a destroyed handle (still in memory)
// or a handle of the other kind is an error, not a crash.
struct graphc_engine {
  static constexpr uint64_t kMagic = 0x4752504845'4e47ull;  // "GRPHENG"
  uint64_t magic = kMagic;
  std::shared_ptr<graphc::runtime::Engine> engine;
};

struct graphc_context {
  static constexpr uint64_t kMagic = 0x4752504843'5458ull;  // "GRPHCTX"
  uint64_t magic = kMagic;
  std::unique_ptr<graphc::runtime::ExecutionContext> context;
  // The last graphc_context_profile, and its ONNX node lists joined (the
  // strings graphc_launch_timing points into).
  graphc::runtime::LaunchProfile profile;
  std::vector<std::string> profile_nodes;
};

namespace {

using graphc::ErrorCode;
using graphc::Status;

thread_local std::string g_last_error;

graphc_status to_c(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return GRAPHC_OK;
    case ErrorCode::kInvalidArgument: return GRAPHC_ERROR_INVALID_ARGUMENT;
    case ErrorCode::kNotFound: return GRAPHC_ERROR_NOT_FOUND;
    case ErrorCode::kInvalidModel:
    case ErrorCode::kInvalidEngine: return GRAPHC_ERROR_INVALID_ENGINE;
    case ErrorCode::kUnsupported: return GRAPHC_ERROR_UNSUPPORTED;
    case ErrorCode::kIo: return GRAPHC_ERROR_IO;
    case ErrorCode::kOutOfRange: return GRAPHC_ERROR_OUT_OF_RANGE;
    case ErrorCode::kDevice: return GRAPHC_ERROR_DEVICE;
    case ErrorCode::kInternal: return GRAPHC_ERROR_INTERNAL;
  }
  return GRAPHC_ERROR_INTERNAL;
}

graphc_status fail(graphc_status code, std::string message) {
  g_last_error = std::move(message);
  return code;
}

graphc_status result(const Status& st) {
  if (st.ok()) return GRAPHC_OK;
  return fail(to_c(st.code()), st.message());
}

#define RETURN_STATUS_AS_C(expr)               \
  do {                                         \
    ::graphc::Status status_ = (expr);         \
    if (!status_.ok()) return result(status_); \
  } while (0)

// Runs `body` with the last error cleared; exceptions become status codes.
template <typename Fn>
graphc_status guarded(Fn&& body) {
  g_last_error.clear();
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(GRAPHC_ERROR_OUT_OF_RANGE, "out of host memory");
  } catch (const std::exception& e) {
    return fail(GRAPHC_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  }
}

bool valid(const graphc_engine* e) { return e && e->magic == graphc_engine::kMagic && e->engine; }
bool valid(const graphc_context* c) {
  return c && c->magic == graphc_context::kMagic && c->context;
}

graphc_status bad_handle(const char* what, const void* p) {
  return fail(GRAPHC_ERROR_INVALID_ARGUMENT,
              p ? std::string("not a valid ") + what + " handle (destroyed, or another type)"
                : std::string("the ") + what + " handle is NULL");
}

graphc_status null_arg(const char* name) {
  return fail(GRAPHC_ERROR_INVALID_ARGUMENT, std::string(name) + " is NULL");
}

}  // namespace

extern "C" {

const char* graphc_runtime_version(void) { return graphc::kVersion; }

const char* graphc_last_error(void) { return g_last_error.c_str(); }

const char* graphc_status_name(graphc_status status) {
  switch (status) {
    case GRAPHC_OK: return "GRAPHC_OK";
    case GRAPHC_ERROR_INVALID_ARGUMENT: return "GRAPHC_ERROR_INVALID_ARGUMENT";
    case GRAPHC_ERROR_NOT_FOUND: return "GRAPHC_ERROR_NOT_FOUND";
    case GRAPHC_ERROR_INVALID_ENGINE: return "GRAPHC_ERROR_INVALID_ENGINE";
    case GRAPHC_ERROR_UNSUPPORTED: return "GRAPHC_ERROR_UNSUPPORTED";
    case GRAPHC_ERROR_NO_DEVICE: return "GRAPHC_ERROR_NO_DEVICE";
    case GRAPHC_ERROR_DEVICE: return "GRAPHC_ERROR_DEVICE";
    case GRAPHC_ERROR_IO: return "GRAPHC_ERROR_IO";
    case GRAPHC_ERROR_OUT_OF_RANGE: return "GRAPHC_ERROR_OUT_OF_RANGE";
    case GRAPHC_ERROR_INTERNAL: return "GRAPHC_ERROR_INTERNAL";
  }
  return "GRAPHC_ERROR_UNKNOWN";
}

const char* graphc_dtype_name(int32_t dtype) {
  switch (dtype) {
    case GRAPHC_DTYPE_FLOAT32: return "float32";
    case GRAPHC_DTYPE_UINT8: return "uint8";
    case GRAPHC_DTYPE_INT8: return "int8";
    case GRAPHC_DTYPE_UINT16: return "uint16";
    case GRAPHC_DTYPE_INT16: return "int16";
    case GRAPHC_DTYPE_INT32: return "int32";
    case GRAPHC_DTYPE_INT64: return "int64";
    case GRAPHC_DTYPE_BOOL: return "bool";
    case GRAPHC_DTYPE_FLOAT16: return "float16";
    case GRAPHC_DTYPE_FLOAT64: return "float64";
    case GRAPHC_DTYPE_UINT32: return "uint32";
    case GRAPHC_DTYPE_UINT64: return "uint64";
    case GRAPHC_DTYPE_BFLOAT16: return "bfloat16";
  }
  return "unknown";
}

graphc_status graphc_engine_load_on_device(const char* path, int device, graphc_engine** engine) {
  return guarded([&] {
    if (!engine) return null_arg("the engine output pointer");
    *engine = nullptr;
    if (!path) return null_arg("path");
    // The file is checked first, so a bad file is reported as such on any machine.
    auto file = graphc::engine::EngineFile::open(path);
    if (!file.ok()) return result(file.status());
    auto driver = graphc::runtime::load_driver();
    if (!driver.ok()) {
      Status weights = (*file)->for_each_weights_chunk(
          graphc::engine::kWeightsChunk, [](uint64_t, std::string_view) { return Status::ok_status(); });
      if (!weights.ok()) return result(weights);
      return fail(GRAPHC_ERROR_NO_DEVICE, driver.status().message());
    }
    graphc::runtime::EngineOptions options;
    options.device = device;
    // The weights are streamed from the file to the device, never held in host memory.
    auto loaded = graphc::runtime::load_engine(std::move(*file), options);
    if (!loaded.ok()) return result(loaded.status().with_context(path));
    auto handle = std::make_unique<graphc_engine>();
    handle->engine = std::move(*loaded);
    *engine = handle.release();
    return GRAPHC_OK;
  });
}

graphc_status graphc_engine_load(const char* path, graphc_engine** engine) {
  return graphc_engine_load_on_device(path, 0, engine);
}

graphc_status graphc_engine_refit(graphc_engine* engine, const char* path) {
  return guarded([&] {
    if (!valid(engine)) return bad_handle("engine", engine);
    if (!path) return null_arg("path");
    auto file = graphc::engine::EngineFile::open(path);
    if (!file.ok()) return result(file.status());
    return result(engine->engine->refit_weights(**file));
  });
}

void graphc_engine_destroy(graphc_engine* engine) {
  if (!valid(engine)) return;
  engine->magic = 0;
  delete engine;  // contexts hold their own reference to the engine
}

graphc_status graphc_engine_num_bindings(const graphc_engine* engine, int32_t* count) {
  return guarded([&] {
    if (!valid(engine)) return bad_handle("engine", engine);
    if (!count) return null_arg("count");
    *count = static_cast<int32_t>(engine->engine->bindings().size());
    return GRAPHC_OK;
  });
}

graphc_status graphc_engine_binding_info(const graphc_engine* engine, int32_t index,
                                         graphc_binding_info* info) {
  return guarded([&] {
    if (!valid(engine)) return bad_handle("engine", engine);
    if (!info) return null_arg("info");
    const auto& bindings = engine->engine->bindings();
    if (index < 0 || static_cast<size_t>(index) >= bindings.size())
      return fail(GRAPHC_ERROR_INVALID_ARGUMENT, "binding index " + std::to_string(index) +
                                                     " is out of range (the engine has " +
                                                     std::to_string(bindings.size()) + ")");
    const auto& b = bindings[static_cast<size_t>(index)];
    info->name = b.name.c_str();
    info->is_input = b.is_input ? 1 : 0;
    info->dtype = b.dtype;
    info->rank = static_cast<int32_t>(b.shape.size());
    info->shape = b.shape.data();
    info->bytes = static_cast<uint64_t>(b.bytes);
    return GRAPHC_OK;
  });
}

graphc_status graphc_engine_binding_index(const graphc_engine* engine, const char* name,
                                          int32_t* index) {
  return guarded([&] {
    if (!valid(engine)) return bad_handle("engine", engine);
    if (!name) return null_arg("name");
    if (!index) return null_arg("index");
    auto i = engine->engine->binding_index(name);
    if (!i) return fail(GRAPHC_ERROR_NOT_FOUND, std::string("no binding named '") + name + "'");
    *index = *i;
    return GRAPHC_OK;
  });
}

graphc_status graphc_context_create(graphc_engine* engine, graphc_context** context) {
  return guarded([&] {
    if (!context) return null_arg("the context output pointer");
    *context = nullptr;
    if (!valid(engine)) return bad_handle("engine", engine);
    auto ctx = engine->engine->create_context();
    if (!ctx.ok()) return result(ctx.status());
    auto handle = std::make_unique<graphc_context>();
    handle->context = std::move(*ctx);
    *context = handle.release();
    return GRAPHC_OK;
  });
}

void graphc_context_destroy(graphc_context* context) {
  if (!valid(context)) return;
  context->magic = 0;
  delete context;
}

graphc_status graphc_context_set_tensor_address(graphc_context* context, const char* name,
                                                void* device_ptr) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    if (!name) return null_arg("name");
    return result(context->context->set_tensor_address(
        name, static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(device_ptr))));
  });
}

graphc_status graphc_context_get_tensor_address(const graphc_context* context, const char* name,
                                                void** device_ptr) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    if (!name) return null_arg("name");
    if (!device_ptr) return null_arg("device_ptr");
    auto addr = context->context->tensor_address(name);
    if (!addr.ok()) return result(addr.status());
    *device_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(*addr));
    return GRAPHC_OK;
  });
}

graphc_status graphc_engine_num_profiles(const graphc_engine* engine, int32_t* count) {
  return guarded([&] {
    if (!valid(engine)) return bad_handle("engine", engine);
    if (!count) return null_arg("count");
    *count = engine->engine->num_profiles();
    return GRAPHC_OK;
  });
}

graphc_status graphc_engine_input_range(const graphc_engine* engine, const char* name,
                                        int32_t profile, int64_t* min, int64_t* opt,
                                        int64_t* max, int32_t* rank) {
  return guarded([&] {
    if (!valid(engine)) return bad_handle("engine", engine);
    if (!name) return null_arg("name");
    if (!rank) return null_arg("rank");
    auto r = engine->engine->input_range(name, profile);
    if (!r.ok()) return result(r.status());
    if (r->min.size() > GRAPHC_MAX_RANK)
      return fail(GRAPHC_ERROR_INVALID_ARGUMENT, "rank above GRAPHC_MAX_RANK");
    *rank = static_cast<int32_t>(r->min.size());
    if (min) std::copy(r->min.begin(), r->min.end(), min);
    if (opt) std::copy(r->opt.begin(), r->opt.end(), opt);
    if (max) std::copy(r->max.begin(), r->max.end(), max);
    return GRAPHC_OK;
  });
}

graphc_status graphc_context_set_profile(graphc_context* context, int32_t profile) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    return result(context->context->set_optimization_profile(profile));
  });
}

graphc_status graphc_context_set_input_shape(graphc_context* context, const char* name,
                                             const int64_t* dims, int32_t rank) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    if (!name) return null_arg("name");
    if (rank < 0 || rank > GRAPHC_MAX_RANK)
      return fail(GRAPHC_ERROR_INVALID_ARGUMENT,
                  "rank " + std::to_string(rank) + " is outside [0, GRAPHC_MAX_RANK]");
    if (rank > 0 && !dims) return null_arg("dims");
    return result(context->context->set_input_shape(
        name, std::span<const int64_t>(dims, static_cast<size_t>(rank))));
  });
}

graphc_status graphc_context_get_tensor_shape(graphc_context* context, const char* name,
                                              int64_t* dims, int32_t capacity, int32_t* rank,
                                              uint64_t* bytes) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    if (!name) return null_arg("name");
    if (!rank) return null_arg("rank");
    auto& ctx = *context->context;
    auto shape = ctx.tensor_shape(name);
    if (!shape.ok()) return result(shape.status());
    *rank = static_cast<int32_t>(shape->size());
    if (static_cast<int32_t>(shape->size()) > capacity || (!shape->empty() && !dims))
      return fail(GRAPHC_ERROR_INVALID_ARGUMENT,
                  "'" + std::string(name) + "' has rank " + std::to_string(shape->size()) +
                      "; dims has room for " + std::to_string(capacity));
    std::copy(shape->begin(), shape->end(), dims);
    if (bytes) {
      auto n = ctx.tensor_bytes(*ctx.engine().binding_index(name));
      if (!n.ok()) return result(n.status());
      *bytes = static_cast<uint64_t>(*n);
    }
    return GRAPHC_OK;
  });
}

graphc_status graphc_context_enqueue(graphc_context* context, void* stream) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    return result(context->context->enqueue(static_cast<CUstream>(stream)));
  });
}

graphc_status graphc_context_synchronize(graphc_context* context) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    return result(context->context->synchronize());
  });
}

graphc_status graphc_context_run_host(graphc_context* context, const void* const* inputs,
                                      const uint64_t* input_bytes, int32_t num_inputs,
                                      void* const* outputs, const uint64_t* output_bytes,
                                      int32_t num_outputs) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    auto& ctx = *context->context;
    const auto& engine = ctx.engine();
    if (num_inputs != engine.num_inputs() || num_outputs != engine.num_outputs())
      return fail(GRAPHC_ERROR_INVALID_ARGUMENT,
                  "the engine has " + std::to_string(engine.num_inputs()) + " inputs and " +
                      std::to_string(engine.num_outputs()) + " outputs; got " +
                      std::to_string(num_inputs) + " and " + std::to_string(num_outputs));
    if (num_inputs > 0 && (!inputs || !input_bytes)) return null_arg("inputs or input_bytes");
    if (num_outputs > 0 && (!outputs || !output_bytes)) return null_arg("outputs or output_bytes");
    for (int32_t i = 0; i < num_inputs; ++i) {
      if (!inputs[i] && input_bytes[i]) return null_arg("an input buffer");
      RETURN_STATUS_AS_C(ctx.copy_input_from_host(i, inputs[i], input_bytes[i], nullptr));
    }
    RETURN_STATUS_AS_C(ctx.enqueue(nullptr));
    for (int32_t i = 0; i < num_outputs; ++i) {
      if (!outputs[i] && output_bytes[i]) return null_arg("an output buffer");
      RETURN_STATUS_AS_C(
          ctx.copy_output_to_host(num_inputs + i, outputs[i], output_bytes[i], nullptr));
    }
    return result(ctx.synchronize());
  });
}

graphc_status graphc_context_profile(graphc_context* context, int32_t iterations,
                                     int32_t* num_launches) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    if (!num_launches) return null_arg("num_launches");
    graphc::runtime::ProfileOptions options;
    options.iterations = iterations;
    auto profile = context->context->profile(options);
    if (!profile.ok()) return result(profile.status());
    context->profile = std::move(*profile);
    context->profile_nodes.clear();
    for (const auto& t : context->profile.launches) {
      std::string joined;
      for (const auto& n : t.onnx_nodes) joined += (joined.empty() ? "" : ", ") + n;
      context->profile_nodes.push_back(std::move(joined));
    }
    *num_launches = static_cast<int32_t>(context->profile.launches.size());
    return GRAPHC_OK;
  });
}

graphc_status graphc_context_profile_launch(const graphc_context* context, int32_t index,
                                            graphc_launch_timing* timing) {
  return guarded([&] {
    if (!valid(context)) return bad_handle("context", context);
    if (!timing) return null_arg("timing");
    const auto& launches = context->profile.launches;
    if (index < 0 || static_cast<size_t>(index) >= launches.size())
      return fail(GRAPHC_ERROR_INVALID_ARGUMENT, "launch index " + std::to_string(index) +
                                                     " is out of range (the last profile has " +
                                                     std::to_string(launches.size()) + ")");
    const auto& t = launches[static_cast<size_t>(index)];
    timing->name = t.name.c_str();
    timing->kind = t.kind.c_str();
    timing->onnx_nodes = context->profile_nodes[static_cast<size_t>(index)].c_str();
    timing->median_us = t.median_us;
    timing->min_us = t.min_us;
    timing->max_us = t.max_us;
    return GRAPHC_OK;
  });
}

}  // extern "C"
