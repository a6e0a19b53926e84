// Conv / ConvTranspose graphs with the epilogues cuDNN takes (or not), shared
// by the CPU tests of the cuDNN choice (cudnn_test.cpp) and the GPU tests
// (gpu/cudnn_gpu_test.cpp). Header-only.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "emit/plan/schedule.h"
#include "optimizer/pass.h"
#include "tests/test_util.h"

namespace graphc::testing {

struct ConvSpec {
  ir::DType dtype = ir::DType::kFloat32;
  bool transpose = false;
  int64_t n = 1, c = 4, k = 8, groups = 1;
  std::vector<int64_t> in{6, 6}, filter{3, 3}, strides{1, 1}, dilations{1, 1};
  std::vector<int64_t> pads{1, 1, 1, 1};  // begin..., end...
  std::vector<int64_t> output_padding{};  // ConvTranspose only
  bool conv_bias = false;                 // the Conv's own B input
  // Epilogue ops after the conv, in order: "bias" (a per-channel Add of a
  // [K,1,...] constant), "residual" (an Add of an input shaped like y),
  // "relu", "sigmoid", "mul" (a per-channel Mul).
  std::vector<std::string> epilogue{};
  std::string describe() const {
    std::string s = std::string(ir::dtype_name(dtype)) + (transpose ? " ConvTranspose" : " Conv") +
                    " N=" + std::to_string(n) + " C=" + std::to_string(c) +
                    " K=" + std::to_string(k) + " g=" + std::to_string(groups) + " in=";
    for (auto d : in) s += std::to_string(d) + ",";
    s += " f=";
    for (auto d : filter) s += std::to_string(d) + ",";
    s += " s=";
    for (auto d : strides) s += std::to_string(d) + ",";
    s += " d=";
    for (auto d : dilations) s += std::to_string(d) + ",";
    s += " p=";
    for (auto d : pads) s += std::to_string(d) + ",";
    s += conv_bias ? " B" : "";
    for (const auto& e : epilogue) s += " +" + e;
    return s;
  }
};

// y's shape: N x K x the window arithmetic's output dims.
inline ir::Shape conv_output_shape(const ConvSpec& s) {
  ir::Shape out{s.n, s.k};
  const size_t S = s.in.size();
  for (size_t i = 0; i < S; ++i) {
    const int64_t window = (s.filter[i] - 1) * s.dilations[i] + 1;
    const int64_t pads = s.pads[i] + s.pads[i + S];
    const int64_t op = s.output_padding.empty() ? 0 : s.output_padding[i];
    out.push_back(s.transpose ? s.strides[i] * (s.in[i] - 1) + op + window - pads
                              : (s.in[i] + pads - window) / s.strides[i] + 1);
  }
  return out;
}

// The graph of `spec`, optimized (one conv kernel, fused with its epilogue).
inline ir::Graph conv_graph(const ConvSpec& s) {
  auto& rng = test_rng();
  GraphBuilder b;
  ir::Shape xs{s.n, s.c};
  xs.insert(xs.end(), s.in.begin(), s.in.end());
  auto x = b.input("x", s.dtype, xs);
  // Conv W: [K, C/g, f...]; ConvTranspose W: [C, K/g, f...].
  ir::Shape ws = s.transpose ? ir::Shape{s.c, s.k / s.groups} : ir::Shape{s.k, s.c / s.groups};
  ws.insert(ws.end(), s.filter.begin(), s.filter.end());
  auto w = b.constant("w", random_tensor(s.dtype, ws, rng, -1.0, 1.0));
  std::vector<ir::ValueId> ins{x, w};
  if (s.conv_bias) ins.push_back(b.constant("B", random_tensor(s.dtype, {s.k}, rng)));
  ir::AttributeMap a = attrs({{"group", ir::Attribute::of_int(s.groups)},
                              {"strides", ir::Attribute::of_ints(s.strides)},
                              {"dilations", ir::Attribute::of_ints(s.dilations)},
                              {"pads", ir::Attribute::of_ints(s.pads)}});
  if (!s.output_padding.empty()) a.set("output_padding", ir::Attribute::of_ints(s.output_padding));
  auto y = b.node(s.transpose ? ir::OpKind::ConvTranspose : ir::OpKind::Conv, ins, a, 1, "conv");
  ir::Shape per_channel{s.k};
  for (size_t i = 0; i < s.in.size(); ++i) per_channel.push_back(1);
  int i = 0;
  for (const auto& e : s.epilogue) {
    const std::string name = e + std::to_string(i++);
    if (e == "bias") {
      y = b.node(ir::OpKind::Add,
                 {y, b.constant(name + "_b", random_tensor(s.dtype, per_channel, rng))}, {}, 1,
                 name);
    } else if (e == "mul") {
      y = b.node(ir::OpKind::Mul,
                 {y, b.constant(name + "_s", random_tensor(s.dtype, per_channel, rng))}, {}, 1,
                 name);
    } else if (e == "residual") {
      y = b.node(ir::OpKind::Add, {b.input("r", s.dtype, conv_output_shape(s)), y}, {}, 1, name);
    } else if (e == "relu") {
      y = b.node(ir::OpKind::Relu, {y}, {}, 1, name);
    } else if (e == "sigmoid") {
      y = b.node(ir::OpKind::Sigmoid, {y}, {}, 1, name);
    } else {
      FAIL("unknown epilogue op " << e);
    }
  }
  b.output(y);
  ir::Graph g = b.build();
  optimizer::PassContext ctx;
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  return g;
}

// A small ResNet-style stage, not optimized, for the channels-last pass:
//   x -> Conv3x3+B -> Relu (r0) -> Conv3x3 -> Relu -> Conv1x1 -> Add r0
//     -> Add per-channel constant [1,K,1,1] -> Relu -> MaxPool 2x2 -> y
// and, with `second_reader`, r0's Relu input is also read by a MaxPool (an
// NCHW op: the transpose before that Relu must stay).
inline ir::Graph residual_stage_graph(ir::DType dt, bool second_reader = false) {
  auto& rng = test_rng();
  GraphBuilder b;
  const int64_t c = 8, k = 16;
  auto x = b.input("x", dt, {2, c, 12, 10});
  auto conv = [&](ir::ValueId in, int64_t cin, int64_t kernel, bool bias, const std::string& name) {
    std::vector<ir::ValueId> ins{
        in, b.constant(name + "_w", random_tensor(dt, {k, cin, kernel, kernel}, rng, -0.5, 0.5))};
    if (bias) ins.push_back(b.constant(name + "_b", random_tensor(dt, {k}, rng)));
    const int64_t pad = kernel / 2;
    return b.node(ir::OpKind::Conv, ins,
                  attrs({{"pads", ir::Attribute::of_ints({pad, pad, pad, pad})}}), 1, name);
  };
  auto pre0 = conv(x, c, 3, true, "conv0");
  auto r0 = b.node(ir::OpKind::Relu, {pre0}, {}, 1, "relu0");
  auto r1 = b.node(ir::OpKind::Relu, {conv(r0, k, 3, false, "conv1")}, {}, 1, "relu1");
  auto sum = b.node(ir::OpKind::Add, {conv(r1, k, 1, false, "conv2"), r0}, {}, 1, "residual");
  auto biased =
      b.node(ir::OpKind::Add, {sum, b.constant("bias", random_tensor(dt, {1, k, 1, 1}, rng))}, {},
             1, "bias");
  auto pool_attrs = attrs({{"kernel_shape", ir::Attribute::of_ints({2, 2})},
                           {"strides", ir::Attribute::of_ints({2, 2})}});
  b.output(b.node(ir::OpKind::MaxPool, {b.node(ir::OpKind::Relu, {biased}, {}, 1, "relu2")},
                  pool_attrs, 1, "pool"));
  if (second_reader) b.output(b.node(ir::OpKind::MaxPool, {pre0}, pool_attrs, 1, "pool_side"));
  return b.build();
}

// The one conv kernel of an optimized graph.
inline ir::NodeId only_conv_kernel(const ir::Graph& g) {
  ir::NodeId found = -1;
  for (const auto& k : emit::make_schedule(g).kernels)
    if (k.kind == target::KernelKind::kConv) {
      REQUIRE(found < 0);
      found = k.node;
    }
  REQUIRE(found >= 0);
  return found;
}

// The geometries the cuDNN GPU test runs (each with every epilogue below).
inline std::vector<ConvSpec> cudnn_geometries() {
  std::vector<ConvSpec> out;
  ConvSpec base;  // 2-D, 3x3, pad 1
  base.n = 2;
  base.c = 6;
  base.k = 10;
  base.in = {9, 11};
  out.push_back(base);
  ConvSpec grouped = base;  // groups 2, stride 2, dilation 2, pads 2/1
  grouped.groups = 2;
  grouped.strides = {2, 1};
  grouped.dilations = {2, 1};
  grouped.pads = {2, 1, 2, 1};
  out.push_back(grouped);
  ConvSpec dw = base;  // depthwise, stride 2
  dw.c = dw.k = dw.groups = 8;
  dw.strides = {2, 2};
  out.push_back(dw);
  ConvSpec one;  // 1-D (runs as 2-D with H = 1)
  one.n = 2;
  one.c = 5;
  one.k = 7;
  one.in = {23};
  one.filter = {5};
  one.strides = {2};
  one.dilations = {1};
  one.pads = {2, 2};
  out.push_back(one);
  ConvSpec three;  // 3-D
  three.c = 3;
  three.k = 4;
  three.in = {5, 6, 7};
  three.filter = {3, 3, 2};
  three.strides = {1, 2, 1};
  three.dilations = {1, 1, 2};
  three.pads = {1, 1, 0, 1, 1, 0};
  out.push_back(three);
  ConvSpec pointwise = base;  // 1x1, no pad: the GEMM-like case
  pointwise.filter = {1, 1};
  pointwise.pads = {0, 0, 0, 0};
  pointwise.c = 32;
  pointwise.k = 24;
  out.push_back(pointwise);
  ConvSpec t;  // ConvTranspose: groups 2, stride 2, output_padding
  t.transpose = true;
  t.n = 2;
  t.c = 6;
  t.k = 4;
  t.groups = 2;
  t.in = {5, 4};
  t.strides = {2, 2};
  t.output_padding = {1, 0};
  out.push_back(t);
  ConvSpec t1 = t;  // ConvTranspose 1-D, dilation 2
  t1.in = {9};
  t1.filter = {3};
  t1.strides = {3};
  t1.dilations = {2};
  t1.pads = {1, 1};
  t1.output_padding = {2};
  out.push_back(t1);
  return out;
}

// Epilogues: none, the Conv's B, B + ReLU, B + residual + ReLU, and a
// separate per-channel bias Add + ReLU.
inline std::vector<ConvSpec> with_cudnn_epilogues(const ConvSpec& g) {
  std::vector<ConvSpec> out;
  ConvSpec none = g;
  out.push_back(none);
  ConvSpec bias = g;
  bias.conv_bias = true;
  out.push_back(bias);
  ConvSpec relu = bias;
  relu.epilogue = {"relu"};
  out.push_back(relu);
  ConvSpec res = bias;
  res.epilogue = {"residual", "relu"};
  out.push_back(res);
  ConvSpec add = g;
  add.epilogue = {"bias", "relu"};
  out.push_back(add);
  return out;
}

}  // namespace graphc::testing
