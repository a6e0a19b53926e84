// The float16/bfloat16 mma.sync GEMM (emit/cuda/cuda_gemm_mma.cpp) on the GPU.
//  - [mma-gemm]: every case of tests/mma_gemm_cases.h (the emulator's), then
//    transformer/CNN shapes too large for the emulator with bias + erf Gelu
//    fused, against the reference executor on fresh random inputs
//    (--gemm generated). Tolerances as gpu_check.h plus the case's slack.
//    Then bit-exact on operands of small nonzero integers, where every sum is
//    exact: the fragment loads and accumulator store it shares with the int8
//    conv (gm_frag_a, gm_frag_b2, gm_store_acc) checked to the bit.
//  - [.][mma-gemm-bench] (hidden): median us and TFLOP/s of the generated
//    kernel against cuBLASLt on the zoo's GEMM shapes (fp16): the plain
//    product (generated vs cuBLASLt), then with bias + erf Gelu (generated
//    fused, one kernel, vs cuBLASLt + bias then a Gelu kernel), and what auto
//    mode picks (cublaslt_rules.h: split when K >= 128).
//      build/tests/graphc_gpu_tests "[mma-gemm-bench]"
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <random>

#include "target/cuda/cuda_target.h"
#include "tests/gpu/built_engine.h"
#include "tests/gpu/gpu_check.h"
#include "tests/mma_gemm_cases.h"

using namespace graphc;
using ir::DType;
using ir::OpKind;

namespace {

// x[m, k] @ W[k, n] (+ b, erf Gelu), W and b constants.
ir::Graph ffn(DType dt, int64_t m, int64_t k, int64_t n, bool gelu) {
  testing::GraphBuilder g;
  auto x = g.input("x", dt, {m, k});
  auto w = g.constant("w", testing::random_tensor(dt, {k, n}, testing::test_rng(), -1, 1));
  auto y = g.node(OpKind::MatMul, {x, w});
  if (gelu) {
    auto b = g.constant("b", testing::random_tensor(dt, {n}, testing::test_rng(), -1, 1));
    y = g.node(OpKind::Add, {y, b});
    y = g.node(OpKind::Gelu, {y},
               testing::attrs({{"approximate", ir::Attribute::of_string("none")}}));
  }
  g.output(y);
  return g.build();
}

// Values in {-2, -1, 1, 2}: products are at most 4, so the float32 partial
// sums of K terms are exact integers and every summation order gives the same bits.
ir::Tensor small_ints(DType dt, const ir::Shape& shape) {
  ir::Tensor t(dt, shape);
  std::uniform_int_distribution<int> pick(0, 3);
  const double values[] = {-2, -1, 1, 2};
  for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, values[pick(testing::test_rng())]);
  return t;
}

struct Timed {
  double us = 0;
  int kernels = 0;
  std::string kinds;
};

// The engine's non-copy launches for `gemm` mode, optimized and split for
// that target as graphc build does; median us summed over them.
Timed time_engine(ir::Graph g, target::GemmMode gemm) {
  auto arch = driver::device_arch();
  REQUIRE(arch.ok());
  target::CudaOptions o;
  o.gemm.mode = gemm;
  o.min_sm = std::stoi(arch->substr(3));
  optimizer::PassContext pc;
  pc.target = std::make_shared<target::CudaTarget>(o);
  REQUIRE(optimizer::run_passes(g, pc).ok());
  driver::BuildOptions opts;
  opts.archs = {*arch};
  opts.lower = o;
  opts.compile.cache_dir = emit::default_cache_dir();
  auto built = driver::build_engine(g, opts);
  INFO((built.ok() ? "" : built.status().message()));
  REQUIRE(built.ok());
  auto bytes = engine::serialize_engine(*built);
  REQUIRE(bytes.ok());
  auto parsed = engine::parse_engine(*bytes);
  REQUIRE(parsed.ok());
  auto loaded = runtime::load_engine(*parsed);
  REQUIRE(loaded.ok());
  auto ctx = (*loaded)->create_context();
  REQUIRE(ctx.ok());
  runtime::ProfileOptions po;
  po.iterations = 50;
  po.warmup_iterations = 5;
  auto p = (*ctx)->profile(po);
  INFO((p.ok() ? "" : p.status().message()));
  REQUIRE(p.ok());
  Timed t;
  for (const auto& l : p->launches) {
    if (l.kind == "copy") continue;
    t.us += l.median_us;
    ++t.kernels;
    t.kinds += (t.kinds.empty() ? "" : "+") + l.kind;
  }
  return t;
}

}  // namespace

TEST_CASE("mma.sync GEMM on the GPU matches the reference", "[gpu][mma-gemm]") {
  emit::LowerOptions generated;
  generated.gemm.mode = target::GemmMode::kGenerated;
  for (const auto& c : testing::mma_gemm_cases())
    testing::check_gpu_matches_reference(c.build(), c.label, -c.range, c.range, c.half_atol,
                                         c.rtol_f32, generated);
  // Real shapes (rows cut to keep the reference fast), fp16 and bf16, bias +
  // erf Gelu fused; inputs in [-0.25, 0.25] so deep-K sums stay O(1). Four
  // ulps: the kernel rounds once, the reference after each of three ops, and
  // their float32 sums of K = 3072 products in other orders differ by up to
  // ~1e-4 relative (on the H100 a few of 1.5M outputs sat 2 ulps apart, one
  // of them 3).
  struct Shape3 {
    int64_t m, k, n;
  };
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (Shape3 s : {Shape3{3136, 96, 384}, Shape3{3136, 384, 96}, Shape3{197, 3072, 768},
                     Shape3{512, 768, 3072}, Shape3{1000, 128, 512}, Shape3{130, 771, 200}}) {
      testing::check_gpu_matches_reference(
          ffn(dt, s.m, s.k, s.n, true),
          fmt::format("{} {}x{}x{} + bias + gelu", ir::dtype_name(dt), s.m, s.n, s.k), -0.25, 0.25,
          dt == DType::kBFloat16 ? 3e-2 : 4e-3, 1e-4, generated, /*half_ulps=*/4);
    }
}

TEST_CASE("mma.sync GEMM is bit-exact on the GPU where every sum is exact", "[gpu][mma-gemm]") {
  emit::LowerOptions generated;
  generated.gemm.mode = target::GemmMode::kGenerated;
  const auto tb = testing::attrs({{"_trans_b", ir::Attribute::of_int(1)}});
  const auto tab = testing::attrs({{"_trans_a", ir::Attribute::of_int(1)}, {"_trans_b", ir::Attribute::of_int(1)}});
  struct Case {
    const char* label;
    DType dt;
    ir::Shape a, b;
    ir::AttributeMap at;
  };
  // A as [m][k] reads its fragments through gm_frag_a, B as [n][k] (_trans_b)
  // through gm_frag_b2. |sum| <= 4K stays within float16's exact integers
  // (2048) for K <= 512 and bfloat16's (256) for K <= 64.
  const Case cases[] = {
      {"130x72x136 f16 (B as [k][n])", DType::kFloat16, {130, 136}, {136, 72}, {}},
      {"trans_b 70x24x40 bf16", DType::kBFloat16, {70, 40}, {24, 40}, tb},
      {"trans_b odd K 77x45x37 f16", DType::kFloat16, {77, 37}, {45, 37}, tb},
      {"trans_a trans_b odd 33x29x51 f16", DType::kFloat16, {51, 33}, {29, 51}, tab},
      {"trans_b deep K 96x80x500 f16", DType::kFloat16, {96, 500}, {80, 500}, tb},
      {"128x128 tiles trans_b [66,130,40]x[104,40] f16", DType::kFloat16, {66, 130, 40}, {104, 40}, tb},
      {"128x128 tiles [66,130,64]x[64,104] bf16", DType::kBFloat16, {66, 130, 64}, {64, 104}, {}},
  };
  for (const Case& c : cases) {
    INFO(c.label);
    const ir::Graph g = testing::pc_detail::one_op(OpKind::MatMul, {{c.dt, c.a}, {c.dt, c.b}}, c.at);
    const std::map<std::string, ir::Tensor> feeds = {{"x0", small_ints(c.dt, c.a)},
                                                     {"x1", small_ints(c.dt, c.b)}};
    testing::check_gpu_bit_exact(g, g, feeds, generated);
  }
}

TEST_CASE("mma.sync GEMM timings: generated vs cuBLASLt", "[.][mma-gemm-bench]") {
  struct Bench {
    const char* model;
    int64_t m, n, k;
  };
  const Bench shapes[] = {
      {"bert b32 s128 qkv/o", 4096, 768, 768},
      {"bert b32 s128 ffn1", 4096, 3072, 768},
      {"bert b32 s128 ffn2", 4096, 768, 3072},
      {"bert b1 s128 qkv/o", 128, 768, 768},
      {"bert b1 s128 ffn1", 128, 3072, 768},
      {"bert b1 s128 ffn2", 128, 768, 3072},
      {"swin-t mlp1", 3136, 384, 96},
      {"swin-t mlp2", 3136, 96, 384},
      {"convnext-s b32 mlp1", 100352, 512, 128},
      {"convnext-s b32 mlp2", 100352, 128, 512},
      {"convnext-s b32 s3 mlp1", 25088, 1536, 384},
      {"vit-b ffn1", 197, 3072, 768},
      {"vit-b ffn2", 197, 768, 3072},
  };
  std::printf("%-24s %6s %5s %5s | %9s %7s %9s %7s %6s | %11s %13s %6s %s\n", "shape", "M", "N",
              "K", "gen us", "TFLOP/s", "cublas us", "TFLOP/s", "ratio", "gen+gelu us",
              "cublas+gelu us", "auto", "auto picks");
  for (const Bench& b : shapes) {
    const double flops = 2.0 * b.m * b.n * b.k;
    const Timed gen =
        time_engine(ffn(DType::kFloat16, b.m, b.k, b.n, false), target::GemmMode::kGenerated);
    const Timed lib =
        time_engine(ffn(DType::kFloat16, b.m, b.k, b.n, false), target::GemmMode::kCublasLt);
    const Timed gen_gelu =
        time_engine(ffn(DType::kFloat16, b.m, b.k, b.n, true), target::GemmMode::kGenerated);
    const Timed lib_gelu =
        time_engine(ffn(DType::kFloat16, b.m, b.k, b.n, true), target::GemmMode::kCublasLt);
    const Timed auto_gelu =
        time_engine(ffn(DType::kFloat16, b.m, b.k, b.n, true), target::GemmMode::kAuto);
    CHECK(gen_gelu.kernels == 1);  // the epilogue is fused
    std::printf(
        "%-24s %6lld %5lld %5lld | %9.2f %7.1f %9.2f %7.1f %5.0f%% | %11.2f %13.2f %6.2f %s\n",
        b.model, static_cast<long long>(b.m), static_cast<long long>(b.n),
        static_cast<long long>(b.k), gen.us, flops / gen.us * 1e-6, lib.us, flops / lib.us * 1e-6,
        100.0 * lib.us / gen.us, gen_gelu.us, lib_gelu.us, auto_gelu.us, auto_gelu.kinds.c_str());
  }
}
