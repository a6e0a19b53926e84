// Compiles and launches the fused attention kernel the way the runtime runs
// generated kernels: NVRTC for this device's SM (emit/nvrtc_compiler), the
// CUBIN loaded with cuModuleLoadDataEx, the dynamic shared-memory limit raised
// past 48 KiB with cuFuncSetAttribute, cuLaunchKernel with the pointers and
// then AttentionParams by value as the last parameter. Shared by
// attention_kernel_gpu_test.cpp and bench/attention_sweep.cpp; no Catch2.
#pragma once

#include <fmt/format.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "emit/cubin_resources.h"
#include "emit/cuda_attention.h"
#include "emit/nvrtc_compiler.h"
#include "runtime/cuda_driver.h"
#include "tests/attention_harness.h"

namespace graphc::testing::attn {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const runtime::DriverApi* api, CUdeviceptr p, size_t bytes) : api_(api), ptr_(p), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(api_, o.api_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) api_->cuMemFree(ptr_);
  }
  CUdeviceptr get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  const runtime::DriverApi* api_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

struct AttentionKernel {
  emit::AttentionKernelSpec spec;
  std::string name;
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  int registers = -1;
  int64_t frame_bytes = 0;
};

class AttentionGpu {
 public:
  static Expected<std::unique_ptr<AttentionGpu>> create(int device = 0) {
    ASSIGN_OR_RETURN(const runtime::DriverApi* api, runtime::load_driver());
    auto g = std::unique_ptr<AttentionGpu>(new AttentionGpu());
    g->api_ = api;
    GRAPHC_CU(*api, cuDeviceGet(&g->dev_, device), "cuDeviceGet");
    GRAPHC_CU(*api, cuDevicePrimaryCtxRetain(&g->ctx_, g->dev_), "retaining the primary context");
    GRAPHC_CU(*api, cuCtxSetCurrent(g->ctx_), "cuCtxSetCurrent");
    int major = 0, minor = 0;
    GRAPHC_CU(*api, cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev_), "cc");
    GRAPHC_CU(*api, cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev_), "cc");
    g->sm_ = major * 10 + minor;
    char name[256] = {};
    GRAPHC_CU(*api, cuDeviceGetName(name, sizeof name - 1, g->dev_), "cuDeviceGetName");
    g->name_ = name;
    return g;
  }
  ~AttentionGpu() {
    for (auto& [n, k] : kernels_)
      if (k.module) api_->cuModuleUnload(k.module);
    if (ctx_) api_->cuDevicePrimaryCtxRelease(dev_);
  }
  const runtime::DriverApi& api() const { return *api_; }
  int sm() const { return sm_; }
  std::string arch() const { return fmt::format("sm_{}", sm_); }
  const std::string& device_name() const { return name_; }

  // Compiles each spec not yet loaded (NVRTC in parallel), then loads them.
  Status prepare(const std::vector<emit::AttentionKernelSpec>& specs) {
    std::vector<emit::CudaSource> todo;
    std::vector<emit::AttentionKernelSpec> todo_specs;
    for (const auto& s : specs) {
      RETURN_IF_ERROR(emit::validate_attention_spec(s));
      const std::string n = emit::attention_entry_name(s);
      if (kernels_.count(n)) continue;
      bool dup = false;
      for (const auto& t : todo) dup = dup || t.name == n;
      if (dup) continue;
      todo.push_back({n, emit::attention_kernel_source(s, n)});
      todo_specs.push_back(s);
    }
    if (todo.empty()) return Status::ok_status();
    emit::CompileOptions opts;
    opts.cache_dir = emit::default_cache_dir();
    auto mods = emit::compile_cuda_many(todo, {arch()}, opts);
    for (size_t i = 0; i < mods.size(); ++i) {
      if (!mods[i].ok()) return mods[i].status();
      AttentionKernel k;
      k.spec = todo_specs[i];
      k.name = todo[i].name;
      const auto& cubin = mods[i]->binaries[0].cubin;
      if (auto res = emit::cubin_kernel_resources(cubin); res.ok())
        for (const auto& r : *res)
          if (r.name == k.name) k.registers = r.registers, k.frame_bytes = r.frame_bytes;
      GRAPHC_CU(*api_, cuModuleLoadDataEx(&k.module, cubin.data(), 0, nullptr, nullptr), "loading the kernel");
      GRAPHC_CU(*api_, cuModuleGetFunction(&k.fn, k.module, k.name.c_str()), "cuModuleGetFunction");
      const int64_t smem = emit::attention_shared_bytes(k.spec);
      if (smem > 48 * 1024)
        GRAPHC_CU(*api_,
                  cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem)),
                  "raising the dynamic shared-memory limit");
      kernels_.emplace(k.name, k);
    }
    return Status::ok_status();
  }

  Expected<const AttentionKernel*> kernel(const emit::AttentionKernelSpec& s) {
    RETURN_IF_ERROR(prepare({s}));
    return &kernels_.at(emit::attention_entry_name(s));
  }

  Expected<DeviceBuffer> alloc(size_t bytes) {
    CUdeviceptr p = 0;
    RETURN_IF_ERROR(runtime::device_alloc(*api_, &p, std::max<size_t>(bytes, 16), "attention buffer"));
    return DeviceBuffer(api_, p, bytes);
  }
  template <class T>
  Expected<DeviceBuffer> upload(const std::vector<T>& host) {
    ASSIGN_OR_RETURN(DeviceBuffer b, alloc(host.size() * sizeof(T)));
    if (!host.empty()) GRAPHC_CU(*api_, cuMemcpyHtoD(b.get(), host.data(), host.size() * sizeof(T)), "upload");
    return b;
  }

  // Enqueues one launch: q, k, v, [mask], out, then the params by value.
  Status launch(const AttentionKernel& k, const emit::AttentionParams& p, CUdeviceptr q, CUdeviceptr kk,
                CUdeviceptr v, CUdeviceptr mask, CUdeviceptr o, CUstream stream = nullptr) {
    const emit::LaunchShape ls = emit::attention_launch_shape(k.spec, p);
    emit::AttentionParams pv = p;
    std::vector<void*> args = {&q, &kk, &v};
    if (k.spec.mask != emit::AttentionKernelSpec::Mask::kNone) args.push_back(&mask);
    args.push_back(&o);
    args.push_back(&pv);
    GRAPHC_CU(*api_,
              cuLaunchKernel(k.fn, static_cast<unsigned>(ls.grid[0]), static_cast<unsigned>(ls.grid[1]),
                             static_cast<unsigned>(ls.grid[2]), static_cast<unsigned>(ls.block[0]), 1, 1,
                             static_cast<unsigned>(ls.shared_bytes), stream, args.data(), nullptr),
              "launching the attention kernel");
    return Status::ok_status();
  }

  // One correctness run: fresh random inputs, poisoned output, reference
  // comparison. Runs twice (a second poison and launch) so a race that
  // changes the result between runs shows as a mismatch of the two outputs.
  Expected<Comparison> run_case(const AttentionCase& c, std::mt19937& rng, bool* repeat_identical = nullptr) {
    RETURN_IF_ERROR(emit::validate_attention_spec(c.spec));
    AttentionInputs in = make_attention_inputs(c, rng);
    RETURN_IF_ERROR(emit::validate_attention_params(c.spec, in.p));
    ASSIGN_OR_RETURN(const AttentionKernel* k, kernel(c.spec));
    const std::vector<double> ref = attention_reference(c, in);
    ASSIGN_OR_RETURN(DeviceBuffer dq, upload(in.q));
    ASSIGN_OR_RETURN(DeviceBuffer dk, upload(in.k));
    ASSIGN_OR_RETURN(DeviceBuffer dv, upload(in.v));
    ASSIGN_OR_RETURN(DeviceBuffer dm, upload(in.mask));
    const size_t obytes = static_cast<size_t>(in.o_elems) * 2;
    ASSIGN_OR_RETURN(DeviceBuffer dout, alloc(obytes));
    std::vector<uint16_t> out(static_cast<size_t>(in.o_elems)), again(out.size());
    for (int run = 0; run < 2; ++run) {
      GRAPHC_CU(*api_, cuMemsetD8(dout.get(), 0xff, obytes), "poisoning the output");  // NaN
      RETURN_IF_ERROR(launch(*k, in.p, dq.get(), dk.get(), dv.get(), dm.get(), dout.get()));
      GRAPHC_CU(*api_, cuCtxSynchronize(), "running the attention kernel");
      GRAPHC_CU(*api_, cuMemcpyDtoH(run == 0 ? out.data() : again.data(), dout.get(), obytes), "download");
    }
    if (repeat_identical) *repeat_identical = out == again;
    return compare_attention(c, in, ref, out);
  }

 private:
  AttentionGpu() = default;
  const runtime::DriverApi* api_ = nullptr;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  int sm_ = 0;
  std::string name_;
  std::map<std::string, AttentionKernel> kernels_;
};

}  // namespace graphc::testing::attn
