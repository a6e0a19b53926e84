// The fused attention kernel (emit/cuda_attention.h) on the GPU against the
// double-precision CPU reference of tests/attention_harness.h: compiled with
// NVRTC for this device's SM, loaded and launched through the driver API as
// the runtime does (tests/gpu/attention_runner.h), fresh random inputs, the
// output poisoned with NaN before each run and every element checked written.
// fp16 relative L2 < 2e-3, bf16 < 1e-2; fully masked rows exactly 0; two runs
// bit-identical. Cases: head dims 32..256, D != Dv, odd lengths, cross
// attention, causal with Lq != Lk and offsets, broadcast additive masks in
// three dtypes, boolean masks, fully masked rows, GQA / MQA, [B,L,H*D]
// layouts, large negative mask values, softcap, negative scale; a few cases
// over every tile variant.
#include <catch2/catch.hpp>

#include "tests/gpu/attention_runner.h"

using namespace graphc;
using namespace graphc::testing::attn;

namespace {

AttentionGpu& gpu() {
  static auto g = AttentionGpu::create();
  if (!g.ok()) FAIL(g.status().message());
  return **g;
}

void check_case(AttentionCase c, std::mt19937& rng) {
  INFO(c.name << " [" << emit::attention_tile_name(c.spec.tile) << "] B " << c.batch << " H " << c.q_heads << "/"
               << c.kv_heads << " Lq " << c.q_len << " Lk " << c.kv_len << " D " << c.spec.head_dim << "/"
               << c.spec.head_dim_v << " " << ir::dtype_name(c.spec.dtype));
  bool same = false;
  auto r = gpu().run_case(c, rng, &same);
  if (!r.ok()) FAIL(r.status().message());
  INFO("rel L2 " << r->rel_l2 << ", unwritten/non-finite " << r->unwritten << ", masked rows not 0 "
                 << r->masked_nonzero);
  CHECK(r->unwritten == 0);
  CHECK(r->masked_nonzero == 0);
  CHECK(r->rel_l2 < attention_tolerance(c.spec.dtype));
  CHECK(same);
}

}  // namespace

TEST_CASE("fused attention matches the reference on the GPU", "[gpu][attention-kernel-gpu]") {
  std::mt19937 rng(20261201);
  auto cases = attention_cases();
  // Precompile every spec in parallel first (NVRTC dominates).
  std::vector<emit::AttentionKernelSpec> specs;
  for (auto& c : cases) {
    c.spec.tile = emit::default_attention_tile(c.spec, gpu().sm(), c.q_len, c.kv_len);
    specs.push_back(c.spec);
  }
  REQUIRE(gpu().prepare(specs).ok());
  for (const auto& c : cases) check_case(c, rng);
}

TEST_CASE("every tile variant of the fused attention matches the reference", "[gpu][attention-kernel-gpu]") {
  std::mt19937 rng(77);
  std::vector<AttentionCase> picked;
  for (const auto& c : attention_cases())
    if (c.name == "head dim 64" || c.name == "head dim 128" || c.name == "head dim 256" ||
        c.name == "causal, length 1000" || c.name == "causal Lq 77 Lk 200 offset 123" ||
        c.name == "fully masked rows (boolean)" || c.name == "MQA 8/1")
      picked.push_back(c);
  std::vector<AttentionCase> all;
  for (const auto& c : picked)
    for (const auto& t : emit::attention_tile_variants(c.spec)) {
      AttentionCase v = c;
      v.spec.tile = t;
      if (emit::attention_shared_bytes(v.spec) > 227 * 1024) continue;
      all.push_back(v);
    }
  std::vector<emit::AttentionKernelSpec> specs;
  for (const auto& c : all) specs.push_back(c.spec);
  REQUIRE(gpu().prepare(specs).ok());
  for (const auto& c : all) check_case(c, rng);
}

TEST_CASE("fused attention kernels use no local memory on this GPU", "[gpu][attention-kernel-gpu]") {
  emit::AttentionKernelSpec s;
  s.dtype = ir::DType::kFloat16;
  for (int d : {64, 128, 256}) {
    s.head_dim = s.head_dim_v = d;
    s.tile = emit::default_attention_tile(s, gpu().sm());
    auto k = gpu().kernel(s);
    REQUIRE(k.ok());
    INFO((*k)->name << ": " << (*k)->registers << " registers");
    CHECK((*k)->frame_bytes == 0);
  }
}
