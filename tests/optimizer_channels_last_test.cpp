// The channels-last pass (optimizer/pass_channels_last.cpp): which convs turn
// NHWC, which transposes remain, that outputs do not change (reference
// executor on fresh random inputs), and that the convs then lower to NHWC
// cuDNN calls that still take their bias/residual/ReLU epilogue.
#include <catch2/catch.hpp>

#include "emit/plan/gpu_plan.h"
#include "engine_format/conv_params.h"
#include "ir/conv_geometry.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "optimizer/passes.h"
#include "target/cuda/cudnn_rules.h"
#include "tests/conv_graphs.h"
#include "tests/cuda_pass_context.h"
#include "tests/test_util.h"

using namespace graphc;
using graphc::ir::DType;
using graphc::ir::Graph;
using graphc::ir::OpKind;

namespace {

Graph channels_last(Graph g, bool enabled = true, optimizer::PassContext* out_ctx = nullptr) {
  optimizer::PassContext ctx;
  if (enabled) ctx.target = std::make_shared<target::CudaTarget>();
  REQUIRE(optimizer::convert_to_channels_last(g, ctx).ok());
  g.compact();
  Status v = ir::verify(g, {.require_shapes = true});
  INFO(v.message());
  REQUIRE(v.ok());
  if (out_ctx) *out_ctx = ctx;
  return g;
}

int count(const Graph& g, OpKind op, bool only_channels_last = false) {
  int n = 0;
  for (const auto& node : g.nodes)
    if (!node.dead && node.op == op && (!only_channels_last || ir::is_channels_last(node.attrs)))
      ++n;
  return n;
}

const ir::Node& named(const Graph& g, const std::string& name) {
  for (const auto& node : g.nodes)
    if (!node.dead && node.name == name) return node;
  FAIL("no node " << name);
  return g.nodes[0];
}

const ir::Shape& out_shape(const Graph& g, const std::string& node) {
  return g.value(named(g, node).outputs[0]).shape;
}

}  // namespace

TEST_CASE("channels-last: a residual stage keeps one transpose in and one out", "[channels-last]") {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    INFO(ir::dtype_name(dt));
    const Graph before = testing::residual_stage_graph(dt);
    optimizer::PassContext ctx;
    const Graph after = channels_last(before, true, &ctx);
    CHECK(ctx.counters["channels-last: convolutions"] == 3);
    CHECK(count(after, OpKind::Conv, true) == 3);
    // x -> NHWC before conv0; NCHW again before the MaxPool, which is channels-first.
    REQUIRE(count(after, OpKind::Transpose) == 2);
    for (const auto& node : after.nodes) {
      if (node.dead || node.op != OpKind::Transpose) continue;
      const auto perm = node.attrs.get_ints("perm");
      const bool into_conv = perm == std::vector<int64_t>{0, 2, 3, 1};
      CHECK((into_conv ? after.is_graph_input(node.inputs[0])
                       : perm == std::vector<int64_t>{0, 3, 1, 2}));
    }
    // The ReLUs and Adds between the convs run channels-last ([N, H, W, C]).
    for (const char* n : {"relu0", "relu1", "residual", "bias", "relu2"})
      CHECK(out_shape(after, n) == ir::Shape{2, 12, 10, 16});
    // The per-channel constant [1, K, 1, 1] became [1, 1, 1, K].
    const ir::Node& bias = named(after, "bias");
    CHECK(after.value(bias.inputs[1]).shape == ir::Shape{1, 1, 1, 16});
    // Weights are re-laid-out [K, kh, kw, C].
    CHECK(after.value(named(after, "conv0").inputs[1]).shape == ir::Shape{16, 3, 3, 8});
    CHECK(after.value(after.outputs[0]).name == before.value(before.outputs[0]).name);
    // Pure re-layout: the reference computes the same sums, so the same bits.
    CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0.0);
  }
}

TEST_CASE("channels-last: a transpose with a channels-first reader stays", "[channels-last]") {
  // conv0's output also feeds a MaxPool: moving the transpose past relu0 would
  // add one (MaxPool still needs NCHW), so relu0 stays NCHW. The residual Add
  // still goes channels-last: its NCHW input r0 has the copy conv1 reads.
  const Graph before = testing::residual_stage_graph(DType::kFloat16, true);
  const Graph after = channels_last(before);
  CHECK(count(after, OpKind::Conv, true) == 3);
  CHECK(out_shape(after, "relu0") == ir::Shape{2, 16, 12, 10});
  CHECK(out_shape(after, "relu1") == ir::Shape{2, 12, 10, 16});
  CHECK(out_shape(after, "residual") == ir::Shape{2, 12, 10, 16});
  CHECK(after.value(named(after, "residual").inputs[1]).shape == ir::Shape{2, 12, 10, 16});
  // In: x, r0 (for conv1 and the residual); out: conv0 (for relu0 and
  // pool_side), relu2 (for the MaxPool).
  CHECK(count(after, OpKind::Transpose) == 4);
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0.0);
}

TEST_CASE("channels-last: convs reading one input share its transpose", "[channels-last]") {
  // A ResNet downsampling block's input feeds the 1x1 shortcut conv and the
  // main branch's first conv: one transpose to NHWC, not two.
  testing::GraphBuilder b;
  auto& rng = testing::test_rng();
  auto x = b.input("x", DType::kFloat16, {1, 8, 6, 6});
  auto w = [&](const std::string& name) {
    return b.constant(name, testing::random_tensor(DType::kFloat16, {8, 8, 1, 1}, rng));
  };
  auto main_branch = b.node(OpKind::Relu, {b.node(OpKind::Conv, {x, w("w1")})});
  b.output(b.node(OpKind::Add, {main_branch, b.node(OpKind::Conv, {x, w("w2")})}));
  const Graph before = b.build();
  const Graph after = channels_last(before);
  CHECK(count(after, OpKind::Conv, true) == 2);
  CHECK(count(after, OpKind::Transpose) == 2);  // x in, the sum out
  CHECK(testing::max_output_diff(before, after, testing::test_rng()) == 0.0);
}

TEST_CASE("channels-last: only when asked, only fp16/bf16, only what cuDNN takes",
          "[channels-last]") {
  const Graph fp16 = testing::residual_stage_graph(DType::kFloat16);
  const Graph off = channels_last(fp16, false);
  CHECK(count(off, OpKind::Conv, true) == 0);
  CHECK(off.live_node_count() == fp16.live_node_count());

  const Graph fp32 = channels_last(testing::residual_stage_graph(DType::kFloat32));
  CHECK(count(fp32, OpKind::Conv, true) == 0);
  CHECK(count(fp32, OpKind::Transpose) == 0);

  // Asymmetric pads: cuDNN takes one pad per dim, so this conv stays generated
  // and channels-first.
  testing::GraphBuilder b;
  auto x = b.input("x", DType::kFloat16, {1, 4, 6, 6});
  auto w =
      b.constant("w", testing::random_tensor(DType::kFloat16, {4, 4, 3, 3}, testing::test_rng()));
  b.output(b.node(OpKind::Conv, {x, w},
                  testing::attrs({{"pads", ir::Attribute::of_ints({0, 0, 1, 1})}})));
  const Graph asym = channels_last(b.build());
  CHECK(count(asym, OpKind::Conv, true) == 0);
  CHECK(count(asym, OpKind::Transpose) == 0);

  // An empty batch: cuDNN's descriptors take no zero dim, so this conv stays
  // generated and channels-first too (converting it left it with no kernel:
  // graphc build --precision fp16 failed on it).
  testing::GraphBuilder e;
  auto empty = e.input("x", DType::kFloat16, {0, 4, 6, 6});
  auto we =
      e.constant("w", testing::random_tensor(DType::kFloat16, {4, 4, 3, 3}, testing::test_rng()));
  e.output(e.node(OpKind::Conv, {empty, we},
                  testing::attrs({{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}})));
  const Graph empty_batch = channels_last(e.build());
  CHECK(count(empty_batch, OpKind::Conv, true) == 0);
  CHECK(count(empty_batch, OpKind::Transpose) == 0);
  emit::LowerOptions lower;
  Graph lowered = empty_batch;
  optimizer::PassContext plain;
  REQUIRE(optimizer::run_passes(lowered, plain).ok());
  auto plan = emit::lower_for_gpu(lowered, lower);
  INFO((plan.ok() ? "" : plan.status().message()));
  CHECK(plan.ok());
}

TEST_CASE("channels-last convs lower to NHWC cuDNN calls with their whole epilogue",
          "[channels-last][cudnn]") {
  Graph g = testing::residual_stage_graph(DType::kFloat16);
  optimizer::PassContext ctx = testing::cuda_pass_context();
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  emit::LowerOptions o;
  auto plan = emit::lower_for_gpu(g, o);
  INFO((plan.ok() ? "" : plan.status().message()));
  REQUIRE(plan.ok());
  int convs = 0;
  bool residual_call = false;
  for (const auto& launch : plan->launches) {
    if (!launch.library || launch.library->op != emit::LibraryOp::kCudnnConv) continue;
    auto p = engine::decode_conv_params(launch.library->params);
    REQUIRE(p.ok());
    CHECK(p->layout == engine::ConvLayout::kNhwc);
    CHECK(p->activation == engine::ConvActivation::kRelu);
    ++convs;
    // conv2 + residual Add + per-channel Add + Relu: one call.
    if (p->has_residual) residual_call = p->has_bias && p->c == 16 && p->filter[0] == 1;
  }
  CHECK(convs == 3);
  CHECK(residual_call);
  // Nothing but the two transposes, the MaxPool and the convs.
  CHECK(plan->launches.size() == 6);

  // The generated conv kernel is channels-first: it refuses, and says why.
  o.conv.mode = target::ConvMode::kGenerated;
  auto generated = emit::lower_for_gpu(g, o);
  REQUIRE_FALSE(generated.ok());
  CHECK(generated.status().message().find("channels-last") != std::string::npos);
}

namespace {

// A random DAG of fp16 convs (1x1/3x3, stride 1/2, groups 1 or depthwise,
// with or without B), elementwise ops (Relu, Sigmoid, Clip, Add/Mul with a
// same-shape value, a per-channel constant or a scalar) and MaxPools, each
// reading a random earlier value; one to three outputs.
Graph random_conv_dag(std::mt19937& rng) {
  testing::GraphBuilder b;
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  struct Item {
    ir::ValueId v;
    ir::Shape s;
  };
  const DType dt = DType::kFloat16;
  std::vector<Item> pool{{b.input("x", dt, {2, 4, 8, 8}), {2, 4, 8, 8}}};
  int uid = 0;
  auto name = [&](const char* what) { return std::string(what) + std::to_string(uid++); };
  const int steps = 6 + pick(8);
  for (int step = 0; step < steps; ++step) {
    const Item in = pool[static_cast<size_t>(pick(static_cast<int>(pool.size())))];
    const int64_t c = in.s[1], h = in.s[2], w = in.s[3];
    switch (pick(6)) {
      case 0:
      case 1: {  // Conv
        const bool depthwise = pick(3) == 0;
        const int64_t k = depthwise ? c : 4 + 4 * pick(2);
        const int64_t kernel = pick(2) == 0 ? 1 : 3;
        const int64_t stride = h >= 4 && pick(3) == 0 ? 2 : 1;
        const int64_t pad = kernel / 2;
        std::vector<ir::ValueId> ins{
            in.v,
            b.constant(name("w"), testing::random_tensor(dt, {k, depthwise ? 1 : c, kernel, kernel},
                                                         rng, -0.3, 0.3))};
        if (pick(2) == 0)
          ins.push_back(b.constant(name("b"), testing::random_tensor(dt, {k}, rng)));
        auto a = testing::attrs({{"pads", ir::Attribute::of_ints({pad, pad, pad, pad})},
                                 {"strides", ir::Attribute::of_ints({stride, stride})},
                                 {"group", ir::Attribute::of_int(depthwise ? c : 1)}});
        const int64_t oh = (h + 2 * pad - kernel) / stride + 1,
                      ow = (w + 2 * pad - kernel) / stride + 1;
        pool.push_back({b.node(OpKind::Conv, ins, a, 1, name("conv")), {2, k, oh, ow}});
        break;
      }
      case 2: {  // unary
        const int u = pick(3);
        ir::ValueId out;
        if (u == 0) {
          out = b.node(OpKind::Relu, {in.v}, {}, 1, name("relu"));
        } else if (u == 1) {
          out = b.node(OpKind::Sigmoid, {in.v}, {}, 1, name("sigmoid"));
        } else {
          auto lo = b.constant(name("lo"), testing::random_tensor(dt, {}, rng, -1.0, 0.0));
          auto hi = b.constant(name("hi"), testing::random_tensor(dt, {}, rng, 1.0, 6.0));
          out = b.node(OpKind::Clip, {in.v, lo, hi}, {}, 1, name("clip"));
        }
        pool.push_back({out, in.s});
        break;
      }
      case 3:
      case 4: {  // binary
        const OpKind op = pick(2) == 0 ? OpKind::Add : OpKind::Mul;
        ir::ValueId other = ir::kNoValue;
        for (const Item& it : pool)
          if (it.v != in.v && it.s == in.s && pick(2) == 0) other = it.v;
        if (other == ir::kNoValue)
          other = pick(2) == 0
                      ? b.constant(name("pc"), testing::random_tensor(dt, {1, c, 1, 1}, rng))
                      : b.constant(name("s"), testing::random_tensor(dt, {}, rng));
        pool.push_back(
            {b.node(op, pick(2) == 0 ? std::vector{in.v, other} : std::vector{other, in.v}, {}, 1,
                    name("bin")),
             in.s});
        break;
      }
      default: {  // MaxPool 2x2 (channels-first: keeps a transpose in front)
        if (h < 2 || w < 2) break;
        auto a = testing::attrs({{"kernel_shape", ir::Attribute::of_ints({2, 2})},
                                 {"strides", ir::Attribute::of_ints({2, 2})}});
        pool.push_back({b.node(OpKind::MaxPool, {in.v}, a, 1, name("pool")), {2, c, h / 2, w / 2}});
        break;
      }
    }
  }
  b.output(pool.back().v);
  for (int extra = pick(3); extra > 0 && pool.size() > 2; --extra) {
    const ir::ValueId v = pool[static_cast<size_t>(1 + pick(static_cast<int>(pool.size()) - 2))].v;
    bool already = false;
    for (ir::ValueId o : b.graph().outputs) already = already || o == v;
    if (!already) b.output(v);
  }
  Graph g = b.build();
  optimizer::PassContext ctx;  // the pass ends with DCE: compare live graphs
  REQUIRE(optimizer::eliminate_dead_code(g, ctx).ok());
  g.compact();
  return g;
}

}  // namespace

TEST_CASE("channels-last: random conv DAGs keep their outputs bit for bit", "[channels-last]") {
  // The reference computes the same sums in either layout, so any wrong
  // re-layout, sink or cancelled pair shows as a difference.
  auto& rng = testing::test_rng();
  int converted = 0, sunk = 0;
  for (int i = 0; i < 300; ++i) {
    const Graph before = random_conv_dag(rng);
    INFO("graph " << i << ":\n" << ir::print_graph(before));
    optimizer::PassContext ctx;
    const Graph after = channels_last(before, true, &ctx);
    converted += static_cast<int>(ctx.counters["channels-last: convolutions"]);
    sunk += static_cast<int>(ctx.counters["channels-last: elementwise ops moved past a transpose"]);
    CHECK(count(after, OpKind::Conv, true) == count(before, OpKind::Conv));
    for (size_t o = 0; o < before.outputs.size(); ++o)
      CHECK(after.value(after.outputs[o]).name == before.value(before.outputs[o]).name);
    CHECK(testing::max_output_diff(before, after, rng) == 0.0);
  }
  // The generator did exercise the pass.
  CHECK(converted > 300);
  CHECK(sunk > 50);
}
