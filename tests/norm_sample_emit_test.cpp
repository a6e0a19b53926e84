// GPU lowerings of GroupNormalization, RMSNormalization, LpNormalization,
// DynamicQuantizeLinear, RotaryEmbedding, GridSample and Col2Im: every case
// of tests/norm_sample_cases.h lowers with no kernel missing, each op gets
// the kernel kind it is meant to have (the normalizations and the dynamic
// quantize one reduction-family kernel, the rest one data-movement kernel;
// a fused group stays one kernel), and every kernel compiles with NVRTC for
// sm_80 and sm_90 (no GPU needed). The arithmetic is checked against the
// reference executor by the emulator (ctest kernel_emulator_norm_sample) and
// on the GPU (tests/gpu/norm_sample_gpu_test.cpp).
#include <catch2/catch.hpp>

#include "emit/nvrtc/nvrtc_compiler.h"
#include "emit/plan/gpu_plan.h"
#include "tests/norm_sample_cases.h"

using namespace graphc;
using graphc::testing::dmcases::Case;

namespace {

target::KernelKind expected_kind(const ir::Graph& g) {
  for (const auto& n : g.nodes) {
    if (n.dead) continue;
    if (n.op == ir::OpKind::FusedGroup) return target::KernelKind::kReduction;
    switch (n.op) {
      case ir::OpKind::RotaryEmbedding:
      case ir::OpKind::GridSample:
      case ir::OpKind::Col2Im: return target::KernelKind::kDataMovement;
      default: break;
    }
  }
  return target::KernelKind::kReduction;
}

}  // namespace

TEST_CASE("normalization, rotary and sampling lowerings: one kernel of the intended kind per case, compiled by NVRTC",
          "[emit][norm-sample]") {
  std::vector<Case> cases = testing::nscases::all_cases();
  REQUIRE(cases.size() > 40);
  std::vector<emit::CudaSource> sources;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(c.name.find("passes failed") == std::string::npos);
    auto plan = emit::lower_for_gpu(c.graph);
    if (!plan.ok()) FAIL(plan.status().message());
    REQUIRE(plan->launches.size() == 1);
    CHECK(plan->launches[0].kind == expected_kind(c.graph));
    CHECK(plan->launches[0].block[0] * plan->launches[0].block[1] * plan->launches[0].block[2] <=
          1024);
    for (size_t m = 0; m < plan->sources.size(); ++m) {
      names.push_back(c.name);
      sources.push_back({plan->launches[0].entry, plan->sources[m]});
    }
  }
  auto compiled = emit::compile_cuda_many(sources, {"sm_80", "sm_90"});
  REQUIRE(compiled.size() == sources.size());
  for (size_t i = 0; i < compiled.size(); ++i) {
    INFO(names[i]);
    if (!compiled[i].ok()) FAIL(compiled[i].status().message());
    CHECK(compiled[i]->binaries.size() == 2);
  }
}

TEST_CASE("fused normalization groups keep their elementwise neighbours in one kernel",
          "[emit][norm-sample]") {
  int fused = 0;
  for (const Case& c : testing::nscases::all_cases()) {
    if (c.name.find("fused") == std::string::npos) continue;
    INFO(c.name);
    ++fused;
    int groups = 0, live = 0;
    for (const auto& n : c.graph.nodes) {
      if (n.dead) continue;
      ++live;
      if (n.op == ir::OpKind::FusedGroup && n.fusion == ir::FusionKind::kReduction) ++groups;
    }
    CHECK(groups == 1);
    CHECK(live == 1);
  }
  CHECK(fused == 4);
}

TEST_CASE("normalization, rotary and sampling lowerings refuse what they cannot run with a clear error",
          "[emit][norm-sample]") {
  using testing::GraphBuilder;
  using testing::dmcases::ai;
  {  // GroupNormalization whose groups do not divide the channels
    GraphBuilder b;
    auto x = b.input("x", ir::DType::kFloat32, {1, 6, 4});
    auto s = b.input("s", ir::DType::kFloat32, {6});
    ir::Graph& g = b.graph();
    ir::ValueId y = b.node(ir::OpKind::GroupNormalization, {x, s, s},
                           testing::attrs({{"num_groups", ai(4)}}));
    g.value(y).dtype = ir::DType::kFloat32;
    g.value(y).shape = {1, 6, 4};
    g.value(y).has_shape = true;
    b.output(y);
    auto plan = emit::lower_for_gpu(g);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().message().find("num_groups 4 does not divide the 6 channels") !=
          std::string::npos);
  }
  {  // Col2Im whose image_shape is only known at run time
    GraphBuilder b;
    auto x = b.input("x", ir::DType::kFloat32, {1, 4, 4});
    auto img = b.input("image_shape", ir::DType::kInt64, {2});
    auto blk = b.constant("block_shape", testing::dmcases::i64s({2, 2}));
    ir::Graph& g = b.graph();
    ir::ValueId y = b.node(ir::OpKind::Col2Im, {x, img, blk});
    g.value(y).dtype = ir::DType::kFloat32;
    g.value(y).shape = {1, 1, 3, 3};
    g.value(y).has_shape = true;
    b.output(y);
    auto plan = emit::lower_for_gpu(g);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().message().find("image_shape (input 1) must be known at build time") !=
          std::string::npos);
  }
}
