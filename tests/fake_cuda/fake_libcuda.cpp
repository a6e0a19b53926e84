// A stand-in libcuda.so.1 for CPU tests of the runtime and `graphc run`
// (tests put its folder first on LD_LIBRARY_PATH). Device memory is host
// memory, copies are memcpy, stream capture records copies into a graph that
// cuGraphLaunch replays, and kernel launches do nothing (their outputs keep
// whatever was there): it exercises every driver call's bookkeeping, binding,
// copy and graph path of the runtime, never kernel arithmetic. Only the entry
// points graphc uses exist. Environment knobs: GRAPHC_FAKE_CUDA_NO_DEVICE=1
// reports zero devices. Test hooks (extern "C", found with dlsym on the loaded
// library; absent from a real driver, so tests using them skip there):
// graphc_fake_cuda_live_allocations() counts device allocations not yet freed,
// graphc_fake_cuda_fail_sync(result) makes every cuStreamSynchronize and
// cuGraphLaunch return `result` (0: stop), graphc_fake_cuda_sync_delay_ms(ms)
// makes cuStreamSynchronize take that long (to overlap two threads),
// graphc_fake_cuda_stage_htod(on) makes cuMemcpyHtoD behave as a real driver
// may from pageable memory: the bytes are staged at once, the device write
// waits on the legacy stream until cuCtxSynchronize, a synchronous copy back,
// a memset, a legacy-stream synchronize or freeing the memory; non-blocking
// streams (everything the runtime enqueues) do not wait for it.
// graphc_fake_cuda_defer_async(on) holds work enqueued on a stream until the
// stream or an event recorded after it is synchronized (catches host buffers
// reused before their copy ran); graphc_fake_cuda_live_host_allocations()
// counts pinned host buffers not yet freed.
// Conditional WHILE nodes (CUDA graph loops) are recorded as a node that runs
// its body graph graphc_fake_cuda_while_iterations(n) times per launch, and
// graphc_fake_cuda_while_nodes() counts those added.
// Host functions (cuLaunchHostFunc) run on a thread of their own, which
// every synchronize call joins: nothing waits for them in between, as if the
// stream's later work did not depend on them.
#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Op = std::function<void()>;

struct FakeGraph;
struct FakeStream {
  bool capturing = false;
  std::vector<Op> captured;
  FakeGraph* into = nullptr;  // cuStreamBeginCaptureToGraph: capture into this graph instead
  std::vector<Op> pending;  // deferred work (graphc_fake_cuda_defer_async)
  size_t done = 0;          // pending[0, done) has run
};
// An event remembers how much of its stream's deferred work precedes it.
struct FakeEvent {
  int recorded = 0;
  FakeStream* stream = nullptr;
  size_t upto = 0;
};
struct FakeGraph {
  std::vector<Op> ops;
};
std::vector<Op>& capture_target(FakeStream* s) { return s->into ? s->into->ops : s->captured; }
// Conditional WHILE nodes: a body graph each (kept for the process), run
// g_while_iterations times per launch (kernels do nothing here, so the fake
// cannot evaluate a condition; graphc_fake_cuda_while_iterations sets it).
std::atomic<int> g_while_iterations{0};
std::atomic<unsigned long long> g_next_handle{1};
std::mutex g_bodies_mutex;
std::vector<std::unique_ptr<FakeGraph>> g_bodies;
std::vector<std::unique_ptr<CUgraph>> g_body_arrays;
std::atomic<int> g_while_nodes{0};

int g_context_token = 1;
int g_module_token = 1;
int g_function_token = 1;
std::mutex g_mutex;
std::map<CUdeviceptr, size_t> g_allocations;
std::atomic<int> g_sync_result{CUDA_SUCCESS};
std::atomic<int> g_sync_delay_ms{0};
std::atomic<bool> g_stage_htod{false};
std::atomic<bool> g_defer_async{false};
std::atomic<int> g_host_allocations{0};
std::mutex g_legacy_mutex;
std::vector<Op> g_legacy_pending;  // staged cuMemcpyHtoD writes not yet done

void flush_legacy() {
  std::vector<Op> ops;
  {
    std::lock_guard<std::mutex> lock(g_legacy_mutex);
    ops.swap(g_legacy_pending);
  }
  for (const Op& op : ops) op();
}
std::mutex g_host_fn_mutex;
std::vector<std::thread> g_host_fns;  // running host functions

void join_host_functions() {
  std::vector<std::thread> running;
  {
    std::lock_guard<std::mutex> lock(g_host_fn_mutex);
    running.swap(g_host_fns);
  }
  for (auto& t : running) t.join();
}

// Runs `s`'s deferred work up to (not including) `upto`.
void run_pending(FakeStream* s, size_t upto) {
  // Indices stay valid for events recorded earlier: nothing is erased.
  while (s->done < upto && s->done < s->pending.size()) {
    s->pending[s->done]();
    s->pending[s->done++] = nullptr;
  }
}

// Runs `op` now, records it when `stream` is capturing, or defers it to the
// stream's next synchronization when deferral is on (as a GPU would run it
// later: a host buffer reused too early shows as wrong device bytes).
std::vector<Op>& capture_target(FakeStream* s);
CUresult submit(CUstream stream, Op op) {
  auto* s = reinterpret_cast<FakeStream*>(stream);
  if (s && s->capturing) {
    capture_target(s).push_back(std::move(op));
    return CUDA_SUCCESS;
  }
  if (s && g_defer_async.load()) {
    s->pending.push_back(std::move(op));
    return CUDA_SUCCESS;
  }
  op();
  return CUDA_SUCCESS;
}

bool valid_range(CUdeviceptr p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_allocations.upper_bound(p);
  if (it == g_allocations.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

CUresult GetErrorName(CUresult e, const char** s) {
  *s = e == CUDA_SUCCESS                 ? "CUDA_SUCCESS"
       : e == CUDA_ERROR_ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS"
       : e == CUDA_ERROR_OUT_OF_MEMORY   ? "CUDA_ERROR_OUT_OF_MEMORY"
                                         : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult GetErrorString(CUresult, const char** s) {
  *s = "fake driver error";
  return CUDA_SUCCESS;
}
CUresult DeviceGetCount(int* n) {
  *n = std::getenv("GRAPHC_FAKE_CUDA_NO_DEVICE") ? 0 : 1;
  return CUDA_SUCCESS;
}
CUresult DeviceGet(CUdevice* d, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult DeviceGetAttribute(int* v, CUdevice_attribute attr, CUdevice) {
  *v = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
CUresult DeviceGetName(char* name, int len, CUdevice) {
  std::strncpy(name, "graphc fake GPU", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxRetain(CUcontext* c, CUdevice) {
  *c = reinterpret_cast<CUcontext>(&g_context_token);
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult CtxSynchronize() {
  flush_legacy();
  join_host_functions();
  return CUDA_SUCCESS;
}
CUresult ModuleLoadDataEx(CUmodule* m, const void* image, unsigned, CUjit_option*, void**) {
  if (!image) return CUDA_ERROR_INVALID_IMAGE;
  *m = reinterpret_cast<CUmodule>(&g_module_token);
  return CUDA_SUCCESS;
}
CUresult ModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult ModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  if (!name || !*name) return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(&g_function_token);
  return CUDA_SUCCESS;
}
CUresult FuncSetAttribute(CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; }
CUresult LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, unsigned, CUstream stream, void** params, void**) {
  if (!f || !gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  return submit(stream, [] {});
}
CUresult LaunchHostFunc(CUstream stream, CUhostFn fn, void* data) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  auto* s = reinterpret_cast<FakeStream*>(stream);
  if (s && s->capturing) return CUDA_ERROR_NOT_SUPPORTED;  // graphc never captures one
  std::lock_guard<std::mutex> lock(g_host_fn_mutex);
  g_host_fns.emplace_back(fn, data);
  return CUDA_SUCCESS;
}
CUresult MemAlloc(CUdeviceptr* p, size_t bytes) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  // 256-byte aligned like the real allocator.
  void* mem = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!mem) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(mem, 0xAB, bytes);  // garbage, like fresh device memory
  *p = reinterpret_cast<CUdeviceptr>(mem);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_allocations[*p] = bytes;
  return CUDA_SUCCESS;
}
CUresult MemFree(CUdeviceptr p) {
  flush_legacy();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_allocations.erase(p)) return CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult MemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  if (!valid_range(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  if (g_stage_htod.load()) {
    auto staged = std::make_shared<std::string>(static_cast<const char*>(src), n);
    std::lock_guard<std::mutex> lock(g_legacy_mutex);
    g_legacy_pending.push_back([dst, staged] {
      std::memcpy(reinterpret_cast<void*>(dst), staged->data(), staged->size());
    });
    return CUDA_SUCCESS;
  }
  std::memcpy(reinterpret_cast<void*>(dst), src, n);
  return CUDA_SUCCESS;
}
CUresult MemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  if (!valid_range(src, n)) return CUDA_ERROR_INVALID_VALUE;
  flush_legacy();
  std::memcpy(dst, reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}
CUresult MemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  if (!valid_range(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  return submit(s, [=] { std::memcpy(reinterpret_cast<void*>(dst), src, n); });
}
CUresult MemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  if (!valid_range(src, n)) return CUDA_ERROR_INVALID_VALUE;
  return submit(s, [=] { std::memcpy(dst, reinterpret_cast<const void*>(src), n); });
}
CUresult MemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  if (!valid_range(src, n) || !valid_range(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  return submit(s, [=] {
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  });
}
CUresult MemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
  if (!valid_range(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  flush_legacy();
  std::memset(reinterpret_cast<void*>(dst), v, n);
  return CUDA_SUCCESS;
}
CUresult MemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = size_t{1} << 34;
  *total = size_t{1} << 34;
  return CUDA_SUCCESS;
}
CUresult MemHostAlloc(void** p, size_t bytes, unsigned) {
  *p = std::malloc(bytes ? bytes : 1);
  if (*p) ++g_host_allocations;
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult MemFreeHost(void* p) {
  if (p) --g_host_allocations;
  std::free(p);
  return CUDA_SUCCESS;
}
CUresult StreamCreate(CUstream* s, unsigned) {
  *s = reinterpret_cast<CUstream>(new FakeStream());
  return CUDA_SUCCESS;
}
CUresult StreamDestroy(CUstream s) {
  auto* fs = reinterpret_cast<FakeStream*>(s);
  if (fs) run_pending(fs, fs->pending.size());  // work already enqueued completes
  delete fs;
  return CUDA_SUCCESS;
}
CUresult StreamSynchronize(CUstream s) {
  if (!s) flush_legacy();  // the legacy stream itself
  if (auto* fs = reinterpret_cast<FakeStream*>(s)) run_pending(fs, fs->pending.size());
  join_host_functions();
  if (int ms = g_sync_delay_ms.load()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return static_cast<CUresult>(g_sync_result.load());
}
CUresult StreamBeginCapture(CUstream s, CUstreamCaptureMode) {
  auto* fs = reinterpret_cast<FakeStream*>(s);
  if (!fs || fs->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  fs->capturing = true;
  fs->captured.clear();
  return CUDA_SUCCESS;
}
CUresult StreamEndCapture(CUstream s, CUgraph* g) {
  auto* fs = reinterpret_cast<FakeStream*>(s);
  if (!fs || !fs->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  fs->capturing = false;
  if (fs->into) {  // captured into an existing graph: that graph
    *g = reinterpret_cast<CUgraph>(fs->into);
    fs->into = nullptr;
    return CUDA_SUCCESS;
  }
  *g = reinterpret_cast<CUgraph>(new FakeGraph{std::move(fs->captured)});
  fs->captured.clear();
  return CUDA_SUCCESS;
}
CUresult DriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult StreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode*,
                                   const CUgraphEdgeData*, size_t, CUstreamCaptureMode) {
  auto* fs = reinterpret_cast<FakeStream*>(s);
  if (!fs || fs->capturing || !g) return CUDA_ERROR_ILLEGAL_STATE;
  fs->capturing = true;
  fs->into = reinterpret_cast<FakeGraph*>(g);
  return CUDA_SUCCESS;
}
// The graph a capturing stream records into: its own list stands for the
// graph until cuStreamEndCapture makes one (a FakeGraph view of it).
CUresult StreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id,
                              CUgraph* graph, const CUgraphNode** deps,
                              const CUgraphEdgeData** edges, size_t* count) {
  auto* fs = reinterpret_cast<FakeStream*>(s);
  if (!fs) return CUDA_ERROR_INVALID_VALUE;
  *status = fs->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  if (id) *id = reinterpret_cast<uintptr_t>(fs);
  if (graph) *graph = reinterpret_cast<CUgraph>(fs);  // a capture target token (see GraphAddNode)
  if (deps) *deps = nullptr;
  if (edges) *edges = nullptr;
  if (count) *count = 0;
  return CUDA_SUCCESS;
}
CUresult StreamUpdateCaptureDependencies(CUstream, CUgraphNode*, const CUgraphEdgeData*, size_t,
                                         unsigned) {
  return CUDA_SUCCESS;
}
CUresult GraphConditionalHandleCreate(CUgraphConditionalHandle* h, CUgraph g, CUcontext, unsigned,
                                      unsigned) {
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  *h = g_next_handle++;
  return CUDA_SUCCESS;
}
// Only conditional WHILE nodes, added to the graph a capturing stream
// records (the `graph` token StreamGetCaptureInfo gave: the stream).
CUresult GraphAddNode(CUgraphNode* node, CUgraph graph, const CUgraphNode*, const CUgraphEdgeData*,
                      size_t, CUgraphNodeParams* params) {
  if (!params || params->type != CU_GRAPH_NODE_TYPE_CONDITIONAL ||
      params->conditional.type != CU_GRAPH_COND_TYPE_WHILE || params->conditional.size != 1)
    return CUDA_ERROR_NOT_SUPPORTED;
  auto* fs = reinterpret_cast<FakeStream*>(graph);
  if (!fs || !fs->capturing) return CUDA_ERROR_ILLEGAL_STATE;
  std::lock_guard<std::mutex> lock(g_bodies_mutex);
  g_bodies.push_back(std::make_unique<FakeGraph>());
  FakeGraph* body = g_bodies.back().get();
  g_body_arrays.push_back(std::make_unique<CUgraph>(reinterpret_cast<CUgraph>(body)));
  params->conditional.phGraph_out = g_body_arrays.back().get();
  capture_target(fs).push_back([body] {
    for (int i = 0; i < g_while_iterations.load(); ++i)
      for (const Op& op : body->ops) op();
  });
  ++g_while_nodes;
  *node = reinterpret_cast<CUgraphNode>(body);
  return CUDA_SUCCESS;
}
CUresult GraphInstantiateWithFlags(CUgraphExec* e, CUgraph g, unsigned long long) {
  *e = reinterpret_cast<CUgraphExec>(new FakeGraph(*reinterpret_cast<FakeGraph*>(g)));
  return CUDA_SUCCESS;
}
CUresult GraphLaunch(CUgraphExec e, CUstream s) {
  if (g_sync_result.load() != CUDA_SUCCESS) return static_cast<CUresult>(g_sync_result.load());
  for (const Op& op : reinterpret_cast<FakeGraph*>(e)->ops) submit(s, op);
  return CUDA_SUCCESS;
}
CUresult GraphExecDestroy(CUgraphExec e) {
  delete reinterpret_cast<FakeGraph*>(e);
  return CUDA_SUCCESS;
}
CUresult GraphDestroy(CUgraph g) {
  delete reinterpret_cast<FakeGraph*>(g);
  return CUDA_SUCCESS;
}
CUresult EventCreate(CUevent* e, unsigned) {
  *e = reinterpret_cast<CUevent>(new FakeEvent());
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent e) {
  delete reinterpret_cast<FakeEvent*>(e);
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent e, CUstream s) {
  auto* fe = reinterpret_cast<FakeEvent*>(e);
  ++fe->recorded;
  fe->stream = reinterpret_cast<FakeStream*>(s);
  fe->upto = fe->stream ? fe->stream->pending.size() : 0;
  return CUDA_SUCCESS;
}
CUresult EventSynchronize(CUevent e) {
  auto* fe = reinterpret_cast<FakeEvent*>(e);
  if (fe->stream) run_pending(fe->stream, fe->upto);
  join_host_functions();
  return CUDA_SUCCESS;
}
CUresult EventElapsedTime(float* ms, CUevent start, CUevent stop) {
  if (!reinterpret_cast<FakeEvent*>(start)->recorded ||
      !reinterpret_cast<FakeEvent*>(stop)->recorded)
    return CUDA_ERROR_INVALID_HANDLE;  // never recorded
  *ms = 0.125f;
  return CUDA_SUCCESS;
}

const std::map<std::string, void*>& table() {
  static const std::map<std::string, void*> t = {
      {"cuGetErrorName", reinterpret_cast<void*>(&GetErrorName)},
      {"cuGetErrorString", reinterpret_cast<void*>(&GetErrorString)},
      {"cuDeviceGetCount", reinterpret_cast<void*>(&DeviceGetCount)},
      {"cuDeviceGet", reinterpret_cast<void*>(&DeviceGet)},
      {"cuDeviceGetAttribute", reinterpret_cast<void*>(&DeviceGetAttribute)},
      {"cuDeviceGetName", reinterpret_cast<void*>(&DeviceGetName)},
      {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(&PrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease", reinterpret_cast<void*>(&PrimaryCtxRelease)},
      {"cuCtxSetCurrent", reinterpret_cast<void*>(&CtxSetCurrent)},
      {"cuCtxSynchronize", reinterpret_cast<void*>(&CtxSynchronize)},
      {"cuModuleLoadDataEx", reinterpret_cast<void*>(&ModuleLoadDataEx)},
      {"cuModuleUnload", reinterpret_cast<void*>(&ModuleUnload)},
      {"cuModuleGetFunction", reinterpret_cast<void*>(&ModuleGetFunction)},
      {"cuFuncSetAttribute", reinterpret_cast<void*>(&FuncSetAttribute)},
      {"cuLaunchKernel", reinterpret_cast<void*>(&LaunchKernel)},
      {"cuLaunchHostFunc", reinterpret_cast<void*>(&LaunchHostFunc)},
      {"cuMemAlloc", reinterpret_cast<void*>(&MemAlloc)},
      {"cuMemFree", reinterpret_cast<void*>(&MemFree)},
      {"cuMemcpyHtoD", reinterpret_cast<void*>(&MemcpyHtoD)},
      {"cuMemcpyDtoH", reinterpret_cast<void*>(&MemcpyDtoH)},
      {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(&MemcpyHtoDAsync)},
      {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(&MemcpyDtoHAsync)},
      {"cuMemcpyDtoDAsync", reinterpret_cast<void*>(&MemcpyDtoDAsync)},
      {"cuMemsetD8", reinterpret_cast<void*>(&MemsetD8)},
      {"cuMemGetInfo", reinterpret_cast<void*>(&MemGetInfo)},
      {"cuMemHostAlloc", reinterpret_cast<void*>(&MemHostAlloc)},
      {"cuMemFreeHost", reinterpret_cast<void*>(&MemFreeHost)},
      {"cuStreamCreate", reinterpret_cast<void*>(&StreamCreate)},
      {"cuStreamDestroy", reinterpret_cast<void*>(&StreamDestroy)},
      {"cuStreamSynchronize", reinterpret_cast<void*>(&StreamSynchronize)},
      {"cuStreamBeginCapture", reinterpret_cast<void*>(&StreamBeginCapture)},
      {"cuStreamEndCapture", reinterpret_cast<void*>(&StreamEndCapture)},
      {"cuGraphInstantiateWithFlags", reinterpret_cast<void*>(&GraphInstantiateWithFlags)},
      {"cuGraphLaunch", reinterpret_cast<void*>(&GraphLaunch)},
      {"cuGraphExecDestroy", reinterpret_cast<void*>(&GraphExecDestroy)},
      {"cuGraphDestroy", reinterpret_cast<void*>(&GraphDestroy)},
      {"cuEventCreate", reinterpret_cast<void*>(&EventCreate)},
      {"cuEventDestroy", reinterpret_cast<void*>(&EventDestroy)},
      {"cuEventRecord", reinterpret_cast<void*>(&EventRecord)},
      {"cuEventSynchronize", reinterpret_cast<void*>(&EventSynchronize)},
      {"cuEventElapsedTime", reinterpret_cast<void*>(&EventElapsedTime)},
      {"cuDriverGetVersion", reinterpret_cast<void*>(&DriverGetVersion)},
      {"cuGraphConditionalHandleCreate", reinterpret_cast<void*>(&GraphConditionalHandleCreate)},
      {"cuGraphAddNode", reinterpret_cast<void*>(&GraphAddNode)},
      {"cuStreamGetCaptureInfo", reinterpret_cast<void*>(&StreamGetCaptureInfo)},
      {"cuStreamUpdateCaptureDependencies",
       reinterpret_cast<void*>(&StreamUpdateCaptureDependencies)},
      {"cuStreamBeginCaptureToGraph", reinterpret_cast<void*>(&StreamBeginCaptureToGraph)},
  };
  return t;
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) size_t graphc_fake_cuda_live_allocations() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_allocations.size();
}
__attribute__((visibility("default"))) void graphc_fake_cuda_fail_sync(int result) {
  g_sync_result.store(result);
}
__attribute__((visibility("default"))) void graphc_fake_cuda_sync_delay_ms(int ms) {
  g_sync_delay_ms.store(ms);
}
__attribute__((visibility("default"))) void graphc_fake_cuda_stage_htod(int on) {
  if (!on) flush_legacy();
  g_stage_htod.store(on != 0);
}

// Work enqueued on a stream (copies, graph launches) runs at the stream's or a
// later-recorded event's synchronization instead of at once.
__attribute__((visibility("default"))) void graphc_fake_cuda_defer_async(int on) {
  g_defer_async.store(on != 0);
}
// Conditional WHILE nodes: how many times each runs its body per graph
// launch, and how many have been added to graphs so far.
__attribute__((visibility("default"))) void graphc_fake_cuda_while_iterations(int n) {
  g_while_iterations.store(n);
}
__attribute__((visibility("default"))) int graphc_fake_cuda_while_nodes() {
  return g_while_nodes.load();
}
// Pinned host allocations (cuMemHostAlloc) not yet freed.
__attribute__((visibility("default"))) int graphc_fake_cuda_live_host_allocations() {
  return g_host_allocations.load();
}

__attribute__((visibility("default"))) CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

// NVRTC looks for the driver too (dlopen + this); "not supported" makes it
// carry on without one, as on a machine with no driver.
__attribute__((visibility("default"))) CUresult cuGetExportTable(const void** table,
                                                                 const CUuuid*) {
  if (table) *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int, cuuint64_t, CUdriverProcAddressQueryResult* status) {
  auto it = table().find(symbol ? symbol : "");
  if (it == table().end()) {
    *pfn = nullptr;
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = it->second;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // extern "C"
