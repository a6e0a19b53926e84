// The float8 (e4m3fn) QDQ path without a GPU (docs/int8.md, "The fp8 GEMM"):
// fuse-qdq-matmul's rewrite into a float8 MatMulInteger with the per-tensor
// scales in `_alpha`, the layers it leaves float and why, the rule sending
// the GEMM to cuBLASLt's FP8 kernels with a generated epilogue, the version 3
// matmul descriptor (round trip, field checks, random corruptions), the
// engine record and the inspect text; every rewritten graph against the
// unoptimized QDQ graph on the reference executor with fresh random inputs.
// The GPU runs are tests/gpu/fp8_gemm_gpu_test.cpp ([fp8]).
#include <catch2/catch.hpp>
#include <functional>
#include <set>

#include "driver/engine_build.h"
#include "driver/fusion_report.h"
#include "emit/plan/schedule.h"
#include "engine_format/matmul_params.h"
#include "ir/verifier.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "runtime/engine_loader.h"
#include "target/cuda/cublaslt_rules.h"
#include "tests/cublaslt_record_check.h"
#include "tests/cuda_pass_context.h"
#include "tests/engine_test_util.h"
#include "tests/fp8_qdq_cases.h"
#include "tests/reference_run.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::engine::MatmulParams;
using graphc::engine::testing::contains;

namespace {

MatmulParams fp8_params() {
  MatmulParams p = testing::tn_matmul_params(17);
  p.d_type = 1;
  p.alpha = 1.5e-5;
  return p;
}

// cuBLASLt whatever the size (the tests' shapes are small), on an H100.
target::CudaOptions fp8_lowering(int min_sm = 90,
                                 target::GemmMode mode = target::GemmMode::kCublasLt) {
  target::CudaOptions o;
  o.gemm.mode = mode;
  o.gemm.int8 = true;
  o.min_sm = min_sm;
  return o;
}

struct Optimized {
  Graph graph;
  std::map<std::string, int64_t> counters;
};

Optimized optimized(const Graph& g, const target::CudaOptions& lower,
                    optimizer::Precision precision = optimizer::Precision::kFp32,
                    const std::vector<optimizer::Pass>* passes = nullptr) {
  Optimized out{g, {}};
  optimizer::PassContext ctx = testing::cuda_pass_context(lower);
  ctx.int8_gemm = true;
  ctx.precision = precision;
  Status st = optimizer::run_passes(out.graph, ctx, passes);
  INFO(st.message());
  REQUIRE(st.ok());
  REQUIRE(verify(out.graph, {.require_shapes = true}).ok());
  out.counters = ctx.counters;
  return out;
}

const std::vector<optimizer::Pass>& fuse_qdq_only() {
  static const std::vector<optimizer::Pass> passes = {*optimizer::find_pass("fuse-qdq-matmul")};
  return passes;
}

// The live float8 products of `g`, fused groups' bodies included.
std::vector<const Node*> fp8_gemms(const Graph& g) {
  std::vector<const Node*> out;
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    if (n.op == OpKind::MatMulInteger && g.value(n.inputs[0]).dtype == DType::kFloat8E4M3FN)
      out.push_back(&n);
    if (n.body)
      for (const Node* b : fp8_gemms(*n.body)) out.push_back(b);
  }
  return out;
}

std::vector<std::string> output_names(const Graph& g) {
  std::vector<std::string> out;
  for (ValueId v : g.outputs) out.push_back(g.value(v).name);
  return out;
}

std::string counters_text(const std::map<std::string, int64_t>& counters) {
  std::string out;
  for (const auto& [what, n] : counters) out += what + "\n";
  return out;
}

}  // namespace

TEST_CASE("fuse-qdq-matmul makes a float8 QDQ layer one float8 GEMM with the scales in alpha",
          "[fp8][rewrite]") {
  const auto cases = testing::fp8_cases();
  const auto& c = cases[1];  // MatMul 1x64x128x96, per-column scales, bias, Relu
  const Graph g = testing::build_fp8_graph(c);
  const Optimized o = optimized(g, fp8_lowering(), optimizer::Precision::kFp32, &fuse_qdq_only());
  INFO(counters_text(o.counters));
  const auto gemms = fp8_gemms(o.graph);
  REQUIRE(gemms.size() == 1);
  const Node& mm = *gemms[0];
  CHECK(mm.attrs.get_int("_trans_b", 0) == 1);
  // The weight: the e4m3fn constant transposed to [N, K], bit for bit.
  const Value& w = o.graph.value(mm.inputs[1]);
  REQUIRE(w.constant);
  CHECK(w.dtype == DType::kFloat8E4M3FN);
  CHECK(w.shape == Shape{c.n, c.k});
  const Tensor* wq = nullptr;
  const Tensor* ws = nullptr;
  for (const Value& v : g.values) {
    if (v.name == "w" && v.constant) wq = &*v.constant;
    if (v.name == "ws" && v.constant) ws = &*v.constant;
  }
  REQUIRE(wq);
  REQUIRE(ws);
  for (int64_t kk = 0; kk < c.k; kk += 7)
    for (int64_t nn = 0; nn < c.n; nn += 5)
      CHECK(w.constant->data()[nn * c.k + kk] == wq->data()[kk * c.n + nn]);
  // alpha = sa * max(sw); the output reads acc * sw[n] / max(sw).
  double s_max = 0;
  for (int64_t i = 0; i < ws->numel(); ++i) s_max = std::max(s_max, ws->get_f64(i));
  CHECK(mm.attrs.get_float("_alpha", 0) == Approx(s_max / 64.0).epsilon(1e-12));
  CHECK(o.graph.value(mm.outputs[0]).dtype == DType::kFloat32);
  bool column_scale = false;
  for (const Node& n : o.graph.nodes)
    if (!n.dead && n.op == OpKind::Mul && !n.inputs.empty() && n.inputs[0] == mm.outputs[0])
      column_scale = true;
  CHECK(column_scale);
  CHECK(contains(counters_text(o.counters), "becomes a cuBLASLt float8 GEMM"));
  // The rewrite alone computes what the QDQ graph does.
  const auto feeds = testing::qdq_inputs(g, testing::test_rng());
  const auto want = testing::run_reference(g, feeds);
  const auto got = testing::run_reference(o.graph, feeds);
  for (const auto& [name, t] : want) CHECK(testing::check_fp8_outputs(c, t, got.at(name)) == "");
}

TEST_CASE("float8 QDQ layers optimized match the QDQ graph on the reference executor",
          "[fp8][rewrite]") {
  for (const auto& c : testing::fp8_cases()) {
    INFO(c.label);
    const Graph g = testing::build_fp8_graph(c);
    const Optimized o = optimized(g, fp8_lowering());
    INFO(counters_text(o.counters));
    CHECK(fp8_gemms(o.graph).size() == (c.cublaslt ? (c.chain ? 2u : 1u) : 0u));
    // Fresh random inputs each time (never zeros): float32 within 1e-4 of the
    // peak; --precision fp16 within fp16's rounding of the epilogue (1e-2).
    for (int round = 0; round < 2; ++round) {
      const auto feeds = testing::qdq_inputs(g, testing::test_rng());
      const auto want = testing::run_reference(g, feeds);
      const auto got = testing::run_reference(o.graph, feeds);
      CHECK(testing::check_fp8_case(c, output_names(g), want, got) == "");
    }
    const Optimized half = optimized(g, fp8_lowering(), optimizer::Precision::kFp16);
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    const auto want = testing::run_reference(g, feeds);
    const auto got = testing::run_reference(half.graph, feeds);
    CHECK(testing::check_fp8_case(c, output_names(g), want, got, 1e-2) == "");
  }
}

TEST_CASE("fuse-qdq-matmul names why a float8 layer stays a float GEMM", "[fp8][rewrite]") {
  const auto cases = testing::fp8_cases();
  auto refused = [](const Graph& g, const target::CudaOptions& lower, const std::string& why) {
    const Optimized o = optimized(g, lower, optimizer::Precision::kFp32, &fuse_qdq_only());
    const std::string text = counters_text(o.counters);
    INFO(text);
    CHECK(fp8_gemms(o.graph).empty());
    CHECK(contains(text, "stays a float GEMM"));
    CHECK(contains(text, why));
    // Nothing rewritten: the layer still computes what it did.
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    const auto want = testing::run_reference(g, feeds);
    const auto got = testing::run_reference(o.graph, feeds);
    for (const auto& [name, t] : want) CHECK(t.same_bytes(got.at(name)));
  };
  const Graph g = testing::build_fp8_graph(cases[1]);
  SECTION("sm_80 in --arch") { refused(g, fp8_lowering(80), "sm_89 or newer"); }
  SECTION("--gemm generated") {
    refused(g, fp8_lowering(90, target::GemmMode::kGenerated), "--gemm generated");
  }
  SECTION("too small for cuBLASLt in auto mode") {
    refused(g, fp8_lowering(90, target::GemmMode::kAuto), "< 2^20");
  }
  SECTION("N not a multiple of 16") {
    refused(testing::build_fp8_graph(cases[4]), fp8_lowering(), "multiples of 16");
  }
  SECTION("e5m2 operands") {
    Graph e5 = g;
    for (Value& v : e5.values) {
      if (v.dtype == DType::kFloat8E4M3FN) v.dtype = DType::kFloat8E5M2;
      if (v.constant && v.constant->dtype() == DType::kFloat8E4M3FN) {
        Tensor t(DType::kFloat8E5M2, v.constant->shape());
        for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, v.constant->get_f64(i));
        v.constant = t;
      }
    }
    refused(e5, fp8_lowering(), "takes float8e4m3fn");
  }
  SECTION("weight scales along K") {
    Graph along_k = g;
    for (Node& n : along_k.nodes)
      if (n.op == OpKind::DequantizeLinear && along_k.value(n.inputs[0]).constant) {
        Tensor s(DType::kFloat32, {cases[1].k});
        for (int64_t i = 0; i < s.numel(); ++i) s.set_f64(i, 1e-3 * (1 + i % 3));
        along_k.value(n.inputs[1]).constant = s;
        along_k.value(n.inputs[1]).shape = s.shape();
        n.inputs.resize(2);  // no zero point (its shape would follow the scale's)
        n.attrs.set("axis", Attribute::of_int(0));
      }
    refused(along_k, fp8_lowering(), "along K");
  }
}

TEST_CASE("cuBLASLt takes the float8 GEMM and a generated kernel the epilogue", "[fp8][cublaslt]") {
  for (const auto& c : testing::fp8_cases()) {
    // The cases with cuBLASLt's own epilogue: tests/fp8_epilogue_test.cpp.
    if (!c.cublaslt || c.chain || c.residual || c.act != "relu") continue;
    INFO(c.label);
    const auto lower = fp8_lowering();
    const Optimized o = optimized(testing::build_fp8_graph(c), lower);
    int library = 0;
    for (const auto& k : emit::make_schedule(o.graph).kernels) {
      if (k.kind != target::KernelKind::kGemm) continue;
      const target::GemmChoice choice = target::choose_gemm_lowering(o.graph, k.node, lower.gemm);
      INFO(choice.reason);
      REQUIRE(choice.call);
      ++library;
      const MatmulParams& p = choice.call->params;
      CHECK(p.fp8());
      CHECK(p.trans_b);
      CHECK_FALSE(p.trans_a);
      CHECK(p.m == c.batch * c.m);
      CHECK(p.n == c.n);
      CHECK(p.k == c.k);
      CHECK(p.d_dtype() == 1);
      CHECK(contains(choice.reason, "cuBLASLt float8 tensor-core GEMM (e4m3 x e4m3 -> float32"));
      const bool epilogue = c.bias || c.gemm || c.per_channel || c.requantize;
      CHECK(contains(choice.reason, "then generated epilogue") == epilogue);
      CHECK(engine::decode_matmul_params(engine::encode_matmul_params(p)).ok());
    }
    CHECK(library == 1);
  }
  // --precision fp16/bf16: the Cast after the product is cuBLASLt's own D dtype.
  for (auto [precision, d_type, name] :
       {std::tuple{optimizer::Precision::kFp16, 10, "float16"},
        std::tuple{optimizer::Precision::kBf16, 16, "bfloat16"}}) {
    const auto cases = testing::fp8_cases();
    const auto lower = fp8_lowering();
    const Optimized o = optimized(testing::build_fp8_graph(cases[1]), lower, precision);
    int library = 0;
    for (const auto& k : emit::make_schedule(o.graph).kernels) {
      if (k.kind != target::KernelKind::kGemm) continue;
      const target::GemmChoice choice = target::choose_gemm_lowering(o.graph, k.node, lower.gemm);
      INFO(choice.reason);
      REQUIRE(choice.call);
      ++library;
      CHECK(choice.call->params.d_type == d_type);
      CHECK(choice.call->params.d_dtype() == d_type);
      CHECK(contains(choice.reason, std::string("e4m3 x e4m3 -> ") + name));
      CHECK(contains(choice.reason, "then generated epilogue: Mul, Add, Relu"));
      CHECK(o.graph.value(choice.call->args.back()).dtype == static_cast<DType>(d_type));
    }
    CHECK(library == 1);
  }
}

TEST_CASE("float8 matmul params are version 3 and read back, versions 1 and 2 unchanged",
          "[fp8][cublaslt]") {
  const MatmulParams p = fp8_params();
  const std::string bytes = engine::encode_matmul_params(p);
  CHECK(static_cast<uint8_t>(bytes[0]) == 3);
  auto back = engine::decode_matmul_params(bytes);
  INFO(back.status().message());
  REQUIRE(back.ok());
  CHECK(*back == p);
  CHECK(back->d_dtype() == 1);
  CHECK(contains(engine::describe_matmul(*back), "e4m3->fp32"));
  for (int32_t d : {10, 16}) {
    MatmulParams half = p;
    half.d_type = d;
    auto h = engine::decode_matmul_params(engine::encode_matmul_params(half));
    REQUIRE(h.ok());
    CHECK(*h == half);
    CHECK(h->d_dtype() == d);
  }
  MatmulParams f;
  f.m = f.n = f.k = f.lda = f.ldb = f.ldc = 8;
  CHECK(static_cast<uint8_t>(engine::encode_matmul_params(f)[0]) == 1);
  MatmulParams i8 = fp8_params();
  i8.dtype = 3;
  i8.compute = engine::MatmulCompute::kI32;
  i8.alpha = 1;
  CHECK(static_cast<uint8_t>(engine::encode_matmul_params(i8)[0]) == 2);
}

TEST_CASE("float8 matmul params are checked field by field", "[fp8][cublaslt]") {
  auto refused = [](const std::function<void(MatmulParams&)>& change, const std::string& why) {
    testing::check_matmul_params_refused(fp8_params(), change, why);
  };
  refused([](auto& p) { p.trans_b = false, p.ldb = p.n; }, "trans_b");
  refused([](auto& p) { p.trans_a = true, p.lda = p.m; }, "trans_b");
  refused([](auto& p) { p.n = 72, p.ldc = 72; }, "multiple of 16");
  refused([](auto& p) { p.k = 88, p.lda = 88, p.ldb = 88; }, "multiple of 16");
  refused([](auto& p) { p.ldc = 68; }, "multiple of 16");
  // A bias makes it version 4 (tests/fp8_epilogue_test.cpp), which refuses a
  // float32 D's bias (cuBLASLt's would be bfloat16).
  refused([](auto& p) { p.has_bias = true; }, "bfloat16 bias");
  refused([](auto& p) { p.batch = 2, p.stride_d = p.m * p.n; }, "one matrix");
  refused([](auto& p) { p.alpha = 0; }, "alpha is 0");
  refused([](auto& p) { p.alpha = INFINITY; }, "not finite");
  refused([](auto& p) { p.compute = engine::MatmulCompute::kI32; }, "int32 compute");
  refused([](auto& p) { p.compute = engine::MatmulCompute::kF32FastTf32; }, "TF32");
  refused([](auto& p) { p.d_type = 3; }, "float8 D dtype 3");
  refused([](auto& p) { p.d_type = 0; }, "float8 D dtype 0");
  // Version 3 bytes of another dtype, and float8 under versions 1 and 2.
  for (uint8_t version : {1, 2}) {
    std::string bytes = engine::encode_matmul_params(fp8_params());
    bytes[0] = static_cast<char>(version);
    auto d = engine::decode_matmul_params(bytes);
    REQUIRE_FALSE(d.ok());
    CHECK(contains(d.status().message(), "dtype 17"));
  }
  MatmulParams f;
  f.m = f.n = f.k = f.lda = f.ldb = f.ldc = 16;
  // Version 1 keeps both reserved bytes zero (version 3's D dtype byte included).
  std::string v1 = engine::encode_matmul_params(f);
  v1[14] = 10;
  CHECK(contains(engine::decode_matmul_params(v1).status().message(), "reserved bytes"));
  std::string bytes = engine::encode_matmul_params(f);
  bytes[0] = 3;
  auto d = engine::decode_matmul_params(bytes);
  REQUIRE_FALSE(d.ok());
  CHECK(contains(d.status().message(), "version 3: float8"));
  // A newer version than this reader knows: 5 is unknown.
  bytes[0] = 5;
  CHECK(contains(engine::decode_matmul_params(bytes).status().message(), "version 5"));
}

TEST_CASE("malformed float8 matmul descriptors are refused cleanly", "[fp8][cublaslt][fuzz]") {
  // Random corruptions of a valid version 3 descriptor: every one either is
  // refused as an invalid engine or decodes to params that pass the float8
  // rules and encode back to the same bytes. Truncations and extensions too.
  const std::string good = engine::encode_matmul_params(fp8_params());
  int accepted = 0;
  const int refused =
      testing::check_corrupted_matmul_params(good, 4000, [&accepted](const MatmulParams& d) {
        ++accepted;
        if (d.fp8()) {
          CHECK(d.trans_b);
          CHECK_FALSE(d.trans_a);
          CHECK(d.k % 16 == 0);
          CHECK(d.ldc % 16 == 0);
          CHECK(d.a_extent() > 0);
          CHECK(d.d_extent() > 0);
        }
      });
  CHECK(refused > 0);
  for (size_t len : {size_t{0}, size_t{3}, size_t{4}, good.size() - 1, good.size() + 1}) {
    std::string bytes = good.substr(0, std::min(len, good.size()));
    bytes.resize(len, '\0');
    auto d = engine::decode_matmul_params(bytes);
    REQUIRE_FALSE(d.ok());
    CHECK(d.status().code() == ErrorCode::kInvalidEngine);
  }
  INFO(accepted << " corruptions decoded to valid params");
  SUCCEED();
}

TEST_CASE("an engine records cuBLASLt's float8 GEMM as a version 3 matmul call",
          "[fp8][cublaslt][build]") {
  const auto cases = testing::fp8_cases();
  const Optimized o = optimized(testing::build_fp8_graph(cases[2]), fp8_lowering());
  driver::BuildOptions opts;
  opts.archs = {"sm_90"};
  opts.lower = fp8_lowering();
  auto built = driver::build_engine(o.graph, opts);
  INFO(built.status().message());
  REQUIRE(built.ok());
  const engine::MatmulParams p =
      testing::check_cublaslt_record(*built, {48, 64, 96, /*weights e4m3fn*/ 17, /*D*/ 1, 10});
  CHECK(p.fp8());
  const engine::Kernel* call = nullptr;
  for (const auto& k : built->manifest.kernels())
    if (k.has_library_call()) call = &k;
  REQUIRE(call);
  CHECK(static_cast<uint8_t>(call->library_call().params()[0]) == 3);         // version 3
  CHECK(built->manifest.tensors(call->args(0)).dtype() == 17);  // activations e4m3fn [M, K]
}

TEST_CASE("graphc inspect says which float8 layers run on cuBLASLt and why the others do not",
          "[fp8][inspect]") {
  const auto cases = testing::fp8_cases();
  for (const auto& [c, lower, expect] :
       {std::tuple{cases[1], fp8_lowering(), std::string("cuBLASLt float8 tensor-core GEMM")},
        std::tuple{cases[4], fp8_lowering(), std::string("multiples of 16")},
        std::tuple{cases[1], fp8_lowering(80), std::string("sm_89 or newer")}}) {
    INFO(c.label);
    Graph g = testing::build_fp8_graph(c);
    optimizer::PassContext ctx;
    ctx.int8_gemm = true;
    auto r = driver::optimize_and_report(g, ctx, std::make_shared<target::CudaTarget>(lower));
    INFO(r.status().message());
    REQUIRE(r.ok());
    const std::string text = driver::report_text(*r);
    INFO(text);
    CHECK(contains(text, "quantized layers (--int8-gemm):"));
    CHECK(contains(text, expect));
    if (expect.rfind("cuBLASLt", 0) == 0) {
      int fp8_rows = 0;  // the roofline counts the GEMM at the FP8 tensor-core peak
      for (const auto& row : r->rows) fp8_rows += row.math == target::Math::kFp8Tc ? 1 : 0;
      CHECK(fp8_rows == 1);
      CHECK(contains(text, "then generated epilogue: "));
      CHECK(contains(text, "becomes a cuBLASLt float8 GEMM"));
    } else {
      CHECK(contains(text, "stays a float GEMM"));
    }
  }
}

TEST_CASE("over a shape range a float8 layer stays a float GEMM and the pass says so",
          "[fp8][rewrite]") {
  Graph g = testing::build_fp8_graph(testing::fp8_cases()[1]);
  optimizer::PassContext ctx = testing::cuda_pass_context(fp8_lowering());
  ctx.int8_gemm = true;
  ctx.shape_range = std::make_shared<ir::SymbolicInputs>();
  REQUIRE(optimizer::run_passes(g, ctx, &fuse_qdq_only()).ok());
  const std::string text = counters_text(ctx.counters);
  INFO(text);
  CHECK(fp8_gemms(g).empty());
  CHECK(contains(text, "serves a shape range"));
}
