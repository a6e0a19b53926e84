// QDQ linear layers as onnxruntime's quantize_static writes them, shared by
// the CPU test (tests/qdq_gemm_test.cpp), the kernel emulator (`qdq` mode) and
// the GPU test (tests/gpu/qdq_gemm_gpu_test.cpp):
//   x -> QuantizeLinear(sa, za) -> DequantizeLinear -> MatMul|Gemm <- DequantizeLinear(W int8, sw)
//   [-> + bias -> Relu] [-> QuantizeLinear(sy, zy) -> DequantizeLinear]
// with random int8 weights (never zero), per-channel or per-tensor scales,
// int8 or uint8 activations, odd sizes. fuse-qdq-matmul makes each one int8
// GEMM; check_qdq_outputs compares a run with the reference executor on the
// unoptimized graph: floats within the final rounding of the scale, requantized
// outputs within one quantum at rounding ties.
#pragma once

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "tests/test_util.h"

namespace graphc::testing {

struct QdqCase {
  std::string label;
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool gemm = false;          // Gemm(transB=1, C) instead of MatMul + Add + Relu
  bool uint8_act = false;     // uint8 activations (else int8)
  bool per_channel = true;    // weight scale per output column (else per tensor)
  bool requantize = false;    // a Q -> DQ pair after the layer
  // Weights fuse-qdq-matmul must leave alone (MatMul only): the scale per
  // row of W (along K), or nonzero weight zero points.
  bool scale_along_k = false, weight_zero_points = false;
};

// QuantizeLinear(v, scale, zero point) and the DequantizeLinear after it,
// each with its own constants (`s<tag>`, `z<tag>`; `s2<tag>`, `z2<tag>`), as
// exporters write a QDQ pair.
inline std::pair<ir::ValueId, ir::ValueId> add_qdq(GraphBuilder& b, ir::ValueId v,
                                                   const std::string& tag, const ir::Tensor& scale,
                                                   const ir::Tensor& zero_point) {
  auto q = b.node(ir::OpKind::QuantizeLinear,
                  {v, b.constant("s" + tag, scale), b.constant("z" + tag, zero_point)});
  return {q, b.node(ir::OpKind::DequantizeLinear,
                    {q, b.constant("s2" + tag, scale), b.constant("z2" + tag, zero_point)})};
}

inline std::vector<QdqCase> qdq_cases() {
  return {
      {"qdq matmul int8 per-channel 2x33x65x47", 2, 33, 65, 47, false, false, true, false},
      {"qdq matmul uint8 per-channel 1x64x128x96", 1, 64, 128, 96, false, true, true, false},
      {"qdq matmul int8 per-tensor 3x17x40x70 requantized", 3, 17, 40, 70, false, false, false, true},
      {"qdq gemm uint8 per-channel 37x77x29", 1, 37, 77, 29, true, true, true, false},
      {"qdq gemm int8 per-channel 128x96x64 requantized", 1, 128, 96, 64, true, false, true, true},
      {"qdq matmul int8 skinny 1x5x64x40", 1, 5, 64, 40, false, false, true, false},
  };
}

inline ir::Graph build_qdq_graph(const QdqCase& c, uint32_t seed = 5) {
  using ir::Attribute;
  using ir::DType;
  using ir::OpKind;
  using ir::Tensor;
  std::mt19937 rng(seed);
  GraphBuilder b;
  const bool mm = !c.gemm;
  auto x = b.input("x", DType::kFloat32,
                   mm ? ir::Shape{c.batch, c.m, c.k} : ir::Shape{c.m, c.k});
  const DType act = c.uint8_act ? DType::kUInt8 : DType::kInt8;
  Tensor sa = Tensor::from_f32({8.0f / 255.0f}, {});
  Tensor za(act, {});
  za.set_i64(0, c.uint8_act ? 131 : -3);
  const ir::ValueId dqx = add_qdq(b, x, "a", sa, za).second;
  // W int8, never zero: stored [K, N] for MatMul, [N, K] for Gemm transB=1.
  Tensor w(DType::kInt8, mm ? ir::Shape{c.k, c.n} : ir::Shape{c.n, c.k});
  std::uniform_int_distribution<int> wd(1, 127), sign(0, 1);
  for (int64_t i = 0; i < w.numel(); ++i) w.set_i64(i, sign(rng) ? wd(rng) : -wd(rng));
  const int64_t scales = c.scale_along_k ? c.k : c.n;
  Tensor ws(DType::kFloat32, c.per_channel ? ir::Shape{scales} : ir::Shape{});
  std::uniform_real_distribution<double> sd(0.5e-3, 2e-3);
  for (int64_t i = 0; i < ws.numel(); ++i) ws.set_f64(i, sd(rng));
  Tensor wz(DType::kInt8, ws.shape());  // symmetric weights: zero points 0
  if (c.weight_zero_points)
    for (int64_t i = 0; i < wz.numel(); ++i) wz.set_i64(i, i % 5 - 2);
  const int64_t axis = c.scale_along_k ? 0 : (mm ? 1 : 0);
  auto dqw = b.node(OpKind::DequantizeLinear,
                    {b.constant("w", w), b.constant("ws", ws), b.constant("wz", wz)},
                    attrs({{"axis", Attribute::of_int(axis)}}));
  Tensor bias(DType::kFloat32, {c.n});
  std::uniform_real_distribution<double> bd(-0.5, 0.5);
  for (int64_t i = 0; i < c.n; ++i) bias.set_f64(i, bd(rng) + (bd(rng) > 0 ? 0.01 : -0.01));
  ir::ValueId y;
  if (mm) {
    y = b.node(OpKind::MatMul, {dqx, dqw});
    y = b.node(OpKind::Add, {y, b.constant("bias", bias)});
    y = b.node(OpKind::Relu, {y});
  } else {
    y = b.node(OpKind::Gemm, {dqx, dqw, b.constant("bias", bias)},
               attrs({{"transB", Attribute::of_int(1)}, {"alpha", Attribute::of_float(0.75)}}));
  }
  if (c.requantize) {
    Tensor sy = Tensor::from_f32({0.02f}, {});
    Tensor zy(DType::kUInt8, {});
    zy.set_i64(0, 7);
    y = add_qdq(b, y, "y", sy, zy).second;
  }
  b.output(y);
  return b.build();
}

// Inputs: uniform in [-4, 4] (never zero) for x.
inline std::map<std::string, ir::Tensor> qdq_inputs(const ir::Graph& g, std::mt19937& rng) {
  std::map<std::string, ir::Tensor> feeds;
  for (ir::ValueId id : g.inputs)
    feeds[g.value(id).name] = random_tensor(g.value(id).dtype, g.value(id).shape, rng, -4, 4);
  return feeds;
}

// "" when `got` matches `want` (the reference on the unoptimized graph):
// without requantization |d| <= 1e-4 * max|want| + 1e-5 (the int32 sum is
// exact, the float QDQ graph rounds its float32 sum); requantized, every
// element within one output quantum (0.02) and at most 2% of them off (ties
// that the float sum rounds the other way).
inline std::string check_qdq_outputs(const QdqCase& c, const ir::Tensor& want, const ir::Tensor& got) {
  if (want.shape() != got.shape() || want.dtype() != got.dtype()) return "shape or dtype differs";
  double peak = 0;
  for (int64_t i = 0; i < want.numel(); ++i) peak = std::max(peak, std::fabs(want.get_f64(i)));
  int64_t off = 0;
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = std::fabs(want.get_f64(i) - got.get_f64(i));
    if (!(d == d)) return "NaN in the result";
    worst = std::max(worst, d);
    if (d > 1e-4 * peak + 1e-5) ++off;
  }
  const bool ok = c.requantize ? worst <= 0.0201 && off * 50 <= want.numel() : off == 0;
  if (ok) return "";
  return "max |diff| " + std::to_string(worst) + ", " + std::to_string(off) + " of " +
         std::to_string(want.numel()) + " elements off (peak |want| " + std::to_string(peak) + ")";
}

}  // namespace graphc::testing

namespace graphc::testing {

// The ONNX integer contractions with random (never zero) zero points and
// scales, for lower-integer-contractions: `op` one of MatMulInteger,
// QLinearMatMul, ConvInteger, QLinearConv; uint8 x and int8 w, per-channel
// w scale and zero point, odd sizes (a 3x3 conv with pads and stride 2).
inline ir::Graph build_integer_contraction(ir::OpKind op, uint32_t seed = 9) {
  using ir::Attribute;
  using ir::DType;
  using ir::OpKind;
  using ir::Tensor;
  std::mt19937 rng(seed);
  GraphBuilder b;
  const bool conv = op == OpKind::ConvInteger || op == OpKind::QLinearConv;
  const bool qlinear = op == OpKind::QLinearMatMul || op == OpKind::QLinearConv;
  const int64_t m = 19, k = 37, n = 23;  // matmul [2, m, k] x [k, n]; conv 5 -> 6 channels
  auto x = b.input("x", DType::kUInt8, conv ? ir::Shape{2, 5, 9, 11} : ir::Shape{2, m, k});
  const ir::Shape ws = conv ? ir::Shape{6, 5, 3, 3} : ir::Shape{k, n};
  const int64_t channels = conv ? 6 : n;
  Tensor w = random_tensor(DType::kInt8, ws, rng, -127, 127);
  Tensor wz = random_tensor(DType::kInt8, {channels}, rng, -9, 9);
  Tensor xz(DType::kUInt8, {});
  xz.set_i64(0, 117);
  auto wv = b.constant("w", w), wzv = b.constant("w_zero_point", wz), xzv = b.constant("x_zero_point", xz);
  ir::AttributeMap a;
  if (conv)
    a = attrs({{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 1})}});
  ir::ValueId y;
  if (!qlinear) {
    y = b.node(op, {x, wv, xzv, wzv}, a);
  } else {
    Tensor wsc(DType::kFloat32, {channels});
    std::uniform_real_distribution<double> d(1e-3, 4e-3);
    for (int64_t i = 0; i < channels; ++i) wsc.set_f64(i, d(rng));
    Tensor yz(DType::kUInt8, {});
    yz.set_i64(0, 121);
    std::vector<ir::ValueId> in = {x,  b.constant("x_scale", Tensor::from_f32({0.02f}, {})), xzv, wv,
                                   b.constant("w_scale", wsc), wzv,
                                   b.constant("y_scale", Tensor::from_f32({0.05f}, {})),
                                   b.constant("y_zero_point", yz)};
    if (conv) in.push_back(b.constant("bias", random_tensor(DType::kInt32, {channels}, rng, -999, 999)));
    y = b.node(op, in, a);
  }
  b.output(y);
  return b.build();
}

}  // namespace graphc::testing
