// QuantizeLinear/DequantizeLinear on the GPU: the default pipeline (with
// expand-quantize) turns them into fused elementwise kernels; results must
// equal the reference executor's on the unoptimized graph: quantized integers
// exactly (the division is IEEE in both), dequantized floats within
// float32's GPU tolerance. Also a Q/DQ pair around a MatMul, as onnxruntime's
// quantizer writes it (QDQ format).
#include <catch2/catch.hpp>

#include "driver/gpu_execute.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/gpu/gpu_check.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::attrs;
using graphc::testing::GraphBuilder;

namespace {

void check_optimized_on_gpu(const Graph& g, const char* what) {
  INFO(what);
  std::map<std::string, Tensor> feeds;
  for (ValueId id : g.inputs)
    feeds[g.value(id).name] = testing::random_tensor(g.value(id).dtype, g.value(id).shape,
                                                     testing::test_rng(), -4, 4);
  auto want = reference::execute(g, feeds);
  REQUIRE(want.ok());
  Graph opt = g;
  optimizer::PassContext ctx = testing::cuda_pass_context();
  REQUIRE(optimizer::run_passes(opt, ctx).ok());
  for (const auto& n : opt.nodes) {
    CHECK(n.op != OpKind::QuantizeLinear);
    CHECK(n.op != OpKind::DequantizeLinear);
  }
  auto got = driver::execute_on_gpu(opt, feeds);
  INFO((got.ok() ? "" : got.status().message()));
  REQUIRE(got.ok());
  for (const auto& [name, t] : *want) {
    const Tensor& o = got->at(name);
    REQUIRE(o.dtype() == t.dtype());
    int64_t bad = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double a = t.get_f64(i), b = o.get_f64(i);
      bool ok = is_integer(t.dtype()) ? a == b : std::fabs(a - b) <= 1e-5 + 1e-4 * std::fabs(a);
      bad += ok ? 0 : 1;
    }
    INFO(name << ": " << bad << " of " << t.numel() << " differ");
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("QuantizeLinear/DequantizeLinear per tensor and per axis run fused on the GPU",
          "[gpu][quantize]") {
  for (DType q : {DType::kUInt8, DType::kInt8}) {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {4, 8, 33});
    Tensor s = Tensor::from_f32({0.011f, 0.027f, 0.05f, 0.013f, 0.031f, 0.07f, 0.019f, 0.04f}, {8});
    Tensor z(q, {8});
    for (int i = 0; i < 8; ++i) z.set_i64(i, q == DType::kUInt8 ? 100 + 7 * i : i - 4);
    auto sv = b.constant("s", s), zv = b.constant("z", z);
    auto a = attrs({{"axis", Attribute::of_int(1)}});
    auto qn = b.node(OpKind::QuantizeLinear, {x, sv, zv}, a);
    auto dq = b.node(OpKind::DequantizeLinear, {qn, sv, zv}, a);
    auto relu = b.node(OpKind::Relu, {dq});
    b.output(qn);
    b.output(relu);
    check_optimized_on_gpu(b.build(), q == DType::kUInt8 ? "per axis uint8" : "per axis int8");
  }
}

TEST_CASE("a QDQ MatMul (onnxruntime's QDQ format) matches the reference on the GPU",
          "[gpu][quantize]") {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {16, 64});
  Tensor xs = Tensor::from_f32({0.03f}, {});
  Tensor xz(DType::kUInt8, {});
  xz.set_i64(0, 128);
  Tensor w(DType::kInt8, {64, 32});
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> d(-127, 127);
  for (int64_t i = 0; i < w.numel(); ++i) w.set_i64(i, d(rng));
  Tensor ws(DType::kFloat32, {32});
  for (int i = 0; i < 32; ++i) ws.set_f64(i, 0.001 * (i + 1));
  Tensor wz(DType::kInt8, {32});
  auto q = b.node(OpKind::QuantizeLinear, {x, b.constant("xs", xs), b.constant("xz", xz)});
  auto dqx = b.node(OpKind::DequantizeLinear, {q, b.constant("xs2", xs), b.constant("xz2", xz)});
  auto dqw = b.node(OpKind::DequantizeLinear, {b.input("w", DType::kInt8, {64, 32}),
                                               b.constant("ws", ws), b.constant("wz", wz)},
                    attrs({{"axis", Attribute::of_int(1)}}));
  b.output(b.node(OpKind::MatMul, {dqx, dqw}));
  check_optimized_on_gpu(b.build(), "QDQ MatMul");
}
