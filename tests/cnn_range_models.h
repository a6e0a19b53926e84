// Small CNN blocks with a symbolic batch ("batch"; one with "height" and
// "width" too) for engines that serve a shape range: the kernel emulator's
// CNN cases (tests/emu/cnn_range_cases.cpp) and the GPU test
// (tests/gpu/cnn_range_gpu_test.cpp) run the same models. Weights are seeded
// uniform values scaled like He initialisation (none zero);
// BatchNormalization stays unfolded in the model (graphc folds it). The
// opt image is 8 x 12 x 12 (16 channels for generated_convs).
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/onnx_builder.h"

namespace graphc::testing::cnn {

using onnx::TensorProto;

// Names its values v1, v2, ...; seeded weights.
class Net {
 public:
  explicit Net(OnnxModel& m, uint32_t seed) : m_(m), rng_(seed) {}

  std::string conv(const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t stride = 1,
                   int64_t group = 1, bool bias = false) {
    const double scale = std::sqrt(6.0 / static_cast<double>(cin / group * k * k));
    std::vector<std::string> in{x, weight({cout, cin / group, k, k}, scale)};
    if (bias) in.push_back(weight({cout}, 0.5));
    auto* n = m_.node("Conv", in, {fresh()}, last_);
    attr_ints(n, "kernel_shape", {k, k});
    attr_ints(n, "strides", {stride, stride});
    attr_ints(n, "pads", {k / 2, k / 2, k / 2, k / 2});
    attr_int(n, "group", group);
    return last_;
  }
  std::string bn(const std::string& x, int64_t c) {
    const std::string s = positive({c}), b = weight({c}, 0.5), mean = weight({c}, 0.5),
                      var = positive({c});
    m_.node("BatchNormalization", {x, s, b, mean, var}, {fresh()}, last_);
    return last_;
  }
  std::string op(const std::string& type, std::vector<std::string> in) {
    m_.node(type, std::move(in), {fresh()}, last_);
    return last_;
  }
  onnx::NodeProto* node(const std::string& type, std::vector<std::string> in) {
    return m_.node(type, std::move(in), {fresh()}, last_);
  }
  std::string last() const { return last_; }
  std::string weight(std::vector<int64_t> dims, double scale) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::uniform_real_distribution<float> u(0.2f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = static_cast<float>(scale) * u(rng_) * (rng_() % 2 ? 1.0f : -1.0f);
    const std::string name = fmt::format("w{}", ++count_);
    m_.initializer(float_tensor(name, dims, v));
    return name;
  }
  std::string positive(std::vector<int64_t> dims) {
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    std::vector<float> v(static_cast<size_t>(dims[0]));
    for (float& x : v) x = u(rng_);
    const std::string name = fmt::format("w{}", ++count_);
    m_.initializer(float_tensor(name, dims, v));
    return name;
  }
  // GlobalAveragePool, Flatten, Gemm (transB) to `classes`.
  std::string head(const std::string& x, int64_t c, int64_t classes) {
    const std::string g = op("GlobalAveragePool", {x});
    attr_int(node("Flatten", {g}), "axis", 1);
    const std::string f = last_;
    const std::string w = weight({classes, c}, std::sqrt(3.0 / static_cast<double>(c)));
    const std::string b = weight({classes}, 0.5);
    attr_int(node("Gemm", {f, w, b}), "transB", 1);
    return last_;
  }

 private:
  std::string fresh() { return last_ = fmt::format("v{}", ++values_); }
  OnnxModel& m_;
  std::mt19937 rng_;
  int count_ = 0, values_ = 0;
  std::string last_;
};

inline OnnxModel image_input(std::vector<Dim> dims, int64_t opset = 18) {
  OnnxModel m(opset);
  m.input("x", TensorProto::FLOAT, std::move(dims));
  return m;
}

// ResNet basic block with a 1x1 s2 projection, then MaxPool and the classifier.
inline OnnxModel resnet_block() {
  OnnxModel m = image_input({Dim("batch"), int64_t{8}, int64_t{12}, int64_t{12}});
  Net n(m, 11);
  const std::string a = n.op("Relu", {n.bn(n.conv("x", 8, 16, 3, 2), 16)});
  const std::string b = n.bn(n.conv(a, 16, 16, 3), 16);
  const std::string s = n.bn(n.conv("x", 8, 16, 1, 2), 16);
  const std::string r = n.op("Relu", {n.op("Add", {b, s})});
  auto* pool = n.node("MaxPool", {r});
  attr_ints(pool, "kernel_shape", {3, 3});
  attr_ints(pool, "strides", {2, 2});
  attr_ints(pool, "pads", {1, 1, 1, 1});
  m.output(n.head(n.last(), 16, 10));
  return m;
}

// ResNet basic block (identity shortcut) over batch, height and width.
inline OnnxModel resnet_block_spatial() {
  OnnxModel m = image_input({Dim("batch"), int64_t{8}, Dim("height"), Dim("width")});
  Net n(m, 12);
  const std::string a = n.op("Relu", {n.bn(n.conv("x", 8, 8, 3), 8)});
  const std::string b = n.bn(n.conv(a, 8, 8, 3), 8);
  m.output(n.op("Relu", {n.op("Add", {b, "x"})}));
  return m;
}

// MobileNetV3's inverted residual with squeeze-excitation, then a strided
// depthwise 5x5 and the classifier.
inline OnnxModel mobile_se_block() {
  OnnxModel m = image_input({Dim("batch"), int64_t{8}, int64_t{12}, int64_t{12}});
  Net n(m, 13);
  const std::string e = n.op("HardSwish", {n.bn(n.conv("x", 8, 24, 1), 24)});
  const std::string d = n.op("HardSwish", {n.bn(n.conv(e, 24, 24, 3, 1, 24), 24)});
  m.initializer(int64_tensor("hw", {2}, {2, 3}));
  attr_int(n.node("ReduceMean", {d, "hw"}), "keepdims", 1);
  const std::string sq = n.last();
  const std::string s1 = n.op("Relu", {n.conv(sq, 24, 8, 1, 1, 1, true)});
  auto* hs = n.node("HardSigmoid", {n.conv(s1, 8, 24, 1, 1, 1, true)});
  attr_float(hs, "alpha", 1.0f / 6);
  attr_float(hs, "beta", 0.5f);
  const std::string gate = n.last();
  const std::string p = n.bn(n.conv(n.op("Mul", {d, gate}), 24, 8, 1), 8);
  const std::string r = n.op("Add", {p, "x"});
  const std::string dw = n.bn(n.conv(r, 8, 8, 5, 2, 8), 8);
  m.output(n.head(dw, 8, 10));
  return m;
}

// Generated convolutions only: depthwise 3x3 (the NCHW tile), depthwise 3x3
// stride 2, a grouped conv of 2 channels a group, AveragePool, GlobalMaxPool.
inline OnnxModel generated_convs() {
  OnnxModel m = image_input({Dim("batch"), int64_t{16}, int64_t{12}, int64_t{12}});
  Net n(m, 14);
  const std::string a = n.op("Relu", {n.conv("x", 16, 16, 3, 1, 16, true)});
  const std::string b = n.op("Sigmoid", {n.conv(a, 16, 16, 3, 2, 16, true)});
  const std::string c = n.conv(b, 16, 16, 3, 1, 8, true);
  auto* avg = n.node("AveragePool", {c});
  attr_ints(avg, "kernel_shape", {2, 2});
  attr_ints(avg, "strides", {1, 1});
  m.output(n.op("GlobalMaxPool", {n.last()}));
  m.output(avg->output(0));
  return m;
}

// Inception-style: 1x1, 1x1 -> 3x3, 1x1 -> 5x5 and MaxPool -> 1x1 branches
// concatenated over channels, AveragePool 2x2 s2, a DenseNet-style Concat
// with a pooled skip.
inline OnnxModel inception_block() {
  OnnxModel m = image_input({Dim("batch"), int64_t{8}, int64_t{12}, int64_t{12}});
  Net n(m, 15);
  const std::string b1 = n.op("Relu", {n.conv("x", 8, 8, 1, 1, 1, true)});
  const std::string b2 =
      n.op("Relu", {n.conv(n.op("Relu", {n.conv("x", 8, 6, 1, 1, 1, true)}), 6, 8, 3, 1, 1, true)});
  const std::string b3 =
      n.op("Relu", {n.conv(n.op("Relu", {n.conv("x", 8, 4, 1, 1, 1, true)}), 4, 4, 5, 1, 1, true)});
  auto* mp = n.node("MaxPool", {"x"});
  attr_ints(mp, "kernel_shape", {3, 3});
  attr_ints(mp, "pads", {1, 1, 1, 1});
  const std::string b4 = n.op("Relu", {n.conv(n.last(), 8, 4, 1, 1, 1, true)});
  attr_int(n.node("Concat", {b1, b2, b3, b4}), "axis", 1);
  const std::string cat = n.last();
  for (const std::string& in : {cat, std::string("x")}) {
    auto* ap = n.node("AveragePool", {in});
    attr_ints(ap, "kernel_shape", {2, 2});
    attr_ints(ap, "strides", {2, 2});
  }
  const std::string px = n.last();
  const std::string pc = fmt::format("v{}", std::stoi(px.substr(1)) - 1);
  attr_int(n.node("Concat", {pc, px}), "axis", 1);
  m.output(n.op("Relu", {n.last()}));
  return m;
}

}  // namespace graphc::testing::cnn
