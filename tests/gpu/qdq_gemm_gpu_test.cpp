// The int8 paths on the GPU: QDQ linear layers (tests/qdq_cases.h) as one
// int8 tensor-core GEMM with the dequantize fused, against the reference on
// the unoptimized QDQ graph (floats within the final rounding, requantized
// outputs within one quantum at ties); the ONNX integer contractions
// (lower-integer-contractions: int32 MatMul/Conv + fused requantization)
// bit-exact against the reference kernels. Random inputs, odd sizes.
#include <catch2/catch.hpp>

#include "driver/gpu_execute.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/gpu/gpu_check.h"
#include "tests/qdq_cases.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;

namespace {

// `lowering`: the target the passes ask (cublaslt_int8() below for cuBLASLt's int8 GEMMs).
Graph optimized(const Graph& g, optimizer::Precision precision = optimizer::Precision::kFp32,
                const emit::LowerOptions& lowering = {}) {
  return testing::optimized_int8_gemm(g, lowering, precision);
}

}  // namespace

TEST_CASE("QDQ linear layers run as int8 tensor-core GEMMs matching the reference",
          "[gpu][quantize][int8]") {
  for (const auto& c : testing::qdq_cases()) {
    INFO(c.label);
    const Graph g = testing::build_qdq_graph(c);
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    auto got = driver::execute_on_gpu(optimized(g), feeds);
    INFO((got.ok() ? "" : got.status().message()));
    REQUIRE(got.ok());
    for (const auto& [name, t] : *want) CHECK(testing::check_qdq_outputs(c, t, got->at(name)) == "");
    // --precision fp16: the float parts in half precision, the GEMM still int8.
    auto half = driver::execute_on_gpu(optimized(g, optimizer::Precision::kFp16), feeds);
    REQUIRE(half.ok());
    for (const auto& [name, t] : *want) {
      double peak = 0, worst = 0;
      for (int64_t i = 0; i < t.numel(); ++i) peak = std::max(peak, std::fabs(t.get_f64(i)));
      for (int64_t i = 0; i < t.numel(); ++i)
        worst = std::max(worst, std::fabs(t.get_f64(i) - half->at(name).get_f64(i)));
      CHECK(worst <= 1e-2 * peak + 0.0201);
    }
  }
}

TEST_CASE("a large int8 GEMM accumulates exactly in int32 on the GPU", "[gpu][quantize][int8]") {
  // K = 4099: sums far past float32's 2^24, so only an int32 accumulator is exact.
  for (auto [m, k, n] : {std::tuple{257, 4099, 129}, std::tuple{64, 1024, 1000}, std::tuple{3, 777, 65}}) {
    INFO(m << "x" << k << "x" << n);
    testing::GraphBuilder b;
    auto a = b.input("a", DType::kInt8, {m, k});
    auto w = b.constant("w", testing::random_tensor(DType::kInt8, {k, n}, testing::test_rng(), -127, 127));
    b.output(b.node(OpKind::MatMulInteger, {a, w}));
    const Graph g = b.build();
    std::map<std::string, Tensor> feeds = {
        {"a", testing::random_tensor(DType::kInt8, {m, k}, testing::test_rng(), -128, 127)}};
    testing::check_gpu_bit_exact(g, optimized(g), feeds);
  }
}

TEST_CASE("MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv are bit-exact on the GPU",
          "[gpu][quantize][int8]") {
  for (OpKind op : {OpKind::MatMulInteger, OpKind::QLinearMatMul, OpKind::ConvInteger,
                    OpKind::QLinearConv}) {
    INFO(op_name(op));
    const Graph g = testing::build_integer_contraction(op);
    std::map<std::string, Tensor> feeds;
    for (ValueId id : g.inputs)
      feeds[g.value(id).name] =
          testing::random_tensor(g.value(id).dtype, g.value(id).shape, testing::test_rng(), 0, 255);
    testing::check_gpu_bit_exact(g, optimized(g), feeds);
  }
}

namespace {

// --int8-gemm's lowering: cuBLASLt's int8 IMMA kernels (GemmOptions::int8)
// wherever they take the GEMM, whatever its size.
emit::LowerOptions cublaslt_int8() {
  emit::LowerOptions o;
  o.gemm.mode = target::GemmMode::kCublasLt;
  o.gemm.int8 = true;
  return o;
}

}  // namespace

TEST_CASE("QDQ linear layers run as cuBLASLt int8 GEMMs with a generated epilogue",
          "[gpu][quantize][int8]") {
  for (const auto& c : testing::qdq_cases()) {
    INFO(c.label << " (cuBLASLt where N and K are multiples of 4, else the WMMA GEMM)");
    const Graph g = testing::build_qdq_graph(c);
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    auto want = reference::execute(g, feeds);
    REQUIRE(want.ok());
    auto got = driver::execute_on_gpu(optimized(g, optimizer::Precision::kFp32, cublaslt_int8()), feeds,
                                      cublaslt_int8());
    INFO((got.ok() ? "" : got.status().message()));
    REQUIRE(got.ok());
    for (const auto& [name, t] : *want) CHECK(testing::check_qdq_outputs(c, t, got->at(name)) == "");
    // fp16 against the reference on the same optimized graph (the rounding the
    // engine does): exact int32 sums, the epilogue within half precision.
    const Graph half_graph = optimized(g, optimizer::Precision::kFp16, cublaslt_int8());
    auto half_want = reference::execute(half_graph, feeds);
    REQUIRE(half_want.ok());
    auto half = driver::execute_on_gpu(half_graph, feeds, cublaslt_int8());
    REQUIRE(half.ok());
    for (const auto& [name, t] : *half_want) {
      double peak = 0, worst = 0;
      for (int64_t i = 0; i < t.numel(); ++i) peak = std::max(peak, std::fabs(t.get_f64(i)));
      for (int64_t i = 0; i < t.numel(); ++i)
        worst = std::max(worst, std::fabs(t.get_f64(i) - half->at(name).get_f64(i)));
      CHECK(worst <= 2e-3 * peak + 0.0201);
    }
  }
}

TEST_CASE("cuBLASLt's int8 GEMM is bit-exact against the reference on random int8 operands",
          "[gpu][quantize][int8]") {
  // B stored [N, K] (_trans_b, the "TN" form); K up to 4100: sums past 2^24.
  for (auto [m, k, n] : {std::tuple{257, 4100, 128}, std::tuple{64, 1024, 1000},
                         std::tuple{3, 776, 64}, std::tuple{4096, 768, 3072}}) {
    INFO(m << "x" << k << "x" << n);
    testing::GraphBuilder b;
    auto a = b.input("a", DType::kInt8, {m, k});
    auto w = b.constant("w", testing::random_tensor(DType::kInt8, {n, k}, testing::test_rng(), -128, 127));
    b.output(b.node(OpKind::MatMulInteger, {a, w}, testing::attrs({{"_trans_b", Attribute::of_int(1)}})));
    const Graph g = b.build();
    std::map<std::string, Tensor> feeds = {
        {"a", testing::random_tensor(DType::kInt8, {m, k}, testing::test_rng(), -128, 127)}};
    testing::check_gpu_bit_exact(g, optimized(g, optimizer::Precision::kFp32, cublaslt_int8()),
                                 feeds, cublaslt_int8());
  }
}
