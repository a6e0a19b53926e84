// The int8 conv rewrites on the CPU (reference executor): fuse-qdq-conv makes
// each QDQ conv of tests/qdq_conv_cases.h a ConvInteger(int8, int8) with
// _pad_value (the activation's zero point) and the dequantize after it, whose
// results match the float QDQ graph within its rounding; it leaves what it
// cannot take float and counts why; lower-integer-contractions gives
// ConvInteger/QLinearConv the same conv where their weights fit int8; the
// CUDA target picks the generated int8 kernel and says so. The kernel itself
// runs in the emulator (`graphc_kernel_emulator qdq-conv`) and on the GPU
// (tests/gpu/qdq_conv_gpu_test.cpp).
#include <catch2/catch.hpp>

#include "emit/plan/gpu_plan.h"
#include "ir/conv_geometry.h"
#include "ir/verifier.h"
#include "optimizer/passes.h"
#include "reference/executor.h"
#include "target/int8_conv_rules.h"
#include "tests/cuda_pass_context.h"
#include "tests/qdq_conv_cases.h"
#include "tests/reference_run.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;

namespace {

Graph optimized(const Graph& g, bool int8 = true,
                std::map<std::string, int64_t>* counters = nullptr) {
  Graph opt = g;
  optimizer::PassContext ctx = testing::cuda_pass_context();
  ctx.int8_gemm = int8;  // off in graphc build by default (optimizer/pass.h)
  Status st = optimizer::run_passes(opt, ctx);
  INFO(st.message());
  REQUIRE(st.ok());
  REQUIRE(verify(opt, {.require_shapes = true}).ok());
  if (counters) *counters = ctx.counters;
  return opt;
}

bool any_counter(const std::map<std::string, int64_t>& c, const std::string& part) {
  for (const auto& [k, v] : c)
    if (k.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("fuse-qdq-conv: QDQ convs become int8 convs matching the float QDQ graph",
          "[quantize][optimizer][int8][conv]") {
  for (const auto& c : testing::qdq_conv_cases()) {
    INFO(c.label);
    const Graph g = testing::build_qdq_conv_graph(c);
    const Graph opt = optimized(g);
    const auto ops = testing::ops_of(opt);
    CHECK(ops.count(OpKind::ConvInteger) == (c.chain ? 2u : 1u));
    CHECK(ops.count(OpKind::Conv) == 0);
    CHECK(ops.count(OpKind::DequantizeLinear) == 0);  // expanded into the epilogue
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    const auto want = testing::run_reference(g, feeds);
    const auto got = testing::run_reference(opt, feeds);
    for (const auto& [name, t] : want) {
      INFO(name);
      CHECK(testing::check_qdq_conv_outputs(c, t, got.at(name)) == "");
    }
  }
}

TEST_CASE("fuse-qdq-conv pads with the activation's zero point and stays off without --int8-gemm",
          "[quantize][optimizer][int8][conv]") {
  const auto c = testing::qdq_conv_cases()[1];  // uint8, 3x3, pads 1
  const Graph g = testing::build_qdq_conv_graph(c);
  const Graph opt = optimized(g);
  bool found = false;
  for (const Node& n : opt.nodes)
    if (n.body)
      for (const Node& inner : n.body->nodes)
        if (!inner.dead && inner.op == OpKind::ConvInteger) {
          found = true;
          CHECK(inner.attrs.get_int(kPadValueAttr, 0) == 131 - 128);  // uint8 zero point, shifted
          CHECK(target::int8_conv_takes(*n.body, inner).ok());
        }
  CHECK(found);
  const Graph plain = optimized(g, false);
  CHECK(testing::ops_of(plain).count(OpKind::ConvInteger) == 0);
  CHECK(testing::ops_of(plain).count(OpKind::Conv) == 1);
}

TEST_CASE("fuse-qdq-conv leaves depthwise and grouped convs float and says why",
          "[quantize][optimizer][int8][conv]") {
  for (int64_t group : {int64_t{4}, int64_t{16}}) {
    INFO("group " << group);
    testing::QdqConvCase c{"grouped", 1, 16, 9, 9, 16, 3, 1, 1};
    c.group = group;
    const Graph g = testing::build_qdq_conv_graph(c);
    std::map<std::string, int64_t> counters;
    const Graph opt = optimized(g, true, &counters);
    CHECK(testing::ops_of(opt).count(OpKind::ConvInteger) == 0);
    CHECK(testing::ops_of(opt).count(OpKind::Conv) == 1);
    CHECK(any_counter(counters, "stays float: groups = " + std::to_string(group)));
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    const auto want = testing::run_reference(g, feeds), got = testing::run_reference(opt, feeds);
    for (const auto& [name, t] : want) CHECK(testing::max_abs_diff(t, got.at(name)) < 1e-4);
  }
}

TEST_CASE("lower-integer-contractions gives ConvInteger and QLinearConv the int8 conv",
          "[quantize][optimizer][int8][conv]") {
  for (OpKind op : {OpKind::ConvInteger, OpKind::QLinearConv}) {
    INFO(op_name(op));
    const Graph g = testing::build_integer_conv(op);
    const Graph opt = optimized(g);
    const auto ops = testing::ops_of(opt);
    CHECK(ops.count(OpKind::ConvInteger) == 1);
    CHECK(ops.count(OpKind::QLinearConv) == 0);
    CHECK(ops.count(OpKind::Conv) == 0);
    std::map<std::string, Tensor> feeds;
    for (ValueId id : g.inputs)
      feeds[g.value(id).name] =
          testing::random_tensor(g.value(id).dtype, g.value(id).shape, testing::test_rng(), 0, 255);
    const auto want = testing::run_reference(g, feeds), got = testing::run_reference(opt, feeds);
    for (const auto& [name, t] : want) {
      REQUIRE(t.dtype() == got.at(name).dtype());
      CHECK(t.same_bytes(got.at(name)));
    }
    // Without --int8-gemm: the int32 conv, as before.
    const auto plain = testing::ops_of(optimized(g, false));
    CHECK(plain.count(OpKind::ConvInteger) == 0);
    CHECK(plain.count(OpKind::Conv) == 1);
  }
}

TEST_CASE("the CUDA target runs the int8 conv as the generated tensor-core kernel",
          "[quantize][int8][conv]") {
  const auto c = testing::qdq_conv_cases()[2];
  const Graph opt = optimized(testing::build_qdq_conv_graph(c));
  auto plan = emit::lower_for_gpu(opt, emit::LowerOptions{});
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  int int8_kernels = 0;
  for (const auto& k : plan->kernels) {
    if (k.kind != target::KernelKind::kConv) continue;
    INFO(k.lowering.reason);
    CHECK(k.lowering.library == target::Library::kNone);
    CHECK(k.lowering.reason.find("int8 tensor-core conv (mma.sync m16n8k32 s8") != std::string::npos);
    REQUIRE(k.launch >= 0);
    CHECK(plan->launches[static_cast<size_t>(k.launch)].entry.rfind("conv_int8_", 0) == 0);
    ++int8_kernels;
  }
  CHECK(int8_kernels == 1);
}

TEST_CASE("fuse-qdq-conv keeps convs float for GPUs before sm_80 and says why",
          "[quantize][optimizer][int8][conv]") {
  const Graph g = testing::build_qdq_conv_graph(testing::qdq_conv_cases()[0]);
  Graph opt = g;
  target::CudaOptions options;
  options.min_sm = 75;
  optimizer::PassContext ctx = testing::cuda_pass_context(options);
  ctx.int8_gemm = true;
  REQUIRE(optimizer::run_passes(opt, ctx).ok());
  CHECK(testing::ops_of(opt).count(OpKind::ConvInteger) == 0);
  CHECK(testing::ops_of(opt).count(OpKind::Conv) == 1);
  CHECK(any_counter(ctx.counters, "stays float: the int8 conv needs sm_80 or newer (the oldest --arch is sm_75)"));
}
