// Helpers shared by the kernels that loop over a sliding window (pooling,
// depthwise and implicit-GEMM convolution): the limits under which their
// 32-bit window arithmetic cannot overflow, when to unroll a window loop, and
// the loop's opening.
#pragma once

#include <fmt/format.h>

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

// Opens the loop over window tap q<d> of spatial dim d: input position
// i<d> = o<d> * stride - pad + q<d> * dilation, taps outside [0, extent)
// skipped. The caller closes the brace after its body.
inline std::string window_loop_open(const std::string& indent, size_t d, int64_t kernel,
                                    int64_t stride, int64_t pad, int64_t dilation, int64_t extent) {
  return fmt::format(
      "{ind}{unroll}\n"
      "{ind}for (int q{d} = 0; q{d} < {k}; ++q{d}) {{\n"
      "{ind}  const int i{d} = o{d} * {s} - {p} + q{d} * {dl};\n"
      "{ind}  if (i{d} < 0 || i{d} >= {n}) continue;\n",
      fmt::arg("ind", indent), fmt::arg("unroll", window_unroll(kernel)), fmt::arg("d", d),
      fmt::arg("k", kernel), fmt::arg("s", stride), fmt::arg("p", pad), fmt::arg("dl", dilation),
      fmt::arg("n", extent));
}

}  // namespace graphc::emit
