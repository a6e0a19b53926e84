// The general attention kernel (emit/cuda/cuda_attention_generic.h) on the GPU
// against graphc's reference executor (tests/attention_generic_harness.h: a
// graph with one Attention node, fresh random inputs): compiled with NVRTC for
// this device's SM, loaded and launched through the driver API as the runtime
// runs generated kernels (the dynamic shared-memory limit raised from the
// launch shape; the pointers, then GenericAttentionParams by value). Every
// output is poisoned with NaN before each run and checked written; fp32
// relative L2 < 1e-5, fp16 < 2e-3, bf16 < 1e-2; fully masked rows exactly 0;
// present_key/value bit-exact; two runs bit-identical. Cases: every case of
// generic_cases() (each feature in each dtype) plus larger shapes (long
// prefill, decode over a long cache, head dim 256, GQA) that the host emulator
// cannot afford. The hidden [attention-generic-bench] case times a few
// prefill and decode shapes (scripts/gpu_attention_generic_session.sh).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>

#include "emit/nvrtc/cubin_resources.h"
#include "tests/attention_generic_harness.h"
#include "tests/gpu/attention_runner.h"  // DeviceBuffer

using namespace graphc;
using namespace graphc::testing::attn_generic;
using graphc::testing::attn::DeviceBuffer;

namespace {

class GenericGpu {
 public:
  static Expected<std::unique_ptr<GenericGpu>> create() {
    ASSIGN_OR_RETURN(const runtime::DriverApi* api, runtime::load_driver());
    auto g = std::unique_ptr<GenericGpu>(new GenericGpu());
    g->api_ = api;
    GRAPHC_CU(*api, cuDeviceGet(&g->dev_, 0), "cuDeviceGet");
    GRAPHC_CU(*api, cuDevicePrimaryCtxRetain(&g->ctx_, g->dev_), "retaining the primary context");
    GRAPHC_CU(*api, cuCtxSetCurrent(g->ctx_), "cuCtxSetCurrent");
    int major = 0, minor = 0;
    GRAPHC_CU(*api,
              cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev_),
              "cc");
    GRAPHC_CU(*api,
              cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev_),
              "cc");
    g->sm_ = major * 10 + minor;
    GRAPHC_CU(*api,
              cuDeviceGetAttribute(&g->smem_optin_,
                                   CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, g->dev_),
              "shared memory limit");
    return g;
  }
  ~GenericGpu() {
    for (auto& [n, k] : kernels_)
      if (k.module) api_->cuModuleUnload(k.module);
    if (ctx_) api_->cuDevicePrimaryCtxRelease(dev_);
  }
  int sm() const { return sm_; }
  int64_t smem_optin() const { return smem_optin_; }

  struct Kernel {
    CUmodule module = nullptr;
    CUfunction fn = nullptr;
    int registers = -1;
    int64_t frame_bytes = 0;
  };

  // Compiles (NVRTC, in parallel) and loads every spec not loaded yet.
  Status prepare(const std::vector<emit::GenericAttentionSpec>& specs) {
    std::vector<emit::CudaSource> todo;
    std::vector<emit::GenericAttentionSpec> todo_specs;
    for (const auto& s : specs) {
      RETURN_IF_ERROR(emit::validate_generic_attention_spec(s));
      const std::string n = emit::generic_attention_entry_name(s);
      bool dup = kernels_.count(n) > 0;
      for (const auto& t : todo) dup = dup || t.name == n;
      if (dup) continue;
      todo.push_back({n, emit::generic_attention_kernel_source(s, n)});
      todo_specs.push_back(s);
    }
    if (todo.empty()) return Status::ok_status();
    emit::CompileOptions opts;
    opts.cache_dir = emit::default_cache_dir();
    auto mods = emit::compile_cuda_many(todo, {fmt::format("sm_{}", sm_)}, opts);
    for (size_t i = 0; i < mods.size(); ++i) {
      if (!mods[i].ok()) return mods[i].status();
      Kernel k;
      const auto& cubin = mods[i]->binaries[0].cubin;
      if (auto res = emit::cubin_kernel_resources(cubin); res.ok())
        for (const auto& r : *res)
          if (r.name == todo[i].name) k.registers = r.registers, k.frame_bytes = r.frame_bytes;
      GRAPHC_CU(*api_, cuModuleLoadDataEx(&k.module, cubin.data(), 0, nullptr, nullptr),
                "loading the kernel");
      GRAPHC_CU(*api_, cuModuleGetFunction(&k.fn, k.module, todo[i].name.c_str()),
                "cuModuleGetFunction");
      const int64_t smem = emit::generic_attention_shared_bytes(todo_specs[i]);
      if (smem > 48 * 1024)
        GRAPHC_CU(*api_,
                  cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(smem)),
                  "raising the dynamic shared-memory limit");
      kernels_.emplace(todo[i].name, k);
    }
    return Status::ok_status();
  }

  Expected<const Kernel*> kernel(const emit::GenericAttentionSpec& s) {
    RETURN_IF_ERROR(prepare({s}));
    return &kernels_.at(emit::generic_attention_entry_name(s));
  }

  Expected<DeviceBuffer> upload(const void* data, size_t bytes) {
    CUdeviceptr p = 0;
    RETURN_IF_ERROR(
        runtime::device_alloc(*api_, &p, std::max<size_t>(bytes, 16), "attention buffer"));
    DeviceBuffer b(api_, p, bytes);
    if (bytes) GRAPHC_CU(*api_, cuMemcpyHtoD(p, data, bytes), "upload");
    return b;
  }

  // Runs the problem twice (poisoned outputs each time); `out` gets the
  // first run's outputs, `same` whether the second gave the same bytes.
  Status run(const GenericProblem& pr, std::vector<std::vector<uint8_t>>& out, bool& same) {
    ASSIGN_OR_RETURN(const Kernel* k, kernel(pr.launch.spec));
    std::vector<DeviceBuffer> bufs;
    std::vector<CUdeviceptr> ptrs;
    out = poisoned_outputs(pr);
    size_t slot = 0;
    for (size_t i = 0; i < pr.args.size(); ++i) {
      const ir::Tensor* in = pr.arg_inputs[i];
      ASSIGN_OR_RETURN(DeviceBuffer b, in ? upload(in->data(), in->byte_size())
                                          : upload(out[slot].data(), out[slot].size()));
      if (!in) ++slot;
      ptrs.push_back(b.get());
      bufs.push_back(std::move(b));
    }
    const emit::LaunchShape ls =
        emit::generic_attention_launch_shape(pr.launch.spec, pr.launch.params);
    emit::GenericAttentionParams pv = pr.launch.params;
    std::vector<void*> args;
    for (CUdeviceptr& p : ptrs) args.push_back(&p);
    args.push_back(&pv);
    std::vector<std::vector<uint8_t>> again = out;
    for (int run = 0; run < 2; ++run) {
      for (size_t i = 0; i < pr.args.size(); ++i)
        if (!pr.arg_inputs[i])
          GRAPHC_CU(*api_, cuMemsetD8(ptrs[i], 0xff, bufs[i].bytes()),
                    "poisoning an output");  // NaN
      GRAPHC_CU(*api_,
                cuLaunchKernel(
                    k->fn, static_cast<unsigned>(ls.grid[0]), static_cast<unsigned>(ls.grid[1]),
                    static_cast<unsigned>(ls.grid[2]), static_cast<unsigned>(ls.block[0]), 1, 1,
                    static_cast<unsigned>(ls.shared_bytes), nullptr, args.data(), nullptr),
                "launching the generic attention kernel");
      GRAPHC_CU(*api_, cuCtxSynchronize(), "running the generic attention kernel");
      auto& dst = run == 0 ? out : again;
      size_t o = 0;
      for (size_t i = 0; i < pr.args.size(); ++i)
        if (!pr.arg_inputs[i]) {
          if (!dst[o].empty())
            GRAPHC_CU(*api_, cuMemcpyDtoH(dst[o].data(), ptrs[i], dst[o].size()), "download");
          ++o;
        }
    }
    same = out == again;
    return Status::ok_status();
  }

  // Milliseconds per launch (median of `reps` timed with events) on buffers
  // of the right sizes filled with 0x3c bytes; no reference.
  Expected<double> time_launch(const emit::GenericAttentionLaunch& l,
                               const std::vector<size_t>& arg_bytes, int reps) {
    ASSIGN_OR_RETURN(const Kernel* k, kernel(l.spec));
    std::vector<DeviceBuffer> bufs;
    std::vector<CUdeviceptr> ptrs;
    for (size_t bytes : arg_bytes) {
      CUdeviceptr p = 0;
      RETURN_IF_ERROR(
          runtime::device_alloc(*api_, &p, std::max<size_t>(bytes, 16), "bench buffer"));
      bufs.emplace_back(api_, p, bytes);
      GRAPHC_CU(*api_, cuMemsetD8(p, 0x3c, std::max<size_t>(bytes, 16)), "filling a bench buffer");
      ptrs.push_back(p);
    }
    const emit::LaunchShape ls = emit::generic_attention_launch_shape(l.spec, l.params);
    emit::GenericAttentionParams pv = l.params;
    std::vector<void*> args;
    for (CUdeviceptr& p : ptrs) args.push_back(&p);
    args.push_back(&pv);
    CUevent e0 = nullptr, e1 = nullptr;
    GRAPHC_CU(*api_, cuEventCreate(&e0, 0), "cuEventCreate");
    GRAPHC_CU(*api_, cuEventCreate(&e1, 0), "cuEventCreate");
    std::vector<float> ms;
    for (int r = 0; r < reps + 2; ++r) {
      GRAPHC_CU(*api_, cuEventRecord(e0, nullptr), "cuEventRecord");
      GRAPHC_CU(*api_,
                cuLaunchKernel(
                    k->fn, static_cast<unsigned>(ls.grid[0]), static_cast<unsigned>(ls.grid[1]),
                    static_cast<unsigned>(ls.grid[2]), static_cast<unsigned>(ls.block[0]), 1, 1,
                    static_cast<unsigned>(ls.shared_bytes), nullptr, args.data(), nullptr),
                "launching the generic attention kernel");
      GRAPHC_CU(*api_, cuEventRecord(e1, nullptr), "cuEventRecord");
      GRAPHC_CU(*api_, cuEventSynchronize(e1), "cuEventSynchronize");
      float t = 0;
      GRAPHC_CU(*api_, cuEventElapsedTime(&t, e0, e1), "cuEventElapsedTime");
      if (r >= 2) ms.push_back(t);  // two warm-up launches
    }
    api_->cuEventDestroy(e0);
    api_->cuEventDestroy(e1);
    std::sort(ms.begin(), ms.end());
    return static_cast<double>(ms[ms.size() / 2]);
  }

 private:
  GenericGpu() = default;
  const runtime::DriverApi* api_ = nullptr;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  int sm_ = 0;
  int smem_optin_ = 0;
  std::map<std::string, Kernel> kernels_;
};

GenericGpu& gpu() {
  static auto g = GenericGpu::create();
  if (!g.ok()) FAIL(g.status().message());
  return **g;
}

// Shapes too large for the emulator.
std::vector<GenericCase> gpu_cases() {
  std::vector<GenericCase> cs = generic_cases();
  auto add = [&](std::string name, DType dt, auto edit) {
    GenericCase c;
    c.name = std::move(name);
    c.dtype = dt;
    edit(c);
    cs.push_back(std::move(c));
  };
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const std::string tag = std::string(" ") + std::string(ir::dtype_name(dt));
    add("prefill Lq 300 T 1000, D 128, causal, 3-D GQA 8/2" + tag, dt, [](GenericCase& c) {
      c.b = 2;
      c.hq = 8;
      c.hkv = 2;
      c.three_d = true;
      c.lq = 300;
      c.lkv = 1000;
      c.d = c.dv = 128;
      c.causal = true;
    });
    add("decode Lq 1 over past 4095, D 128, GQA 8/2, present" + tag, dt, [](GenericCase& c) {
      c.b = 2;
      c.hq = 8;
      c.hkv = 2;
      c.lq = 1;
      c.lkv = 1;
      c.past = 4095;
      c.d = c.dv = 128;
      c.causal = true;
      c.present_key = c.present_value = true;
    });
  }
  add("head dim 256, Lq 77, T 513, additive mask [B,1,Lq,T] with -inf rows", DType::kFloat32,
      [](GenericCase& c) {
        c.lq = 77;
        c.lkv = 513;
        c.d = c.dv = 256;
        c.mask = MaskKind::kAdditive;
        c.mask_shape = {c.b, 1, c.lq, c.lkv};
        c.masked_rows = true;
      });
  add("Lq 130 T 130, window 32 causal, softcap, bool mask, qk mode 3", DType::kFloat16,
      [](GenericCase& c) {
        c.lq = c.lkv = 130;
        c.d = c.dv = 64;
        c.causal = true;
        c.left = 32;
        c.softcap = 20;
        c.mask = MaskKind::kBool;
        c.mask_shape = {c.lq, c.lkv};
        c.qk_mode = 3;
      });
  add("Lq 4 over past 700 + 4, nonpad-free cache, mask [B,1,Lq,T], qk mode 2", DType::kBFloat16,
      [](GenericCase& c) {
        c.lq = 4;
        c.lkv = 4;
        c.past = 700;
        c.causal = true;
        c.mask = MaskKind::kAdditive;
        c.mask_shape = {c.b, 1, c.lq, c.past + c.lkv};
        c.qk_mode = 2;
      });
  add("nonpad Lq 50 T 600, causal, D 80 / Dv 48", DType::kFloat32, [](GenericCase& c) {
    c.b = 3;
    c.lq = 50;
    c.lkv = 600;
    c.d = 80;
    c.dv = 48;
    c.nonpad = {600, 17, 333};
    c.causal = true;
  });
  return cs;
}

void check(const GenericCase& c, const GenericProblem& pr) {
  INFO(c.name << " [" << emit::generic_attention_entry_name(pr.launch.spec) << "]");
  std::vector<std::vector<uint8_t>> out;
  bool same = false;
  Status st = gpu().run(pr, out, same);
  if (!st.ok()) FAIL(st.message());
  for (const auto& ch : compare_generic_outputs(c, pr, out)) {
    INFO(ch.summary());
    CHECK(ch.ok);
  }
  CHECK(same);
}

}  // namespace

TEST_CASE("generic attention matches the reference executor on the GPU",
          "[gpu][attention-generic-gpu]") {
  std::mt19937 rng(20260318);
  std::vector<GenericCase> cases = gpu_cases();
  std::vector<GenericProblem> problems;
  std::vector<emit::GenericAttentionSpec> specs;
  for (const auto& c : cases) {
    auto pr = make_problem(c, rng, gpu().sm());
    INFO(c.name);
    if (!pr.ok()) FAIL(pr.status().message());
    specs.push_back(pr->launch.spec);
    problems.push_back(std::move(*pr));
  }
  REQUIRE(gpu().prepare(specs).ok());  // NVRTC in parallel first
  for (size_t i = 0; i < cases.size(); ++i) check(cases[i], problems[i]);
}

TEST_CASE("generic attention: every tile over a few cases", "[gpu][attention-generic-gpu]") {
  std::mt19937 rng(99);
  const GenericAttentionTile tiles[] = {{4, 1, 4}, {2, 1, 4}, {1, 1, 1}, {1, 2, 1}, {1, 4, 1},
                                        {1, 4, 4}, {2, 2, 4}, {4, 1, 8}, {2, 2, 8}, {8, 2, 2}};
  for (const auto& base : gpu_cases()) {
    const bool pick =
        base.name.find("prefill Lq 300 T 1000, D 128, causal, 3-D GQA 8/2 float16") == 0 ||
        base.name.find("qk mode 3, key_warps") == 0 || base.name.find("decode Lq 1") == 0 ||
        base.name.find("Lq 130 T 130, window 32") == 0;
    if (!pick) continue;
    for (const auto& t : tiles) {
      GenericCase c = base;
      c.tile = t;
      c.name += " tile " + emit::generic_attention_tile_name(t);
      auto pr = make_problem(c, rng, gpu().sm());
      INFO(c.name);
      if (!pr.ok()) {
        // Tiles over the shared-memory limit at this head dim are refused, not run.
        CHECK_THAT(pr.status().message(), Catch::Contains("shared memory"));
        continue;
      }
      if (emit::generic_attention_shared_bytes(pr->launch.spec) > gpu().smem_optin())
        continue;  // not on this GPU
      check(c, *pr);
    }
  }
}

TEST_CASE("generic attention kernels use no local memory on this GPU",
          "[gpu][attention-generic-gpu]") {
  for (int d : {64, 128, 256})
    for (auto dt : {DType::kFloat32, DType::kFloat16}) {
      emit::GenericAttentionSpec s;
      s.dtype = dt;
      s.head_dim = s.head_dim_v = d;
      s.mask = emit::GenericAttentionSpec::Mask::kAdditive;
      s.mask_dtype = dt;
      s.causal = s.softcap = s.window = s.past = s.present_key = s.present_value = s.qk_output =
          true;
      s.qk_mode = 3;
      for (int64_t lq : {1, 1000}) {
        s.tile = emit::default_generic_attention_tile(s, lq, gpu().sm());
        auto k = gpu().kernel(s);
        REQUIRE(k.ok());
        INFO(emit::generic_attention_entry_name(s) << ": " << (*k)->registers << " registers");
        CHECK((*k)->frame_bytes == 0);
      }
    }
}

TEST_CASE("generic attention timings", "[.][attention-generic-bench]") {
  struct Shape {
    const char* what;
    DType dt;
    int64_t b, hq, hkv, lq, lkv, past, d;
    bool causal;
  };
  const Shape shapes[] = {
      {"prefill B1 H16 L4096 D128", DType::kFloat32, 1, 16, 16, 4096, 4096, 0, 128, false},
      {"prefill B1 H16 L4096 D128 causal", DType::kFloat32, 1, 16, 16, 4096, 4096, 0, 128, true},
      {"prefill B1 H16 L4096 D128", DType::kFloat16, 1, 16, 16, 4096, 4096, 0, 128, false},
      {"prefill B4 H12 L512 D64", DType::kFloat32, 4, 12, 12, 512, 512, 0, 64, false},
      {"decode B8 H32/8 T4096 D128 (past 4095)", DType::kFloat32, 8, 32, 8, 1, 1, 4095, 128, true},
      {"decode B8 H32/8 T4096 D128 (past 4095)", DType::kFloat16, 8, 32, 8, 1, 1, 4095, 128, true},
  };
  std::printf("%-44s %-8s %-14s %10s %10s %10s\n", "shape", "dtype", "tile", "ms", "TFLOP/s",
              "KV GB/s");
  for (const Shape& sh : shapes) {
    ir::AttentionParams a;
    a.dtype = sh.dt;
    a.batch = sh.b;
    a.q_heads = sh.hq;
    a.kv_heads = sh.hkv;
    a.q_len = sh.lq;
    a.kv_len = sh.lkv;
    a.past_len = sh.past;
    a.total_len = sh.past + sh.lkv;
    a.head_size = a.v_head_size = sh.d;
    a.scale = 1.0 / std::sqrt(static_cast<double>(sh.d));
    a.is_causal = sh.causal;
    a.has_past = sh.past > 0;
    auto l = emit::generic_attention_from_ir(a, {}, gpu().sm());
    REQUIRE(l.ok());
    const size_t es = ir::dtype_size(sh.dt);
    std::vector<size_t> bytes;
    for (GenericAttentionArg g : emit::generic_attention_kernel_args(l->spec)) {
      switch (g) {
        case GenericAttentionArg::kQ:
        case GenericAttentionArg::kY: bytes.push_back(es * sh.b * sh.hq * sh.lq * sh.d); break;
        case GenericAttentionArg::kK:
        case GenericAttentionArg::kV: bytes.push_back(es * sh.b * sh.hkv * sh.lkv * sh.d); break;
        case GenericAttentionArg::kPastKey:
        case GenericAttentionArg::kPastValue:
          bytes.push_back(es * sh.b * sh.hkv * sh.past * sh.d);
          break;
        default: FAIL("unexpected argument");
      }
    }
    auto ms = gpu().time_launch(*l, bytes, 20);
    REQUIRE(ms.ok());
    const double T = static_cast<double>(a.total_len);
    double flops = 2.0 * sh.b * sh.hq * sh.lq * T * (2.0 * sh.d);
    if (sh.causal && sh.lq == a.total_len) flops /= 2;
    const double kv_bytes = 2.0 * es * sh.b * sh.hkv * T * sh.d;
    std::printf("%-44s %-8s %-14s %10.3f %10.2f %10.1f\n", sh.what,
                std::string(ir::dtype_name(sh.dt)).c_str(),
                emit::generic_attention_tile_name(l->spec.tile).c_str(), *ms,
                flops / (*ms * 1e-3) / 1e12, kv_bytes / (*ms * 1e-3) / 1e9);
  }
}
