// Generated elementwise kernels on the GPU against the reference executor, on
// fresh random inputs: every unary op (float32, and float16/bfloat16 for a
// sample), binary ops with broadcasting (float and integer), and a fused chain
// from the optimizer. Tolerances: float32 |d| <= 1e-5 + 1e-4|x| (CUDA's
// single-precision math differs from the host's by ulps), float16/bfloat16
// one storage ulp (2^-10 / 2^-7 relative), integers and bools exact.
#include <catch2/catch.hpp>
#include <cmath>

#include "driver/gpu_execute.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/gpu/gpu_check.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;

namespace {

Graph unary_graph(OpKind op, DType dt, Shape shape) {
  GraphBuilder b;
  auto x = b.input("x", dt, shape);
  b.output(b.node(op, {x}));
  return b.build();
}

}  // namespace

TEST_CASE("every unary elementwise op on the GPU matches the reference", "[gpu]") {
  // float32 on a 3x257 tensor (not a multiple of the vector width), and a
  // float16 / bfloat16 sample on 4096 elements (vectorised).
  const std::vector<OpKind> ops = {
      OpKind::Abs,      OpKind::Neg,         OpKind::Exp,       OpKind::Sigmoid, OpKind::Tanh,
      OpKind::Relu,     OpKind::Erf,         OpKind::Sin,       OpKind::Cos,     OpKind::Atan,
      OpKind::Floor,    OpKind::Ceil,        OpKind::Round,     OpKind::Sign,    OpKind::Softplus,
      OpKind::Softsign, OpKind::HardSwish,   OpKind::Gelu,      OpKind::Elu,     OpKind::Selu,
      OpKind::Celu,     OpKind::HardSigmoid, OpKind::LeakyRelu, OpKind::Sinh,    OpKind::Asinh};
  for (OpKind op : ops)
    testing::check_gpu_matches_reference(unary_graph(op, DType::kFloat32, {3, 257}), op_name(op));
  // Positive-domain ops on positive inputs.
  for (OpKind op : {OpKind::Log, OpKind::Sqrt, OpKind::Reciprocal, OpKind::Acosh})
    testing::check_gpu_matches_reference(unary_graph(op, DType::kFloat32, {3, 257}), op_name(op),
                                         1.1, 5);
  for (OpKind op : {OpKind::Acos, OpKind::Asin, OpKind::Atanh})
    testing::check_gpu_matches_reference(unary_graph(op, DType::kFloat32, {3, 257}), op_name(op),
                                         -0.9, 0.9);
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (OpKind op :
         {OpKind::Relu, OpKind::Sigmoid, OpKind::Tanh, OpKind::Gelu, OpKind::Exp, OpKind::Neg})
      testing::check_gpu_matches_reference(
          unary_graph(op, dt, {4096}),
          std::string(op_name(op)) + " " + std::string(dtype_name(dt)));
}

TEST_CASE("binary ops with broadcasting on the GPU match the reference", "[gpu]") {
  // [4,1,33] op [5,1] (both broadcast), float32 and int32; Div/Mod on
  // integers use divisors away from zero.
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Min,
                    OpKind::Pow}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {4, 1, 33});
    auto y = b.input("y", DType::kFloat32, {5, 1});
    b.output(b.node(op, {x, y}));
    testing::check_gpu_matches_reference(b.build(), std::string(op_name(op)) + " float32", 0.5, 2);
  }
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Mod, OpKind::Equal,
                    OpKind::Less}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kInt32, {4, 1, 33});
    auto y = b.input("y", DType::kInt32, {5, 1});
    b.output(b.node(op, {x, y}));
    testing::check_gpu_matches_reference(b.build(), std::string(op_name(op)) + " int32", 1, 50);
  }
  GraphBuilder w;
  auto c = w.input("c", DType::kBool, {6, 1});
  auto x = w.input("x", DType::kFloat16, {1, 40});
  auto y = w.input("y", DType::kFloat16, {6, 40});
  w.output(w.node(OpKind::Where, {c, x, y}));
  testing::check_gpu_matches_reference(w.build(), "Where bool/float16");
}

TEST_CASE("a fused bias, scale, GELU and residual chain on the GPU matches the reference",
          "[gpu]") {
  // The optimizer fuses the chain into one kernel (1 launch); the GPU result
  // matches the unfused reference. float32 and float16, 64 x 4096 elements.
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    GraphBuilder b;
    auto x = b.input("x", dt, {64, 4096});
    auto bias = b.input("bias", dt, {4096});
    auto res = b.input("res", dt, {64, 4096});
    auto s = b.constant("s", Tensor::from_f32({0.7f}, {}).cast_to(dt), false);
    auto t = b.node(OpKind::Add, {x, bias});
    t = b.node(OpKind::Mul, {t, s});
    t = b.node(OpKind::Gelu, {t}, testing::attrs({{"approximate", Attribute::of_string("tanh")}}));
    b.output(b.node(OpKind::Add, {t, res}));
    Graph g = b.build();
    optimizer::PassContext ctx;
    REQUIRE(optimizer::run_passes(g, ctx).ok());
    int launches = 0;
    for (const auto& n : g.nodes)
      if (!n.dead) ++launches;
    CHECK(launches == 1);
    // The reference rounds 4 intermediates of magnitude <= 4.8 to float16
    // (half an ulp each: <= 0.006 together); the fused kernel rounds once.
    testing::check_gpu_matches_reference(
        g, std::string("fused chain ") + std::string(dtype_name(dt)), -2, 2, 0.008);
  }
}
