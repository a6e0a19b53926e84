// QDQ convolutions as onnxruntime's quantize_static writes them, shared by
// the CPU test (tests/qdq_conv_test.cpp), the kernel emulator (`qdq-conv`
// mode) and the GPU test (tests/gpu/qdq_conv_gpu_test.cpp):
//   x -> QuantizeLinear(sa, za) -> DequantizeLinear -> Conv <- DequantizeLinear(W int8, sw[oc])
//     (+ bias) [-> Relu] [-> QuantizeLinear(sy, zy) [-> DequantizeLinear]]
//     [-> a second QDQ 1x1 conv reading the first's quantized output]
// with random int8 weights (never zero), per-channel or per-tensor scales,
// int8 or uint8 activations, odd channel counts and sizes. fuse-qdq-conv makes
// each conv one int8 tensor-core conv; check_qdq_conv_outputs compares a run
// with the reference executor on the unoptimized graph.
#pragma once

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tests/qdq_cases.h"
#include "tests/test_util.h"

namespace graphc::testing {

enum class QdqConvOut { kFloat, kQdq, kQuantized };  // float y, Q -> DQ, Q (int8/uint8 y)

struct QdqConvCase {
  std::string label;
  int64_t batch = 1, c = 0, h = 0, w = 0, oc = 0, kernel = 1, stride = 1, pad = 0, dilation = 1;
  bool uint8_act = false;   // uint8 activations (else int8)
  bool per_channel = true;  // weight scale per output channel (else per tensor)
  bool relu = false;
  QdqConvOut out = QdqConvOut::kFloat;
  bool chain = false;  // a second QDQ 1x1 conv (oc -> 11) after a Q -> DQ of the first
  int64_t group = 1;   // > 1: a conv fuse-qdq-conv leaves float
};

inline std::vector<QdqConvCase> qdq_conv_cases() {
  using O = QdqConvOut;
  return {
      {"qdq conv int8 per-channel 1x1 2x16x7x9 to 24", 2, 16, 7, 9, 24, 1, 1, 0, 1, false, true, false, O::kFloat},
      {"qdq conv uint8 per-channel 3x3 s1 p1 1x19x11x10 to 33 relu requantized", 1, 19, 11, 10, 33, 3, 1, 1, 1, true, true, true, O::kQdq},
      {"qdq conv int8 per-tensor 3x3 s2 p1 2x32x13x13 to 40 quantized output", 2, 32, 13, 13, 40, 3, 2, 1, 1, false, false, false, O::kQuantized},
      {"qdq conv uint8 per-channel 7x7 s2 p3 1x3x30x30 to 64 relu", 1, 3, 30, 30, 64, 7, 2, 3, 1, true, true, true, O::kFloat},
      {"qdq conv int8 per-channel 3x3 dilation 2 1x24x12x12 to 17 relu quantized", 1, 24, 12, 12, 17, 3, 1, 2, 2, false, true, true, O::kQuantized},
      {"qdq conv uint8 per-channel 3x3 3x48x9x9 to 72 chained", 3, 48, 9, 9, 72, 3, 1, 1, 1, true, true, true, O::kFloat, true},
      {"qdq conv int8 per-channel 1x1 4x32x66x64 to 128 big tiles", 4, 32, 66, 64, 128, 1, 1, 0, 1, false, true, true, O::kQdq},
  };
}

inline ir::Tensor qdq_conv_weight(std::mt19937& rng, const ir::Shape& shape) {
  ir::Tensor w(ir::DType::kInt8, shape);
  std::uniform_int_distribution<int> wd(1, 127), sign(0, 1);
  for (int64_t i = 0; i < w.numel(); ++i) w.set_i64(i, sign(rng) ? wd(rng) : -wd(rng));
  return w;
}

inline ir::Graph build_qdq_conv_graph(const QdqConvCase& c, uint32_t seed = 7) {
  using ir::Attribute;
  using ir::DType;
  using ir::OpKind;
  using ir::Tensor;
  std::mt19937 rng(seed);
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {c.batch, c.c, c.h, c.w});
  const DType act = c.uint8_act ? DType::kUInt8 : DType::kInt8;
  auto qdq = [&](ir::ValueId v, const std::string& tag, float scale, int64_t zero, DType t) {
    Tensor z(t, {});
    z.set_i64(0, zero);
    return add_qdq(b, v, tag, Tensor::from_f32({scale}, {}), z);
  };
  // A conv of `in` (channels ci) to `co` channels through a DQ(int8 W) and a bias.
  std::uniform_real_distribution<double> sd(0.5e-3, 2e-3), bd(-0.5, 0.5);
  auto conv = [&](ir::ValueId in, const std::string& tag, int64_t ci, int64_t co, int64_t kernel,
                  int64_t stride, int64_t pad, int64_t dilation, bool per_channel, int64_t group) {
    Tensor w = qdq_conv_weight(rng, {co, ci / group, kernel, kernel});
    Tensor ws(DType::kFloat32, per_channel ? ir::Shape{co} : ir::Shape{});
    for (int64_t i = 0; i < ws.numel(); ++i) ws.set_f64(i, sd(rng));
    Tensor wz(DType::kInt8, ws.shape());  // symmetric weights: zero points 0
    auto dqw = b.node(OpKind::DequantizeLinear,
                      {b.constant("w" + tag, w), b.constant("ws" + tag, ws), b.constant("wz" + tag, wz)},
                      attrs({{"axis", Attribute::of_int(0)}}));
    Tensor bias(DType::kFloat32, {co});
    for (int64_t i = 0; i < co; ++i) bias.set_f64(i, bd(rng) + (bd(rng) > 0 ? 0.01 : -0.01));
    return b.node(OpKind::Conv, {in, dqw, b.constant("bias" + tag, bias)},
                  attrs({{"kernel_shape", Attribute::of_ints({kernel, kernel})},
                         {"strides", Attribute::of_ints({stride, stride})},
                         {"pads", Attribute::of_ints({pad, pad, pad, pad})},
                         {"dilations", Attribute::of_ints({dilation, dilation})},
                         {"group", Attribute::of_int(group)}}));
  };
  auto dqx = qdq(x, "a", 8.0f / 255.0f, c.uint8_act ? 131 : -3, act).second;
  ir::ValueId y = conv(dqx, "1", c.c, c.oc, c.kernel, c.stride, c.pad, c.dilation, c.per_channel, c.group);
  if (c.relu) y = b.node(OpKind::Relu, {y});
  if (c.chain) {
    // The first conv's output quantized (uint8 after a Relu: zero point 0 as
    // onnxruntime picks it), then a 1x1 conv to 11 channels.
    auto dq1 = qdq(y, "y1", 0.03f, c.relu ? 0 : 128, DType::kUInt8).second;
    y = conv(dq1, "2", c.oc, 11, 1, 1, 0, 1, true, 1);
  }
  if (c.out != QdqConvOut::kFloat) {
    auto [q, dq] = qdq(y, "y", 0.02f, 7, DType::kUInt8);
    y = c.out == QdqConvOut::kQdq ? dq : q;
  }
  b.output(y);
  return b.build();
}

// Inputs: qdq_inputs (tests/qdq_cases.h), x uniform in [-4, 4].

// "" when `got` matches `want` (the reference on the unoptimized graph).
// Float outputs: |d| <= 1e-4 * max|want| + 1e-5 (the int32 sum is exact; the
// float QDQ graph rounds each dequantized operand and its sum in float32, the
// int8 conv rounds sa * sw[oc] and its epilogue once). Requantized outputs
// (and a chained conv, which reads requantized values): every element within
// one quantum of the output (0.02 for Q -> DQ, 1 for a quantized output; the
// chained float output within 3% of its peak, since one step of its input
// moves it by up to |sum of a weight row| x 0.03 x scale) and at most 2% of the
// elements off (rounding ties the two sums break differently).
inline std::string check_qdq_conv_outputs(const QdqConvCase& c, const ir::Tensor& want,
                                          const ir::Tensor& got) {
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
  bool ok = off == 0;
  if (c.out == QdqConvOut::kQdq) ok = worst <= 0.0201 && off * 50 <= want.numel();
  if (c.out == QdqConvOut::kQuantized) ok = worst <= 1 && off * 50 <= want.numel();
  if (c.chain && c.out == QdqConvOut::kFloat) ok = worst <= 0.03 * peak && off * 50 <= want.numel();
  if (ok) return "";
  return "max |diff| " + std::to_string(worst) + ", " + std::to_string(off) + " of " +
         std::to_string(want.numel()) + " elements off (peak |want| " + std::to_string(peak) + ")";
}

// ConvInteger or QLinearConv (`op`) whose weights minus their zero points fit
// int8 (so lower-integer-contractions gives it the int8 conv): uint8 x with
// zero point 117, int8 w in [-110, 110] with per-channel zero points in
// [-9, 9], a 3x3 conv with pads 1 and strides (2, 1), 13 -> 21 channels.
inline ir::Graph build_integer_conv(ir::OpKind op, uint32_t seed = 11) {
  using ir::Attribute;
  using ir::DType;
  using ir::Tensor;
  std::mt19937 rng(seed);
  GraphBuilder b;
  const int64_t oc = 21;
  auto x = b.input("x", DType::kUInt8, {2, 13, 9, 11});
  Tensor w = random_tensor(DType::kInt8, {oc, 13, 3, 3}, rng, -110, 110);
  Tensor wz = random_tensor(DType::kInt8, {oc}, rng, -9, 9);
  Tensor xz(DType::kUInt8, {});
  xz.set_i64(0, 117);
  auto wv = b.constant("w", w), wzv = b.constant("w_zero_point", wz), xzv = b.constant("x_zero_point", xz);
  auto a = attrs({{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 1})}});
  ir::ValueId y;
  if (op == ir::OpKind::ConvInteger) {
    y = b.node(op, {x, wv, xzv, wzv}, a);
  } else {
    Tensor wsc(DType::kFloat32, {oc});
    std::uniform_real_distribution<double> d(1e-3, 4e-3);
    for (int64_t i = 0; i < oc; ++i) wsc.set_f64(i, d(rng));
    Tensor yz(DType::kUInt8, {});
    yz.set_i64(0, 121);
    y = b.node(op, {x, b.constant("x_scale", Tensor::from_f32({0.02f}, {})), xzv, wv,
                    b.constant("w_scale", wsc), wzv, b.constant("y_scale", Tensor::from_f32({0.05f}, {})),
                    b.constant("y_zero_point", yz),
                    b.constant("bias", random_tensor(DType::kInt32, {oc}, rng, -999, 999))},
               a);
  }
  b.output(y);
  return b.build();
}

}  // namespace graphc::testing
