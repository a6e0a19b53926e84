// Library call + generated epilogue kernel without a GPU: which gemm groups
// split and where (choose_gemm_lowering's prefix rule, the auto-mode K rule),
// the split graph's values, buffers and nodes, equal reference results on the
// split and unsplit graphs, contract errors, and engines whose launches are
// the cuBLASLt call then the NVRTC-compiled epilogue kernel.
#include <catch2/catch.hpp>

#include "driver/engine_build.h"
#include "driver/engine_report.h"
#include "driver/fusion_report.h"
#include "emit/plan/buffer_plan.h"
#include "emit/plan/gpu_plan.h"
#include "emit/plan/schedule.h"
#include "engine_format/conv_params.h"
#include "optimizer/fusion_group.h"
#include "optimizer/pass.h"
#include "optimizer/passes.h"
#include "target/cuda/cublaslt_rules.h"
#include "target/epilogue_split.h"
#include "tests/engine_test_util.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::engine::testing::contains;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {

Tensor random_weights(DType dt, const Shape& shape) {
  return graphc::testing::random_tensor(dt, shape, graphc::testing::test_rng());
}

Attribute erf() { return Attribute::of_string("none"); }

// The three epilogues of the brief, unoptimized: the optimizer fuses each
// into one gemm group.
//   "gelu":    act = Gelu_erf(x @ W + b)           (BERT/ViT FFN)
//   "scale":   y = (x @ W) * s + r                 (s a scalar input, r a residual)
//   "sigmoid": y = Sigmoid(Gemm(x, W^T, b))
Graph model(const std::string& which, DType dt, Shape x_shape, int64_t k, int64_t n) {
  GraphBuilder g;
  Shape y_shape = x_shape;
  y_shape.back() = n;
  auto x = g.input("x", dt, x_shape);
  ValueId y;
  if (which == "sigmoid") {
    auto w = g.constant("w", random_weights(dt, {n, k}));
    auto b = g.constant("b", random_weights(dt, {n}));
    y = g.node(OpKind::Gemm, {x, w, b}, attrs({{"transB", Attribute::of_int(1)}}), 1, "gemm");
    y = g.node(OpKind::Sigmoid, {y}, {}, 1, "sigmoid");
  } else {
    auto w = g.constant("w", random_weights(dt, {k, n}));
    y = g.node(OpKind::MatMul, {x, w}, {}, 1, "matmul");
    if (which == "gelu") {
      y = g.node(OpKind::Add, {y, g.constant("b", random_weights(dt, {n}))}, {}, 1, "bias");
      y = g.node(OpKind::Gelu, {y}, attrs({{"approximate", erf()}}), 1, "gelu");
    } else {
      y = g.node(OpKind::Mul, {y, g.input("s", dt, {1})}, {}, 1, "scale");
      y = g.node(OpKind::Add, {y, g.input("r", dt, y_shape)}, {}, 1, "residual");
    }
  }
  g.output(y);
  return g.build();
}

Graph optimized(Graph g) {
  optimizer::PassContext ctx;
  auto st = optimizer::run_passes(g, ctx);
  INFO(st.message());
  REQUIRE(st.ok());
  return g;
}

NodeId only_gemm(const Graph& g) {
  NodeId found = -1;
  for (const auto& k : emit::make_schedule(g).kernels)
    if (k.kind == target::KernelKind::kGemm) {
      REQUIRE(found < 0);
      found = k.node;
    }
  REQUIRE(found >= 0);
  return found;
}

// The split-library-epilogues pass on a copy of `g`, for `target`.
Expected<Graph> split_for(const Graph& g, std::shared_ptr<const target::Target> target) {
  Graph out = g;
  optimizer::PassContext ctx;
  ctx.target = std::move(target);
  RETURN_IF_ERROR(optimizer::split_library_epilogues(out, ctx));
  return out;
}

// As graphc build splits, with cuBLASLt in `mode` (and cuDNN's defaults).
Graph split(const Graph& g, target::GemmMode mode = target::GemmMode::kAuto,
            target::ConvMode conv = target::ConvMode::kAuto) {
  target::CudaOptions o;
  o.gemm.mode = mode;
  o.conv.mode = conv;
  auto s = split_for(g, std::make_shared<target::CudaTarget>(o));
  INFO(s.status().message());
  REQUIRE(s.ok());
  return std::move(*s);
}

// A target whose library takes every fused group with a fixed number of
// epilogue ops: for the pass's contract, whatever a real library takes.
class FixedTakes final : public target::Target {
 public:
  explicit FixedTakes(std::optional<size_t> taken) : taken_(taken) {}
  std::string_view name() const override { return "fixed"; }
  bool library_takes_conv(const Graph&, const Node&) const override { return false; }
  std::optional<size_t> library_epilogue_ops(const Graph&, NodeId) const override { return taken_; }
  target::Lowering lowering(const Graph&, NodeId) const override { return {}; }

 private:
  std::optional<size_t> taken_;
};

Expected<Graph> split_taking(const Graph& g, std::optional<size_t> taken) {
  return split_for(g, std::make_shared<FixedTakes>(taken));
}

std::vector<const Node*> live_nodes(const Graph& g) {
  std::vector<const Node*> out;
  for (const auto& n : g.nodes)
    if (!n.dead) out.push_back(&n);
  return out;
}

// The reference gives identical results: the split evaluates the same ops in
// the same order, rounding at the same values.
void check_same_results(const Graph& before, const Graph& after) {
  const double diff = graphc::testing::max_output_diff(before, after, graphc::testing::test_rng());
  CHECK(diff == 0.0);
}

// An engine of exactly a `library` call and then a generated kernel that reads
// the call's result, an arena tensor of the anchor's dtype `dt`.
void check_call_then_epilogue(const engine::Manifest& m, const std::string& library, DType dt) {
  REQUIRE(m.kernels_size() == 2);
  const auto& call = m.kernels(0);
  const auto& epi = m.kernels(1);
  REQUIRE(call.has_library_call());
  CHECK(call.library_call().library() == library);
  CHECK_FALSE(epi.has_library_call());
  CHECK_FALSE(epi.module_entry().empty());
  const int32_t cut = call.args(call.args_size() - 1);
  REQUIRE(epi.args_size() >= 2);
  CHECK(epi.args(0) == cut);
  CHECK(m.tensors(cut).location() == engine::Tensor::ARENA);
  CHECK(m.tensors(cut).dtype() == static_cast<int>(dt));
}

}  // namespace

TEST_CASE("split: MatMul + bias + erf Gelu is cuBLASLt matmul+bias, then a Gelu kernel",
          "[split]") {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    INFO(dtype_name(dt));
    const Graph g = optimized(model("gelu", dt, {4, 32, 256}, 256, 96));
    const auto choice = target::choose_gemm_lowering(g, only_gemm(g), {});
    INFO(choice.reason);
    CHECK_FALSE(choice.call);
    REQUIRE(choice.split_after == size_t{1});
    CHECK(contains(choice.reason, "cuBLASLt matmul+bias, then generated epilogue: Gelu"));
    CHECK(contains(choice.reason, "erf Gelu"));

    const Graph s = split(g);
    const auto nodes = live_nodes(s);
    REQUIRE(nodes.size() == 2);
    const Node& lib = *nodes[0];
    const Node& epi = *nodes[1];
    REQUIRE(lib.op == OpKind::FusedGroup);
    CHECK(lib.fusion == FusionKind::kGemm);
    CHECK(lib.attrs.get_string(target::kSplitEpilogueAttr, "") == "Gelu");
    CHECK(lib.body->live_node_count() == 2);  // MatMul, Add
    CHECK(epi.op == OpKind::Gelu);            // one op left: a plain node
    REQUIRE(lib.outputs.size() == 1);
    // The cut value: the anchor's dtype and shape, read by the epilogue only.
    const Value& cut = s.value(lib.outputs[0]);
    CHECK(cut.dtype == dt);
    CHECK(cut.shape == Shape{4, 32, 96});
    CHECK(epi.inputs == std::vector<ValueId>{lib.outputs[0]});
    CHECK(s.outputs == std::vector<ValueId>{epi.outputs[0]});
    CHECK(s.value(epi.outputs[0]).name == g.value(g.outputs[0]).name);
    // It gets an arena buffer like any intermediate.
    auto plan = emit::plan_buffers(s, emit::make_schedule(s));
    REQUIRE(plan.ok());
    REQUIRE(plan->find(lib.outputs[0]) != nullptr);
    CHECK(plan->find(lib.outputs[0])->size == 4 * 32 * 96 * int64_t(dtype_size(dt)));
    // Part (a) is one whole cuBLASLt call; the batches fold into M.
    const auto a = target::choose_gemm_lowering(s, 0, {});
    INFO(a.reason);
    REQUIRE(a.call);
    CHECK(a.call->params.has_bias);
    CHECK(a.call->params.epilogue == engine::MatmulEpilogue::kNone);
    CHECK(a.call->params.m == 4 * 32);
    CHECK(a.call->args.back() == lib.outputs[0]);
    CHECK(a.reason == "cuBLASLt matmul+bias, then generated epilogue: Gelu");
    check_same_results(g, s);
  }
}

TEST_CASE("split: MatMul * scale + residual is a plain MatMul, then a Mul+Add kernel", "[split]") {
  const Graph g = optimized(model("scale", DType::kFloat16, {256, 384}, 384, 128));
  const auto choice = target::choose_gemm_lowering(g, only_gemm(g), {});
  INFO(choice.reason);
  REQUIRE(choice.split_after == size_t{0});
  CHECK(contains(choice.reason, "generated epilogue: Mul, Add"));
  const Graph s = split(g);
  const auto nodes = live_nodes(s);
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0]->op == OpKind::MatMul);
  CHECK(nodes[0]->attrs.get_string(target::kSplitEpilogueAttr, "") == "Mul, Add");
  REQUIRE(nodes[1]->op == OpKind::FusedGroup);
  CHECK(nodes[1]->fusion == FusionKind::kElementwise);
  CHECK(nodes[1]->body->live_node_count() == 2);
  CHECK(emit::make_schedule(s).kernels[1].kind == target::KernelKind::kFusedElementwise);
  // The elementwise group reads the product, the scale and the residual.
  CHECK(nodes[1]->inputs.size() == 3);
  const auto a = target::choose_gemm_lowering(s, 0, {});
  REQUIRE(a.call);
  CHECK(a.reason == "cuBLASLt matmul, then generated epilogue: Mul, Add");
  check_same_results(g, s);
}

TEST_CASE("split: Gemm(bias) + Sigmoid is cuBLASLt gemm+bias, then Sigmoid", "[split]") {
  const Graph g = optimized(model("sigmoid", DType::kFloat32, {128, 512}, 512, 256));
  const auto choice = target::choose_gemm_lowering(g, only_gemm(g), {});
  INFO(choice.reason);
  REQUIRE(choice.split_after);
  const Graph s = split(g);
  const auto nodes = live_nodes(s);
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[1]->op == OpKind::Sigmoid);
  const auto a = target::choose_gemm_lowering(s, 0, {});
  REQUIRE(a.call);
  CHECK(a.call->params.has_bias);
  check_same_results(g, s);
}

TEST_CASE("split: when it does not happen", "[split]") {
  SECTION("small gemms stay generated whole in auto mode") {
    const Graph g = optimized(model("gelu", DType::kFloat32, {2, 16, 32}, 32, 16));
    auto c = target::choose_gemm_lowering(g, only_gemm(g), {});
    INFO(c.reason);
    CHECK_FALSE(c.split_after);
    CHECK(contains(c.reason, "< 2^20"));
    CHECK(live_nodes(split(g)).size() == 1);
  }
  SECTION("shallow gemms (K < 128) stay generated in auto mode, split with --gemm cublaslt") {
    const Graph g = optimized(model("gelu", DType::kFloat16, {4, 256, 64}, 64, 1024));
    auto c = target::choose_gemm_lowering(g, only_gemm(g), {});
    INFO(c.reason);
    CHECK_FALSE(c.split_after);
    CHECK(contains(c.reason, "needs K >= 128, K = 64"));
    CHECK(live_nodes(split(g)).size() == 1);
    auto forced = target::choose_gemm_lowering(g, only_gemm(g), {target::GemmMode::kCublasLt});
    INFO(forced.reason);
    CHECK(forced.split_after == size_t{1});
    CHECK(live_nodes(split(g, target::GemmMode::kCublasLt)).size() == 2);
  }
  SECTION("--gemm generated never splits") {
    const Graph g = optimized(model("gelu", DType::kFloat32, {128, 256}, 256, 256));
    REQUIRE(target::choose_gemm_lowering(g, only_gemm(g), {}).split_after);
    CHECK(live_nodes(split(g, target::GemmMode::kGenerated)).size() == 1);
  }
  SECTION("an epilogue cuBLASLt takes whole is one call") {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {128, 256});
    auto y =
        b.node(OpKind::MatMul, {x, b.constant("w", random_weights(DType::kFloat32, {256, 64}))});
    y = b.node(OpKind::Add, {y, b.constant("b", random_weights(DType::kFloat32, {64}))});
    b.output(b.node(OpKind::Relu, {y}));
    const Graph g = optimized(b.build());
    auto c = target::choose_gemm_lowering(g, only_gemm(g), {});
    CHECK(c.call);
    CHECK(c.reason == "cuBLASLt matmul+bias+relu");
    CHECK(live_nodes(split(g)).size() == 1);
  }
}

namespace {

// A gemm group with a branching epilogue, grouped by hand (the optimizer's
// chains do not branch): z = x @ W + b; y = z * Sigmoid(z) (SiLU).
Graph silu_group() {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {128, 256});
  auto y = b.node(OpKind::MatMul, {x, b.constant("w", random_weights(DType::kFloat32, {256, 64}))},
                  {}, 1, "matmul");
  auto z = b.node(OpKind::Add, {y, b.constant("b", random_weights(DType::kFloat32, {64}))}, {}, 1,
                  "bias");
  auto s = b.node(OpKind::Sigmoid, {z}, {}, 1, "sigmoid");
  b.output(b.node(OpKind::Mul, {z, s}, {}, 1, "silu"));
  Graph g = b.build();
  auto made = optimizer::materialize_group(g, {0, 1, 2, 3}, FusionKind::kGemm);
  INFO(made.status().message());
  REQUIRE(made.ok());
  return g;
}

}  // namespace

TEST_CASE("split: a branching epilogue splits at the branch", "[split]") {
  const Graph g = silu_group();
  REQUIRE(live_nodes(g).size() == 1);
  auto c = target::choose_gemm_lowering(g, 0, {});
  INFO(c.reason);
  REQUIRE(c.split_after == size_t{1});
  CHECK(contains(c.reason, "the epilogue branches"));
  CHECK(contains(c.reason, "generated epilogue: Sigmoid, Mul"));
  const Graph s = split(g);
  const auto nodes = live_nodes(s);
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[1]->op == OpKind::FusedGroup);
  CHECK(nodes[1]->body->live_node_count() == 2);
  CHECK(nodes[1]->inputs == std::vector<ValueId>{nodes[0]->outputs[0]});
  check_same_results(g, s);

  SECTION("a cut past the branch is refused, naming why") {
    auto sp = target::find_split(g.node(0), 2);
    REQUIRE_FALSE(sp.ok());
    CHECK(contains(sp.status().message(), "branches before the cut"));
    auto bad = split_taking(g, 2);
    REQUIRE_FALSE(bad.ok());
    CHECK(contains(bad.status().message(), "cannot split"));
  }
  SECTION("nothing to split when the library takes everything or is not used") {
    auto all = split_taking(g, 3);
    REQUIRE(all.ok());
    CHECK(live_nodes(*all).size() == 1);
    auto none = split_taking(g, std::nullopt);
    REQUIRE(none.ok());
    CHECK(live_nodes(*none).size() == 1);
  }
  SECTION("a cut at the anchor: everything after it is generated") {
    auto anchor_only = split_taking(g, 0);
    REQUIRE(anchor_only.ok());
    const auto parts = live_nodes(*anchor_only);
    REQUIRE(parts.size() == 2);
    CHECK(parts[0]->op == OpKind::MatMul);
    CHECK(parts[1]->body->live_node_count() == 3);
    check_same_results(g, *anchor_only);
  }
}

TEST_CASE("split: the left-over ops must read only what the library writes", "[split]") {
  // y = x @ W; z = y + b; out = Sigmoid(z) * y: the Mul reads y, which a cut
  // after the bias never writes.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {128, 256});
  auto y = b.node(OpKind::MatMul, {x, b.constant("w", random_weights(DType::kFloat32, {256, 64}))});
  auto z = b.node(OpKind::Add, {y, b.constant("b", random_weights(DType::kFloat32, {64}))});
  auto s = b.node(OpKind::Sigmoid, {z});
  b.output(b.node(OpKind::Mul, {s, y}));
  Graph g = b.build();
  REQUIRE(optimizer::materialize_group(g, {0, 1, 2, 3}, FusionKind::kGemm).ok());
  auto sp = target::find_split(g.node(0), 1);
  REQUIRE_FALSE(sp.ok());
  CHECK(contains(sp.status().message(), "branches before the cut"));
  // cuBLASLt's rule stops at the branch (the product has two readers): cut at the anchor.
  auto c = target::choose_gemm_lowering(g, 0, {});
  INFO(c.reason);
  REQUIRE(c.split_after == size_t{0});
  const Graph split_graph = split(g);
  REQUIRE(live_nodes(split_graph).size() == 2);
  check_same_results(g, split_graph);
}

TEST_CASE("split: engines launch the cuBLASLt call, then the generated epilogue",
          "[split][build]") {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    INFO(dtype_name(dt));
    const Graph g = split(optimized(model("gelu", dt, {2, 64, 256}, 256, 128)));
    driver::BuildOptions opts;
    opts.archs = {"sm_80", "sm_90"};
    auto built = driver::build_engine(g, opts);
    INFO(built.status().message());
    REQUIRE(built.ok());
    const auto& m = built->manifest;
    check_call_then_epilogue(m, "cublasLt", dt);
    const auto& epi = m.kernels(1);
    auto params = engine::decode_matmul_params(m.kernels(0).library_call().params());
    REQUIRE(params.ok());
    CHECK(params->has_bias);
    CHECK(params->epilogue == engine::MatmulEpilogue::kNone);
    CHECK(params->m == 128);
    REQUIRE(epi.args_size() == 2);
    CHECK(m.tensors(epi.args(1)).location() == engine::Tensor::OUTPUT);
    // PTX for both architectures.
    int modules = 0;
    for (const auto& cm : m.code_modules()) modules += cm.ptx_section() >= 0 ? 1 : 0;
    CHECK(modules == 2);
    // `graphc inspect` on the engine names the split.
    auto reread = engine::parse_engine(engine::testing::serialize_ok(*built));
    REQUIRE(reread.ok());
    driver::EngineReportInput in;
    in.path = "split.engine";
    in.contents = &*reread;
    const std::string text = driver::engine_report_text(in);
    INFO(text);
    CHECK(contains(text, "epilogue=bias"));
    CHECK(contains(text, "then generated epilogue: kernel 1"));
    CHECK(contains(driver::engine_report_json(in), "\"generated_epilogue\": 1"));
  }
}

TEST_CASE("split: a cut value the graph also returns is the group's output", "[split]") {
  // z = x @ W + b is a graph output and feeds Sigmoid: grouped by hand, the
  // group has two outputs; the cut is z itself, written by the library.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat16, {256, 192});
  auto y = b.node(OpKind::MatMul, {x, b.constant("w", random_weights(DType::kFloat16, {192, 80}))});
  auto z = b.node(OpKind::Add, {y, b.input("bias", DType::kFloat16, {80})});
  auto s = b.node(OpKind::Sigmoid, {z});
  b.output(s);
  b.output(z);
  Graph g = b.build();
  const std::string z_name = g.value(z).name;  // ids change when the group forms
  REQUIRE(optimizer::materialize_group(g, {0, 1, 2}, FusionKind::kGemm).ok());
  REQUIRE(live_nodes(g).size() == 1);
  REQUIRE(g.nodes[0].outputs.size() == 2);
  auto c = target::choose_gemm_lowering(g, 0, {});
  INFO(c.reason);
  REQUIRE(c.split_after == size_t{1});
  const Graph split_graph = split(g);
  const auto nodes = live_nodes(split_graph);
  REQUIRE(nodes.size() == 2);
  const ValueId z_out = *split_graph.find_value(z_name);
  CHECK(nodes[0]->outputs == std::vector<ValueId>{z_out});  // no new value: z itself
  CHECK(nodes[1]->op == OpKind::Sigmoid);
  CHECK(nodes[1]->inputs == std::vector<ValueId>{z_out});
  CHECK(split_graph.values.size() == g.values.size());
  const auto a = target::choose_gemm_lowering(split_graph, 0, {});
  REQUIRE(a.call);
  CHECK(a.call->args.back() == z_out);
  check_same_results(g, split_graph);
  // The engine: z is an output binding the call writes; Sigmoid reads it.
  auto plan = emit::lower_for_gpu(split_graph);
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  REQUIRE(plan->launches.size() == 2);
  CHECK(plan->launches[0].library.has_value());
  CHECK(plan->slots[static_cast<size_t>(plan->launches[0].args.back())].location ==
        emit::SlotLocation::kOutput);
}

TEST_CASE("split: an epilogue group with an embedded constant compiles", "[split][build]") {
  // (x @ W) * s + r, s a constant scalar: a plain MatMul call, then one
  // kernel of Mul and Add with s embedded as a literal.
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat16, {2, 64, 256});
  auto y =
      b.node(OpKind::MatMul, {x, b.constant("w", random_weights(DType::kFloat16, {256, 128}))});
  y = b.node(OpKind::Mul, {y, b.constant("s", random_weights(DType::kFloat16, {}))});
  b.output(b.node(OpKind::Add, {y, b.input("r", DType::kFloat16, {2, 64, 128})}));
  const Graph g = optimized(b.build());
  const Graph s = split(g);
  const auto nodes = live_nodes(s);
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0]->op == OpKind::MatMul);
  REQUIRE(nodes[1]->op == OpKind::FusedGroup);
  CHECK(nodes[1]->inputs.size() == 2);  // the product and r; s is in the body
  check_same_results(g, s);
  driver::BuildOptions opts;
  opts.archs = {"sm_80", "sm_90"};
  auto built = driver::build_engine(s, opts);
  INFO(built.status().message());
  REQUIRE(built.ok());
  const auto& m = built->manifest;
  REQUIRE(m.kernels_size() == 2);
  CHECK(m.kernels(0).has_library_call());
  CHECK(m.kernels(1).kind() == "fused elementwise");
  CHECK(m.kernels(1).args_size() == 3);  // product, r, output
  CHECK(m.kernels(1).args(0) == m.kernels(0).args(m.kernels(0).args_size() - 1));
}

TEST_CASE("split: the fusion report shows the launched kernels", "[split]") {
  Graph g = model("gelu", DType::kFloat32, {4, 32, 256}, 256, 96);
  optimizer::PassContext ctx;
  auto r = driver::optimize_and_report(g, ctx);
  INFO(r.status().message());
  REQUIRE(r.ok());
  CHECK(r->kernels == 2);
  REQUIRE(r->rows.size() == 2);
  CHECK(r->rows[0].kind == "gemm");
  CHECK(r->rows[0].lowering == "cuBLASLt matmul+bias, then generated epilogue: Gelu");
  CHECK(r->rows[1].kind == "elementwise");
  const std::string text = driver::report_text(*r);
  INFO(text);
  CHECK(contains(text, "then generated epilogue: Gelu"));
  // The optimizer's own graph is split too (its last pass): one plan, one truth.
  CHECK(live_nodes(g).size() == 2);
  CHECK(r->rows[0].launch == 0);
  CHECK(r->rows[1].launch == 1);
}

TEST_CASE("split: Conv + bias + Clip (ReLU6) is a cuDNN conv+bias, then a Clip kernel",
          "[split][cudnn][build]") {
  // MobileNetV2's block: cuDNN fuses a per-channel bias and ReLU but not Clip,
  // so the group splits after the bias instead of staying generated.
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    INFO(dtype_name(dt));
    GraphBuilder b;
    auto x = b.input("x", dt, {1, 16, 20, 20});
    auto w = b.constant("w", random_weights(dt, {32, 16, 3, 3}));
    auto bias = b.constant("b", random_weights(dt, {32}));
    const std::vector<int64_t> pads{1, 1, 1, 1};
    auto y =
        b.node(OpKind::Conv, {x, w, bias}, attrs({{"pads", Attribute::of_ints(pads)}}), 1, "conv");
    auto lo = b.constant("lo", Tensor::from_f32({0.0f}, {}).cast_to(dt), false);
    auto hi = b.constant("hi", Tensor::from_f32({6.0f}, {}).cast_to(dt), false);
    y = b.node(OpKind::Clip, {y, lo, hi}, {}, 1, "relu6");
    b.output(y);
    const Graph unoptimized_graph = b.build();
    const Graph g = optimized(unoptimized_graph);
    const Graph s = split(g);
    check_same_results(g, s);
    // Generated-only builds do not split.
    const Graph kept = split(g, target::GemmMode::kAuto, target::ConvMode::kGenerated);
    CHECK(live_nodes(kept).size() == live_nodes(g).size());

    driver::BuildOptions opts;
    opts.archs = {"sm_90"};
    auto built = driver::build_engine(s, opts);
    INFO(built.status().message());
    REQUIRE(built.ok());
    const auto& m = built->manifest;
    check_call_then_epilogue(m, "cudnn", dt);
    auto params = engine::decode_conv_params(m.kernels(0).library_call().params());
    REQUIRE(params.ok());
    CHECK(params->has_bias);
    CHECK(params->activation == engine::ConvActivation::kNone);
    // The fusion report names the split (on the kernels an engine launches).
    // (channels-last off: the graph above was optimized without it, too)
    Graph unoptimized = unoptimized_graph;
    optimizer::PassContext ctx;
    ctx.disabled.insert("channels-last");
    auto r = driver::optimize_and_report(unoptimized, ctx);
    INFO(r.status().message());
    REQUIRE(r.ok());
    REQUIRE(r->rows.size() == 2);
    CHECK(r->rows[0].kind == "conv");
    CHECK(r->rows[0].lowering == "cuDNN, then generated epilogue: Clip");
  }
}
