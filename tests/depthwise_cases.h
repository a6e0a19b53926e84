// Graphs for the generated direct conv (depthwise and small-group, NCHW and
// channels-last: emit/cuda/cuda_conv_direct.cpp), shared by the kernel
// emulator (`graphc_kernel_emulator cases depthwise`, a ctest), the NVRTC
// compile test and the GPU test. Sizes are odd and off the kernels' tiles
// (channel vectors of 4/2/1, 4 pixels per thread, 32-wide tiles) so every
// edge runs; channels-last convs carry the `_channels_last` attribute the
// channels-last pass sets (x N x H x W x C, W M x KH x KW x C/group).
#pragma once

#include "ir/conv_geometry.h"
#include "target/cuda/depthwise_tile_rules.h"
#include "tests/pool_contraction_cases.h"

namespace graphc::testing {

namespace dw_detail {

using ir::Attribute;
using ir::DType;
using ir::OpKind;
using ir::Shape;

struct DwSpec {
  DType dt = DType::kFloat32;
  bool nhwc = false;
  Shape x;  // N, C, H, W (channels-first order; permuted for nhwc)
  int64_t m = 0, kh = 3, kw = 3, group = 0;  // group 0: depthwise (= C)
  std::vector<int64_t> strides{1, 1}, dilations{1, 1}, pads{1, 1, 1, 1};
  bool conv_bias = false;
  // Epilogue: per-channel bias Add, then "relu"/"gelu"/"", then a residual Add.
  bool bias_add = false;
  std::string act;
  bool residual = false;
  // The Conv's target::kDepthwiseTileAttr when >= 0: 0 untiled, 1 the
  // chosen tile, 2 + i the tile rules' candidate i (every tile shape runs).
  int tile = -1;
};

inline ir::Graph dw_graph(const DwSpec& s) {
  GraphBuilder b;
  auto& rng = test_rng();
  const int64_t c = s.x[1];
  const int64_t group = s.group ? s.group : c;
  const Shape x_shape = s.nhwc ? ir::to_channels_last(s.x) : s.x;
  Shape w_shape{s.m, c / group, s.kh, s.kw};
  if (s.nhwc) w_shape = ir::to_channels_last(w_shape);
  auto x = b.input("x", s.dt, x_shape);
  auto w = b.input("w", s.dt, w_shape);
  std::vector<ir::ValueId> ins{x, w};
  if (s.conv_bias) ins.push_back(b.input("b", s.dt, {s.m}));
  ir::AttributeMap a = attrs({{"group", Attribute::of_int(group)},
                              {"kernel_shape", Attribute::of_ints({s.kh, s.kw})},
                              {"strides", Attribute::of_ints(s.strides)},
                              {"dilations", Attribute::of_ints(s.dilations)},
                              {"pads", Attribute::of_ints(s.pads)}});
  if (s.nhwc) a.set(ir::kChannelsLastAttr, Attribute::of_int(1));
  if (s.tile >= 0) a.set(target::kDepthwiseTileAttr, Attribute::of_int(s.tile));
  auto y = b.node(OpKind::Conv, ins, a);
  const bool fused = s.bias_add || !s.act.empty() || s.residual;
  if (s.bias_add) {
    const Shape bs = s.nhwc ? Shape{s.m} : Shape{s.m, 1, 1};
    y = b.node(OpKind::Add, {y, b.constant("bias", random_tensor(s.dt, bs, rng, -1, 1))});
  }
  if (s.act == "relu") y = b.node(OpKind::Relu, {y});
  if (s.act == "gelu") y = b.node(OpKind::Gelu, {y});
  if (s.residual) {
    Shape out{s.x[0], s.m, 0, 0};
    const int64_t k[2] = {s.kh, s.kw};
    for (int d = 0; d < 2; ++d)
      out[2 + d] = (s.x[2 + d] + s.pads[d] + s.pads[2 + d] - s.dilations[d] * (k[d] - 1) - 1) /
                       s.strides[d] + 1;
    y = b.node(OpKind::Add, {y, b.input("r", s.dt, s.nhwc ? ir::to_channels_last(out) : out)});
  }
  b.output(y);
  ir::Graph g = b.build();
  return fused ? pc_detail::optimized(std::move(g)) : g;
}

}  // namespace dw_detail

inline std::vector<KernelCase> depthwise_cases() {
  using namespace dw_detail;
  std::vector<KernelCase> v;
  auto add = [&](std::string label, DwSpec s, double half_atol = 4e-3) {
    label.insert(0, "depthwise ");
    v.push_back({std::move(label), [s] { return dw_graph(s); }, 1e-4, half_atol});
  };
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  auto spec = [](DType dt, bool nhwc, Shape x, int64_t m, int64_t k) {
    DwSpec s;
    s.dt = dt;
    s.nhwc = nhwc;
    s.x = std::move(x);
    s.m = m;
    s.kh = s.kw = k;
    s.pads = {k / 2, k / 2, k / 2, k / 2};
    return s;
  };
  for (bool nhwc : {true, false}) {
    const std::string l = nhwc ? "nhwc " : "nchw ";
    DwSpec s = spec(f32, nhwc, {2, 8, 9, 11}, 8, 3);  // 4-channel vectors (nhwc)
    s.conv_bias = true;
    add(l + "f32 3x3 bias", s);
    s = spec(f16, nhwc, {1, 6, 13, 10}, 6, 5);  // 2-channel vectors, stride 2
    s.strides = {2, 2};
    add(l + "f16 5x5 stride 2", s);
    s = spec(bf16, nhwc, {1, 5, 9, 33}, 5, 7);  // odd C: scalar channels; W over one tile
    add(l + "bf16 7x7 odd C", s);
    s = spec(bf16, nhwc, {2, 12, 9, 14}, 12, 3);  // bf16 4-channel vectors
    s.strides = {2, 2};
    s.conv_bias = true;
    add(l + "bf16 3x3 stride 2 bias", s);
    s = spec(f32, nhwc, {1, 7, 11, 9}, 7, 3);
    s.dilations = {2, 2};
    s.pads = {2, 2, 2, 2};
    add(l + "f32 3x3 dilation 2", s);
    s = spec(f16, nhwc, {1, 4, 12, 11}, 8, 3);  // channel multiplier 2
    s.strides = {2, 2};
    add(l + "f16 multiplier 2 stride 2", s);
    s = spec(f32, nhwc, {1, 8, 7, 9}, 12, 3);  // grouped: 2 in / 3 out channels per group
    s.group = 4;
    s.conv_bias = true;
    add(l + "f32 grouped 4 (2 channels per group)", s);
    s = spec(f32, nhwc, {1, 4, 6, 20}, 4, 1);  // 1x17: the uncached row path (nhwc)
    s.kw = 17;
    s.pads = {0, 8, 1, 7};
    s.strides = {2, 1};
    add(l + "f32 1x17 asymmetric pads stride 2x1", s);
    s = spec(f16, nhwc, {1, 8, 9, 9}, 8, 7);
    s.bias_add = true;
    s.act = "gelu";
    s.residual = true;
    // The reference rounds to fp16 after the conv, the Add, the Gelu and the
    // residual Add, the kernel once: about 2 ulps at magnitudes up to 16.
    add(l + "f16 7x7 + bias + gelu + residual", s, 3e-2);
    s = spec(f32, nhwc, {2, 6, 10, 10}, 6, 3);
    s.bias_add = true;
    s.act = "relu";
    s.residual = true;
    add(l + "f32 3x3 + bias + relu + residual", s);
  }
  // The tiled channels-last kernel (the nhwc cases above take it where it
  // runs: the smallest tile, as they are small): each tile shape, channel
  // chunks with a tail, 16/8-byte and scalar loads; then the untiled kernel
  // on cases the tiled one would take.
  DwSpec s = spec(f16, true, {2, 40, 19, 21}, 40, 7);  // 8x8 tile, 2 chunks of 20 ch
  s.conv_bias = true;
  s.tile = 2;
  add("nhwc f16 7x7 bias tiled 8x8", s);
  s = spec(f16, true, {1, 64, 17, 15}, 64, 3);  // 4x8 tile, 16-byte loads
  s.strides = {2, 2};
  s.tile = 3;
  add("nhwc f16 3x3 stride 2 tiled 4x8", s);
  s = spec(bf16, true, {1, 24, 13, 18}, 24, 5);  // 4x4 tile, one pixel per thread
  s.strides = {2, 2};
  s.conv_bias = true;
  s.tile = 4;
  add("nhwc bf16 5x5 stride 2 bias tiled 4x4", s);
  s = spec(f32, true, {2, 12, 11, 10}, 12, 3);
  s.dilations = {2, 2};
  s.pads = {2, 2, 2, 2};
  s.tile = 5;
  add("nhwc f32 3x3 dilation 2 tiled 4x4 x 16 ch", s);
  s = spec(f32, true, {1, 7, 9, 11}, 7, 5);  // odd C: scalar channels, 2x4 tile
  s.pads = {1, 2, 2, 1};
  s.tile = 6;
  add("nhwc f32 5x5 odd C asymmetric pads tiled 2x4", s);
  s = spec(f16, true, {1, 16, 10, 9}, 16, 7);
  s.dilations = {1, 2};
  s.pads = {3, 6, 3, 6};
  s.bias_add = true;
  s.act = "gelu";
  s.residual = true;
  s.tile = 2;
  add("nhwc f16 7x7 dilation 1x2 + bias + gelu + residual tiled 8x8", s, 3e-2);
  s = spec(f32, true, {1, 8, 12, 13}, 8, 3);
  s.bias_add = true;
  s.act = "relu";
  s.residual = true;
  s.tile = 3;
  add("nhwc f32 3x3 + bias + relu + residual tiled 4x8", s);
  s = spec(f32, true, {2, 8, 9, 11}, 8, 3);
  s.conv_bias = true;
  s.tile = 0;
  add("nhwc f32 3x3 bias untiled", s);
  s = spec(f16, true, {1, 6, 13, 10}, 6, 5);
  s.strides = {2, 2};
  s.tile = 0;
  add("nhwc f16 5x5 stride 2 untiled", s);
  s = spec(f16, true, {1, 8, 9, 9}, 8, 7);
  s.bias_add = true;
  s.act = "gelu";
  s.residual = true;
  s.tile = 0;
  add("nhwc f16 7x7 + bias + gelu + residual untiled", s, 3e-2);
  s = spec(f32, false, {1, 2, 40, 36}, 2, 3);  // two row tiles of 2 rows per thread
  add("nchw f32 3x3 40x36 plane", s);
  s = spec(f32, false, {1, 16, 10, 9}, 8, 3);  // 8 channels per group, the most the kernel takes
  s.group = 2;
  add("nchw f32 grouped 2 (8 channels per group)", s);
  return v;
}

}  // namespace graphc::testing
