// The quantized contraction rewrites on the CPU (reference executor):
// lower-integer-contractions (MatMulInteger/ConvInteger/QLinearMatMul/
// QLinearConv as int32 MatMul/Conv + a requantize chain: results identical to
// the reference kernels) and fuse-qdq-matmul (QDQ linear layers as an int8
// MatMulInteger + DequantizeLinear: the int32 sum is exact, so results match
// the float QDQ graph within its final rounding). The kernels themselves run
// in the emulator (`graphc_kernel_emulator qdq`, node tests) and on the GPU
// (tests/gpu/qdq_gemm_gpu_test.cpp).
#include <catch2/catch.hpp>

#include "ir/verifier.h"
#include "optimizer/passes.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/qdq_cases.h"
#include "tests/reference_run.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;

namespace {

Graph optimized(const Graph& g) {
  Graph opt = testing::optimized_int8_gemm(g);
  REQUIRE(verify(opt, {.require_shapes = true}).ok());
  return opt;
}

// Every integer input over its type's whole range.
std::map<std::string, Tensor> integer_inputs(const Graph& g) {
  std::map<std::string, Tensor> out;
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    const bool u8 = v.dtype == DType::kUInt8;
    out[v.name] = testing::random_tensor(v.dtype, v.shape, testing::test_rng(), u8 ? 0 : -128,
                                         u8 ? 255 : 127);
  }
  return out;
}

}  // namespace

TEST_CASE("fuse-qdq-matmul: QDQ linear layers become an int8 GEMM matching the float QDQ graph",
          "[quantize][optimizer][int8]") {
  for (const auto& c : testing::qdq_cases()) {
    INFO(c.label);
    const Graph g = testing::build_qdq_graph(c);
    const Graph opt = optimized(g);
    const auto ops = testing::ops_of(opt);
    CHECK(ops.count(OpKind::MatMulInteger) == 1);
    CHECK(ops.count(OpKind::MatMul) == 0);
    CHECK(ops.count(OpKind::Gemm) == 0);
    CHECK(ops.count(OpKind::DequantizeLinear) == 0);  // expanded into the epilogue
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    const auto want = testing::run_reference(g, feeds);
    const auto got = testing::run_reference(opt, feeds);
    for (const auto& [name, t] : want) {
      INFO(name);
      CHECK(testing::check_qdq_outputs(c, t, got.at(name)) == "");
    }
  }
}

TEST_CASE("fuse-qdq-matmul leaves layers it cannot factor as float GEMMs",
          "[quantize][optimizer][int8]") {
  for (int variant = 0; variant < 2; ++variant) {
    // A scale per row of W (along K) does not factor out of the sum; nonzero
    // weight zero points would need the activations' row sums.
    testing::QdqCase c{"unfused", 1, 16, 32, 24};
    (variant == 0 ? c.scale_along_k : c.weight_zero_points) = true;
    INFO((variant == 0 ? "scale along K" : "weight zero points"));
    const Graph g = testing::build_qdq_graph(c);
    const Graph opt = optimized(g);
    CHECK(testing::ops_of(opt).count(OpKind::MatMulInteger) == 0);
    const auto feeds = testing::qdq_inputs(g, testing::test_rng());
    const auto want = testing::run_reference(g, feeds), got = testing::run_reference(opt, feeds);
    for (const auto& [name, t] : want) CHECK(testing::max_abs_diff(t, got.at(name)) < 1e-4);
  }
}

TEST_CASE("lower-integer-contractions: integer MatMul/Conv and QLinear ops equal the reference kernels",
          "[quantize][optimizer][int8]") {
  for (OpKind op : {OpKind::MatMulInteger, OpKind::QLinearMatMul, OpKind::ConvInteger,
                    OpKind::QLinearConv}) {
    INFO(op_name(op));
    const Graph g = testing::build_integer_contraction(op);
    const Graph opt = optimized(g);
    const auto ops = testing::ops_of(opt);
    CHECK(ops.count(op) == 0);
    CHECK(ops.count(op == OpKind::ConvInteger || op == OpKind::QLinearConv ? OpKind::Conv
                                                                          : OpKind::MatMul) == 1);
    const auto feeds = integer_inputs(g);
    const auto want = testing::run_reference(g, feeds), got = testing::run_reference(opt, feeds);
    for (const auto& [name, t] : want) {
      REQUIRE(t.dtype() == got.at(name).dtype());
      CHECK(t.same_bytes(got.at(name)));
    }
  }
}

TEST_CASE("lower-integer-contractions keeps MatMulInteger(int8, int8) for the int8 tensor cores",
          "[quantize][optimizer][int8]") {
  testing::GraphBuilder b;
  auto a = b.input("a", DType::kInt8, {3, 40, 64});
  auto w = b.constant("w", testing::random_tensor(DType::kInt8, {64, 48}, testing::test_rng(), -127, 127));
  b.output(b.node(OpKind::MatMulInteger, {a, w}));
  const Graph g = b.build();
  const Graph opt = optimized(g);
  CHECK(testing::ops_of(opt).count(OpKind::MatMulInteger) == 1);
  const auto feeds = integer_inputs(g);
  const auto want = testing::run_reference(g, feeds), got = testing::run_reference(opt, feeds);
  for (const auto& [name, t] : want) CHECK(t.same_bytes(got.at(name)));
}
