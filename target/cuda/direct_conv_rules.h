// The generated direct convolution (emit/cuda/cuda_conv_direct.cpp): which
// convs it takes, and the cost model that gives it depthwise convs over cuDNN.
//
// It takes 2-D forward convs (not ConvTranspose) with at most
// kMaxDirectGroupChannels input channels per group: depthwise (one input
// channel per group, any channel multiplier) and small-group grouped convs,
// in NCHW or channels-last (NHWC), float32/float16/bfloat16/float64, any
// kernel size, stride, dilation and pads, with the fused epilogue.
//
// Cost model (--conv auto, depthwise convs only: one input channel per group):
//   generated_us = max(bytes / (0.6 · HBM bandwidth), flops / (0.5 · fp32 FMA peak))
//   cudnn_us     = 25 · bytes / HBM bandwidth  (+ 2 · |y| / HBM bandwidth when
//                  cuDNN cannot take the whole epilogue: the split kernel's pass)
// with bytes = |x| + |w| + |y| (+ |residual|) and flops = 2 · |y| · kernel taps,
// peaks from target/roofline's table for the oldest --arch's usual GPU. The
// generated kernel is picked when generated_us < cudnn_us. The factor 25 is
// measured, not guessed: ConvNeXt-T's 7x7 depthwise convs (channels-last fp16,
// H100) took 28-56 us in cuDNN against 1-2 us memory floors;
// `--tune` does not change it (cuDNN has no faster algorithm there). Grouped
// convs with more than one input channel per group stay with cuDNN in auto
// mode (its tensor-core implicit GEMM; the direct kernel runs on CUDA cores)
// and use the direct kernel only when generated (--conv generated, or a conv
// cuDNN refuses).
#pragma once

#include <optional>
#include <string>

#include "ir/conv_geometry.h"
#include "ir/dtype.h"
#include "target/roofline.h"

namespace graphc::target {

inline constexpr int64_t kMaxDirectGroupChannels = 8;

// Empty when the direct kernel takes `g`, else why not.
std::string direct_conv_refusal(const ir::ConvGeometry& g);
inline bool direct_conv_takes(const ir::ConvGeometry& g) { return direct_conv_refusal(g).empty(); }
inline bool is_depthwise(const ir::ConvGeometry& g) {
  return !g.transpose && g.group > 1 && g.in_channels == g.group;
}

struct DepthwiseCost {
  double generated_us = 0;
  double cudnn_us = 0;
  bool generated_wins() const { return generated_us < cudnn_us; }
};
// `residual`: the epilogue reads an output-sized tensor; `cudnn_split`: cuDNN
// takes only part of the epilogue (a second kernel runs the rest).
DepthwiseCost depthwise_cost(const ir::ConvGeometry& g, ir::DType dtype, Gpu gpu, bool residual,
                             bool cudnn_split);

}  // namespace graphc::target
