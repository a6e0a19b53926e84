// The generated depthwise/grouped direct conv on the GPU
// (emit/cuda/cuda_conv_direct.cpp).
//  - [depthwise]: every case of tests/depthwise_cases.h (NCHW and
//    channels-last, fp32/fp16/bf16, 3x3/5x5/7x7/1x17, strides, dilation 2,
//    asymmetric pads, odd H/W/C, channel multiplier 2, groups of 2 and 8
//    channels, fused bias + relu/gelu + residual) against the reference
//    executor on fresh random inputs, generated and in auto mode; then
//    ConvNeXt and MobileNet shapes too large for the emulator. Tolerances
//    as gpu_check.h (fp16 one ulp + the case's absolute slack).
//  - [.][depthwise-bench] (hidden): median us of the conv launch for
//    ConvNeXt's 7x7 depthwise convs (96/192/384/768 channels at 56/28/14/7,
//    batch 1 and 32) and MobileNetV3-L / EfficientNet-B0 3x3/5x5 depthwise
//    convs, fp16 channels-last with bias, generated against cuDNN in the
//    same process, with the HBM floor of each.
//      build/tests/graphc_gpu_tests "[depthwise-bench]"
#include <catch2/catch.hpp>
#include <cstdio>

#include "target/roofline.h"
#include "tests/depthwise_cases.h"
#include "tests/gpu/built_engine.h"
#include "tests/gpu/gpu_check.h"

using namespace graphc;
using ir::DType;

namespace {

using testing::dw_detail::DwSpec;

DwSpec shape(int64_t n, int64_t c, int64_t hw, int64_t k, int64_t stride) {
  DwSpec s;
  s.dt = DType::kFloat16;
  s.nhwc = true;
  s.x = {n, c, hw, hw};
  s.m = c;
  s.kh = s.kw = k;
  s.strides = {stride, stride};
  s.pads = {k / 2, k / 2, k / 2, k / 2};
  s.conv_bias = true;
  return s;
}

// Sum of the median times of the engine's non-copy launches, in us.
double conv_us(const ir::Graph& g, target::ConvMode mode, std::string* kinds) {
  auto b = testing::build_engine_for_gpu(g, target::GemmMode::kAuto, mode);
  auto ctx = b.engine->create_context();
  REQUIRE(ctx.ok());
  runtime::ProfileOptions po;
  po.iterations = 200;
  po.warmup_iterations = 10;
  auto p = (*ctx)->profile(po);
  INFO((p.ok() ? "" : p.status().message()));
  REQUIRE(p.ok());
  double us = 0;
  for (const auto& l : p->launches) {
    if (l.kind == "copy") continue;
    us += l.median_us;
    if (kinds) *kinds += (kinds->empty() ? "" : "+") + l.kind;
  }
  return us;
}

}  // namespace

TEST_CASE("depthwise and grouped direct convs on the GPU match the reference",
          "[gpu][depthwise]") {
  emit::LowerOptions generated;
  generated.conv.mode = target::ConvMode::kGenerated;
  for (const auto& c : testing::depthwise_cases()) {
    testing::check_gpu_matches_reference(c.build(), c.label + " (generated)", -c.range, c.range,
                                         c.half_atol, c.rtol_f32, generated);
    testing::check_gpu_matches_reference(c.build(), c.label + " (auto)", -c.range, c.range,
                                         c.half_atol, c.rtol_f32);
  }
  // Real shapes in both layouts: ConvNeXt-T 7x7, MobileNetV3 5x5 stride 2,
  // at batch sizes that give the channels-last kernel each of its splits
  // (4 channels x 4/2/1 pixels, 2 channels x 1 pixel per thread).
  DwSpec dilated = shape(32, 64, 28, 3, 1);
  dilated.dilations = {2, 2};
  dilated.pads = {2, 2, 2, 2};
  for (bool nhwc : {true, false}) {
    for (DwSpec s : {shape(32, 96, 56, 7, 1), shape(8, 192, 28, 7, 1), shape(16, 72, 56, 5, 2),
                     shape(2, 96, 56, 7, 1), shape(1, 240, 28, 3, 2), shape(1, 768, 7, 7, 1),
                     dilated}) {
      s.nhwc = nhwc;
      s.bias_add = true;
      s.act = "gelu";
      // fp16 slack: the reference rounds after the conv, the Add and the Gelu.
      testing::check_gpu_matches_reference(testing::dw_detail::dw_graph(s),
                                           nhwc ? "real shape nhwc" : "real shape nchw", -1, 1,
                                           3e-2, 1e-4, generated);
    }
  }
}

TEST_CASE("depthwise conv timings: generated vs cuDNN", "[.][depthwise-bench]") {
  struct Bench {
    const char* model;
    int64_t c, hw, k, stride;
  };
  const Bench shapes[] = {
      {"convnext", 96, 56, 7, 1},     {"convnext", 192, 28, 7, 1},
      {"convnext", 384, 14, 7, 1},    {"convnext", 768, 7, 7, 1},
      {"mobilenetv3", 16, 112, 3, 1}, {"mobilenetv3", 64, 112, 3, 2},
      {"mobilenetv3", 72, 56, 5, 2},  {"mobilenetv3", 120, 28, 5, 1},
      {"mobilenetv3", 480, 14, 3, 1}, {"mobilenetv3", 960, 7, 5, 1},
      {"efficientnet", 32, 112, 3, 1}, {"efficientnet", 144, 56, 5, 2},
      {"efficientnet", 672, 14, 5, 1}, {"efficientnet", 1152, 7, 3, 1},
  };
  std::printf("%-13s %5s %4s %5s %6s %4s %12s %12s %8s %10s\n", "model", "batch", "C", "HxW",
              "kernel", "s", "generated us", "cuDNN us", "speedup", "floor us");
  for (int64_t batch : {1, 32}) {
    for (const Bench& b : shapes) {
      const ir::Graph g = testing::dw_detail::dw_graph(shape(batch, b.c, b.hw, b.k, b.stride));
      std::string gen_kinds, lib_kinds;
      const double gen = conv_us(g, target::ConvMode::kAuto, &gen_kinds);
      const double lib = conv_us(g, target::ConvMode::kCudnn, &lib_kinds);
      INFO(gen_kinds << " / " << lib_kinds);
      auto plan = emit::lower_for_gpu(g);  // auto mode picks the generated kernel
      REQUIRE(plan.ok());
      for (const auto& l : plan->launches) CHECK_FALSE(l.library.has_value());
      const int64_t out_hw = (b.hw + b.stride - 1) / b.stride;
      const double bytes = 2.0 * batch * b.c * (b.hw * b.hw + out_hw * out_hw);
      const double floor_us = bytes / (target::gpu_peaks(target::Gpu::kH100).hbm_gb_per_s * 1e3);
      std::printf("%-13s %5lld %4lld %5lld %4lldx%lld %4lld %12.2f %12.2f %7.2fx %10.2f\n",
                  b.model, static_cast<long long>(batch), static_cast<long long>(b.c),
                  static_cast<long long>(b.hw), static_cast<long long>(b.k),
                  static_cast<long long>(b.k), static_cast<long long>(b.stride), gen, lib,
                  lib / gen, floor_us);
    }
  }
}
