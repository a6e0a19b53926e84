#include "target/cuda/direct_conv_rules.h"

#include <fmt/format.h>

#include <algorithm>

namespace graphc::target {

std::string direct_conv_refusal(const ir::ConvGeometry& g) {
  if (g.transpose) return "ConvTranspose";
  if (g.spatial_rank() != 2) return fmt::format("{} spatial dims (direct kernel: 2)", g.spatial_rank());
  if (g.group < 1 || g.in_channels % g.group != 0 || g.out_channels % g.group != 0)
    return "channels not divisible by the group";
  const int64_t cg = g.in_channels / g.group;
  if (cg > kMaxDirectGroupChannels)
    return fmt::format("{} input channels per group (direct kernel: up to {})", cg,
                       kMaxDirectGroupChannels);
  // 32-bit coordinates and thread counts; flat memory offsets are 64-bit.
  constexpr int64_t kLimit = int64_t{1} << 30;
  const int64_t vals[] = {g.batch, g.in_channels, g.out_channels, g.in_spatial[0],
                          g.in_spatial[1], g.out_spatial[0], g.out_spatial[1], g.kernel[0],
                          g.kernel[1], g.strides[0], g.strides[1], g.dilations[0],
                          g.dilations[1], g.pads_begin[0], g.pads_begin[1]};
  for (int64_t v : vals)
    if (v < 0 || v > kLimit) return "extents beyond the direct kernel's 32-bit indices";
  for (int d = 0; d < 2; ++d)
    if (g.out_spatial[d] * g.strides[d] > kLimit || g.kernel[d] * g.dilations[d] > kLimit)
      return "extents beyond the direct kernel's 32-bit indices";
  if (g.batch * g.out_spatial[0] * g.out_spatial[1] > kLimit ||
      g.batch * g.out_channels * g.out_spatial[0] > kLimit)
    return "more outputs than the direct kernel's 32-bit thread indices";
  return "";
}

DepthwiseCost depthwise_cost(const ir::ConvGeometry& g, ir::DType dtype, Gpu gpu, bool residual,
                             bool cudnn_split) {
  const double es = static_cast<double>(ir::dtype_size(dtype));
  const double x = static_cast<double>(g.batch * g.in_channels) *
                   static_cast<double>(g.in_spatial[0] * g.in_spatial[1]);
  const double y = static_cast<double>(g.batch * g.out_channels) *
                   static_cast<double>(g.out_spatial[0] * g.out_spatial[1]);
  const double taps = static_cast<double>(g.kernel[0] * g.kernel[1]) *
                      static_cast<double>(g.in_channels / g.group);
  const double w = static_cast<double>(g.out_channels) * taps;
  const double bytes = es * (x + w + y + (residual ? y : 0));
  const double flops = 2 * y * taps;
  const GpuPeaks& p = gpu_peaks(gpu);
  const double bw = p.hbm_gb_per_s * 1e3;  // bytes per microsecond
  const Math math = dtype == ir::DType::kFloat64 ? Math::kFp64 : Math::kFp32;
  const double peak = peak_tflops(gpu, math) * 1e6;  // flops per microsecond
  DepthwiseCost c;
  c.generated_us = std::max(bytes / (0.6 * bw), peak > 0 ? flops / (0.5 * peak) : 0.0);
  c.cudnn_us = 25 * bytes / bw + (cudnn_split ? 2 * es * y / bw : 0.0);
  return c;
}

}  // namespace graphc::target
