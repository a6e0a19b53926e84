// Plans that serve a shape range (driver/range_graph.h, emit::lower_for_gpu
// with PlanOptions::range): what varies is not folded, kernels take run-time
// sizes where their family can, the arena is planned for the most, and what
// cannot follow the range yet is refused by name. The kernels themselves run
// at every check point in the emulator (tests/emu/range_cases.cpp).
#include <catch2/catch.hpp>

#include "driver/range_graph.h"
#include "emit/plan/gpu_plan.h"
#include "target/cuda/cuda_target.h"
#include "tests/onnx_builder.h"
#include "tests/shape_profile_test_util.h"

using namespace graphc;
using graphc::testing::Dim;
using graphc::testing::OnnxModel;
using onnx::TensorProto;

namespace {

emit::LowerOptions generated() {
  emit::LowerOptions o;
  o.gemm.mode = target::GemmMode::kGenerated;
  o.conv.mode = target::ConvMode::kGenerated;
  return o;
}

Expected<driver::RangeGraph> range_graph(const OnnxModel& m, const std::string& profile,
                                         const emit::LowerOptions& lower = generated()) {
  optimizer::PassContext passes;
  passes.target = std::make_shared<target::CudaTarget>(lower);
  return driver::optimize_for_range(testing::import_unbound(m), testing::profile_of(profile), 0,
                                    passes);
}

Expected<emit::GpuPlan> range_plan(const driver::RangeGraph& r,
                                   const emit::LowerOptions& lower = generated()) {
  emit::PlanOptions options;
  options.range = &r.symbolic;
  return emit::lower_for_gpu(r.optimized, target::CudaTarget(lower), options);
}

OnnxModel residual_chain() {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{64}});
  m.initializer(testing::float_tensor("bias", {64}, std::vector<float>(64, 0.5f)));
  m.node("Add", {"x", "bias"}, {"a"}, "bias");
  m.node("Relu", {"a"}, {"r"}, "relu");
  m.node("Add", {"r", "x"}, {"y"}, "residual");
  m.output("y");
  return m;
}

}  // namespace

TEST_CASE("a fused chain over a range takes its sizes at run time", "[shape-range]") {
  auto r = range_graph(residual_chain(), "x:1x1x64/4x16x64/8x40x64");
  REQUIRE(r.ok());
  CHECK(r->symbolic.shape_string(r->optimized.outputs[0]) == "batchxseqx64");
  CHECK(r->opt == std::vector<int64_t>{4, 16});
  auto plan = range_plan(*r);
  REQUIRE(plan.ok());
  REQUIRE(plan->range);
  CHECK(plan->range->symbol_names == std::vector<std::string>{"batch", "seq"});
  CHECK(plan->range->symbol_max == std::vector<int64_t>{8, 40});
  REQUIRE(plan->launches.size() == 1);
  const auto& launch = plan->launches[0];
  CHECK_FALSE(launch.size_block.empty());
  REQUIRE(launch.grid_x_size >= 0);
  // grid.x at the max shape is what the plan records; at min it is smaller.
  const auto& grid_program = plan->range->sizes[static_cast<size_t>(launch.grid_x_size)];
  CHECK(*evaluate_size_program(grid_program, std::vector<int64_t>{8, 40}) == launch.grid[0]);
  CHECK(*evaluate_size_program(grid_program, std::vector<int64_t>{1, 1}) == 1);
  const std::string& source = plan->sources[static_cast<size_t>(launch.module)];
  CHECK(source.find("const graphc_sizes sz") != std::string::npos);
  CHECK(source.find("iteration shape batchxseqx64") != std::string::npos);
  // Bindings carry their dims' programs; the output's bytes are the most.
  const auto& out = plan->slots[static_cast<size_t>(plan->outputs[0])];
  REQUIRE(out.dim_sizes.size() == 3);
  CHECK(out.dim_sizes[2] == -1);
  CHECK(out.bytes == 8 * 40 * 64 * 4);
}

TEST_CASE("the arena is planned for the largest shape of the range", "[shape-range]") {
  // Two intermediates live at once: the arena holds both at batch = 16.
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{256}});
  m.node("Exp", {"x"}, {"e"}, "exp");
  m.node("Sigmoid", {"x"}, {"s"}, "sigmoid");
  m.node("ReduceSum", {"e"}, {"sum"}, "sum");  // keeps e alive past the sigmoid
  m.node("Mul", {"e", "s"}, {"y"}, "mul");
  m.output("y");
  m.output("sum");
  auto r = range_graph(m, "x:1x256/2x256/16x256");
  REQUIRE(r.ok());
  emit::PlanOptions options;
  options.range = &r->symbolic;
  options.allow_unlowered = true;  // ReduceSum has no run-time sizes yet
  auto plan = emit::lower_for_gpu(r->optimized, target::CudaTarget(generated()), options);
  REQUIRE(plan.ok());
  for (const auto& slot : plan->slots)
    if (slot.location == emit::SlotLocation::kArena) {
      CHECK(slot.bytes == 16 * 256 * 4);
      CHECK(slot.offset + slot.bytes <= plan->arena_bytes);
    }
}

TEST_CASE("kernels without run-time sizes yet are refused over a range, by name", "[shape-range]") {
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{32}});
  m.initializer(testing::float_tensor("w", {32, 16}, std::vector<float>(32 * 16, 0.25f)));
  m.node("MatMul", {"x", "w"}, {"y"}, "proj");
  m.output("y");
  auto r = range_graph(m, "x:1x32/4x32/64x32");
  REQUIRE(r.ok());
  // The generated GEMM takes a run-time M (the emulator runs it at every
  // point: tests/emu/range_cases.cpp) ...
  auto generated_plan = range_plan(*r);
  REQUIRE(generated_plan.ok());
  CHECK(generated_plan->launches[0].grid_x_size >= 0);
  // ... a contraction over a varying K does not yet.
  OnnxModel k(17);
  k.input("x", TensorProto::FLOAT, {int64_t{4}, Dim("k")});
  k.input("w", TensorProto::FLOAT, {Dim("k"), int64_t{16}});
  k.node("MatMul", {"x", "w"}, {"y"}, "proj");
  k.output("y");
  auto rk = range_graph(k, "x:4x1/4x8/4x64,w:1x16/8x16/64x16");
  REQUIRE(rk.ok());
  auto k_plan = range_plan(*rk);
  REQUIRE_FALSE(k_plan.ok());
  CHECK(k_plan.status().code() == ErrorCode::kUnsupported);
  CHECK_THAT(k_plan.status().message(),
             Catch::Contains("a MatMul takes run-time sizes only as [..., K] x a fixed [K, N]"));
  // Other families name themselves.
  OnnxModel red(17);
  red.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{32}});
  red.node("ReduceMax", {"x"}, {"y"}, "max");
  red.output("y");
  auto rr = range_graph(red, "x:1x32/4x32/64x32");
  REQUIRE(rr.ok());
  auto red_plan = range_plan(*rr);
  REQUIRE_FALSE(red_plan.ok());
  CHECK_THAT(red_plan.status().message(),
             Catch::Contains("a ReduceMax over dims that vary (batchx32) does not take run-time "
                             "sizes yet"));
  emit::LowerOptions cublas;
  cublas.gemm.mode = target::GemmMode::kCublasLt;
  auto r2 = range_graph(m, "x:1x32/4x32/64x32", cublas);
  REQUIRE(r2.ok());
  // cuBLASLt takes a varying M as the call's run-time size ...
  auto library_plan = range_plan(*r2, cublas);
  REQUIRE(library_plan.ok());
  REQUIRE(library_plan->launches[0].library.has_value());
  CHECK(library_plan->launches[0].library->sizes.size() == 1);
  // ... and a varying K not.
  auto rk2 = range_graph(k, "x:4x1/4x8/4x64,w:1x16/8x16/64x16", cublas);
  REQUIRE(rk2.ok());
  auto k_library_plan = range_plan(*rk2, cublas);
  REQUIRE_FALSE(k_library_plan.ok());
  CHECK_THAT(k_library_plan.status().message(),
             Catch::Contains("cuBLASLt matmuls take a varying M alone") &&
                 Catch::Contains("kernel 'proj'"));
  // A static build of the same model is unaffected.
  CHECK(emit::lower_for_gpu(r->optimized, target::CudaTarget(generated())).ok());
}

TEST_CASE("shape arithmetic on a varying input is not folded to the opt shape", "[shape-range]") {
  // y = Reshape(x, Concat(Shape(x)[0], -1)): folding Shape(x) at opt would
  // fix the batch to 4 in the Reshape.
  OnnxModel m(17);
  m.input("x", TensorProto::FLOAT, {Dim("batch"), int64_t{4}, int64_t{8}});
  m.initializer(testing::int64_tensor("zero", {1}, {0}));
  m.initializer(testing::int64_tensor("one", {1}, {1}));
  m.initializer(testing::int64_tensor("rest", {1}, {-1}));
  m.node("Shape", {"x"}, {"s"}, "shape");
  m.node("Slice", {"s", "zero", "one"}, {"b"}, "batch");
  testing::attr_int(m.node("Concat", {"b", "rest"}, {"target"}, "target"), "axis", 0);
  m.node("Reshape", {"x", "target"}, {"y"}, "flatten");
  m.output("y");
  auto r = range_graph(m, "x:1x4x8/4x4x8/9x4x8");
  REQUIRE(r.ok());
  CHECK(r->symbolic.shape_string(r->optimized.outputs[0]) == "batchx32");
  // The followed arithmetic becomes a target that copies the batch
  // (constant-reshape-targets), never the opt shape's [4, 32] ...
  for (const auto& n : r->optimized.nodes) {
    if (n.dead || n.op != ir::OpKind::Reshape) continue;
    const ir::Value& target = r->optimized.value(n.inputs[1]);
    REQUIRE(target.constant);
    CHECK(target.constant->to_i64_vector() == std::vector<int64_t>{0, 32});
  }
  // ... and without that pass fold-constants leaves the Shape alone.
  {
    optimizer::PassContext passes;
    passes.target = std::make_shared<target::CudaTarget>(generated());
    passes.disabled.insert("constant-reshape-targets");
    auto kept = driver::optimize_for_range(testing::import_unbound(m),
                                           testing::profile_of("x:1x4x8/4x4x8/9x4x8"), 0, passes);
    REQUIRE(kept.ok());
    CHECK(kept->symbolic.shape_string(kept->optimized.outputs[0]) == "batchx32");
    bool shape_kept = false;
    for (const auto& n : kept->optimized.nodes) shape_kept |= !n.dead && n.op == ir::OpKind::Shape;
    CHECK(shape_kept);
  }
  // The Reshape is a view: the shape values never reach the GPU, and the
  // output (a view of the input) is copied at the shape the runtime sets.
  auto plan = range_plan(*r);
  REQUIRE(plan.ok());
  REQUIRE(plan->launches.size() == 1);
  CHECK(plan->launches[0].kind == target::KernelKind::kCopy);
  const auto& out = plan->slots[static_cast<size_t>(plan->outputs[0])];
  REQUIRE(out.dim_sizes.size() == 2);
  CHECK(out.dim_sizes[0] >= 0);
  CHECK(out.dim_sizes[1] == -1);
}

TEST_CASE("a value computed from varying shapes is computed at run time where a kernel reads it",
          "[shape-range]") {
  // positions = Range(0, seq) added to x: the Range's length is the sequence
  // length, so its opt values are dropped and its kernel runs at every shape
  // (the emulator checks the values: tests/emu/range_cases.cpp).
  OnnxModel m(17);
  m.input("x", TensorProto::INT64, {Dim("seq")});
  m.initializer(testing::int64_tensor("zero", {}, {0}));
  m.initializer(testing::int64_tensor("one", {}, {1}));
  m.initializer(testing::int64_tensor("first", {1}, {0}));
  m.node("Shape", {"x"}, {"s"}, "shape");
  m.node("Squeeze", {"s", "first"}, {"n"}, "length");
  m.node("Range", {"zero", "n", "one"}, {"pos"}, "positions");
  m.node("Add", {"x", "pos"}, {"y"}, "add");
  m.output("y", TensorProto::INT64);
  auto r = range_graph(m, "x:1/8/64");
  INFO((r.ok() ? "" : r.status().message()));
  REQUIRE(r.ok());
  auto plan = range_plan(*r);
  INFO((plan.ok() ? "" : plan.status().message()));
  REQUIRE(plan.ok());
  bool range_kernel = false;
  for (const auto& l : plan->launches)
    range_kernel |= l.entry.rfind("range_rt", 0) == 0 && !l.size_block.empty();
  CHECK(range_kernel);
}
