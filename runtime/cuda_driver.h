// The CUDA driver API, loaded at run time with dlopen (DESIGN principle 8: no
// GPU or driver is needed to build, inspect or test on the CPU; a machine
// without one gets a clear message, not a loader error). Every entry point is
// fetched through cuGetProcAddress so the versioned symbol (cuMemAlloc_v2 ...)
// matching the CUDA 12+ ABI is used.
#pragma once

#include <cuda.h>

#include <functional>
#include <string>

#include "support/status.h"

namespace graphc::runtime {

struct DriverApi {
#define GRAPHC_CU_FN(name) decltype(&::name) name = nullptr;
#include "runtime/cuda_driver_functions.def"
#undef GRAPHC_CU_FN
  // Null where the driver lacks them (cuda_driver_optional.def).
#define GRAPHC_CU_OPTIONAL_FN(name, version) decltype(&::name) name = nullptr;
#include "runtime/cuda_driver_optional.def"
#undef GRAPHC_CU_OPTIONAL_FN
  // CUDA graph conditional WHILE nodes, with bodies captured from a stream
  // (a driver for CUDA 12.4 or newer with every entry point above).
  bool conditional_nodes = false;
};

// Loads libcuda once (thread-safe) and calls cuInit(0). Errors: "no CUDA
// driver: libcuda.so.1 could not be loaded (...)", "no CUDA device".
Expected<const DriverApi*> load_driver();

// OK for CUDA_SUCCESS, else "<what>: CUDA error NAME (description)". A sticky
// error is recorded (see device_usable) and says so.
Status check_cuda(const DriverApi& api, CUresult result, const char* what);

// Errors after which the CUDA context is corrupted: every later call on it
// fails (an illegal address, a trap or assert in a kernel, a launch failure).
bool is_sticky_error(CUresult result);

// OK until check_cuda has seen a sticky error; from then on an error naming
// it, so the runtime refuses further work instead of returning garbage.
// Process-wide: graphc uses each device's primary context, which every engine
// in the process shares, and only a new process gets a fresh one.
Status device_usable();

// Device allocation, with a fault-injection hook for tests: after
// inject_alloc_failure(n) (or GRAPHC_INJECT_ALLOC_FAILURE=n in the environment,
// read at the first allocation) the n-th device allocation from then on fails
// with CUDA_ERROR_OUT_OF_MEMORY, once; n = 0 turns injection off.
Status device_alloc(const DriverApi& api, CUdeviceptr* ptr, size_t bytes, const char* what);
void inject_alloc_failure(int64_t nth);

// What `enqueue` puts on `stream`, captured (thread-local mode: captures on
// other threads are undisturbed) and instantiated as a CUDA graph; a started
// capture is always ended. The caller destroys the graph.
Expected<CUgraphExec> capture_graph_exec(const DriverApi& api, CUstream stream,
                                         const std::function<Status()>& enqueue);

#define GRAPHC_CU(api, call, what) \
  RETURN_IF_ERROR(::graphc::runtime::check_cuda(api, (api).call, what))

}  // namespace graphc::runtime
