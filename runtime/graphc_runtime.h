/* graphc runtime C API: load a graphc engine file on a GPU and run it.
 *
 * Opaque handles, status codes, and a per-thread message for the last error
 * (graphc_last_error). An engine is loaded once per device and may be shared
 * by any number of threads; each thread creates its own context (own arena,
 * own device buffers or the caller's, own CUDA graph). Device pointers and
 * streams are the CUDA driver's / runtime's (CUdeviceptr or the void* from
 * cudaMalloc, CUstream or cudaStream_t), passed as void* so this header needs
 * no CUDA headers. docs/runtime-api.md describes it with an example. */
#ifndef GRAPHC_RUNTIME_H_
#define GRAPHC_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum graphc_status {
  GRAPHC_OK = 0,
  GRAPHC_ERROR_INVALID_ARGUMENT = 1, /* NULL or invalid handle, bad name, size or index */
  GRAPHC_ERROR_NOT_FOUND = 2,        /* no such file or binding */
  GRAPHC_ERROR_INVALID_ENGINE = 3,   /* not a graphc engine, corrupt, or not for this GPU */
  GRAPHC_ERROR_UNSUPPORTED = 4,      /* the engine needs something this runtime lacks */
  GRAPHC_ERROR_NO_DEVICE = 5,        /* no CUDA driver or no CUDA device */
  GRAPHC_ERROR_DEVICE = 6,           /* a CUDA call failed */
  GRAPHC_ERROR_IO = 7,               /* reading a file failed */
  GRAPHC_ERROR_OUT_OF_RANGE = 8,     /* a limit was exceeded */
  GRAPHC_ERROR_INTERNAL = 9          /* a graphc bug */
} graphc_status;

/* Element types use the ONNX TensorProto numbering. */
typedef enum graphc_dtype {
  GRAPHC_DTYPE_FLOAT32 = 1,
  GRAPHC_DTYPE_UINT8 = 2,
  GRAPHC_DTYPE_INT8 = 3,
  GRAPHC_DTYPE_UINT16 = 4,
  GRAPHC_DTYPE_INT16 = 5,
  GRAPHC_DTYPE_INT32 = 6,
  GRAPHC_DTYPE_INT64 = 7,
  GRAPHC_DTYPE_BOOL = 9,
  GRAPHC_DTYPE_FLOAT16 = 10,
  GRAPHC_DTYPE_FLOAT64 = 11,
  GRAPHC_DTYPE_UINT32 = 12,
  GRAPHC_DTYPE_UINT64 = 13,
  GRAPHC_DTYPE_BFLOAT16 = 16
} graphc_dtype;

typedef struct graphc_engine graphc_engine;
typedef struct graphc_context graphc_context;

#define GRAPHC_MAX_RANK 32

typedef struct graphc_binding_info {
  const char* name; /* valid while the engine lives */
  int32_t is_input; /* 1: input, 0: output */
  int32_t dtype;    /* graphc_dtype */
  int32_t rank;
  const int64_t* shape; /* rank dims; valid while the engine lives */
  uint64_t bytes;       /* exact size of the binding's buffer (with shape ranges: the most) */
} graphc_binding_info;

/* The runtime library's version, "MAJOR.MINOR.PATCH". */
const char* graphc_runtime_version(void);
/* The message of this thread's last failed call ("" if none). Valid until the
 * next graphc call on this thread. */
const char* graphc_last_error(void);
/* "GRAPHC_ERROR_NO_DEVICE", ... */
const char* graphc_status_name(graphc_status status);
/* "float32", ...; "unknown" otherwise. */
const char* graphc_dtype_name(int32_t dtype);

/* Reads and validates the engine file, then loads it on CUDA device 0 (or
 * `device`): the module for the device's SM, weights uploaded once. */
graphc_status graphc_engine_load(const char* path, graphc_engine** engine);
graphc_status graphc_engine_load_on_device(const char* path, int device, graphc_engine** engine);
/* Replaces the loaded engine's weights, in place on its device, with those of
 * the engine file at `path`: the same engine but for its weights (graphc
 * refit of it, or a graphc build of a model of the same structure with the
 * same options); anything else is GRAPHC_ERROR_INVALID_ENGINE naming the
 * difference. No context of the engine may run meanwhile: synchronize them
 * all first and enqueue none until this returns. Contexts stay valid and use
 * the new weights from their next enqueue. Before the device is touched the
 * new weights' checksum is checked, so a damaged file leaves the engine as it
 * was; should the upload itself fail, contexts refuse to run until a refit
 * succeeds. */
graphc_status graphc_engine_refit(graphc_engine* engine, const char* path);
/* Frees the engine once every context made from it is destroyed too. NULL is
 * ignored. */
void graphc_engine_destroy(graphc_engine* engine);

/* Bindings: inputs first (graph order), then outputs. */
graphc_status graphc_engine_num_bindings(const graphc_engine* engine, int32_t* count);
graphc_status graphc_engine_binding_info(const graphc_engine* engine, int32_t index,
                                         graphc_binding_info* info);
graphc_status graphc_engine_binding_index(const graphc_engine* engine, const char* name,
                                          int32_t* index);

/* A context with its own arena and its own device buffer per binding. */
graphc_status graphc_context_create(graphc_engine* engine, graphc_context** context);
/* Waits for the context's last enqueue, then frees it. NULL is ignored. */
void graphc_context_destroy(graphc_context* context);

/* Binds a binding to caller-owned device memory (at least the binding's
 * bytes, 256-byte aligned); NULL restores the context's own buffer. */
graphc_status graphc_context_set_tensor_address(graphc_context* context, const char* name,
                                                void* device_ptr);
graphc_status graphc_context_get_tensor_address(const graphc_context* context, const char* name,
                                                void** device_ptr);

/* Shape ranges (an engine built with --min-shape/--opt-shape/--max-shape):
 * the binding info then gives each binding's largest shape and bytes.
 * graphc_engine_num_profiles: 1 for an engine of fixed shapes. */
graphc_status graphc_engine_num_profiles(const graphc_engine* engine, int32_t* count);
/* Input `name`'s min, opt and max shapes in `profile` (each `rank` dims,
 * rank <= GRAPHC_MAX_RANK); any of min/opt/max may be NULL. */
graphc_status graphc_engine_input_range(const graphc_engine* engine, const char* name,
                                        int32_t profile, int64_t* min, int64_t* opt,
                                        int64_t* max, int32_t* rank);
/* The profile the context runs in (0 at first); its inputs return to the
 * profile's opt shapes. */
graphc_status graphc_context_set_profile(graphc_context* context, int32_t profile);
/* The shape input `name` has from the next enqueue on; checked against the
 * profile now (GRAPHC_ERROR_OUT_OF_RANGE names the input, dim and range). */
graphc_status graphc_context_set_input_shape(graphc_context* context, const char* name,
                                             const int64_t* dims, int32_t rank);
/* A binding's shape (and bytes, if `bytes` is not NULL) at the inputs' current
 * shapes: `dims` has room for `capacity` dims; *rank is set. */
graphc_status graphc_context_get_tensor_shape(graphc_context* context, const char* name,
                                              int64_t* dims, int32_t capacity, int32_t* rank,
                                              uint64_t* bytes);

/* Enqueues the whole engine on `stream` (a CUstream / cudaStream_t; NULL: the
 * context's own stream) and returns. One enqueue in flight per context. */
graphc_status graphc_context_enqueue(graphc_context* context, void* stream);
/* Waits until the last enqueue has finished. */
graphc_status graphc_context_synchronize(graphc_context* context);

/* Convenience: copies host inputs (num_inputs buffers in binding order, each
 * exactly the binding's bytes at the shapes set) to the bindings' device buffers (the context's,
 * or those set with graphc_context_set_tensor_address), runs on the context's
 * own stream, copies outputs back and waits. */
graphc_status graphc_context_run_host(graphc_context* context, const void* const* inputs,
                                      const uint64_t* input_bytes, int32_t num_inputs,
                                      void* const* outputs, const uint64_t* output_bytes,
                                      int32_t num_outputs);

/* One launch's GPU time from graphc_context_profile. The strings belong to
 * the context and stay valid until its next profile or its destruction. */
typedef struct graphc_launch_timing {
  const char* name;       /* the engine's kernel name ("output copy NAME" for a final copy) */
  const char* kind;       /* "generated fused elementwise", "cublasLt matmul", "copy", ... */
  const char* onnx_nodes; /* the ONNX nodes it computes, ", "-separated */
  double median_us, min_us, max_us;
} graphc_launch_timing;

/* Times every launch of the engine on its own, without the CUDA graph, over
 * `iterations` runs on the bound inputs (see ExecutionContext::profile in
 * docs/runtime-api.md); waits for them. *num_launches: how many launches
 * graphc_context_profile_launch can then return, in launch order. */
graphc_status graphc_context_profile(graphc_context* context, int32_t iterations,
                                     int32_t* num_launches);
graphc_status graphc_context_profile_launch(const graphc_context* context, int32_t index,
                                            graphc_launch_timing* timing);

#ifdef __cplusplus
}
#endif

#endif /* GRAPHC_RUNTIME_H_ */
