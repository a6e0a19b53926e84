// fuse-index-maps (optimizer/pass_fuse_index_maps.cpp) and its kernel
// (emit/cuda/cuda_index_map.cpp) on the machine without a GPU: every case of
// tests/index_map_cases.h becomes fewer launches, the reference executor gives
// the same bytes before and after on random inputs, and every kernel compiles
// with NVRTC. The kernels' arithmetic is checked by the emulator
// (`graphc_kernel_emulator index-map`) and on the GPU ([index-map]).
#include <catch2/catch.hpp>

#include "emit/cuda/cuda_index_map.h"
#include "emit/cuda/gpu_kernels.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "emit/plan/schedule.h"
#include "optimizer/pass.h"
#include "tests/index_map_cases.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;

namespace {

struct Optimized {
  Graph graph;
  int64_t groups = 0;
};

Optimized optimize(const Graph& g, bool with_pass = true) {
  Optimized o{g, 0};
  optimizer::PassContext ctx;
  if (!with_pass) ctx.disabled.insert("fuse-index-maps");
  Status st = optimizer::run_passes(o.graph, ctx);
  if (!st.ok()) FAIL(st.message());
  o.groups = ctx.counters["fuse-index-maps: groups"];
  return o;
}

int64_t launches(const Graph& g) { return emit::make_schedule(g).launched(); }

}  // namespace

TEST_CASE("fuse-index-maps makes each chain one kernel with the same results", "[index-map]") {
  std::vector<emit::CudaSource> sources;
  std::vector<std::string> names;
  for (const auto& c : testing::imcases::all_cases()) {
    INFO(c.name);
    Optimized with = optimize(c.graph), without = optimize(c.graph, false);
    CHECK(with.groups >= 1);
    CHECK(launches(with.graph) < launches(without.graph));
    // Same bytes: the group's body is the chain, evaluated by the reference.
    auto feeds = testing::random_inputs(c.graph, testing::test_rng());
    auto want = reference::execute(c.graph, feeds);
    auto got = reference::execute(with.graph, feeds);
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    for (const auto& [name, t] : *want) CHECK(testing::max_abs_diff(t, got->at(name)) == 0);
    for (size_t i = 0; i < with.graph.nodes.size(); ++i) {
      if (!emit::has_index_maps(with.graph.nodes[i])) continue;
      auto k = emit::generate_gpu_kernel(with.graph, static_cast<NodeId>(i),
                                         target::KernelKind::kFusedElementwise);
      if (!k.ok()) FAIL(k.status().message());
      CHECK(k->entry.rfind("im_", 0) == 0);
      names.push_back(c.name);
      sources.push_back({k->name, k->source});
    }
  }
  auto compiled = emit::compile_cuda_many(sources, {"sm_90"});
  REQUIRE(compiled.size() == sources.size());
  for (size_t i = 0; i < compiled.size(); ++i) {
    INFO(names[i] << "\n" << sources[i].source);
    if (!compiled[i].ok()) FAIL(compiled[i].status().message());
  }
}

TEST_CASE("fuse-index-maps leaves alone what saves no launch", "[index-map]") {
  using testing::imcases::Chain;
  SECTION("a lone Transpose between Reshapes (views) is one kernel already") {
    GraphBuilder b;
    Chain k{b};
    auto x = b.input("x", DType::kFloat32, {1, 8, 8, 3});
    b.output(k.partition(x, 1, 8, 8, 3, 4));
    CHECK(optimize(b.build()).groups == 0);
  }
  SECTION("a Transpose that moves the last axis keeps its tiled kernel") {
    GraphBuilder b;
    Chain k{b};
    auto x = b.input("x", DType::kFloat32, {4, 6, 5});
    b.output(k.neg(k.transpose(x, {0, 2, 1})));
    CHECK(optimize(b.build()).groups == 0);
  }
  SECTION("a Gather with run-time indices is not an index map") {
    GraphBuilder b;
    Chain k{b};
    auto x = b.input("x", DType::kFloat32, {4, 6});
    auto i = b.input("i", DType::kInt64, {3});
    b.output(k.neg(b.node(OpKind::Gather, {x, i}, testing::attrs({{"axis", Attribute::of_int(0)}}))));
    CHECK(optimize(b.build()).groups == 0);
  }
  SECTION("a slice read twice stays its own kernel") {
    GraphBuilder b;
    Chain k{b};
    auto x = b.input("x", DType::kFloat32, {4, 6});
    auto s = k.slice(x, 1, 1, 5);
    b.output(k.neg(s));
    b.output(s);
    CHECK(optimize(b.build()).groups == 0);
  }
}

TEST_CASE("an index-map group keeps only the data it reads as inputs", "[index-map]") {
  using testing::imcases::Chain;
  GraphBuilder b;
  Chain k{b};
  auto x = b.input("x", DType::kFloat32, {2, 7, 6, 4});
  auto y = b.input("y", DType::kFloat32, {2, 7, 6, 4});
  b.output(k.add(k.roll(x, 1, 7, 3), y));
  Optimized o = optimize(b.build());
  REQUIRE(o.groups == 1);
  for (const auto& n : o.graph.nodes) {
    if (!emit::has_index_maps(n)) continue;
    CHECK(n.inputs.size() == 2);  // x and y; the Slice starts/ends live in the body
    for (ValueId v : n.inputs) CHECK(!o.graph.value(v).constant);
  }
}
