#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

namespace graphc::runtime {

namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

struct Loaded {
  DriverApi api;
  Status status = Status::ok_status();
};

Loaded load_once() {
  Loaded out;
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    out.status = unsupported(
        "no CUDA driver: libcuda.so.1 could not be loaded ({}); graphc needs an "
        "NVIDIA GPU and driver to run engines (build and inspect work without)",
        err ? err : "unknown error");
    return out;
  }
  auto get_proc = reinterpret_cast<GetProcAddress>(::dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    out.status = unsupported(
        "the CUDA driver is too old: cuGetProcAddress_v2 is missing (graphc needs "
        "a driver for CUDA 12 or newer)");
    return out;
  }
  // The ABI version graphc was compiled against (cuda.h's CUDA_VERSION).
  const int version = CUDA_VERSION;
#define GRAPHC_CU_FN(name)                                                                    \
  {                                                                                           \
    void* fn = nullptr;                                                                       \
    CUdriverProcAddressQueryResult found{};                                                   \
    CUresult r = get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);          \
    if (r != CUDA_SUCCESS || !fn || found != CU_GET_PROC_ADDRESS_SUCCESS) {                   \
      out.status = unsupported("the CUDA driver lacks {} for CUDA {}.{} (update the driver)", \
                               #name, version / 1000, (version % 1000) / 10);                 \
      return out;                                                                             \
    }                                                                                         \
    out.api.name = reinterpret_cast<decltype(out.api.name)>(fn);                              \
  }
#include "runtime/cuda_driver_functions.def"
#undef GRAPHC_CU_FN
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(::dlsym(lib, "cuInit"));
  if (!init) {
    out.status = unsupported("the CUDA driver has no cuInit");
    return out;
  }
  CUresult r = init(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    out.api.cuGetErrorName(r, &name);
    out.status = unsupported("no usable CUDA device: cuInit failed with {}",
                             name ? name : "an unknown error");
    return out;
  }
  int count = 0;
  if (out.api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    out.status = unsupported("no CUDA device: the driver loaded but reports no GPU");
  return out;
}

}  // namespace

Expected<const DriverApi*> load_driver() {
  static Loaded loaded = load_once();  // thread-safe static init; the library stays loaded
  if (!loaded.status.ok()) return loaded.status;
  return &loaded.api;
}

Status check_cuda(const DriverApi& api, CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return Status::ok_status();
  const char* name = nullptr;
  const char* text = nullptr;
  api.cuGetErrorName(result, &name);
  api.cuGetErrorString(result, &text);
  return device_error("{}: CUDA error {} ({})", what, name ? name : std::to_string(result),
                      text ? text : "");
}

}  // namespace graphc::runtime
