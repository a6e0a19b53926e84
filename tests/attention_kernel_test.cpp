// The fused attention kernel generator (emit/cuda/cuda_attention.h) without a GPU:
// sources are deterministic and named per spec, specs and run-time arguments
// are validated, launch shapes follow the tile, and every generated kernel of
// a grid of specs (head dims, dtypes, masks, causal, softcap, tiles) compiles
// with NVRTC for sm_80 and sm_90 with no local-memory stack frame (no spills)
// and at most 255 registers, read from the CUBIN's .nv.info. Numerical checks
// are in gpu/attention_kernel_gpu_test.cpp (and, slowly, on the host with
// tests/emu/attention_emu.cpp).
#include <catch2/catch.hpp>

#include <set>

#include "emit/nvrtc/cubin_resources.h"
#include "emit/cuda/cuda_attention.h"
#include "emit/nvrtc/nvrtc_compiler.h"

using namespace graphc;
using emit::AttentionKernelSpec;
using emit::AttentionParams;
using emit::AttentionTile;
using Mask = AttentionKernelSpec::Mask;

namespace {

AttentionKernelSpec spec_of(ir::DType dt, int d, int dv, bool causal = false, Mask mask = Mask::kNone,
                            ir::DType mask_dt = ir::DType::kUndefined, bool softcap = false, int sm = 90) {
  AttentionKernelSpec s;
  s.dtype = dt;
  s.head_dim = d;
  s.head_dim_v = dv;
  s.causal = causal;
  s.mask = mask;
  s.mask_dtype = mask_dt;
  s.softcap = softcap;
  s.tile = emit::default_attention_tile(s, sm);
  return s;
}

AttentionParams params_of(int b, int hq, int hkv, int lq, int lk, int d, int dv) {
  AttentionParams p{};
  p.batch = b;
  p.q_heads = hq;
  p.kv_heads = hkv;
  p.q_len = lq;
  p.kv_len = lk;
  p.scale = 0.125f;
  p.softcap = 1.0f;
  emit::set_attention_strides_bhsd(p.q_stride_b, p.q_stride_h, p.q_stride_s, hq, lq, d);
  emit::set_attention_strides_bhsd(p.k_stride_b, p.k_stride_h, p.k_stride_s, hkv, lk, d);
  emit::set_attention_strides_bhsd(p.v_stride_b, p.v_stride_h, p.v_stride_s, hkv, lk, dv);
  emit::set_attention_strides_bshd(p.o_stride_b, p.o_stride_h, p.o_stride_s, hq, lq, dv);
  return p;
}

// The specs compiled below: every head dim of the issue in both dtypes,
// D != Dv, each mask kind and dtype, causal, softcap.
std::vector<AttentionKernelSpec> spec_grid(int sm) {
  const auto f16 = ir::DType::kFloat16, bf16 = ir::DType::kBFloat16;
  std::vector<AttentionKernelSpec> g;
  for (int d : {32, 64, 80, 96, 128, 256}) g.push_back(spec_of(d % 64 == 0 ? f16 : bf16, d, d, false, Mask::kNone, {}, false, sm));
  g.push_back(spec_of(bf16, 128, 128, true, Mask::kNone, {}, false, sm));
  g.push_back(spec_of(f16, 64, 128, false, Mask::kAdditive, f16, false, sm));
  g.push_back(spec_of(f16, 128, 64, true, Mask::kAdditive, ir::DType::kFloat32, false, sm));
  g.push_back(spec_of(bf16, 96, 96, false, Mask::kAdditive, bf16, true, sm));
  g.push_back(spec_of(f16, 64, 64, true, Mask::kBoolean, ir::DType::kUInt8, false, sm));
  g.push_back(spec_of(f16, 256, 256, true, Mask::kBoolean, ir::DType::kBool, true, sm));
  g.push_back(spec_of(bf16, 40, 72, false, Mask::kNone, {}, true, sm));
  return g;
}

// Compiles each spec as its own NVRTC program (in parallel) and checks every
// entry's registers and stack frame.
void compile_and_check(const std::vector<AttentionKernelSpec>& specs, const std::vector<std::string>& archs) {
  std::vector<emit::CudaSource> sources;
  for (const auto& s : specs) {
    INFO(emit::attention_entry_name(s));
    REQUIRE(emit::validate_attention_spec(s).ok());
    const std::string name = emit::attention_entry_name(s);
    sources.push_back({name, emit::attention_kernel_source(s, name)});
  }
  emit::CompileOptions opts;
  opts.cache_dir = emit::default_cache_dir();
  auto mods = emit::compile_cuda_many(sources, archs, opts);
  REQUIRE(mods.size() == sources.size());
  for (size_t i = 0; i < mods.size(); ++i) {
    INFO(sources[i].name);
    if (!mods[i].ok()) FAIL(mods[i].status().message());
    REQUIRE(mods[i]->binaries.size() == archs.size());
    for (const auto& bin : mods[i]->binaries) {
      INFO(bin.arch);
      CHECK(bin.ptx.find(sources[i].name) != std::string::npos);
      auto res = emit::cubin_kernel_resources(bin.cubin);
      REQUIRE(res.ok());
      bool found = false;
      for (const auto& r : *res) {
        if (r.name != sources[i].name) continue;
        found = true;
        INFO("registers " << r.registers << ", stack frame " << r.frame_bytes << " bytes");
        CHECK(r.registers > 0);
        CHECK(r.registers <= 255);
        CHECK(r.frame_bytes == 0);  // no spills, no local arrays
      }
      CHECK(found);
    }
  }
}

}  // namespace

TEST_CASE("attention kernel source is deterministic and named per spec", "[attention-kernel]") {
  for (int sm : {80, 90}) {
    std::set<std::string> names;
    const auto grid = spec_grid(sm);
    for (const auto& s : grid) {
      const std::string name = emit::attention_entry_name(s);
      INFO(name);
      CHECK(name == emit::attention_entry_name(s));
      const std::string a = emit::attention_kernel_source(s, name), b = emit::attention_kernel_source(s, name);
      CHECK(a == b);
      CHECK(a.find(name) != std::string::npos);
      CHECK(a.find("mma.sync.aligned.m16n8k16.row.col.f32") != std::string::npos);
      CHECK(a.find("ldmatrix.sync.aligned.m8n8.x4.trans") != std::string::npos);
      CHECK(a.find("cp.async.cg.shared.global") != std::string::npos);
      CHECK(a.find("static_assert(sizeof(AttentionParams) == 160") != std::string::npos);
      names.insert(name);
    }
    CHECK(names.size() == grid.size());
  }
  // Specs differing in anything compile-time get different names and sources.
  auto s1 = spec_of(ir::DType::kFloat16, 64, 64);
  auto s2 = s1;
  s2.tile.stages = 3;
  CHECK(emit::attention_entry_name(s1) != emit::attention_entry_name(s2));
  CHECK(emit::attention_kernel_source(s1, "x") != emit::attention_kernel_source(s2, "x"));
  auto s3 = s1;
  s3.causal = true;
  CHECK(emit::attention_entry_name(s1) != emit::attention_entry_name(s3));
}

TEST_CASE("attention launch shapes follow the tile and the run-time sizes", "[attention-kernel]") {
  for (const auto& s : spec_grid(90)) {
    INFO(emit::attention_entry_name(s));
    for (auto [b, hq, lq] : {std::tuple{1, 1, 1}, {2, 12, 77}, {8, 16, 4096}, {3, 5, 1000}}) {
      auto p = params_of(b, hq, 1, lq, 333, s.head_dim, s.head_dim_v);
      REQUIRE(emit::validate_attention_params(s, p).ok());
      const emit::LaunchShape l = emit::attention_launch_shape(s, p);
      CHECK(l.grid[0] == (lq + s.tile.block_q - 1) / s.tile.block_q);
      CHECK(l.grid[1] == hq);
      CHECK(l.grid[2] == b);
      CHECK(l.block[0] == s.tile.warps * 32);
      CHECK(l.block[1] == 1);
      CHECK(l.shared_bytes == emit::attention_shared_bytes(s));
      CHECK(l.shared_bytes <= 227 * 1024);
    }
  }
  // 128 rows of head dim 128 with a two-stage K/V ring: Q (128 x 136) + 2 x
  // (K + V) (64 x 136 each), halves, rows padded by 16 bytes.
  auto s = spec_of(ir::DType::kFloat16, 128, 128);
  s.tile = AttentionTile{128, 64, 8, 2, true, 1};
  CHECK(emit::attention_shared_bytes(s) == 2 * (128 * 136 + 2 * 2 * 64 * 136));
  // Tiles for sm_86 / sm_89 fit their 99 KiB; sm_90 may use more.
  for (int d : {64, 128, 256}) {
    auto a = spec_of(ir::DType::kFloat16, d, d, false, Mask::kNone, {}, false, 86);
    CHECK(emit::attention_shared_bytes(a) <= 99 * 1024);
  }
  CHECK(emit::attention_flops(s, params_of(2, 16, 16, 4096, 4096, 128, 128)) == Approx(4.0 * 2 * 16 * 4096.0 * 4096 * 128));
}

TEST_CASE("attention specs and run-time arguments are validated", "[attention-kernel]") {
  auto ok = spec_of(ir::DType::kFloat16, 64, 64);
  CHECK(emit::validate_attention_spec(ok).ok());
  auto bad = ok;
  bad.dtype = ir::DType::kFloat32;
  CHECK_FALSE(emit::validate_attention_spec(bad).ok());
  for (int d : {24, 100, 264, 0}) {
    bad = ok;
    bad.head_dim = d;
    CHECK_FALSE(emit::validate_attention_spec(bad).ok());
  }
  bad = ok;
  bad.mask = Mask::kAdditive;
  bad.mask_dtype = ir::DType::kInt32;
  CHECK_FALSE(emit::validate_attention_spec(bad).ok());
  bad.mask = Mask::kBoolean;
  bad.mask_dtype = ir::DType::kFloat16;
  CHECK_FALSE(emit::validate_attention_spec(bad).ok());
  bad = ok;
  bad.tile.block_q = 96;  // 8 warps of 12 rows
  CHECK_FALSE(emit::validate_attention_spec(bad).ok());
  bad = ok;
  bad.head_dim = bad.head_dim_v = 256;
  bad.tile = AttentionTile{128, 128, 8, 3, true, 1};  // far over 227 KiB
  CHECK_FALSE(emit::validate_attention_spec(bad).ok());

  auto p = params_of(2, 8, 2, 100, 100, 64, 64);
  CHECK(emit::validate_attention_params(ok, p).ok());
  auto q = p;
  q.kv_heads = 3;
  CHECK_FALSE(emit::validate_attention_params(ok, q).ok());
  q = p;
  q.q_len = 0;
  CHECK_FALSE(emit::validate_attention_params(ok, q).ok());
  q = p;
  q.k_stride_s = 66;  // rows not 16-byte aligned
  CHECK_FALSE(emit::validate_attention_params(ok, q).ok());
  auto cap = ok;
  cap.softcap = true;
  q = p;
  q.softcap = 0;
  CHECK_FALSE(emit::validate_attention_params(cap, q).ok());
}

TEST_CASE("tile variants are valid, distinct and led by the default", "[attention-kernel]") {
  for (int d : {32, 64, 96, 128, 192, 256}) {
    auto s = spec_of(ir::DType::kFloat16, d, d);
    const auto vs = emit::attention_tile_variants(s);
    INFO("head dim " << d);
    REQUIRE(!vs.empty());
    CHECK(vs.front() == emit::default_attention_tile(s, 90));
    std::set<std::string> names;
    for (const auto& t : vs) {
      auto v = s;
      v.tile = t;
      CHECK(emit::validate_attention_spec(v).ok());
      names.insert(emit::attention_tile_name(t));
    }
    CHECK(names.size() == vs.size());
  }
}

TEST_CASE("attention kernels compile for sm_80 and sm_90 without spills", "[attention-kernel]") {
  if (!emit::nvrtc_available()) {
    WARN("built without NVRTC: not compiled");
    return;
  }
  for (int sm : {80, 90}) compile_and_check(spec_grid(sm), {"sm_" + std::to_string(sm)});
}

TEST_CASE("every tile variant of the benchmark's head dims compiles for sm_90 without spills",
          "[attention-kernel]") {
  if (!emit::nvrtc_available()) {
    WARN("built without NVRTC: not compiled");
    return;
  }
  std::vector<AttentionKernelSpec> specs;
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      auto s = spec_of(ir::DType::kFloat16, d, d, causal);
      for (const auto& t : emit::attention_tile_variants(s)) {
        s.tile = t;
        specs.push_back(s);
      }
    }
  compile_and_check(specs, {"sm_90"});
}

TEST_CASE("CUBIN resources are read from .nv.info, bad bytes are errors", "[attention-kernel]") {
  CHECK_FALSE(emit::cubin_kernel_resources({}).ok());
  CHECK_FALSE(emit::cubin_kernel_resources(std::vector<uint8_t>(100, 0x7f)).ok());
  if (!emit::nvrtc_available()) return;
  const std::string src =
      "extern \"C\" __global__ void spill_me(float* o, int n) {\n"
      "  float a[64];\n"
      "  for (int i = 0; i < 64; ++i) a[i] = o[i * n];\n"
      "  for (int i = 0; i < n; ++i) a[(i * 7 + threadIdx.x) & 63] += a[i & 63];\n"
      "  o[threadIdx.x] = a[n & 63];\n"  // run-time indices: the array lives in local memory
      "}\n";
  auto m = emit::compile_cuda(src, "spill_me", {"sm_90"});
  REQUIRE(m.ok());
  auto res = emit::cubin_kernel_resources(m->binaries[0].cubin);
  REQUIRE(res.ok());
  REQUIRE(res->size() >= 1);
  bool found = false;
  for (const auto& r : *res)
    if (r.name == "spill_me") {
      found = true;
      CHECK(r.registers > 0);
      CHECK(r.frame_bytes >= 256);
    }
  CHECK(found);
  // Truncating the ELF anywhere gives an error or fewer records, never a crash.
  std::vector<uint8_t> cut = m->binaries[0].cubin;
  for (size_t n : {size_t{64}, cut.size() / 2, cut.size() - 1}) {
    std::vector<uint8_t> part(cut.begin(), cut.begin() + static_cast<long>(n));
    (void)emit::cubin_kernel_resources(part);
  }
}
