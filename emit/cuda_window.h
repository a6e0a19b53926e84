// Helpers shared by the kernels that loop over a sliding window (pooling,
// depthwise and implicit-GEMM convolution): the limits under which their
// 32-bit window arithmetic cannot overflow, and when to unroll a window loop.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace graphc::emit {

// True when every position a window loop computes (out * stride - pad +
// tap * dilation, and in + pad_end) stays far inside int32 for each dim.
inline bool window_fits_int32(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                              const std::vector<int64_t>& kernel,
                              const std::vector<int64_t>& strides,
                              const std::vector<int64_t>& dilations,
                              const std::vector<int64_t>& pad_begin,
                              const std::vector<int64_t>& pad_end) {
  constexpr int64_t kLimit = int64_t{1} << 30;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t vals[] = {in[d],        out[d],       kernel[d], strides[d],
                            dilations[d], pad_begin[d], pad_end[d]};
    for (int64_t v : vals)
      if (v > kLimit || v < -kLimit) return false;
    if (out[d] * strides[d] > kLimit || kernel[d] * dilations[d] > kLimit) return false;
  }
  return true;
}

// "#pragma unroll" for a short constant-trip window loop; long ones stay
// rolled so a huge kernel_shape cannot blow up compile time.
inline std::string window_unroll(int64_t trips) {
  return trips <= 16 ? "#pragma unroll" : "#pragma unroll 1";
}

}  // namespace graphc::emit
