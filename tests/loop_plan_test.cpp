// Loops on a run-time trip count or condition: the optimizer keeps the Loop
// and prepares its body, the GPU plan runs the body as a sub-plan after a
// control kernel (emit/plan/loop_plan.h), the engine records it (format 6)
// and its validator checks the structure; refusals name the node.
#include <catch2/catch.hpp>

#include "driver/engine_build.h"
#include "emit/plan/gpu_plan.h"
#include "engine_format/engine_file.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/loop_graphs.h"
#include "tests/onnx_builder.h"

using namespace graphc;

namespace {

ir::Graph optimized(const ir::Graph& g) {
  ir::Graph out = g;
  auto ctx = testing::cuda_pass_context();
  Status st = optimizer::run_passes(out, ctx);
  INFO(st.message());
  REQUIRE(st.ok());
  return out;
}

const ir::Node* find_loop(const ir::Graph& g) {
  for (const auto& n : g.nodes)
    if (!n.dead && n.op == ir::OpKind::Loop) return &n;
  return nullptr;
}

}  // namespace

TEST_CASE("run-time loops stay a node with a typed optimized body", "[loop]") {
  for (const auto& c : testing::loop_cases()) {
    INFO(c.name);
    ir::Graph g = optimized(c.graph);
    const ir::Node* loop = find_loop(g);
    REQUIRE(loop);
    CHECK(loop->attrs.get_int("_body_typed", 0) == 1);
    // The optimized graph still computes what the model does (the reference
    // executor runs the optimized body) at every trip count.
    for (int64_t count : c.counts) {
      auto feeds = testing::loop_feeds(c, count);
      auto want = reference::execute(c.graph, feeds);
      auto got = reference::execute(g, feeds);
      INFO("count " << count << ": " << (want.ok() ? got.status().message() : want.status().message()));
      REQUIRE(want.ok());
      REQUIRE(got.ok());
      for (const auto& [name, t] : *want) CHECK(t.same_bytes(got->at(name)));
    }
  }
}

TEST_CASE("a run-time loop plans its body after a control kernel", "[loop]") {
  for (const auto& c : testing::loop_cases()) {
    INFO(c.name);
    ir::Graph g = optimized(c.graph);
    auto plan = emit::lower_for_gpu(g);
    INFO((plan.ok() ? "" : plan.status().message()));
    REQUIRE(plan.ok());
    int loops = 0;
    for (size_t i = 0; i < plan->launches.size(); ++i) {
      const emit::LaunchPlan& l = plan->launches[i];
      if (l.loop_body < 0) continue;
      ++loops;
      CHECK(l.kind == target::KernelKind::kLoop);
      CHECK(l.entry.rfind("graphc_loop_control", 0) == 0);
      CHECK(i + 1 + static_cast<size_t>(l.loop_body) <= plan->launches.size());
      REQUIRE(l.args.size() >= 4);
      // Iteration, condition and flag: scalars of the loop's own, in the arena.
      const auto& iter = plan->slots[static_cast<size_t>(l.args[l.args.size() - 3])];
      const auto& flag = plan->slots[static_cast<size_t>(l.args.back())];
      CHECK(iter.dtype == ir::DType::kInt64);
      CHECK(iter.location == emit::SlotLocation::kArena);
      CHECK(flag.dtype == ir::DType::kInt32);
      CHECK(flag.offset + flag.bytes <= plan->arena_bytes);
    }
    CHECK(loops == (c.name.find("nested") != std::string::npos ? 2 : 1));
  }
}

TEST_CASE("a loop swapping two carried values copies through a temporary", "[loop]") {
  ir::Graph g = optimized(testing::loop_while_case().graph);
  auto plan = emit::lower_for_gpu(g);
  REQUIRE(plan.ok());
  int temporaries = 0;
  for (const auto& l : plan->launches) temporaries += l.name.find("/carried") != std::string::npos;
  CHECK(temporaries == 1);  // p takes q's old value: q's next value is copied first
}

TEST_CASE("loop engines are format 6 and their structure is validated", "[loop][build]") {
  testing::TempDir cache;
  ir::Graph g = optimized(testing::loop_for_case().graph);
  driver::BuildOptions opts;
  opts.archs = {"sm_90"};
  opts.compile.cache_dir = cache.path();
  auto built = driver::build_engine(g, opts);
  INFO((built.ok() ? "" : built.status().message()));
  REQUIRE(built.ok());
  int loop_kernel = -1;
  for (int k = 0; k < built->manifest.kernels_size(); ++k)
    if (built->manifest.kernels(k).has_loop()) loop_kernel = k;
  REQUIRE(loop_kernel >= 0);
  CHECK(built->manifest.kernels(loop_kernel).kind() == "loop");
  auto bytes = engine::serialize_engine(*built);
  REQUIRE(bytes.ok());
  auto header = engine::read_engine_header(*bytes);
  REQUIRE(header.ok());
  CHECK(header->format_version == engine::kFormatVersionLoop);
  CHECK(header->min_reader_version == engine::kFormatVersionLoop);
  CHECK(engine::parse_engine(*bytes).ok());

  engine::EngineContents bad = *built;
  bad.manifest.mutable_kernels(loop_kernel)->mutable_loop()->set_body_kernels(1000);
  auto refused = engine::serialize_engine(bad);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("runs past the end"));

  bad = *built;
  const int n = bad.manifest.kernels(loop_kernel).args_size();
  auto* k = bad.manifest.mutable_kernels(loop_kernel);
  k->set_args(n - 1, k->args(n - 3));  // the flag on the int64 iteration tensor
  refused = engine::serialize_engine(bad);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("flag tensor"));
}

TEST_CASE("loops with run-time scan outputs are refused by name", "[loop]") {
  using ir::DType;
  testing::GraphBuilder b;
  b.input("i", DType::kInt64, {});
  auto cond = b.input("cond_in", DType::kBool, {});
  auto x = b.input("x_cap", DType::kFloat32, {2});
  b.output(cond);
  b.output(b.node(ir::OpKind::Identity, {x}));
  testing::GraphBuilder g;
  auto m = g.input("M", DType::kInt64, {});
  auto xo = g.input("x", DType::kFloat32, {2});
  auto outs = testing::loop_detail::add_loop(g, {m, ir::kNoValue, xo}, 1, b.graph(), 1, "scan_loop");
  g.output(outs[0]);
  Status st = ir::infer_shapes(g.graph());
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("scan_loop"));
  CHECK_THAT(st.message(), Catch::Contains("needs its trip count M known at build time"));
}

TEST_CASE("a loop-carried value that changes shape is refused by name", "[loop]") {
  using ir::DType;
  testing::GraphBuilder b;
  b.input("i", DType::kInt64, {});
  auto cond = b.input("cond_in", DType::kBool, {});
  auto y = b.input("y_in", DType::kFloat32, {2});
  ir::AttributeMap axis;
  axis.set("axis", ir::Attribute::of_int(0));
  b.output(cond);
  b.output(b.node(ir::OpKind::Concat, {y, y}, axis));
  testing::GraphBuilder g;
  auto m = g.input("M", DType::kInt64, {});
  auto y0 = g.input("y0", DType::kFloat32, {2});
  auto outs = testing::loop_detail::add_loop(g, {m, ir::kNoValue, y0}, 0, b.graph(), 1, "growing_loop");
  g.output(outs[0]);
  Status st = ir::infer_shapes(g.graph());
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("growing_loop"));
  CHECK_THAT(st.message(), Catch::Contains("keep its type and shape"));
}
