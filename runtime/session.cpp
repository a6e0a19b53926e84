#include <climits>
#include <cstring>

#include "runtime/cuda_driver.h"
#include "runtime/executable.h"

namespace graphc::runtime {

struct Session::Impl {
  const DriverApi* api = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::vector<CUmodule> modules;
  CUstream stream = nullptr;
  CUevent start = nullptr, stop = nullptr;
  CUdeviceptr arena = 0, weights = 0;
  std::vector<CUdeviceptr> io;        // one buffer per input/output slot
  std::vector<CUdeviceptr> slot_ptr;  // device address of every slot
  std::vector<CUfunction> functions;  // per launch
  std::vector<std::vector<CUdeviceptr>> arg_values;
  std::vector<std::vector<void*>> arg_ptrs;
  CUgraphExec graph_exec = nullptr;
  Executable exe;
  RunOptions options;

  ~Impl() {
    if (!api) return;
    if (graph_exec) api->cuGraphExecDestroy(graph_exec);
    for (CUdeviceptr p : io)
      if (p) api->cuMemFree(p);
    if (arena) api->cuMemFree(arena);
    if (weights) api->cuMemFree(weights);
    if (start) api->cuEventDestroy(start);
    if (stop) api->cuEventDestroy(stop);
    if (stream) api->cuStreamDestroy(stream);
    for (CUmodule m : modules)
      if (m) api->cuModuleUnload(m);
    if (context) api->cuDevicePrimaryCtxRelease(device);
  }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Expected<std::unique_ptr<Session>> Session::create(const Executable& exe, RunOptions options) {
  ASSIGN_OR_RETURN(const DriverApi* api, load_driver());
  auto impl = std::make_unique<Impl>();
  impl->api = api;
  impl->exe = exe;
  impl->options = options;
  const DriverApi& a = *api;
  GRAPHC_CU(a, cuDeviceGet(&impl->device, 0), "cuDeviceGet");
  GRAPHC_CU(a, cuDevicePrimaryCtxRetain(&impl->context, impl->device),
            "retaining the primary context");
  GRAPHC_CU(a, cuCtxSetCurrent(impl->context), "cuCtxSetCurrent");
  for (const std::string& img : exe.images) {
    if (img.empty()) return invalid_argument("the engine has an empty code module for this device");
    std::string image = img;
    image.push_back('\0');  // PTX is text: the loader reads up to the NUL
    CUmodule mod = nullptr;
    GRAPHC_CU(a, cuModuleLoadDataEx(&mod, image.data(), 0, nullptr, nullptr),
              "loading a kernel module");
    impl->modules.push_back(mod);
  }
  GRAPHC_CU(a, cuStreamCreate(&impl->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  GRAPHC_CU(a, cuEventCreate(&impl->start, CU_EVENT_DEFAULT), "cuEventCreate");
  GRAPHC_CU(a, cuEventCreate(&impl->stop, CU_EVENT_DEFAULT), "cuEventCreate");
  if (exe.arena_bytes > 0)
    GRAPHC_CU(a, cuMemAlloc(&impl->arena, static_cast<size_t>(exe.arena_bytes)),
              "allocating the arena");
  if (!exe.weights.empty()) {
    GRAPHC_CU(a, cuMemAlloc(&impl->weights, exe.weights.size()), "allocating the weights");
    GRAPHC_CU(a, cuMemcpyHtoD(impl->weights, exe.weights.data(), exe.weights.size()),
              "uploading the weights");
  }
  // The engine reader validated these; a hand-built Executable is checked too.
  for (const auto* list : {&exe.inputs, &exe.outputs})
    for (int32_t s : *list)
      if (s < 0 || static_cast<size_t>(s) >= exe.tensors.size())
        return invalid_argument("binding refers to tensor slot {} of {}", s, exe.tensors.size());
  for (const TensorSlot& t : exe.tensors) {
    const int64_t limit = t.location == TensorSlot::Location::kArena ? exe.arena_bytes
                          : t.location == TensorSlot::Location::kWeights
                              ? static_cast<int64_t>(exe.weights.size())
                              : INT64_MAX;
    if (t.bytes < 0 || t.offset < 0 || t.offset > limit || t.bytes > limit - t.offset)
      return invalid_argument("tensor '{}' ({} bytes at {}) lies outside its buffer", t.name,
                              t.bytes, t.offset);
  }
  impl->slot_ptr.assign(exe.tensors.size(), 0);
  for (size_t i = 0; i < exe.tensors.size(); ++i) {
    const TensorSlot& t = exe.tensors[i];
    switch (t.location) {
      case TensorSlot::Location::kArena:
        impl->slot_ptr[i] = impl->arena + static_cast<CUdeviceptr>(t.offset);
        break;
      case TensorSlot::Location::kWeights:
        impl->slot_ptr[i] = impl->weights + static_cast<CUdeviceptr>(t.offset);
        break;
      default: {  // inputs and outputs get their own buffers (bound by the caller's data)
        CUdeviceptr p = 0;
        GRAPHC_CU(a, cuMemAlloc(&p, static_cast<size_t>(std::max<int64_t>(t.bytes, 1))),
                  "allocating an input/output buffer");
        impl->io.push_back(p);
        impl->slot_ptr[i] = p;
      }
    }
  }
  for (const Launch& l : exe.launches) {
    for (int32_t s : l.args)
      if (s < 0 || static_cast<size_t>(s) >= exe.tensors.size())
        return invalid_argument("launch '{}' reads tensor slot {} of {}", l.entry, s,
                                exe.tensors.size());
    CUfunction fn = nullptr;
    if (l.entry.empty() && l.args.size() != 2)
      return invalid_argument("a copy launch needs 2 slots, got {}", l.args.size());
    if (l.entry.empty()) {  // device-to-device copy
      impl->functions.push_back(nullptr);
      std::vector<CUdeviceptr> values;
      for (int32_t s : l.args) values.push_back(impl->slot_ptr[static_cast<size_t>(s)]);
      impl->arg_values.push_back(std::move(values));
      continue;
    }
    if (l.module < 0 || static_cast<size_t>(l.module) >= impl->modules.size())
      return invalid_argument("launch '{}' names module {} of {}", l.entry, l.module,
                              impl->modules.size());
    GRAPHC_CU(
        a, cuModuleGetFunction(&fn, impl->modules[static_cast<size_t>(l.module)], l.entry.c_str()),
        ("finding kernel " + l.entry).c_str());
    // Over 48 KiB of dynamic shared memory must be opted into per function.
    if (l.shared_bytes > 48 * 1024)
      GRAPHC_CU(a,
                cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(l.shared_bytes)),
                ("allowing dynamic shared memory for " + l.entry).c_str());
    impl->functions.push_back(fn);
    std::vector<CUdeviceptr> values;
    for (int32_t s : l.args) values.push_back(impl->slot_ptr[static_cast<size_t>(s)]);
    impl->arg_values.push_back(std::move(values));
  }
  // Pointers into arg_values stay valid: the vectors are not resized again.
  for (auto& values : impl->arg_values) {
    std::vector<void*> ptrs;
    for (auto& v : values) ptrs.push_back(&v);
    impl->arg_ptrs.push_back(std::move(ptrs));
  }
  std::unique_ptr<Session> session(new Session(std::move(impl)));
  if (options.cuda_graph) {
    Impl& m = *session->impl_;
    GRAPHC_CU(a, cuStreamBeginCapture(m.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              "starting graph capture");
    Status st = session->enqueue();
    CUgraph graph = nullptr;
    CUresult end = a.cuStreamEndCapture(m.stream, &graph);  // always end a started capture
    if (!st.ok()) {
      if (graph) a.cuGraphDestroy(graph);
      return st;
    }
    RETURN_IF_ERROR(check_cuda(a, end, "ending graph capture"));
    CUresult inst = a.cuGraphInstantiateWithFlags(&m.graph_exec, graph, 0);
    a.cuGraphDestroy(graph);
    RETURN_IF_ERROR(check_cuda(a, inst, "instantiating the CUDA graph"));
  }
  return session;
}

Status Session::enqueue() {
  Impl& m = *impl_;
  const DriverApi& a = *m.api;
  for (size_t i = 0; i < m.exe.launches.size(); ++i) {
    const Launch& l = m.exe.launches[i];
    if (l.entry.empty()) {  // device-to-device copy of dst's bytes
      const auto bytes = static_cast<size_t>(m.exe.tensors[static_cast<size_t>(l.args[1])].bytes);
      GRAPHC_CU(a, cuMemcpyDtoDAsync(m.arg_values[i][1], m.arg_values[i][0], bytes, m.stream),
                "copying an output");
      continue;
    }
    GRAPHC_CU(
        a,
        cuLaunchKernel(m.functions[i], l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                       l.block[2], l.shared_bytes, m.stream, m.arg_ptrs[i].data(), nullptr),
        ("launching " + l.entry).c_str());
  }
  return Status::ok_status();
}

Status Session::run(const std::vector<std::string>& inputs, std::vector<std::string>& outputs) {
  Impl& m = *impl_;
  const DriverApi& a = *m.api;
  GRAPHC_CU(a, cuCtxSetCurrent(m.context), "cuCtxSetCurrent");
  if (inputs.size() != m.exe.inputs.size())
    return invalid_argument("the engine takes {} inputs, got {}", m.exe.inputs.size(),
                            inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSlot& t = m.exe.tensors[static_cast<size_t>(m.exe.inputs[i])];
    if (static_cast<int64_t>(inputs[i].size()) != t.bytes)
      return invalid_argument("input '{}' needs {} bytes, got {}", t.name, t.bytes,
                              inputs[i].size());
    GRAPHC_CU(a,
              cuMemcpyHtoDAsync(m.slot_ptr[static_cast<size_t>(m.exe.inputs[i])], inputs[i].data(),
                                inputs[i].size(), m.stream),
              "copying an input to the device");
  }
  GRAPHC_CU(a, cuEventRecord(m.start, m.stream), "cuEventRecord");
  if (m.graph_exec) {
    GRAPHC_CU(a, cuGraphLaunch(m.graph_exec, m.stream), "launching the CUDA graph");
  } else {
    RETURN_IF_ERROR(enqueue());
  }
  GRAPHC_CU(a, cuEventRecord(m.stop, m.stream), "cuEventRecord");
  outputs.assign(m.exe.outputs.size(), std::string());
  for (size_t i = 0; i < m.exe.outputs.size(); ++i) {
    const TensorSlot& t = m.exe.tensors[static_cast<size_t>(m.exe.outputs[i])];
    outputs[i].resize(static_cast<size_t>(t.bytes));
    GRAPHC_CU(
        a,
        cuMemcpyDtoHAsync(outputs[i].data(), m.slot_ptr[static_cast<size_t>(m.exe.outputs[i])],
                          outputs[i].size(), m.stream),
        "copying an output to the host");
  }
  GRAPHC_CU(a, cuStreamSynchronize(m.stream), "running the engine");
  GRAPHC_CU(a, cuEventElapsedTime(&last_ms_, m.start, m.stop), "reading the GPU time");
  return Status::ok_status();
}

Expected<std::vector<float>> Session::time_iterations(int iterations) {
  Impl& m = *impl_;
  const DriverApi& a = *m.api;
  GRAPHC_CU(a, cuCtxSetCurrent(m.context), "cuCtxSetCurrent");
  std::vector<float> times;
  for (int i = 0; i < iterations; ++i) {
    GRAPHC_CU(a, cuEventRecord(m.start, m.stream), "cuEventRecord");
    if (m.graph_exec) {
      GRAPHC_CU(a, cuGraphLaunch(m.graph_exec, m.stream), "launching the CUDA graph");
    } else {
      RETURN_IF_ERROR(enqueue());
    }
    GRAPHC_CU(a, cuEventRecord(m.stop, m.stream), "cuEventRecord");
    GRAPHC_CU(a, cuEventSynchronize(m.stop), "waiting for the engine");
    float ms = 0;
    GRAPHC_CU(a, cuEventElapsedTime(&ms, m.start, m.stop), "reading the GPU time");
    times.push_back(ms);
  }
  return times;
}

}  // namespace graphc::runtime
