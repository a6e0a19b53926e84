// cuBLASLt's own FP8 epilogue without a GPU (docs/int8.md, "The fp8 GEMM"):
// which float8 QDQ groups become one cuBLASLt call (bias, Relu / tanh Gelu,
// a residual C, the next layer's QuantizeLinear as a float8 D with
// d_scale = 1 / y_scale) and which keep a generated epilogue and why
// (per-column weight scales, a float32 bias, erf Gelu); version 4 of the
// matmul descriptor (round trip, field checks, random corruptions, older
// versions still read); the engine record and the inspect text. The
// rewritten graphs against the QDQ graph on the reference executor: the
// chained cases of tests/fp8_qdq_cases.h in tests/fp8_gemm_test.cpp.
#include <catch2/catch.hpp>
#include <functional>

#include "driver/engine_build.h"
#include "driver/fusion_report.h"
#include "emit/plan/schedule.h"
#include "engine_format/engine_file.h"
#include "engine_format/matmul_params.h"
#include "optimizer/pass.h"
#include "runtime/engine_loader.h"
#include "target/cuda/cublaslt_rules.h"
#include "target/fp8_gemm_rules.h"
#include "tests/cublaslt_record_check.h"
#include "tests/cuda_pass_context.h"
#include "tests/engine_test_util.h"
#include "tests/fp8_qdq_cases.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::engine::MatmulEpilogue;
using graphc::engine::MatmulParams;
using graphc::engine::testing::contains;

namespace {

target::CudaOptions lowering() {
  target::CudaOptions o;
  o.gemm.mode = target::GemmMode::kCublasLt;  // whatever the size
  o.gemm.int8 = true;
  o.min_sm = 90;
  return o;
}

testing::Fp8Case find_case(const std::string& label_part) {
  for (const auto& c : testing::fp8_cases())
    if (c.label.find(label_part) != std::string::npos) return c;
  FAIL("no fp8 case " << label_part);
  return {};
}

// The GEMM kernels' lowering choices of `c` optimized at `precision`, in schedule order.
std::vector<target::GemmChoice> choices(const testing::Fp8Case& c, optimizer::Precision precision,
                                        Graph* out = nullptr) {
  const Graph opt =
      testing::optimized_int8_gemm(testing::build_fp8_graph(c), lowering(), precision);
  std::vector<target::GemmChoice> result;
  for (const auto& k : emit::make_schedule(opt).kernels)
    if (k.kind == target::KernelKind::kGemm)
      result.push_back(target::choose_gemm_lowering(opt, k.node, lowering().gemm));
  if (out) *out = opt;
  return result;
}

MatmulParams v4_params() {
  MatmulParams p = testing::tn_matmul_params(17);
  p.d_type = 17;
  p.c_type = 10;
  p.d_scale = 50.0;
  p.has_bias = true;
  p.epilogue = MatmulEpilogue::kRelu;
  p.alpha = 1.5e-5;
  return p;
}

}  // namespace

TEST_CASE("cuBLASLt's FP8 epilogue takes the bias, the activation and the next QuantizeLinear",
          "[fp8][cublaslt]") {
  for (auto [label, act, precision, c_type] :
       {std::tuple{"bias relu requantized chained", MatmulEpilogue::kRelu,
                   optimizer::Precision::kFp16, 10},
        std::tuple{"bias tanh gelu requantized chained", MatmulEpilogue::kGeluTanh,
                   optimizer::Precision::kFp16, 10},
        std::tuple{"bias relu requantized chained", MatmulEpilogue::kRelu,
                   optimizer::Precision::kBf16, 16}}) {
    const auto c = find_case(label);
    INFO(c.label << " at c_type " << c_type);
    Graph opt;
    const auto got = choices(c, precision, &opt);
    REQUIRE(got.size() == 2);
    // Layer 1: one cuBLASLt call writing the float8 activation layer 2 reads.
    INFO(got[0].reason);
    REQUIRE(got[0].call);
    const MatmulParams& p = got[0].call->params;
    CHECK(p.fp8());
    CHECK(p.has_bias);
    CHECK_FALSE(p.has_c);
    CHECK(p.epilogue == act);
    CHECK(p.d_type == 17);
    CHECK(p.c_type == c_type);
    CHECK(p.d_scale == Approx(1.0 / 0.02).epsilon(1e-6));  // the QuantizeLinear's y_scale 0.02
    CHECK(p.fp8_epilogue());
    CHECK(opt.value(got[0].call->args.back()).dtype == DType::kFloat8E4M3FN);
    CHECK(opt.value(got[0].call->args[2]).dtype == static_cast<DType>(c_type));  // the bias
    CHECK(contains(got[0].reason, "-> QuantizeLinear (d_scale = 50"));
    CHECK_FALSE(contains(got[0].reason, "then generated epilogue"));
    auto back = engine::decode_matmul_params(engine::encode_matmul_params(p));
    INFO(back.status().message());
    REQUIRE(back.ok());
    CHECK(*back == p);
    // Layer 2 reads that D: its activation is the call's output.
    REQUIRE(got[1].call);
    CHECK(got[1].call->args[0] == got[0].call->args.back());
  }
  // Bias and residual in a half-precision D; the Cast to the float32 output follows.
  const auto got = choices(find_case("bias residual"), optimizer::Precision::kFp16);
  REQUIRE(got.size() == 1);
  INFO(got[0].reason);
  REQUIRE(got[0].call);
  const MatmulParams& p = got[0].call->params;
  CHECK(p.has_bias);
  CHECK(p.has_c);
  CHECK(p.beta == 1.0);
  CHECK(p.d_type == 10);
  CHECK(p.c_type == 0);
  CHECK(contains(got[0].reason, "epilogue bias+C"));
  CHECK(contains(got[0].reason, "then generated epilogue: Cast (a Cast from float16 to float32"));
}

TEST_CASE("what cuBLASLt's FP8 epilogue cannot take stays a generated kernel, and why",
          "[fp8][cublaslt]") {
  struct Expect {
    std::string label;
    optimizer::Precision precision;
    std::string why;
  };
  for (const auto& e : {
           Expect{"per-channel 1x64x128x96 bias relu", optimizer::Precision::kFp16,
                  "cuBLASLt's outer-vector FP8 scaling"},
           Expect{"bias relu requantized chained", optimizer::Precision::kFp32,
                  "takes a bfloat16 bias"},
           Expect{"bias erf gelu requantized", optimizer::Precision::kFp16, "erf Gelu"},
       }) {
    INFO(e.label);
    const auto got = choices(find_case(e.label), e.precision);
    REQUIRE_FALSE(got.empty());
    INFO(got[0].reason);
    REQUIRE(got[0].call);  // part (a) of the split group
    CHECK(contains(got[0].reason, "then generated epilogue: "));
    CHECK(contains(got[0].reason, e.why));
    CHECK(got[0].call->params.d_type != 17);
  }
  // The rules themselves.
  CHECK(target::fp8_epilogue_bias_ok(DType::kFloat16).ok());
  CHECK(contains(target::fp8_epilogue_bias_ok(DType::kFloat32).message(), "bfloat16"));
  CHECK(target::fp8_epilogue_quantize_ok(DType::kFloat16, DType::kFloat8E4M3FN, 0.02, true, true)
            .ok());
  CHECK(target::fp8_epilogue_quantize_ok(DType::kFloat32, DType::kFloat8E4M3FN, 0.02, true, false)
            .ok());
  CHECK(contains(
      target::fp8_epilogue_quantize_ok(DType::kFloat32, DType::kFloat8E4M3FN, 0.02, true, true)
          .message(),
      "float32 C or bias"));
  CHECK(contains(
      target::fp8_epilogue_quantize_ok(DType::kFloat16, DType::kFloat8E5M2, 0.02, true, false)
          .message(),
      "float8e5m2"));
  CHECK(contains(
      target::fp8_epilogue_quantize_ok(DType::kFloat16, DType::kFloat8E4M3FN, 0.02, false, false)
          .message(),
      "saturate=0"));
  CHECK_FALSE(
      target::fp8_epilogue_quantize_ok(DType::kFloat16, DType::kFloat8E4M3FN, 0, true, false).ok());
}

TEST_CASE("float8 matmul params with cuBLASLt's epilogue are version 4 and read back",
          "[fp8][cublaslt]") {
  const MatmulParams p = v4_params();
  const std::string bytes = engine::encode_matmul_params(p);
  CHECK(static_cast<uint8_t>(bytes[0]) == 4);
  CHECK(bytes.size() == engine::encode_matmul_params(MatmulParams{}).size() + 8);
  auto back = engine::decode_matmul_params(bytes);
  INFO(back.status().message());
  REQUIRE(back.ok());
  CHECK(*back == p);
  CHECK(back->d_dtype() == 17);
  CHECK(back->c_dtype() == 10);
  CHECK(contains(engine::describe_matmul(*back), "e4m3->e4m3"));
  CHECK(contains(engine::describe_matmul(*back), "d_scale=50"));
  // A half-precision D with bias and C: version 4, C and bias of D's dtype.
  MatmulParams half = v4_params();
  half.d_type = 10;
  half.c_type = 0;
  half.d_scale = 0;
  half.has_c = true;
  half.beta = 1;
  half.epilogue = MatmulEpilogue::kGeluTanh;
  auto h = engine::decode_matmul_params(engine::encode_matmul_params(half));
  INFO(h.status().message());
  REQUIRE(h.ok());
  CHECK(*h == half);
  CHECK(h->c_dtype() == 10);
  // Without any of it the same call stays version 3, bytes as before.
  MatmulParams plain = v4_params();
  plain.d_type = 1;
  plain.c_type = 0;
  plain.d_scale = 0;
  plain.has_bias = false;
  plain.epilogue = MatmulEpilogue::kNone;
  CHECK(static_cast<uint8_t>(engine::encode_matmul_params(plain)[0]) == 3);
  CHECK_FALSE(plain.fp8_epilogue());
}

TEST_CASE("version 4 float8 matmul params are checked field by field", "[fp8][cublaslt]") {
  auto refused = [](const std::function<void(MatmulParams&)>& change, const std::string& why) {
    testing::check_matmul_params_refused(v4_params(), change, why);
  };
  refused([](auto& p) { p.d_scale = 0; }, "not positive and finite");
  refused([](auto& p) { p.d_scale = -2; }, "not positive and finite");
  refused([](auto& p) { p.d_scale = INFINITY; }, "not positive and finite");
  refused([](auto& p) { p.c_type = 1; }, "C/bias dtype 1");
  refused([](auto& p) { p.c_type = 17; }, "C/bias dtype 17");
  refused([](auto& p) { p.d_type = 10; }, "without a float8 D");  // c_type and d_scale left
  refused([](auto& p) { p.d_type = 1, p.c_type = 0, p.d_scale = 0; }, "bfloat16 bias");
  refused([](auto& p) { p.d_type = 3; }, "float8 D dtype 3");
  refused([](auto& p) { p.trans_b = false, p.ldb = p.n; }, "trans_b");
  refused([](auto& p) { p.n = 72, p.ldc = 72; }, "multiple of 16");
  refused([](auto& p) { p.batch = 2, p.stride_d = p.m * p.n; }, "one matrix");
  refused([](auto& p) { p.alpha = 0; }, "alpha is 0");
  // Version 4 bytes claiming version 3 (and the other way round) are refused:
  // the sizes differ, and a version 3 call takes no epilogue.
  std::string bytes = engine::encode_matmul_params(v4_params());
  bytes[0] = 3;
  CHECK(contains(engine::decode_matmul_params(bytes).status().message(), "bytes, version 3"));
  MatmulParams plain = v4_params();
  plain.d_type = 1, plain.c_type = 0, plain.d_scale = 0, plain.has_bias = false;
  plain.epilogue = MatmulEpilogue::kNone;
  std::string v3 = engine::encode_matmul_params(plain);
  v3[0] = 4;
  v3.append(8, '\0');
  CHECK(contains(engine::decode_matmul_params(v3).status().message(), "without C, bias"));
  // A version 3 D dtype byte of 17 (float8 D needs version 4).
  std::string v3d = engine::encode_matmul_params(plain);
  v3d[14] = 17;
  CHECK(contains(engine::decode_matmul_params(v3d).status().message(), "float8 D dtype 17"));
}

TEST_CASE("malformed version 4 float8 matmul descriptors are refused cleanly",
          "[fp8][cublaslt][fuzz]") {
  const std::string good = engine::encode_matmul_params(v4_params());
  const int refused = testing::check_corrupted_matmul_params(good, 4000, [](const MatmulParams& d) {
    if (d.fp8_output()) {
      CHECK((d.c_type == 10 || d.c_type == 16));
      CHECK(d.d_scale > 0);
      CHECK(std::isfinite(d.d_scale));
    }
  });
  CHECK(refused > 0);
  for (size_t len : {good.size() - 8, good.size() - 1, good.size() + 1}) {
    std::string bytes = good.substr(0, std::min(len, good.size()));
    bytes.resize(len, '\0');
    CHECK(engine::decode_matmul_params(bytes).status().code() == ErrorCode::kInvalidEngine);
  }
}

TEST_CASE("an engine records cuBLASLt's fused float8 layer as a version 4 matmul call",
          "[fp8][cublaslt][build]") {
  const auto c = find_case("bias relu requantized chained");
  const Graph opt = testing::optimized_int8_gemm(testing::build_fp8_graph(c), lowering(),
                                                 optimizer::Precision::kFp16);
  driver::BuildOptions opts;
  opts.archs = {"sm_90"};
  opts.lower = lowering();
  auto built = driver::build_engine(opt, opts);
  INFO(built.status().message());
  REQUIRE(built.ok());
  const engine::Kernel* call = nullptr;
  for (const auto& k : built->manifest.kernels())
    if (k.has_library_call() && static_cast<uint8_t>(k.library_call().params()[0]) == 4) call = &k;
  REQUIRE(call);
  auto p = engine::decode_matmul_params(call->library_call().params());
  REQUIRE(p.ok());
  CHECK(p->m == c.batch * c.m);
  CHECK(p->n == c.n);
  CHECK(p->k == c.k);
  CHECK(built->manifest.tensors(call->args(p->bias_arg())).dtype() == 10);  // bias float16
  CHECK(built->manifest.tensors(call->args(p->d_arg())).dtype() == 17);     // D e4m3fn
  auto reread = engine::parse_engine(engine::testing::serialize_ok(*built));
  INFO(reread.status().message());
  REQUIRE(reread.ok());
  auto exe = runtime::executable_from_engine(*reread, 90);
  INFO(exe.status().message());
  REQUIRE(exe.ok());
  // A bias or D of another dtype is refused by the writer's and reader's validation.
  for (auto [arg, wrong] : {std::pair{p->bias_arg(), 1}, std::pair{p->d_arg(), 10}}) {
    engine::EngineContents bad = *built;
    for (auto& k : *bad.manifest.mutable_kernels())
      if (k.has_library_call() && k.library_call().params() == call->library_call().params())
        bad.manifest.mutable_tensors(k.args(arg))->set_dtype(wrong);
    auto bytes = engine::serialize_engine(bad);
    CHECK_FALSE((bytes.ok() && engine::parse_engine(*bytes).ok()));
  }
}

TEST_CASE("graphc inspect names cuBLASLt's FP8 epilogue and why a layer keeps a generated one",
          "[fp8][inspect]") {
  for (const auto& [label, expect] :
       {std::pair{"bias relu requantized chained", "(e4m3 x e4m3 -> float8e4m3fn, alpha = "},
        std::pair{"per-channel 1x64x128x96 bias relu", "per-column weight scales stay"}}) {
    INFO(label);
    Graph g = testing::build_fp8_graph(find_case(label));
    optimizer::PassContext ctx;
    ctx.int8_gemm = true;
    ctx.precision = optimizer::Precision::kFp16;
    auto r = driver::optimize_and_report(g, ctx, std::make_shared<target::CudaTarget>(lowering()));
    INFO(r.status().message());
    REQUIRE(r.ok());
    const std::string text = driver::report_text(*r);
    INFO(text);
    CHECK(contains(text, expect));
  }
}
