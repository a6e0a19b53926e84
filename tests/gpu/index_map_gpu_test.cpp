// fuse-index-maps' kernels on the GPU against the reference executor on the
// unoptimized graph, fresh random inputs: every case of
// tests/index_map_cases.h (each op of a chain, chains of 2 to 6 ops, rolls,
// window partition/reverse; fp32 and fp16: pure data movement exact, the
// elementwise op after it within gpu_check.h's tolerances), and the Swin block
// (models/swin_block.onnx) built as graphc build does, with and without the
// pass: same results, fewer kernels.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "driver/gpu_execute.h"
#include "driver/load_model.h"
#include "emit/plan/schedule.h"
#include "optimizer/pass.h"
#include "tests/cuda_pass_context.h"
#include "tests/gpu/gpu_check.h"
#include "tests/index_map_cases.h"

using namespace graphc;

namespace {

// The GPU's outputs of `optimized` against the reference's of `original`.
void check(const ir::Graph& original, const ir::Graph& optimized, const std::string& what,
           double lo, double hi, double rtol_f32, double half_atol) {
  INFO(what);
  std::map<std::string, ir::Tensor> feeds;
  for (ir::ValueId id : original.inputs)
    feeds[original.value(id).name] = testing::random_tensor(
        original.value(id).dtype, original.value(id).shape, testing::test_rng(), lo, hi);
  auto want = reference::execute(original, feeds);
  REQUIRE(want.ok());
  auto got = driver::execute_on_gpu(optimized, feeds);
  INFO((got.ok() ? "" : got.status().message()));
  REQUIRE(got.ok());
  for (const auto& [name, t] : *want) {
    REQUIRE(got->count(name));
    const ir::Tensor& o = got->at(name);
    REQUIRE(o.numel() == t.numel());
    const bool half = t.dtype() == ir::DType::kFloat16 || t.dtype() == ir::DType::kBFloat16;
    const double rtol = testing::gpu_tolerance_for(t.dtype(), rtol_f32);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double a = t.get_f64(i), b = o.get_f64(i);
      const bool ok = std::fabs(a - b) <= std::max(1e-5 + rtol * std::fabs(a), half ? half_atol : 0.0);
      if (!ok && bad++ == 0) first = i;
    }
    INFO(name << ": " << bad << " of " << t.numel() << " differ; first at " << first);
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("index-map kernels on the GPU match the reference", "[gpu][index-map]") {
  for (const auto& c : testing::imcases::all_cases()) {
    ir::Graph g = c.graph;
    optimizer::PassContext ctx = testing::cuda_pass_context();
    REQUIRE(optimizer::run_passes(g, ctx).ok());
    CHECK(ctx.counters["fuse-index-maps: groups"] >= 1);
    check(c.graph, g, c.name, c.lo, c.hi, c.rtol_f32, c.half_atol);
  }
}

TEST_CASE("the Swin block on the GPU matches the reference with fewer kernels",
          "[gpu][index-map]") {
  auto g = driver::load_model(testing::source_path("models/swin_block.onnx"), {});
  INFO((g.ok() ? "" : g.status().message()));
  REQUIRE(g.ok());
  int64_t launched[2] = {0, 0};
  for (int with = 0; with < 2; ++with) {
    ir::Graph opt = *g;
    optimizer::PassContext ctx = testing::cuda_pass_context();
    if (!with) ctx.disabled.insert("fuse-index-maps");
    REQUIRE(optimizer::run_passes(opt, ctx).ok());
    launched[with] = emit::make_schedule(opt).launched();
    // Attention and the MLP's GEMMs sum hundreds of terms in another order.
    check(*g, opt, with ? "swin block, fuse-index-maps on" : "swin block, fuse-index-maps off",
          -1, 1, 1e-3, 0);
  }
  std::printf("[index-map] swin block: %lld kernels without fuse-index-maps, %lld with\n",
              static_cast<long long>(launched[0]), static_cast<long long>(launched[1]));
  CHECK(launched[1] < launched[0]);
}
