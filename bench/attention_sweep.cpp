// graphc_attention_bench: times the fused attention kernel
// (emit/cuda/cuda_attention.h) on the GPU over the attention sweep and prints one
// JSON line per (shape, tile variant); --check runs the correctness cases of
// tests/attention_harness.h first (the same as attention_kernel_gpu_test).
//
//   graphc_attention_bench [--check] [--no-sweep] [--default-only] [--quick] [--list-shapes]
//                          [--out FILE.jsonl] [--max-ms-per-point MS] [--filter STR]
//
// Timing: CUDA events around batches of launches on one stream, warm-up
// first, the median of 9 batches; inputs rotate over enough buffer sets that
// one pass over them exceeds 256 MiB (the H100's L2 is 50 MB), so HBM, not
// the cache, is measured. FLOPs: 4·B·H·Lq·Lk·D (D == Dv), halved for causal.
// Each variant's output on the same inputs is compared with the default
// tile's (relative L2), so a fast but wrong variant shows as "mismatch".
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tests/gpu/attention_runner.h"

using namespace graphc;
using namespace graphc::testing::attn;

namespace {

struct Shape {
  int batch, heads, len, dim;
  bool causal;
};

std::vector<Shape> sweep_shapes(bool quick) {
  std::vector<Shape> out;
  // The two reference points first.
  for (bool causal : {false, true}) out.push_back({2, 16, 4096, 128, causal});
  for (bool causal : {false, true}) out.push_back({8, 12, 512, 64, causal});
  // Batch 1..32 x 12 heads x lengths 128..8192 x head dims 64/128, causal and
  // not; batch·length capped at 32768 tokens (32 x 8192 would be 44 TFLOP a launch).
  const std::vector<int> batches = quick ? std::vector<int>{2, 8} : std::vector<int>{1, 2, 8, 32};
  const std::vector<int> lens = quick ? std::vector<int>{512, 2048, 8192}
                                      : std::vector<int>{128, 256, 512, 1024, 2048, 4096, 8192};
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int b : batches)
        for (int l : lens)
          if (int64_t{b} * l <= 32768) out.push_back({b, 12, l, d, causal});
  return out;
}

uint64_t g_state = 0x9E3779B97F4A7C15ull;
uint16_t rand_half(ir::DType dt) {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  const float f = static_cast<float>(static_cast<int64_t>(g_state >> 40) - (1 << 23)) / float(1 << 22);  // [-2, 2)
  return to_bits(dt, f == 0.0f ? 0.25f : f);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int run_check(AttentionGpu& gpu) {
  std::mt19937 rng(20261201);
  int failed = 0, ran = 0;
  std::vector<AttentionCase> cases = attention_cases();
  // A few cases over every tile variant, as the GPU test does.
  for (const auto& c : attention_cases())
    if (c.name == "head dim 64" || c.name == "head dim 128" || c.name == "causal, length 1000" ||
        c.name == "causal Lq 77 Lk 200 offset 123" || c.name == "fully masked rows (boolean)")
      for (const auto& t : emit::attention_tile_variants(c.spec)) {
        AttentionCase v = c;
        v.spec.tile = t;
        v.name += " [" + emit::attention_tile_name(t) + "]";
        cases.push_back(v);
      }
  std::vector<emit::AttentionKernelSpec> specs;
  for (auto& c : cases) {
    if (c.name.find('[') == std::string::npos)
      c.spec.tile = emit::default_attention_tile(c.spec, gpu.sm(), c.q_len, c.kv_len);
    specs.push_back(c.spec);
  }
  if (auto st = gpu.prepare(specs); !st.ok()) {
    std::printf("FAIL compile: %s\n", st.message().c_str());
    return 1;
  }
  for (const auto& c : cases) {
    bool same = false;
    auto r = gpu.run_case(c, rng, &same);
    ++ran;
    if (!r.ok()) {
      std::printf("FAIL  %-60s %s\n", c.name.c_str(), r.status().message().c_str());
      ++failed;
      if (!runtime::device_usable().ok()) break;
      continue;
    }
    const bool ok = r->ok(attention_tolerance(c.spec.dtype)) && same;
    if (!ok) ++failed;
    std::printf("%s  %-62s %-4s rel_l2 %.2e unwritten %lld masked!=0 %lld%s\n", ok ? "ok  " : "FAIL", c.name.c_str(),
                c.spec.dtype == ir::DType::kBFloat16 ? "bf16" : "fp16", r->rel_l2,
                static_cast<long long>(r->unwritten), static_cast<long long>(r->masked_nonzero),
                same ? "" : " (two runs differ)");
    std::fflush(stdout);
  }
  std::printf("check: %d cases, %d failed\n", ran, failed);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false, sweep = true, default_only = false, quick = false, list_shapes = false;
  double max_ms = 400;
  std::string out_path, filter;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--check") check = true;
    else if (a == "--no-sweep") sweep = false;
    else if (a == "--default-only") default_only = true;
    else if (a == "--quick") quick = true;
    else if (a == "--list-shapes") list_shapes = true;
    else if (a == "--out" && i + 1 < argc) out_path = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--max-ms-per-point" && i + 1 < argc) max_ms = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--check] [--no-sweep] [--default-only] [--quick] [--out F] [--filter S]\n",
                   argv[0]);
      return 2;
    }
  }
  if (list_shapes) {  // for scripts/bench_attention.py: the same sweep on the PyTorch side
    for (const Shape& sh : sweep_shapes(quick))
      std::printf("{\"batch\": %d, \"heads\": %d, \"q_len\": %d, \"kv_len\": %d, \"head_dim\": %d, \"causal\": %s}\n",
                  sh.batch, sh.heads, sh.len, sh.len, sh.dim, sh.causal ? "true" : "false");
    return 0;
  }
  auto g = AttentionGpu::create();
  if (!g.ok()) {
    std::fprintf(stderr, "no GPU: %s\n", g.status().message().c_str());
    return 77;
  }
  AttentionGpu& gpu = **g;
  std::fprintf(stderr, "device: %s (%s)\n", gpu.device_name().c_str(), gpu.arch().c_str());
  int rc = 0;
  if (check) rc = run_check(gpu);
  if (!sweep) return rc;

  std::ofstream out_file;
  if (!out_path.empty()) out_file.open(out_path);
  const runtime::DriverApi& api = gpu.api();
  CUstream stream = nullptr;
  CUevent e0 = nullptr, e1 = nullptr;
  if (api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      api.cuEventCreate(&e0, CU_EVENT_DEFAULT) != CUDA_SUCCESS || api.cuEventCreate(&e1, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    std::fprintf(stderr, "cannot create a stream or events\n");
    return 1;
  }
  const ir::DType dt = ir::DType::kFloat16;
  // Compile every kernel of the sweep up front, in parallel.
  {
    std::vector<emit::AttentionKernelSpec> all;
    for (int d : {64, 128})
      for (bool causal : {false, true}) {
        emit::AttentionKernelSpec s;
        s.dtype = dt;
        s.head_dim = s.head_dim_v = d;
        s.causal = causal;
        for (const auto& t : emit::attention_tile_variants(s)) {
          s.tile = t;
          if (t.block_q % 16 == 0) all.push_back(s);
          if (default_only) break;
        }
      }
    const auto t0 = std::chrono::steady_clock::now();
    if (auto st = gpu.prepare(all); !st.ok()) {
      std::fprintf(stderr, "compile: %s\n", st.message().c_str());
      return 1;
    }
    std::fprintf(stderr, "compiled %zu kernels in %.1f s\n", all.size(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  for (const Shape& sh : sweep_shapes(quick)) {
    emit::AttentionKernelSpec base;
    base.dtype = dt;
    base.head_dim = base.head_dim_v = sh.dim;
    base.causal = sh.causal;
    AttentionCase c;
    c.batch = sh.batch;
    c.q_heads = c.kv_heads = sh.heads;
    c.q_len = c.kv_len = sh.len;
    c.spec = base;
    const std::string shape_name = fmt::format("b{}_h{}_l{}_d{}{}", sh.batch, sh.heads, sh.len, sh.dim, sh.causal ? "_causal" : "");
    if (!filter.empty() && shape_name.find(filter) == std::string::npos) continue;
    emit::AttentionParams p{};
    p.batch = sh.batch;
    p.q_heads = p.kv_heads = sh.heads;
    p.q_len = p.kv_len = sh.len;
    p.scale = 1.0f / std::sqrt(static_cast<float>(sh.dim));
    emit::set_attention_strides_bhsd(p.q_stride_b, p.q_stride_h, p.q_stride_s, sh.heads, sh.len, sh.dim);
    p.k_stride_b = p.v_stride_b = p.o_stride_b = p.q_stride_b;
    p.k_stride_h = p.v_stride_h = p.o_stride_h = p.q_stride_h;
    p.k_stride_s = p.v_stride_s = p.o_stride_s = p.q_stride_s;
    const size_t elems = size_t(sh.batch) * sh.heads * sh.len * sh.dim;
    const size_t set_bytes = elems * 2 * 4;
    const int nsets = static_cast<int>(std::clamp<size_t>((size_t(256) << 20) / set_bytes + 1, 2, 24));
    std::vector<DeviceBuffer> bufs;  // per set: q, k, v, o
    std::vector<uint16_t> host(elems);
    bool alloc_ok = true;
    for (int s = 0; s < nsets * 4 && alloc_ok; ++s) {
      for (auto& x : host) x = rand_half(dt);
      auto b = gpu.upload(host);
      if (!b.ok()) alloc_ok = false;
      else bufs.push_back(std::move(*b));
    }
    if (!alloc_ok) {
      std::fprintf(stderr, "%s: out of memory, skipped\n", shape_name.c_str());
      continue;
    }
    const double flops = emit::attention_flops(base, p);
    std::vector<emit::AttentionTile> tiles = emit::attention_tile_variants(base);
    if (default_only) tiles.resize(1);
    std::vector<uint16_t> ref_out, got(elems);
    for (const auto& tile : tiles) {
      emit::AttentionKernelSpec s = base;
      s.tile = tile;
      auto k = gpu.kernel(s);
      if (!k.ok()) {
        std::fprintf(stderr, "%s %s: %s\n", shape_name.c_str(), emit::attention_tile_name(tile).c_str(),
                     k.status().message().c_str());
        continue;
      }
      auto launch = [&](int set) {
        const auto& b = bufs;
        return gpu.launch(**k, p, b[set * 4].get(), b[set * 4 + 1].get(), b[set * 4 + 2].get(), 0,
                          b[set * 4 + 3].get(), stream);
      };
      Status st = launch(0);
      if (st.ok() && api.cuStreamSynchronize(stream) != CUDA_SUCCESS) st = internal_error("kernel failed");
      if (!st.ok()) {
        std::fprintf(stderr, "%s: %s\n", shape_name.c_str(), st.message().c_str());
        return 1;
      }
      // Same inputs as the first (default) tile: compare outputs.
      double mismatch = 0;
      api.cuMemcpyDtoH(got.data(), bufs[3].get(), elems * 2);
      if (ref_out.empty()) {
        ref_out = got;
      } else {
        double num = 0, den = 0;
        for (size_t i = 0; i < elems; ++i) {
          const double a = from_bits(dt, ref_out[i]), b2 = from_bits(dt, got[i]);
          num += (a - b2) * (a - b2);
          den += a * a;
        }
        mismatch = std::isfinite(num) ? std::sqrt(num / std::max(den, 1e-30)) : 1e9;
      }
      // Calibrate: launches per timed batch so a batch takes ~2 ms.
      api.cuEventRecord(e0, stream);
      for (int i = 0; i < 3; ++i) (void)launch(i % nsets);
      api.cuEventRecord(e1, stream);
      api.cuEventSynchronize(e1);
      float ms3 = 0;
      api.cuEventElapsedTime(&ms3, e0, e1);
      const double one = std::max(1e-3, ms3 / 3.0);
      const int iters = static_cast<int>(std::clamp(2.0 / one, 1.0, 200.0));
      int batches = static_cast<int>(std::clamp(max_ms / (one * iters), 3.0, 9.0));
      std::vector<double> times;
      int set = 0;
      for (int r = 0; r < batches; ++r) {
        api.cuEventRecord(e0, stream);
        for (int i = 0; i < iters; ++i) {
          (void)launch(set);
          set = (set + 1) % nsets;
        }
        api.cuEventRecord(e1, stream);
        if (api.cuEventSynchronize(e1) != CUDA_SUCCESS) {
          std::fprintf(stderr, "%s: kernel error\n", shape_name.c_str());
          return 1;
        }
        float ms = 0;
        api.cuEventElapsedTime(&ms, e0, e1);
        times.push_back(ms / iters);
      }
      const double med = median(times);
      const double lo = *std::min_element(times.begin(), times.end());
      const std::string line = fmt::format(
          "{{\"impl\": \"graphc\", \"tile\": \"{}\", \"default\": {}, \"batch\": {}, \"heads\": {}, \"q_len\": {}, "
          "\"kv_len\": {}, \"head_dim\": {}, \"causal\": {}, \"dtype\": \"fp16\", \"ms\": {:.5f}, \"ms_min\": {:.5f}, "
          "\"tflops\": {:.2f}, \"registers\": {}, \"smem\": {}, \"mismatch\": {:.2e}, \"device\": \"{}\"}}",
          emit::attention_tile_name(tile), &tile == &tiles.front() ? "true" : "false", sh.batch, sh.heads, sh.len,
          sh.len, sh.dim, sh.causal ? "true" : "false", med, lo, flops / (med * 1e-3) / 1e12, (*k)->registers,
          emit::attention_shared_bytes(s), mismatch, gpu.device_name());
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      if (out_file) out_file << line << "\n" << std::flush;
    }
  }
  return rc;
}
