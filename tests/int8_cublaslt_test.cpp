// The int8 GEMM through cuBLASLt without a GPU (--int8-gemm, docs/int8.md):
// the int8 matmul descriptor (version 2 of the params) and its checks, the
// rule that sends a QDQ layer's int8 GEMM to cuBLASLt's IMMA kernels and the
// dequantize to a generated epilogue (bit-exact against the unsplit group on
// the reference executor), the engine record, --int8-precision fp32 in the
// precision pass, and the CLI flags. The GPU runs are tests/gpu/
// qdq_gemm_gpu_test.cpp ([int8]); the epilogue kernel is emulated in
// `graphc_kernel_emulator qdq`.
#include <catch2/catch.hpp>

#include "driver/engine_build.h"
#include "emit/plan/schedule.h"
#include "engine_format/matmul_params.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "runtime/engine_loader.h"
#include "target/cuda/cublaslt_rules.h"
#include "tests/cublaslt_record_check.h"
#include "tests/cuda_pass_context.h"
#include "tests/engine_test_util.h"
#include "tests/qdq_cases.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::engine::MatmulParams;
using graphc::engine::testing::contains;

namespace {

MatmulParams int8_params() {
  MatmulParams p = testing::tn_matmul_params(3);
  p.compute = engine::MatmulCompute::kI32;
  return p;
}

target::CudaOptions int8_lowering(bool int8 = true) {
  target::CudaOptions o;
  o.gemm.mode = target::GemmMode::kCublasLt;  // whatever the size
  o.gemm.int8 = int8;
  return o;
}

Graph optimized(const Graph& g, const target::CudaOptions& lower,
                optimizer::Precision precision = optimizer::Precision::kFp32) {
  return testing::optimized_int8_gemm(g, lower, precision);
}

// The gemm kernels of `g` with the target's choice for each.
std::vector<std::pair<const Node*, target::GemmChoice>> gemm_choices(
    const Graph& g, const target::CudaOptions& lower) {
  std::vector<std::pair<const Node*, target::GemmChoice>> out;
  for (const auto& k : emit::make_schedule(g).kernels)
    if (k.kind == target::KernelKind::kGemm)
      out.emplace_back(&g.node(k.node), target::choose_gemm_lowering(g, k.node, lower.gemm));
  return out;
}

}  // namespace

TEST_CASE("int8 matmul params are version 2, float ones stay version 1", "[cublaslt][int8]") {
  const MatmulParams p = int8_params();
  const std::string bytes = engine::encode_matmul_params(p);
  CHECK(static_cast<uint8_t>(bytes[0]) == 2);
  auto back = engine::decode_matmul_params(bytes);
  INFO(back.status().message());
  REQUIRE(back.ok());
  CHECK(*back == p);
  CHECK(back->d_dtype() == 6);
  CHECK(contains(engine::describe_matmul(*back), "int8->int32"));
  MatmulParams f;
  f.m = f.n = f.k = f.lda = f.ldb = f.ldc = 8;
  CHECK(static_cast<uint8_t>(engine::encode_matmul_params(f)[0]) == 1);
}

TEST_CASE("int8 matmul params are checked field by field", "[cublaslt][int8]") {
  auto refused = [](const std::function<void(MatmulParams&)>& change, const std::string& why) {
    testing::check_matmul_params_refused(int8_params(), change, why);
  };
  refused([](auto& p) { p.trans_b = false, p.ldb = p.n; }, "trans_b");
  refused([](auto& p) { p.n = 62, p.ldc = 62; }, "multiple of 4");
  refused([](auto& p) { p.k = 94, p.lda = 94, p.ldb = 94; }, "multiple of 4");
  refused([](auto& p) { p.has_bias = true; }, "no C, bias");
  refused([](auto& p) { p.alpha = 2; }, "alpha");
  refused([](auto& p) { p.compute = engine::MatmulCompute::kF32; }, "int32 compute");
  // A float descriptor claiming int32 compute, and version 1 bytes with dtype int8.
  MatmulParams f;
  f.m = f.n = f.k = f.lda = f.ldb = f.ldc = 8;
  f.compute = engine::MatmulCompute::kI32;
  CHECK_FALSE(engine::decode_matmul_params(engine::encode_matmul_params(f)).ok());
  std::string v1 = engine::encode_matmul_params(int8_params());
  v1[0] = 1;
  auto d = engine::decode_matmul_params(v1);
  REQUIRE_FALSE(d.ok());
  CHECK(contains(d.status().message(), "dtype 3"));
}

TEST_CASE("with --int8-gemm cuBLASLt takes a QDQ layer's int8 GEMM, a generated kernel dequantizes",
          "[cublaslt][int8]") {
  for (const auto& c : testing::qdq_cases()) {
    INFO(c.label);
    const Graph g = testing::build_qdq_graph(c);
    const Graph opt = optimized(g, int8_lowering());
    const bool imma = c.n % 4 == 0 && c.k % 4 == 0;
    int library = 0;
    for (const auto& [node, choice] : gemm_choices(opt, int8_lowering())) {
      INFO(choice.reason);
      if (choice.call) {
        ++library;
        CHECK(node->op == OpKind::MatMulInteger);  // the plain GEMM, its epilogue split off
        CHECK(choice.call->params.int8());
        CHECK(choice.call->params.trans_b);
        CHECK(choice.call->params.m == c.batch * c.m);
        CHECK(contains(choice.reason, "cuBLASLt int8 tensor-core GEMM"));
      } else {
        CHECK(contains(choice.reason, "int8 tensor-core GEMM (generated WMMA"));
        if (node->op == OpKind::FusedGroup && !imma)
          CHECK(contains(choice.reason, "multiples of 4"));
      }
    }
    CHECK(library == (imma ? 1 : 0));
    // The split graph computes what the fused one does, bit for bit: the same
    // exact int32 sum, then the same epilogue ops in the same dtypes.
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    for (auto precision : {optimizer::Precision::kFp32, optimizer::Precision::kFp16}) {
      auto split = reference::execute(optimized(g, int8_lowering(), precision), feeds);
      auto fused = reference::execute(optimized(g, int8_lowering(false), precision), feeds);
      REQUIRE(split.ok());
      REQUIRE(fused.ok());
      for (const auto& [name, t] : *fused) CHECK(t.same_bytes(split->at(name)));
    }
    // ... and matches the unoptimized QDQ graph as the generated GEMM does.
    auto want = reference::execute(g, feeds);
    auto got = reference::execute(opt, feeds);
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    for (const auto& [name, t] : *want)
      CHECK(testing::check_qdq_outputs(c, t, got->at(name)) == "");
  }
}

TEST_CASE("without GemmOptions::int8 the int8 GEMM stays the generated WMMA kernel",
          "[cublaslt][int8]") {
  const auto cases = testing::qdq_cases();
  const auto& c = cases[1];  // 1x64x128x96: cuBLASLt would take it
  const Graph opt = optimized(testing::build_qdq_graph(c), int8_lowering(false));
  auto choices = gemm_choices(opt, int8_lowering(false));
  REQUIRE(choices.size() == 1);
  CHECK_FALSE(choices[0].second.call);
  CHECK_FALSE(choices[0].second.split_after);
  CHECK(contains(choices[0].second.reason, "needs --int8-gemm"));
}

TEST_CASE("an engine records cuBLASLt's int8 GEMM as a version 2 matmul call",
          "[cublaslt][int8][build]") {
  const Graph opt = optimized(testing::build_qdq_graph(testing::qdq_cases()[4]), int8_lowering());
  driver::BuildOptions opts;
  opts.archs = {"sm_90"};
  opts.lower = int8_lowering();
  auto built = driver::build_engine(opt, opts);
  INFO(built.status().message());
  REQUIRE(built.ok());
  const engine::MatmulParams p =
      testing::check_cublaslt_record(*built, {128, 64, 96, /*weights int8*/ 3, /*D int32*/ 6, 3});
  CHECK(p.int8());
}

TEST_CASE(
    "convert-precision with --int8-precision fp32 keeps each QuantizeLinear and its input in fp32",
    "[rewrite][int8]") {
  // MatMul -> Add -> Relu -> Q -> DQ (the requantized case): under fp16 the Add
  // and Relu (and the Q) stay float32 with fp32, and are converted without it.
  const Graph g = testing::build_qdq_graph(testing::qdq_cases()[2]);  // MatMul, Add, Relu, Q, DQ
  for (auto mode : {optimizer::Int8Precision::kSame, optimizer::Int8Precision::kFp32}) {
    Graph opt = g;
    optimizer::PassContext ctx = testing::cuda_pass_context();
    ctx.precision = optimizer::Precision::kFp16;
    ctx.int8_precision = mode;
    REQUIRE(optimizer::run_passes(opt, ctx).ok());
    bool noted = false;
    for (const auto& n : ctx.precision_notes) noted |= contains(n, "--int8-precision fp32");
    CHECK(noted == (mode == optimizer::Int8Precision::kFp32));
  }
  // The int8 GEMM's dequantize (int32 in) computes in float32 under fp16.
  Graph opt = g;
  optimizer::PassContext ctx = testing::cuda_pass_context();
  ctx.precision = optimizer::Precision::kFp16;
  ctx.int8_gemm = true;
  REQUIRE(optimizer::run_passes(opt, ctx).ok());
  bool dequantize_kept = false;
  for (const auto& n : ctx.precision_notes) dequantize_kept |= contains(n, "dequantize scale");
  CHECK(dequantize_kept);
}
