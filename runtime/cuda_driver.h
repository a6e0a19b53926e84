// The CUDA driver API, loaded at run time with dlopen (DESIGN principle 8: no
// GPU or driver is needed to build, inspect or test on the CPU; a machine
// without one gets a clear message, not a loader error). Every entry point is
// fetched through cuGetProcAddress so the versioned symbol (cuMemAlloc_v2 ...)
// matching the CUDA 12+ ABI is used.
#pragma once

#include <cuda.h>

#include <string>

#include "support/status.h"

namespace graphc::runtime {

struct DriverApi {
#define GRAPHC_CU_FN(name) decltype(&::name) name = nullptr;
#include "runtime/cuda_driver_functions.def"
#undef GRAPHC_CU_FN
};

// Loads libcuda once (thread-safe) and calls cuInit(0). Errors: "no CUDA
// driver: libcuda.so.1 could not be loaded (...)", "no CUDA device".
Expected<const DriverApi*> load_driver();

// OK for CUDA_SUCCESS, else "<what>: CUDA error NAME (description)".
Status check_cuda(const DriverApi& api, CUresult result, const char* what);

#define GRAPHC_CU(api, call, what) \
  RETURN_IF_ERROR(::graphc::runtime::check_cuda(api, (api).call, what))

}  // namespace graphc::runtime
