// The anchor-kernel frame: a fused reduction group's prologue and epilogue
// become the load/store lambdas, a plain node's become direct loads/stores,
// and a kernel written against them compiles with NVRTC (no GPU needed).
#include "emit/cuda/anchor_frame.h"

#include <catch2/catch.hpp>

#include "emit/nvrtc/nvrtc_compiler.h"
#include "optimizer/pass.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {

NodeId first_live(const Graph& g, OpKind op) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].dead && g.nodes[i].op == op) return static_cast<NodeId>(i);
  return -1;
}

// A body that only copies input 0 to output 0 element by element: enough to
// check that the frame's lambdas compile in a real kernel.
Expected<emit::GeneratedKernel> copy_kernel(const emit::AnchorFrame& f) {
  const int64_t n = shape_numel(f.output(0).shape);
  std::string body = fmt::format(
      "  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < {}; i += blockDim.x * "
      "gridDim.x)\n    {}\n",
      n, f.store(0, "i", f.load(0, "i")));
  emit::LaunchShape launch;
  launch.grid = {1, 1, 1};
  launch.block = {128, 1, 1};
  return emit::finish_anchor_kernel(f, "test", "", body, launch);
}

}  // namespace

TEST_CASE("a fused softmax group renders its prologue and epilogue as lambdas", "[emit]") {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    GraphBuilder b;
    auto x = b.input("x", dt, {4, 64});
    auto mask = b.input("mask", dt, {1, 64});
    auto scale = b.constant("scale", Tensor::from_f32({0.125f}, {}).cast_to(dt), false);
    auto pre = b.node(OpKind::Add, {b.node(OpKind::Mul, {x, scale}), mask});
    auto sm = b.node(OpKind::Softmax, {pre}, attrs({{"axis", Attribute::of_int(-1)}}));
    auto y = b.node(OpKind::Relu, {sm});
    b.output(y);
    Graph g = b.build();
    optimizer::PassContext ctx;
    REQUIRE(optimizer::run_passes(g, ctx).ok());
    NodeId group = first_live(g, OpKind::FusedGroup);
    REQUIRE(group >= 0);
    REQUIRE(g.node(group).fusion == ir::FusionKind::kReduction);
    auto f = emit::make_anchor_frame(g, group);
    if (!f.ok()) FAIL(f.status().message());
    CHECK(f->anchor->op == OpKind::Softmax);
    CHECK(f->args.size() == 3);  // x, mask, y
    INFO(f->setup);
    CHECK(f->setup.find("load_in0") != std::string::npos);
    CHECK(f->setup.find("store_out0") != std::string::npos);
    CHECK(f->setup.find("c1 * 1LL") != std::string::npos);  // the mask broadcasts over rows
    auto k = copy_kernel(*f);
    if (!k.ok()) FAIL(k.status().message());
    INFO(k->source);
    auto m = emit::compile_cuda(k->source, k->name, {"sm_80", "sm_90"});
    if (!m.ok()) FAIL(m.status().message());
    CHECK(m->binaries.size() == 2);
  }
}

TEST_CASE("a plain node gets direct loads and stores, bad launch shapes are errors", "[emit]") {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {3, 5});
  auto y = b.node(OpKind::Transpose, {x}, attrs({{"perm", Attribute::of_ints({1, 0})}}));
  b.output(y);
  Graph g = b.build();
  NodeId t = first_live(g, OpKind::Transpose);
  auto f = emit::make_anchor_frame(g, t);
  if (!f.ok()) FAIL(f.status().message());
  CHECK(f->params == "const float* __restrict__ p0, float* __restrict__ p1");
  CHECK(f->setup.find("p0[i]") != std::string::npos);
  CHECK(f->setup.find("p1[i] = v") != std::string::npos);
  emit::LaunchShape bad;
  bad.block = {2048, 1, 1};
  CHECK_FALSE(emit::finish_anchor_kernel(*f, "t", "", "", bad).ok());
  bad.block = {128, 1, 1};
  bad.shared_bytes = 300 * 1024;
  CHECK_FALSE(emit::finish_anchor_kernel(*f, "t", "", "", bad).ok());
  auto k = copy_kernel(*f);
  REQUIRE(k.ok());
  CHECK(emit::compile_cuda(k->source, k->name, {"sm_90"}).ok());
}
