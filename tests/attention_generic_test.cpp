// The general attention kernel generator (emit/cuda/cuda_attention_generic.h)
// without a GPU: sources are deterministic and named per spec, the pointer
// parameters follow the spec, specs and run-time arguments are validated with
// clear errors, launch shapes follow the tile, generic_attention_from_ir
// fills spec and params from a resolved Attention node, and every kernel of a
// grid of specs (dtypes, head dims 1..256, masks, every flag, tiles) compiles
// with NVRTC for sm_80 and sm_90 with no local-memory stack frame (no spills)
// and at most 255 registers, read from the CUBIN's .nv.info. Numerics: the
// host emulator (tests/emu/attention_generic_emu.cpp) and
// gpu/attention_generic_gpu_test.cpp.
#include <catch2/catch.hpp>
#include <set>

#include "emit/nvrtc/cubin_resources.h"
#include "emit/cuda/cuda_attention_generic.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "ir/attention_params.h"

using namespace graphc;
using emit::GenericAttentionArg;
using emit::GenericAttentionParams;
using emit::GenericAttentionSpec;
using emit::GenericAttentionTile;
using Mask = GenericAttentionSpec::Mask;
using ir::DType;

namespace {

GenericAttentionTile tile_of(int wq, int wk, int r) {
  GenericAttentionTile t;
  t.row_warps = wq;
  t.key_warps = wk;
  t.rows_per_warp = r;
  return t;
}

GenericAttentionSpec spec_of(DType dt, int d, int dv, Mask mask = Mask::kNone,
                             DType mdt = DType::kUndefined) {
  GenericAttentionSpec s;
  s.dtype = dt;
  s.head_dim = d;
  s.head_dim_v = dv;
  s.mask = mask;
  s.mask_dtype = mdt;
  s.tile = emit::default_generic_attention_tile(s);
  return s;
}

GenericAttentionSpec all_flags(GenericAttentionSpec s, int qk_mode) {
  s.causal = s.softcap = s.window = s.past = s.nonpad = true;
  s.present_key = s.present_value = s.qk_output = true;
  s.qk_mode = qk_mode;
  return s;
}

GenericAttentionParams params_of(int b, int hq, int hkv, int lq, int lkv, int past, int d, int dv) {
  GenericAttentionParams p{};
  p.batch = b;
  p.q_heads = hq;
  p.kv_heads = hkv;
  p.q_len = lq;
  p.kv_len = lkv;
  p.past_len = past;
  p.mask_len = past + lkv;
  p.left_window = p.right_window = -1;
  p.scale_sqrt = emit::generic_attention_scale_sqrt(0.125);
  p.softcap = 0;
  p.q_stride_s = d, p.q_stride_h = int64_t{lq} * d, p.q_stride_b = int64_t{hq} * lq * d;
  p.k_stride_s = d, p.k_stride_h = int64_t{lkv} * d, p.k_stride_b = int64_t{hkv} * lkv * d;
  p.v_stride_s = dv, p.v_stride_h = int64_t{lkv} * dv, p.v_stride_b = int64_t{hkv} * lkv * dv;
  p.y_stride_s = dv, p.y_stride_h = int64_t{lq} * dv, p.y_stride_b = int64_t{hq} * lq * dv;
  return p;
}

// Every dtype; head dims 1..256 (odd, D != Dv); each mask kind and dtype;
// every flag and qk mode; the default tiles of prefill and decode and the
// largest register tiles.
std::vector<GenericAttentionSpec> spec_grid() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  std::vector<GenericAttentionSpec> g;
  for (DType dt : {f32, f16, bf16}) g.push_back(spec_of(dt, 64, 64));
  g.push_back(spec_of(f32, 1, 1));
  g.push_back(spec_of(f32, 3, 33, Mask::kBoolean, DType::kBool));
  g.push_back(spec_of(f16, 72, 136, Mask::kAdditive, f16));
  g.push_back(spec_of(bf16, 256, 40, Mask::kAdditive, bf16));
  g.push_back(spec_of(f32, 128, 128, Mask::kAdditive, f32));
  g.push_back(spec_of(f16, 128, 128, Mask::kBoolean, DType::kUInt8));
  for (int mode : {0, 2, 3})
    g.push_back(all_flags(spec_of(f32, 64, 64, Mask::kAdditive, f32), mode));
  g.push_back(all_flags(spec_of(bf16, 256, 256, Mask::kBoolean, DType::kBool), 3));
  g.push_back(all_flags(spec_of(f16, 128, 128, Mask::kAdditive, f16), 1));
  // Decode tiles (key warps merged through shared memory) and big row tiles.
  for (auto [d, t] : {std::pair{64, tile_of(1, 4, 1)},
                      {128, tile_of(1, 2, 4)},
                      {256, tile_of(1, 1, 1)},
                      {256, tile_of(4, 1, 8)},
                      {128, tile_of(2, 2, 8)}}) {
    auto s = all_flags(spec_of(f32, d, d, Mask::kAdditive, f32), 3);
    s.tile = t;
    g.push_back(s);
    auto n = spec_of(f16, d, d);
    n.tile = t;
    g.push_back(n);
  }
  for (int64_t lq : {1, 2, 3, 4, 7, 16, 100}) {
    auto s = spec_of(f16, 128, 128);
    s.tile = emit::default_generic_attention_tile(s, lq);
    g.push_back(s);
  }
  // Distinct entries only.
  std::vector<GenericAttentionSpec> out;
  std::set<std::string> seen;
  for (const auto& s : g)
    if (seen.insert(emit::generic_attention_entry_name(s)).second) out.push_back(s);
  return out;
}

}  // namespace

TEST_CASE("generic attention source is deterministic and named per spec", "[attention-generic]") {
  const auto grid = spec_grid();
  std::set<std::string> names;
  for (const auto& s : grid) {
    const std::string name = emit::generic_attention_entry_name(s);
    INFO(name);
    REQUIRE(emit::validate_generic_attention_spec(s).ok());
    CHECK(name.rfind("graphc_attn_generic_", 0) == 0);
    const std::string a = emit::generic_attention_kernel_source(s, name);
    CHECK(a == emit::generic_attention_kernel_source(s, name));
    CHECK(a.find("extern \"C\" __global__ void __launch_bounds__(" +
                 std::to_string(s.tile.warps() * 32) + ", ") != std::string::npos);
    CHECK(a.find(") " + name + "(") != std::string::npos);
    CHECK(a.find("static_assert(sizeof(GenericAttentionParams) == 296") != std::string::npos);
    CHECK(a.find("mma.sync") == std::string::npos);  // SIMT fp32: no tensor cores, no TF32
    names.insert(name);
  }
  CHECK(names.size() == grid.size());
  // Anything compile-time changes the name and the source.
  const auto base = spec_of(DType::kFloat32, 64, 64);
  std::vector<GenericAttentionSpec> variants;
  auto vary = [&](auto edit) {
    auto s = base;
    edit(s);
    variants.push_back(s);
  };
  vary([](auto& s) { s.dtype = DType::kFloat16; });
  vary([](auto& s) { s.head_dim = 65; });
  vary([](auto& s) { s.head_dim_v = 32; });
  vary([](auto& s) { s.mask = Mask::kBoolean, s.mask_dtype = DType::kBool; });
  vary([](auto& s) { s.mask = Mask::kBoolean, s.mask_dtype = DType::kUInt8; });
  vary([](auto& s) { s.mask = Mask::kAdditive, s.mask_dtype = DType::kFloat32; });
  vary([](auto& s) { s.causal = true; });
  vary([](auto& s) { s.softcap = true; });
  vary([](auto& s) { s.window = true; });
  vary([](auto& s) { s.past = true; });
  vary([](auto& s) { s.nonpad = true; });
  vary([](auto& s) { s.present_key = true; });
  vary([](auto& s) { s.present_value = true; });
  vary([](auto& s) { s.qk_output = true; });
  vary([](auto& s) { s.qk_output = true, s.qk_mode = 3; });
  vary([](auto& s) { s.tile.rows_per_warp = 2; });
  vary([](auto& s) { s.tile.key_warps = 2; });
  std::set<std::string> vnames = {emit::generic_attention_entry_name(base)};
  std::set<std::string> vsources = {emit::generic_attention_kernel_source(base, "x")};
  for (const auto& s : variants) {
    vnames.insert(emit::generic_attention_entry_name(s));
    vsources.insert(emit::generic_attention_kernel_source(s, "x"));
  }
  CHECK(vnames.size() == variants.size() + 1);
  // bool and uint8 masks are both bytes: one source, two names.
  CHECK(vsources.size() == variants.size());
}

TEST_CASE("generic attention pointer parameters follow the spec", "[attention-generic]") {
  using A = GenericAttentionArg;
  auto s = spec_of(DType::kFloat16, 64, 64);
  CHECK(emit::generic_attention_kernel_args(s) == std::vector<A>{A::kQ, A::kK, A::kV, A::kY});
  s = all_flags(spec_of(DType::kFloat16, 64, 64, Mask::kBoolean, DType::kBool), 3);
  CHECK(emit::generic_attention_kernel_args(s) ==
        std::vector<A>{A::kQ, A::kK, A::kV, A::kMask, A::kPastKey, A::kPastValue, A::kNonpad, A::kY,
                       A::kPresentKey, A::kPresentValue, A::kQkOutput});
  s = spec_of(DType::kFloat32, 8, 8);
  s.present_value = true;
  s.nonpad = true;
  CHECK(emit::generic_attention_kernel_args(s) ==
        std::vector<A>{A::kQ, A::kK, A::kV, A::kNonpad, A::kY, A::kPresentValue});
  // The source declares them in that order, then the params by value.
  const std::string src = emit::generic_attention_kernel_source(s, "entry");
  const size_t at = src.find("entry(");
  REQUIRE(at != std::string::npos);
  const std::string sig = src.substr(at, src.find(')', at) - at);
  size_t prev = 0;
  for (const char* n :
       {" q,", " k,", " v,", " nonpad,", " y,", " present_value,", "GenericAttentionParams p"}) {
    INFO(n);
    const size_t pos = sig.find(n);
    REQUIRE(pos != std::string::npos);
    CHECK(pos > prev);
    prev = pos;
  }
  CHECK(sig.find("mask") == std::string::npos);
  CHECK(std::string(emit::generic_attention_arg_name(A::kQkOutput)) == "qk");
}

TEST_CASE("generic attention launch shapes follow the tile and the run-time sizes",
          "[attention-generic]") {
  for (const auto& s : spec_grid()) {
    INFO(emit::generic_attention_entry_name(s));
    for (auto [b, hq, lq] : {std::tuple{1, 1, 1}, {2, 12, 77}, {8, 16, 4096}, {3, 5, 0}}) {
      auto p = params_of(b, hq, 1, lq, 333, s.past ? 5 : 0, s.head_dim, s.head_dim_v);
      p.softcap = 1.0f;
      INFO(b << " " << hq << " " << lq);
      REQUIRE(emit::validate_generic_attention_params(s, p).ok());
      const emit::LaunchShape l = emit::generic_attention_launch_shape(s, p);
      CHECK(l.grid[0] == std::max(1, (lq + s.tile.block_q() - 1) / s.tile.block_q()));
      CHECK(l.grid[1] == hq);
      CHECK(l.grid[2] == b);
      CHECK(l.block[0] == s.tile.warps() * 32);
      CHECK(l.block[1] == 1);
      CHECK(l.block[2] == 1);
      CHECK(l.shared_bytes == emit::generic_attention_shared_bytes(s));
      CHECK(l.shared_bytes <= 227 * 1024);
    }
  }
  // 16 rows of head dim 128: Q 16 x 128, K 32 x 132 (padded so K/4 is odd),
  // V 32 x 128, P 4 warps x 4 rows x 32, stats 16 x 4; fp32 words.
  auto s = spec_of(DType::kFloat32, 128, 128);
  s.tile = tile_of(4, 1, 4);
  CHECK(emit::generic_attention_shared_bytes(s) ==
        4 * (16 * 128 + 32 * 132 + 32 * 128 + 4 * 4 * 32 + 16 * 4));
  // Default tiles: prefill 4 x 4 rows; decode one row warp and key warps
  // within 96 KiB (every arch from sm_80).
  CHECK(emit::default_generic_attention_tile(s, 4096) == tile_of(4, 1, 4));
  CHECK(emit::default_generic_attention_tile(s, 0) == tile_of(4, 1, 4));
  CHECK(emit::default_generic_attention_tile(s, 1) == tile_of(1, 2, 1));
  CHECK(emit::default_generic_attention_tile(spec_of(DType::kFloat16, 64, 64), 1) ==
        tile_of(1, 4, 1));
  CHECK(emit::default_generic_attention_tile(spec_of(DType::kFloat16, 64, 64), 3) ==
        tile_of(1, 4, 4));
  for (int d : {1, 64, 128, 256})
    for (int64_t lq : {1, 2, 4, 7, 12, 1000}) {
      auto t = spec_of(DType::kFloat32, d, d);
      t.tile = emit::default_generic_attention_tile(t, lq);
      CHECK(emit::generic_attention_shared_bytes(t) <= 96 * 1024);
    }
}

TEST_CASE("generic attention specs and run-time arguments are validated", "[attention-generic]") {
  auto fails = [](const Status& st, const std::string& what) {
    INFO(what);
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.message(), Catch::Contains(what));
  };
  const auto ok = spec_of(DType::kFloat32, 64, 64);
  CHECK(emit::validate_generic_attention_spec(ok).ok());
  auto bad = ok;
  bad.dtype = DType::kFloat64;
  fails(emit::validate_generic_attention_spec(bad), "dtype float64 (float32, float16 or bfloat16)");
  for (int d : {0, 257, -1}) {
    bad = ok;
    bad.head_dim_v = d;
    fails(emit::validate_generic_attention_spec(bad), "head dim");
  }
  bad = ok;
  bad.mask = Mask::kBoolean;
  bad.mask_dtype = DType::kFloat16;
  fails(emit::validate_generic_attention_spec(bad), "boolean mask of float16");
  bad.mask = Mask::kAdditive;
  bad.mask_dtype = DType::kInt32;
  fails(emit::validate_generic_attention_spec(bad), "additive mask of int32");
  bad = ok;
  bad.mask_dtype = DType::kBool;
  fails(emit::validate_generic_attention_spec(bad), "without a mask");
  bad = ok;
  bad.qk_output = true;
  bad.qk_mode = 4;
  fails(emit::validate_generic_attention_spec(bad), "qk_matmul_output_mode 4");
  bad = ok;
  bad.qk_mode = 2;
  fails(emit::validate_generic_attention_spec(bad), "without the qk output");
  bad = ok;
  bad.tile = tile_of(8, 4, 1);
  fails(emit::validate_generic_attention_spec(bad), "1 to 16 warps");
  bad.tile = tile_of(1, 1, 9);
  fails(emit::validate_generic_attention_spec(bad), "1 to 8 rows per warp");
  bad = spec_of(DType::kFloat32, 256, 256);
  bad.tile = tile_of(1, 8, 1);  // 256 keys of K and V in fp32: far over 227 KiB
  fails(emit::validate_generic_attention_spec(bad), "bytes of shared memory");

  const auto p = params_of(2, 8, 2, 100, 100, 0, 64, 64);
  CHECK(emit::validate_generic_attention_params(ok, p).ok());
  auto q = p;
  q.kv_heads = 3;
  fails(emit::validate_generic_attention_params(ok, q), "not a multiple of 3 key/value heads");
  q = p;
  q.batch = 0;
  fails(emit::validate_generic_attention_params(ok, q), "need no launch");
  q = p;
  q.kv_len = -1;
  fails(emit::validate_generic_attention_params(ok, q), "negative length");
  q = p;
  q.q_heads = 70000 * 2, q.kv_heads = 2;
  fails(emit::validate_generic_attention_params(ok, q), "grid y/z limit");
  q = p;
  q.past_len = 5;
  fails(emit::validate_generic_attention_params(ok, q), "no past_key/past_value");
  q = p;
  q.k_stride_s = -64;
  fails(emit::validate_generic_attention_params(ok, q), "strides must be >= 0");
  auto masked = spec_of(DType::kFloat32, 64, 64, Mask::kBoolean, DType::kBool);
  q = p;
  q.mask_len = 101;
  fails(emit::validate_generic_attention_params(masked, q), "mask last dim 101 must be 0..T = 100");
  auto win = ok;
  win.window = true;
  q = p;
  q.left_window = -2;
  fails(emit::validate_generic_attention_params(win, q), "window sizes");
  auto cap = ok;
  cap.softcap = true;
  q = p;
  q.softcap = 0;
  fails(emit::validate_generic_attention_params(cap, q), "softcap 0 must be positive");
  // Empty sequences are fine: Y rows are 0 (T = 0), or only present is written (Lq = 0).
  q = p;
  q.kv_len = 0;
  q.mask_len = 0;
  CHECK(emit::validate_generic_attention_params(masked, q).ok());
  q = p;
  q.q_len = 0;
  CHECK(emit::validate_generic_attention_params(ok, q).ok());
  CHECK(emit::generic_attention_launch_shape(ok, q).grid[0] == 1);
}

TEST_CASE("generic_attention_from_ir fills spec and params from a resolved node",
          "[attention-generic]") {
  auto resolve = [](std::vector<std::pair<DType, ir::Shape>> ins, ir::AttributeMap attrs) {
    std::vector<ir::Shape> shapes;
    for (auto& [dt, s] : ins) shapes.push_back(s);
    std::vector<const ir::Shape*> ptrs;
    std::vector<DType> dts;
    for (size_t i = 0; i < ins.size(); ++i) {
      ptrs.push_back(ins[i].first == DType::kUndefined ? nullptr : &shapes[i]);
      dts.push_back(ins[i].first);
    }
    auto a = ir::attention_params(attrs, ptrs, dts);
    REQUIRE(a.ok());
    return *a;
  };
  const DType f16 = DType::kFloat16, u = DType::kUndefined;
  // 3-D GQA with a [Lq, M] bool mask (M < T), a cache, a window, softcap.
  ir::AttributeMap attrs;
  attrs.set("q_num_heads", ir::Attribute::of_int(8));
  attrs.set("kv_num_heads", ir::Attribute::of_int(2));
  attrs.set("is_causal", ir::Attribute::of_int(1));
  attrs.set("softcap", ir::Attribute::of_float(30.0));
  attrs.set("left_window_size", ir::Attribute::of_int(16));
  attrs.set("qk_matmul_output_mode", ir::Attribute::of_int(2));
  auto a = resolve({{f16, {3, 5, 8 * 64}},
                    {f16, {3, 5, 2 * 64}},
                    {f16, {3, 5, 2 * 32}},
                    {DType::kBool, {5, 9}},
                    {f16, {3, 2, 7, 64}},
                    {f16, {3, 2, 7, 32}}},
                   attrs);
  emit::GenericAttentionOutputs outs;
  outs.present_key = outs.present_value = outs.qk_matmul_output = true;
  auto r = emit::generic_attention_from_ir(a, outs);
  REQUIRE(r.ok());
  const auto& s = r->spec;
  const auto& p = r->params;
  CHECK(s.dtype == f16);
  CHECK(s.head_dim == 64);
  CHECK(s.head_dim_v == 32);
  CHECK(s.mask == Mask::kBoolean);
  CHECK(s.mask_dtype == DType::kBool);
  CHECK((s.causal && s.softcap && s.window && s.past && !s.nonpad));
  CHECK((s.present_key && s.present_value && s.qk_output && s.qk_mode == 2));
  CHECK(s.tile == emit::default_generic_attention_tile(s, 5));
  CHECK((p.batch == 3 && p.q_heads == 8 && p.kv_heads == 2 && p.q_len == 5 && p.kv_len == 5 &&
         p.past_len == 7));
  CHECK(p.causal_offset == 7);
  CHECK((p.left_window == 16 && p.right_window == -1));
  CHECK(p.softcap == 30.0f);
  CHECK(p.scale_sqrt == Approx(std::sqrt(0.125)));
  // 3-D: head h of token l at ((b·L + l)·H + h)·D.
  CHECK((p.q_stride_s == 8 * 64 && p.q_stride_h == 64 && p.q_stride_b == 5 * 8 * 64));
  CHECK((p.k_stride_s == 2 * 64 && p.k_stride_h == 64 && p.k_stride_b == 5 * 2 * 64));
  CHECK((p.v_stride_s == 2 * 32 && p.v_stride_h == 32));
  CHECK((p.y_stride_s == 8 * 32 && p.y_stride_h == 32 && p.y_stride_b == 5 * 8 * 32));
  CHECK((p.pk_stride_s == 64 && p.pk_stride_h == 7 * 64 && p.pk_stride_b == 2 * 7 * 64));
  CHECK((p.pv_stride_s == 32 && p.pv_stride_h == 7 * 32));
  CHECK((p.prk_stride_s == 64 && p.prk_stride_h == 12 * 64 && p.prk_stride_b == 2 * 12 * 64));
  CHECK((p.prv_stride_s == 32 && p.prv_stride_h == 12 * 32));
  CHECK((p.qk_stride_q == 12 && p.qk_stride_h == 5 * 12 && p.qk_stride_b == 8 * 5 * 12));
  CHECK((p.m_stride_b == 0 && p.m_stride_h == 0 && p.m_stride_q == 9 && p.m_stride_k == 1 &&
         p.mask_len == 9));

  // 4-D with a float mask [B, 1, 1, T] and nonpad.
  auto b = resolve({{DType::kFloat32, {2, 4, 3, 16}},
                    {DType::kFloat32, {2, 4, 6, 16}},
                    {DType::kFloat32, {2, 4, 6, 16}},
                    {DType::kFloat32, {2, 1, 1, 6}},
                    {u, {}},
                    {u, {}},
                    {DType::kInt64, {2}}},
                   {});
  r = emit::generic_attention_from_ir(b, {});
  REQUIRE(r.ok());
  CHECK(r->spec.mask == Mask::kAdditive);
  CHECK(r->spec.mask_dtype == DType::kFloat32);
  CHECK((r->spec.nonpad && !r->spec.past && !r->spec.causal && !r->spec.qk_output &&
         !r->spec.present_key));
  CHECK(r->params.q_stride_s == 16);
  CHECK(r->params.q_stride_h == 3 * 16);
  CHECK((r->params.m_stride_b == 6 && r->params.m_stride_h == 0 && r->params.m_stride_q == 0));
  CHECK(r->params.scale_sqrt == Approx(0.5));
  CHECK(r->spec.tile == emit::default_generic_attention_tile(r->spec, 3));

  // float64 is the reference's only: refused with a clear error.
  auto c = resolve({{DType::kFloat64, {1, 1, 2, 8}},
                    {DType::kFloat64, {1, 1, 2, 8}},
                    {DType::kFloat64, {1, 1, 2, 8}}},
                   {});
  r = emit::generic_attention_from_ir(c, {});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("float64 Attention"));
}

TEST_CASE("generic attention kernels compile for sm_80 and sm_90 without spills",
          "[attention-generic]") {
  if (!emit::nvrtc_available()) {
    WARN("built without NVRTC: not compiled");
    return;
  }
  const auto grid = spec_grid();
  std::vector<emit::CudaSource> sources;
  for (const auto& s : grid) {
    const std::string name = emit::generic_attention_entry_name(s);
    sources.push_back({name, emit::generic_attention_kernel_source(s, name)});
  }
  const std::vector<std::string> archs = {"sm_80", "sm_90"};
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
      auto res = emit::cubin_kernel_resources(bin.cubin);
      REQUIRE(res.ok());
      bool found = false;
      for (const auto& r : *res) {
        if (r.name != sources[i].name) continue;
        found = true;
        INFO("registers " << r.registers << ", stack frame " << r.frame_bytes << " bytes");
        CHECK(r.registers > 0);
        CHECK(r.registers <= 65536 / (grid[i].tile.warps() * 32));
        CHECK(r.frame_bytes == 0);  // no spills, no local arrays
      }
      CHECK(found);
    }
  }
}
