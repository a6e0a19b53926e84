// The float8 (e4m3fn) QDQ path on the GPU (docs/int8.md, "The fp8 GEMM"):
// the layers of tests/fp8_qdq_cases.h as cuBLASLt's FP8 GEMM with a generated
// epilogue or, at fp16/bf16 engine precision, cuBLASLt's own (bias, Relu or
// tanh Gelu, a residual C, the next QuantizeLinear as a float8 D read by the
// next layer's GEMM), a shape cuBLASLt refuses staying a float GEMM, at fp32,
// fp16 and bf16 engine precision, against the reference executor with fresh
// random inputs;
// the bare float8 GEMM on random e4m3fn operands up to K = 4096, and --tune's
// timing of its cuBLASLt candidates (BERT-base FFN1 at batch 32). On a
// GPU older than sm_89 the layers stay float GEMMs and are checked as such.
#include <catch2/catch.hpp>

#include "driver/gpu_execute.h"
#include "emit/plan/schedule.h"
#include "engine_format/engine_file.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "runtime/cublaslt_tuning.h"
#include "target/cuda/cublaslt_rules.h"
#include "tests/cuda_pass_context.h"
#include "tests/fp8_qdq_cases.h"
#include "tests/gpu/gpu_check.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;

namespace {

int device_sm() {
  auto arch = driver::device_arch();
  INFO((arch.ok() ? *arch : arch.status().message()));
  REQUIRE(arch.ok());
  return engine::parse_sm_arch(*arch);
}

// cuBLASLt whatever the size (--gemm cublaslt), the FP8 GEMM where this GPU has it.
emit::LowerOptions fp8_lowering(int sm) {
  emit::LowerOptions o;
  o.gemm.mode = target::GemmMode::kCublasLt;
  o.gemm.int8 = true;
  o.min_sm = sm;
  return o;
}

Graph optimized(const Graph& g, const emit::LowerOptions& lowering,
                optimizer::Precision precision = optimizer::Precision::kFp32) {
  return testing::optimized_int8_gemm(g, lowering, precision);
}

size_t fp8_gemm_count(const Graph& g) {
  size_t n = 0;
  for (const Node& node : g.nodes) {
    if (node.dead) continue;
    if (node.op == OpKind::MatMulInteger && g.value(node.inputs[0]).dtype == DType::kFloat8E4M3FN)
      ++n;
    if (node.body) n += fp8_gemm_count(*node.body);
  }
  return n;
}

// e4m3fn values uniform in [-8, 8] before rounding (never all zero).
Tensor random_fp8(const Shape& shape) {
  Tensor t(DType::kFloat8E4M3FN, shape);
  std::uniform_real_distribution<double> d(-8, 8);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, d(testing::test_rng()));
  return t;
}

// Hopper's FP8 tensor cores keep fewer than float32's bits between cuBLASLt's
// promotions of the accumulator: 1e-3 of the peak where the CPU test has 1e-4.
constexpr double kGpuRel = 1e-3;

std::vector<std::string> output_names(const Graph& g) {
  std::vector<std::string> out;
  for (ValueId v : g.outputs) out.push_back(g.value(v).name);
  return out;
}

// cuBLASLt calls of `g` whose D is float8 (its epilogue took the next QuantizeLinear).
int fp8_d_calls(const Graph& g, const emit::LowerOptions& lowering) {
  int n = 0;
  for (const auto& k : emit::make_schedule(g).kernels) {
    if (k.kind != target::KernelKind::kGemm) continue;
    const auto choice = target::choose_gemm_lowering(g, k.node, lowering.gemm);
    n += choice.call && choice.call->params.fp8_output() ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("float8 QDQ layers run as cuBLASLt FP8 GEMMs matching the reference",
          "[gpu][quantize][fp8]") {
  const int sm = device_sm();
  if (sm < target::kFp8MinSm)
    WARN("sm_" << sm << ": no FP8 tensor cores; the layers are checked as float GEMMs");
  const auto lowering = fp8_lowering(sm);
  for (const auto& c : testing::fp8_cases()) {
    INFO(c.label << " on sm_" << sm);
    const Graph g = testing::build_fp8_graph(c);
    const Graph opt = optimized(g, lowering);
    const bool fp8 = c.cublaslt && sm >= target::kFp8MinSm;
    CHECK(fp8_gemm_count(opt) == (fp8 ? (c.chain ? 2u : 1u) : 0u));
    const auto names = output_names(g);
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    auto got = driver::execute_on_gpu(opt, feeds, lowering);
    INFO((got.ok() ? "" : got.status().message()));
    REQUIRE(got.ok());
    CHECK(testing::check_fp8_case(c, names, *want, *got, kGpuRel) == "");
    // fp16/bf16 engine precision: against the reference on the same
    // optimized graph (the roundings of the generated kernels; cuBLASLt's
    // epilogue keeps float32 up to D, which that graph rounds to half
    // precision in between: a float8 D may round the other way at a tie,
    // which check_fp8_case allows) within half precision of the epilogue,
    // and against the QDQ graph within 1e-2 (bf16: 2e-2) of the peak.
    for (auto [precision, rel] : {std::pair{optimizer::Precision::kFp16, 4e-3},
                                  std::pair{optimizer::Precision::kBf16, 2e-2}}) {
      INFO((precision == optimizer::Precision::kFp16 ? "fp16" : "bf16"));
      const Graph half_graph = optimized(g, lowering, precision);
      // The chained layers' first GEMM writes the float8 activation itself.
      if (fp8 && c.chain && c.act != "gelu") CHECK(fp8_d_calls(half_graph, lowering) == 1);
      auto half_want = reference::execute(half_graph, feeds);
      REQUIRE(half_want.ok());
      auto half = driver::execute_on_gpu(half_graph, feeds, lowering);
      INFO((half.ok() ? "" : half.status().message()));
      REQUIRE(half.ok());
      CHECK(testing::check_fp8_case(c, names, *half_want, *half, rel) == "");
      CHECK(testing::check_fp8_case(c, names, *want, *half, 2.5 * rel) == "");
    }
  }
}

TEST_CASE("cuBLASLt's FP8 GEMM matches the reference on random e4m3fn operands",
          "[gpu][quantize][fp8]") {
  const int sm = device_sm();
  if (sm < target::kFp8MinSm) {
    WARN("sm_" << sm << ": no FP8 tensor cores, nothing to run");
    return;
  }
  // B stored [N, K] (_trans_b, cuBLASLt's "TN" form); N, K multiples of 16.
  for (auto [m, k, n, alpha] : {std::tuple{257, 4096, 128, 1.0}, std::tuple{64, 1024, 1008, 3e-4},
                                std::tuple{3, 768, 64, 0.5}, std::tuple{4096, 768, 3072, 2e-5}}) {
    INFO(m << "x" << k << "x" << n << " alpha " << alpha);
    testing::GraphBuilder b;
    auto a = b.input("a", DType::kFloat8E4M3FN, {m, k});
    auto w = b.constant("w", random_fp8({n, k}));
    b.output(b.node(OpKind::MatMulInteger, {a, w},
                    testing::attrs({{"_trans_b", Attribute::of_int(1)},
                                    {"_alpha", Attribute::of_float(alpha)}})));
    const Graph g = b.build();
    std::map<std::string, Tensor> feeds = {{"a", random_fp8({m, k})}};
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    auto got = driver::execute_on_gpu(optimized(g, fp8_lowering(sm)), feeds, fp8_lowering(sm));
    INFO((got.ok() ? "" : got.status().message()));
    REQUIRE(got.ok());
    for (const auto& [name, t] : *want) {
      double peak = 0, worst = 0;
      for (int64_t i = 0; i < t.numel(); ++i) peak = std::max(peak, std::fabs(t.get_f64(i)));
      for (int64_t i = 0; i < t.numel(); ++i)
        worst = std::max(worst, std::fabs(t.get_f64(i) - got->at(name).get_f64(i)));
      INFO("max |diff| " << worst << ", peak " << peak);
      CHECK(peak > 0);
      CHECK(worst <= kGpuRel * peak);
    }
  }
}

TEST_CASE("tuning (--tune) times cuBLASLt's FP8 GEMM candidates and keeps one", "[gpu][quantize][fp8]") {
  const int sm = device_sm();
  if (sm < target::kFp8MinSm) {
    WARN("sm_" << sm << ": no FP8 tensor cores, nothing to tune");
    return;
  }
  // BERT-base's FFN1 at batch 32 x 128 tokens: M 4096, N 3072, K 768.
  engine::MatmulParams p;
  p.dtype = 17;
  p.d_type = 1;  // float32 D (the descriptor names it since version 3's output dtypes)
  p.trans_b = true;
  p.m = 4096;
  p.n = 3072;
  p.k = 768;
  p.lda = p.ldb = p.k;
  p.ldc = p.n;
  p.stride_d = p.m * p.n;
  p.alpha = 1e-4;
  REQUIRE(engine::decode_matmul_params(engine::encode_matmul_params(p)).ok());
  auto t = runtime::tune_cublaslt_matmul(p, target::kCublasLtWorkspaceBytes);
  INFO((t.ok() ? "" : t.status().message()));
  REQUIRE(t.ok());
  REQUIRE(t->best >= 0);
  const auto& best = t->candidates[static_cast<size_t>(t->best)];
  // 2*M*N*K flops over the fastest candidate's time, for the log.
  std::printf("%s: %zu candidates, fastest %.4f ms (%.0f TFLOP/s)\n",
              engine::describe_matmul(p).c_str(), t->candidates.size(), best.median_ms,
              2.0 * p.m * p.n * p.k / (best.median_ms * 1e-3) * 1e-12);
  CHECK(best.status.ok());
}
