// The cuDNN attention call (runtime/cudnn_sdpa.h) timed as engines run it:
// one sdpa launch in an engine, its context's CUDA graph replayed, CUDA-event
// timing of each replay, the median after warm-up. Prints one JSON line per
// configuration (TFLOP/s from 4·B·H·Lq·Lk·D, halved for causal) and a summary
// table last:
//   graphc_sdpa_bench [--sweep default|quick|probe] [--budget-s S] [--iters N]
//                     [--warmup N] [--dtype fp16|bf16] [--layout bhsd|bshd]
// The default sweep is the attention sweep: the headline shapes first (2x16x4096x128
// and 8x12x512x64, causal and not), then batch {1,2,8,32} x 12 heads x
// lengths 128..8192 x head dims 64/128 x causal/not. Configurations that do
// not fit in the device's free memory are skipped, and when the budget is
// spent the rest are reported as skipped. Inputs are random values in
// [-1, 1] (a random block tiled over each buffer on the device). Exit status
// 0 when every configuration that was measured ran; 1 otherwise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/cudnn_sdpa.h"
#include "runtime/engine.h"
#include "tests/gpu/sdpa_gpu_util.h"

using namespace graphc;
using graphc::engine::SdpaParams;
namespace sd = graphc::testing::sdpa;

namespace {

struct Options {
  std::string sweep = "default";
  double budget_s = 420;
  int iters = 20, warmup = 5;
  int32_t dtype = 10;
  bool bshd = false;
};

struct Result {
  SdpaParams p;
  std::string status = "ok";  // ok, unsupported, error, skipped
  std::string error, note;
  double load_s = 0;   // Engine::create: cuDNN's graph, heuristics and plan
  double setup_s = 0;  // a context: workspace, eager warm-up, CUDA-graph capture
  double ms = 0, min_ms = 0, tflops = 0;
};

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Fills `bytes` at `dst` by tiling the random block `pattern` (device memory).
Status tile(const runtime::DriverApi& a, CUdeviceptr dst, uint64_t bytes, CUdeviceptr pattern,
            uint64_t pattern_bytes, CUstream s) {
  uint64_t done = 0, shift = 0;
  while (done < bytes) {
    // A varying start inside the block, so tiles are not identical copies.
    const uint64_t start = (shift * 4099 * 2) % (pattern_bytes / 2);
    const uint64_t n = std::min<uint64_t>(bytes - done, pattern_bytes - start);
    GRAPHC_CU(a, cuMemcpyDtoDAsync(dst + done, pattern + start, n, s), "tiling inputs");
    done += n;
    ++shift;
  }
  return Status::ok_status();
}

Result run_one(const SdpaParams& p, const Options& o, const runtime::DriverApi& a,
               CUdeviceptr pattern, uint64_t pattern_bytes) {
  Result r;
  r.p = p;
  const runtime::Executable exe = sd::executable(p);
  // The engine as an application loads it (cuDNN's graph, heuristics and
  // plan), then a context (workspace, eager warm-up, CUDA-graph capture).
  const auto tl = std::chrono::steady_clock::now();
  auto eng = runtime::Engine::create(exe);
  r.load_s = since(tl);
  if (!eng.ok()) {
    r.status = eng.status().code() == ErrorCode::kUnsupported ? "unsupported" : "error";
    r.error = eng.status().message();
    return r;
  }
  r.note = runtime::last_sdpa_setup_note();
  const auto t1 = std::chrono::steady_clock::now();
  auto ctx = (*eng)->create_context();
  if (!ctx.ok()) {
    r.status = "error";
    r.error = ctx.status().message();
    return r;
  }
  r.setup_s = since(t1);
  runtime::ExecutionContext& c = **ctx;
  CUstream s = c.stream();
  for (const char* name : {"q", "k", "v"}) {
    auto addr = c.tensor_address(name);
    auto index = (*eng)->binding_index(name);
    if (!addr.ok() || !index) {
      r.status = "error";
      r.error = "no binding " + std::string(name);
      return r;
    }
    Status st =
        tile(a, *addr, static_cast<uint64_t>((*eng)->bindings()[static_cast<size_t>(*index)].bytes),
             pattern, pattern_bytes, s);
    if (!st.ok()) {
      r.status = "error";
      r.error = st.message();
      return r;
    }
  }
  auto timer = runtime::GpuTimer::create(**eng);
  if (!timer.ok()) {
    r.status = "error";
    r.error = timer.status().message();
    return r;
  }
  std::vector<double> ms;
  for (int i = 0; i < o.warmup + o.iters; ++i) {
    Status st = (*timer)->start(s);
    if (st.ok()) st = c.enqueue(s);
    if (st.ok()) st = (*timer)->stop(s);
    auto t = st.ok() ? (*timer)->elapsed_ms() : Expected<float>(st);
    if (!t.ok()) {
      r.status = "error";
      r.error = t.status().message();
      return r;
    }
    if (i >= o.warmup) ms.push_back(*t);
  }
  std::sort(ms.begin(), ms.end());
  r.ms = ms[ms.size() / 2];
  r.min_ms = ms.front();
  r.tflops = engine::sdpa_flops(p) / (r.ms * 1e-3) / 1e12;
  return r;
}

void print_json(const Result& r, const std::string& device, size_t cudnn) {
  const SdpaParams& p = r.p;
  std::printf(
      "{\"bench\":\"cudnn_sdpa\",\"device\":\"%s\",\"cudnn\":%zu,\"dtype\":\"%s\",\"layout\":\"%"
      "s\","
      "\"batch\":%lld,\"heads\":%lld,\"seq_q\":%lld,\"seq_kv\":%lld,\"head_dim\":%lld,"
      "\"causal\":%s,\"status\":\"%s\",\"ms\":%.5f,\"min_ms\":%.5f,\"tflops\":%.2f,"
      "\"flops\":%.6g,\"load_s\":%.3f,\"context_s\":%.3f,\"note\":\"%s\",\"error\":\"%s\"}\n",
      json_escape(device).c_str(), cudnn, p.dtype == 16 ? "bf16" : "fp16",
      p.q_strides == engine::packed_bshd_strides(p.heads, p.seq_q, p.head_dim) ? "bshd" : "bhsd",
      static_cast<long long>(p.batch), static_cast<long long>(p.heads),
      static_cast<long long>(p.seq_q), static_cast<long long>(p.seq_kv),
      static_cast<long long>(p.head_dim), p.causal ? "true" : "false", r.status.c_str(), r.ms,
      r.min_ms, r.tflops, engine::sdpa_flops(p), r.load_s, r.setup_s, json_escape(r.note).c_str(),
      json_escape(r.error.substr(0, 600)).c_str());
  std::fflush(stdout);
}

std::vector<SdpaParams> sweep(const Options& o) {
  std::vector<SdpaParams> out;
  auto add = [&](int64_t b, int64_t h, int64_t l, int64_t d, bool causal) {
    SdpaParams p = sd::bhsd(o.dtype, b, h, l, l, d, causal);
    if (o.bshd) sd::repack(p, true);
    for (const SdpaParams& q : out)
      if (q == p) return;
    out.push_back(p);
  };
  for (bool causal : {false, true}) {
    add(2, 16, 4096, 128, causal);
    add(8, 12, 512, 64, causal);
  }
  if (o.sweep == "probe") {  // one small call, for cuDNN's debug log
    out.clear();
    add(2, 4, 128, 64, true);
    return out;
  }
  if (o.sweep == "quick") {
    for (bool causal : {false, true})
      for (int64_t l : {128, 1024, 4096}) add(2, 12, l, 64, causal), add(2, 12, l, 128, causal);
    return out;
  }
  for (int64_t d : {64, 128})
    for (bool causal : {false, true})
      for (int64_t b : {1, 2, 8, 32})
        for (int64_t l : {128, 256, 512, 1024, 2048, 4096, 8192}) add(b, 12, l, d, causal);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--sweep")
      o.sweep = next();
    else if (a == "--budget-s")
      o.budget_s = std::atof(next().c_str());
    else if (a == "--iters")
      o.iters = std::max(1, std::atoi(next().c_str()));
    else if (a == "--warmup")
      o.warmup = std::max(0, std::atoi(next().c_str()));
    else if (a == "--dtype")
      o.dtype = next() == "bf16" ? 16 : 10;
    else if (a == "--layout")
      o.bshd = next() == "bshd";
    else {
      std::fprintf(
          stderr,
          "usage: graphc_sdpa_bench [--sweep default|quick|probe] [--budget-s S] [--iters N] "
          "[--warmup N] [--dtype fp16|bf16] [--layout bhsd|bshd]\n");
      return 2;
    }
  }
  auto driver = runtime::load_driver();
  if (!driver.ok()) {
    std::printf("SKIPPED: the benchmark needs a CUDA device: %s\n",
                driver.status().message().c_str());
    return 77;
  }
  const runtime::DriverApi& a = **driver;
  auto cudnn = runtime::load_cudnn();
  if (!cudnn.ok()) {
    std::printf("cuDNN: %s\n", cudnn.status().message().c_str());
    return 1;
  }
  const size_t cudnn_version = (*cudnn)->cudnnGetVersion();
  // A context for the random block and the memory query: the device's primary one.
  CUdevice dev = 0;
  CUcontext primary = nullptr;
  if (a.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      a.cuDevicePrimaryCtxRetain(&primary, dev) != CUDA_SUCCESS ||
      a.cuCtxSetCurrent(primary) != CUDA_SUCCESS) {
    std::printf("no CUDA context on device 0\n");
    return 1;
  }
  char name[256] = {};
  a.cuDeviceGetName(name, sizeof name - 1, dev);
  const uint64_t pattern_bytes = uint64_t{16} << 20;
  CUdeviceptr pattern = 0;
  {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<uint16_t> host(pattern_bytes / 2);
    for (auto& x : host) x = sd::from_float(o.dtype, u(rng));
    if (runtime::device_alloc(a, &pattern, pattern_bytes, "the random block").ok() == false ||
        a.cuMemcpyHtoD(pattern, host.data(), pattern_bytes) != CUDA_SUCCESS) {
      std::printf("could not upload the random block\n");
      return 1;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<Result> results;
  int failed = 0;
  for (const SdpaParams& p : sweep(o)) {
    Result r;
    r.p = p;
    size_t free_bytes = 0, total = 0;
    a.cuCtxSetCurrent(primary);
    a.cuMemGetInfo(&free_bytes, &total);
    const double need =
        2.0 * static_cast<double>(p.q_extent() + p.k_extent() + p.v_extent() + p.o_extent()) +
        static_cast<double>(sd::kWorkspaceLimit);
    if (since(start) > o.budget_s) {
      r.status = "skipped";
      r.error = "time budget spent";
    } else if (need > 0.9 * static_cast<double>(free_bytes)) {
      r.status = "skipped";
      r.error = "does not fit in the device's free memory";
    } else {
      r = run_one(p, o, a, pattern, pattern_bytes);
      if (r.status == "error") ++failed;
    }
    print_json(r, name, cudnn_version);
    results.push_back(r);
  }
  a.cuCtxSetCurrent(primary);
  a.cuMemFree(pattern);
  // The table, last.
  std::printf("\ncuDNN %zu SDPA on %s, %s, median of %d CUDA-graph replays after %d warm-up\n",
              cudnn_version, name, o.dtype == 16 ? "bf16" : "fp16", o.iters, o.warmup);
  std::printf("%5s %5s %6s %5s %7s  %10s %9s  %s\n", "batch", "heads", "length", "dim", "causal",
              "ms", "TFLOP/s", "status");
  for (const Result& r : results)
    std::printf("%5lld %5lld %6lld %5lld %7s  %10.4f %9.1f  %s\n",
                static_cast<long long>(r.p.batch), static_cast<long long>(r.p.heads),
                static_cast<long long>(r.p.seq_q), static_cast<long long>(r.p.head_dim),
                r.p.causal ? "yes" : "no", r.ms, r.tflops, r.status.c_str());
  a.cuDevicePrimaryCtxRelease(dev);
  return failed ? 1 : 0;
}
