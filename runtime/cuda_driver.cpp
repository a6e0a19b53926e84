#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string_view>

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
  // The ABI version graphc was compiled against (cuda.h's CUDA_VERSION), except
  // where CUDA 13 gave the name a new signature that cuda.h does not declare
  // under the plain name: cuGetProcAddress at 13000 returns
  // cuCtxSynchronize_v2(CUcontext), so calling it as cuCtxSynchronize(void)
  // passed garbage as the context (H100: CUDA_ERROR_CONTEXT_IS_DESTROYED, a
  // crash in cuDNN algorithm timing).
  const int version = CUDA_VERSION;
  auto version_of = [&](std::string_view name) {
    return name == "cuCtxSynchronize" ? 2000 : version;
  };
#define GRAPHC_CU_FN(name)                                                                     \
  {                                                                                            \
    void* fn = nullptr;                                                                        \
    CUdriverProcAddressQueryResult found{};                                                    \
    CUresult r = get_proc(#name, &fn, version_of(#name), CU_GET_PROC_ADDRESS_DEFAULT, &found); \
    if (r != CUDA_SUCCESS || !fn || found != CU_GET_PROC_ADDRESS_SUCCESS) {                    \
      out.status = unsupported("the CUDA driver lacks {} for CUDA {}.{} (update the driver)",  \
                               #name, version / 1000, (version % 1000) / 10);                  \
      return out;                                                                              \
    }                                                                                          \
    out.api.name = reinterpret_cast<decltype(out.api.name)>(fn);                               \
  }
#include "runtime/cuda_driver_functions.def"
#undef GRAPHC_CU_FN
#define GRAPHC_CU_OPTIONAL_FN(name, at_version)                                         \
  {                                                                                     \
    void* fn = nullptr;                                                                 \
    CUdriverProcAddressQueryResult found{};                                             \
    CUresult r = get_proc(#name, &fn, at_version, CU_GET_PROC_ADDRESS_DEFAULT, &found); \
    if (r == CUDA_SUCCESS && fn && found == CU_GET_PROC_ADDRESS_SUCCESS)                \
      out.api.name = reinterpret_cast<decltype(out.api.name)>(fn);                      \
  }
#include "runtime/cuda_driver_optional.def"
#undef GRAPHC_CU_OPTIONAL_FN
  {
    // WHILE nodes came with CUDA 12.4 (IF nodes with 12.3).
    int driver_version = 0;
    const DriverApi& d = out.api;
    out.api.conditional_nodes =
        d.cuDriverGetVersion && d.cuDriverGetVersion(&driver_version) == CUDA_SUCCESS &&
        driver_version >= 12040 && d.cuGraphConditionalHandleCreate && d.cuGraphAddNode &&
        d.cuStreamGetCaptureInfo && d.cuStreamUpdateCaptureDependencies &&
        d.cuStreamBeginCaptureToGraph && !std::getenv("GRAPHC_NO_CONDITIONAL_NODES");
  }
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

namespace {
std::mutex g_sticky_mutex;
std::atomic<bool> g_sticky_seen{false};
Status g_sticky_status = Status::ok_status();  // the first sticky error, guarded by the mutex

std::atomic<int64_t>& alloc_countdown() {
  static std::atomic<int64_t> countdown{[] {
    const char* env = std::getenv("GRAPHC_INJECT_ALLOC_FAILURE");
    return env ? std::max<int64_t>(std::atoll(env), 0) : int64_t{0};
  }()};
  return countdown;
}
}  // namespace

bool is_sticky_error(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_LAUNCH_TIMEOUT: return true;
    default: return false;
  }
}

Status check_cuda(const DriverApi& api, CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return Status::ok_status();
  const char* name = nullptr;
  const char* text = nullptr;
  api.cuGetErrorName(result, &name);
  api.cuGetErrorString(result, &text);
  if (!is_sticky_error(result))
    return device_error("{}: CUDA error {} ({})", what, name ? name : std::to_string(result),
                        text ? text : "");
  Status st = device_error(
      "{}: sticky CUDA error {} ({}): the device's CUDA context is unusable; graphc refuses "
      "further work in this process (restart it)",
      what, name ? name : std::to_string(result), text ? text : "");
  std::lock_guard<std::mutex> lock(g_sticky_mutex);
  if (!g_sticky_seen.load()) {
    g_sticky_status = st;
    g_sticky_seen.store(true);
  }
  return st;
}

Status device_usable() {
  if (!g_sticky_seen.load()) return Status::ok_status();
  std::lock_guard<std::mutex> lock(g_sticky_mutex);
  return device_error("refused: an earlier {}", g_sticky_status.message());
}

void inject_alloc_failure(int64_t nth) { alloc_countdown().store(std::max<int64_t>(nth, 0)); }

Expected<CUgraphExec> capture_graph_exec(const DriverApi& api, CUstream stream,
                                         const std::function<Status()>& enqueue) {
  RETURN_IF_ERROR(check_cuda(
      api, api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
      "starting graph capture"));
  Status st = enqueue();
  CUgraph graph = nullptr;
  CUresult end = api.cuStreamEndCapture(stream, &graph);  // always end a started capture
  if (st.ok()) st = check_cuda(api, end, "ending graph capture");
  CUgraphExec exec = nullptr;
  if (st.ok())
    st = check_cuda(api, api.cuGraphInstantiateWithFlags(&exec, graph, 0),
                    "instantiating the CUDA graph");
  if (graph) api.cuGraphDestroy(graph);
  RETURN_IF_ERROR(st);
  return exec;
}

Status device_alloc(const DriverApi& api, CUdeviceptr* ptr, size_t bytes, const char* what) {
  auto& countdown = alloc_countdown();
  for (int64_t n = countdown.load(); n > 0;) {
    if (countdown.compare_exchange_weak(n, n - 1)) {
      if (n == 1)
        return device_error("{}: CUDA error CUDA_ERROR_OUT_OF_MEMORY (injected by the test hook)",
                            what);
      break;
    }
  }
  return check_cuda(api, api.cuMemAlloc(ptr, bytes), what);
}

}  // namespace graphc::runtime
