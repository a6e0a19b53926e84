// The generated depthwise/grouped direct convs on the GPU
// (emit/cuda/cuda_conv_direct.cpp, the tiled channels-last depthwise kernel
// emit/cuda/cuda_conv_dw_tiled.cpp).
//  - [depthwise]: every case of tests/depthwise_cases.h (NCHW and
//    channels-last, fp32/fp16/bf16, 3x3/5x5/7x7/1x17, strides, dilation 2,
//    asymmetric pads, odd H/W/C, channel multiplier 2, groups of 2 and 8
//    channels, fused bias + relu/gelu + residual, every tile shape of the
//    tiled kernel and the untiled one) against the reference executor on
//    fresh random inputs, generated and in auto mode; then ConvNeXt-T/S and
//    MobileNet shapes too large for the emulator, tiled (the rules' tile and
//    each candidate) and untiled. Tolerances as gpu_check.h (fp16 one ulp +
//    the case's absolute slack).
//  - [.][depthwise-bench] (hidden): median us of the conv launch for
//    ConvNeXt-T's (96/192/384/768 channels at 56/28/14/7) and ConvNeXt-S's
//    (128/256/512/1024) 7x7 depthwise convs, batch 1 and 32, and
//    MobileNetV3-L / EfficientNet-B0 3x3/5x5 depthwise convs, fp16
//    channels-last with bias: the tiled kernel, the untiled one and cuDNN in
//    the same process, the tiled kernel's GB/s (x + y bytes over its time)
//    and the HBM floor of each.
//      build/tests/graphc_gpu_tests "[depthwise-bench]"
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

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
  // Channels-last: the rules' tile (tile 1) and the untiled kernel (0).
  for (int tile : {1, 0, -1}) {
    const bool nhwc = tile >= 0;
    for (DwSpec s :
         {shape(32, 96, 56, 7, 1), shape(8, 192, 28, 7, 1), shape(16, 72, 56, 5, 2),
          shape(2, 96, 56, 7, 1), shape(1, 240, 28, 3, 2), shape(1, 768, 7, 7, 1),
          shape(1, 128, 56, 7, 1), shape(1, 1024, 7, 7, 1), shape(4, 512, 14, 7, 1), dilated}) {
      s.nhwc = nhwc;
      s.tile = tile;
      s.bias_add = true;
      s.act = "gelu";
      // fp16 slack: the reference rounds after the conv, the Add and the Gelu.
      testing::check_gpu_matches_reference(testing::dw_detail::dw_graph(s),
                                           !nhwc  ? "real shape nchw"
                                           : tile ? "real shape nhwc tiled"
                                                  : "real shape nhwc untiled",
                                           -1, 1, 3e-2, 1e-4, generated);
    }
  }
  // Every tile candidate on real shapes (bf16 and fp32 too), with a residual.
  for (int tile = 2; tile <= 7; ++tile) {
    for (DwSpec s : {shape(2, 96, 56, 7, 1), shape(3, 144, 56, 5, 2), shape(1, 1152, 7, 3, 1)}) {
      for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
        s.dt = dt;
        s.tile = tile;
        s.residual = true;
        // Two ulps: the reference rounds after the conv and after the
        // residual Add, the kernel once (bfloat16 differed by 2 ulps in 1 of
        // 602112 elements on an H100).
        testing::check_gpu_matches_reference(testing::dw_detail::dw_graph(s),
                                             "real shape nhwc tile candidate " +
                                                 std::to_string(tile - 2) + " " +
                                                 std::string(ir::dtype_name(dt)),
                                             -1, 1, 3e-2, 1e-4, generated, /*half_ulps=*/2);
      }
    }
  }
}

TEST_CASE("depthwise conv timings: tiled and untiled generated vs cuDNN", "[.][depthwise-bench]") {
  struct Bench {
    const char* model;
    int64_t c, hw, k, stride;
  };
  const Bench shapes[] = {
      {"convnext-t", 96, 56, 7, 1},    {"convnext-t", 192, 28, 7, 1},
      {"convnext-t", 384, 14, 7, 1},   {"convnext-t", 768, 7, 7, 1},
      {"convnext-s", 128, 56, 7, 1},   {"convnext-s", 256, 28, 7, 1},
      {"convnext-s", 512, 14, 7, 1},   {"convnext-s", 1024, 7, 7, 1},
      {"mobilenetv3", 16, 112, 3, 1},  {"mobilenetv3", 64, 112, 3, 2},
      {"mobilenetv3", 72, 56, 5, 2},   {"mobilenetv3", 120, 28, 5, 1},
      {"mobilenetv3", 480, 14, 3, 1},  {"mobilenetv3", 960, 7, 5, 1},
      {"efficientnet", 32, 112, 3, 1}, {"efficientnet", 144, 56, 5, 2},
      {"efficientnet", 672, 14, 5, 1}, {"efficientnet", 1152, 7, 3, 1},
  };
  std::printf("%-13s %5s %4s %5s %6s %2s %9s %10s %9s %8s %8s %9s %8s %8s\n", "model", "batch", "C",
              "HxW", "kernel", "s", "tiled us", "untiled us", "cuDNN us", "vs untl", "vs cuDNN",
              "tiled GB/s", "floor us", "x floor");
  const double hbm = target::gpu_peaks(target::Gpu::kH100).hbm_gb_per_s;
  for (int64_t batch : {1, 32}) {
    for (const Bench& b : shapes) {
      DwSpec spec = shape(batch, b.c, b.hw, b.k, b.stride);
      const ir::Graph g_auto = testing::dw_detail::dw_graph(spec);
      spec.tile = 1;  // tiled wherever a tile fits, even where auto mode would not tile
      const ir::Graph g = testing::dw_detail::dw_graph(spec);
      spec.tile = 0;
      const ir::Graph g_untiled = testing::dw_detail::dw_graph(spec);
      std::string tiled_kinds, untiled_kinds, lib_kinds;
      const double tiled = conv_us(g, target::ConvMode::kAuto, &tiled_kinds);
      const double untiled = conv_us(g_untiled, target::ConvMode::kAuto, &untiled_kinds);
      const double lib = conv_us(g, target::ConvMode::kCudnn, &lib_kinds);
      INFO(tiled_kinds << " / " << untiled_kinds << " / " << lib_kinds);
      // Auto mode picks a generated kernel: tiled from 5x5 at stride 1.
      auto plan = emit::lower_for_gpu(g_auto);
      REQUIRE(plan.ok());
      const bool tiles = b.stride == 1 && b.k >= 5;
      for (const auto& l : plan->launches) {
        CHECK_FALSE(l.library.has_value());
        CHECK((l.entry.rfind("dwconv_nhwc_tiled_", 0) == 0) == tiles);
      }
      const int64_t out_hw = (b.hw + b.stride - 1) / b.stride;
      const double bytes = 2.0 * batch * b.c * (b.hw * b.hw + out_hw * out_hw);
      const double floor_us = bytes / (hbm * 1e3);
      std::printf(
          "%-13s %5lld %4lld %5lld %4lldx%lld %2lld %9.2f %10.2f %9.2f %7.2fx %7.2fx %10.0f %8.2f "
          "%7.1fx\n",
          b.model, static_cast<long long>(batch), static_cast<long long>(b.c),
          static_cast<long long>(b.hw), static_cast<long long>(b.k), static_cast<long long>(b.k),
          static_cast<long long>(b.stride), tiled, untiled, lib, untiled / tiled, lib / tiled,
          bytes / (tiled * 1e3), floor_us, tiled / floor_us);
    }
  }
}
