// Scheduling and buffer planning: lifetimes, reuse, views, in-place, and the
// three reported numbers (naive >= planned >= lower bound).
#include "emit/plan/buffer_plan.h"

#include <catch2/catch.hpp>

#include "emit/plan/schedule.h"
#include "emit/plan/value_sizes.h"
#include "ir/symbolic_shapes.h"
#include "optimizer/pass.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

TEST_CASE("a chain reuses memory: planned arena is far below the naive sum", "[buffer_plan]") {
  // Plan: x -> MatMul -> Tanh -> MatMul -> Tanh -> ... (8 layers): only two
  // intermediates are live at a time, so the arena holds about two buffers.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {64, 256});
  ValueId cur = x;
  for (int i = 0; i < 8; ++i) {
    auto w = b.constant("W" + std::to_string(i), testing::random_tensor(DType::kFloat32, {256, 256}, testing::test_rng()));
    cur = b.node(OpKind::MatMul, {cur, w});
    cur = b.node(OpKind::Tanh, {cur});
  }
  b.output(cur);
  Graph g = b.build();
  auto schedule = emit::make_schedule(g);
  auto plan = emit::plan_buffers(g, schedule);
  REQUIRE(plan.ok());
  const int64_t buf = 64 * 256 * 4;
  CHECK(plan->naive_bytes == 15 * buf);   // 16 values, the last is the graph output
  CHECK(plan->lower_bound_bytes <= 2 * buf);
  CHECK(plan->arena_bytes <= 2 * buf);    // Tanh runs in place on the MatMul result
  CHECK(plan->arena_bytes >= plan->lower_bound_bytes);
  CHECK(emit::validate_buffer_plan(*plan).ok());
}

TEST_CASE("views alias their input and are not kernels", "[buffer_plan]") {
  // Plan: r = Relu(x); v = Reshape(r, [8, 4]); y = Exp(v): v shares r's bytes.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 8});
  auto r = b.node(OpKind::Relu, {x});
  auto shape = b.constant("shape", Tensor::from_i64({8, 4}, {2}), false);
  auto v = b.node(OpKind::Reshape, {r, shape});
  auto y = b.node(OpKind::Exp, {v});
  b.output(y);
  Graph g = b.build();
  auto schedule = emit::make_schedule(g);
  CHECK(schedule.launched() == 2);
  auto plan = emit::plan_buffers(g, schedule);
  REQUIRE(plan.ok());
  REQUIRE(plan->find(v) != nullptr);
  CHECK(plan->find(v)->alias_of == r);
  CHECK(plan->find(v)->offset == plan->find(r)->offset);
}

TEST_CASE("the validator rejects a plan that aliases two live tensors", "[buffer_plan]") {
  // Plan: two buffers live at step 0..1 at the same offset is invalid.
  emit::BufferPlan plan;
  plan.arena_bytes = 512;
  plan.buffers.push_back({1, 0, 256, 0, 1, kNoValue});
  plan.buffers.push_back({2, 0, 256, 1, 2, kNoValue});
  CHECK(!emit::validate_buffer_plan(plan).ok());
  plan.buffers[1].offset = 256;
  CHECK(emit::validate_buffer_plan(plan).ok());
}

TEST_CASE("fusion cuts modelled HBM traffic", "[buffer_plan]") {
  // Traffic: Add(bias) -> Mul -> Tanh on 1024x1024 floats: 3 unfused ops move
  // 3 reads + 3 writes of 4 MiB (plus the bias); fused: one read, one write.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {1024, 1024});
  auto bias = b.constant("bias", testing::random_tensor(DType::kFloat32, {1024}, testing::test_rng()));
  auto half = b.constant("half", Tensor::from_f32({0.5f}, {}), false);
  auto a = b.node(OpKind::Add, {x, bias});
  auto m = b.node(OpKind::Mul, {a, half});
  b.output(b.node(OpKind::Tanh, {m}));
  Graph g = b.build();
  optimizer::PassContext ctx;
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  auto schedule = emit::make_schedule(g);
  REQUIRE(schedule.kernels.size() == 1);
  const int64_t mb4 = 1024 * 1024 * 4;
  CHECK(schedule.kernels[0].bytes_fused == 2 * mb4 + 4096);
  CHECK(schedule.kernels[0].bytes_unfused == 6 * mb4 + 4096 + 4);
  CHECK(schedule.kernels[0].onnx_nodes.size() == 3);
}

TEST_CASE("a view whose largest size over a range exceeds its root's is covered by the root",
          "[buffer_plan][shape-range]") {
  // Swin's window views over a batch range: a Reshape whose shape expression
  // reaches a larger maximum than its input's (floor divisions that do not
  // cancel). Here r is [s, 8] and v is made [2s, 8] over s in 1..4: the root
  // must cover v's 64 floats, or a value placed after r would overlap v.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {4, 8});
  auto r = b.node(OpKind::Relu, {x});
  auto shape = b.constant("shape", Tensor::from_i64({0, 8}, {2}), false);
  auto v = b.node(OpKind::Reshape, {r, shape});
  auto e = b.node(OpKind::Exp, {x});
  auto y = b.node(OpKind::Add, {v, e});
  b.output(y);
  Graph g = b.build();
  SymbolicInputs in;
  in.symbols = {{"s"}, {1}, {4}};
  in.inputs["x"] = {DimExpr::symbol(0), DimExpr(8)};
  auto sym = infer_symbolic_shapes(g, in);
  REQUIRE(sym.ok());
  sym->values[static_cast<size_t>(v)].shape = {DimExpr(2) * DimExpr::symbol(0), DimExpr(8)};
  auto sizes = emit::ValueSizes::make(g, &*sym);
  REQUIRE(sizes.ok());
  auto plan = emit::plan_buffers(g, emit::make_schedule(g), &*sizes);
  REQUIRE(plan.ok());
  REQUIRE(plan->find(v) != nullptr);
  CHECK(plan->find(v)->alias_of == r);
  CHECK(plan->find(r)->size >= 64 * 4);
  CHECK(emit::validate_buffer_plan(*plan).ok());
}
