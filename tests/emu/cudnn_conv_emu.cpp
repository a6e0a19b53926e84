#include "tests/emu/cudnn_conv_emu.h"

#include "engine_format/conv_params.h"
#include "support/size_program.h"

namespace graphc::emu {

Status run_cudnn_conv(const emit::GpuPlan& plan, const emit::LaunchPlan& l,
                      const std::vector<uint8_t*>& ptr, const std::vector<int64_t>& symbols) {
  ASSIGN_OR_RETURN(engine::ConvParams p, engine::decode_conv_params(l.library->params));
  if (!l.library->sizes.empty()) {
    std::vector<int64_t> at;
    for (int32_t s : l.library->sizes) {
      ASSIGN_OR_RETURN(int64_t v, evaluate_size_program(plan.range->sizes[static_cast<size_t>(s)],
                                                        symbols));
      at.push_back(v);
    }
    ASSIGN_OR_RETURN(p, engine::conv_params_at(p, at));
  }
  if (p.dtype != 1 || p.op != engine::ConvOp::kForward)
    return internal_error("launch '{}': the emulator runs float32 forward convs only", l.name);
  auto arg = [&](int k) {
    return reinterpret_cast<float*>(ptr[static_cast<size_t>(l.args[static_cast<size_t>(k)])]);
  };
  const float* x = arg(0);
  const float* w = arg(1);
  const float* bias = p.has_bias ? arg(p.bias_arg()) : nullptr;
  const float* z = p.has_residual ? arg(p.residual_arg()) : nullptr;
  float* y = arg(p.y_arg());
  const int S = p.spatial_rank;
  const bool nhwc = p.layout == engine::ConvLayout::kNhwc;
  const int64_t cg = p.c / p.groups, kg = p.k / p.groups;
  int64_t in_plane = 1, out_plane = 1, taps = 1;
  for (int i = 0; i < S; ++i) {
    in_plane *= p.in[i];
    out_plane *= p.out[i];
    taps *= p.filter[i];
  }
  // Flat offsets: NCHW [n][c][pix], NHWC [n][pix][c]; weights [k][c/g][taps] or [k][taps][c/g].
  auto x_at = [&](int64_t n, int64_t c, int64_t pix) {
    return nhwc ? (n * in_plane + pix) * p.c + c : (n * p.c + c) * in_plane + pix;
  };
  auto y_at = [&](int64_t n, int64_t k, int64_t pix) {
    return nhwc ? (n * out_plane + pix) * p.k + k : (n * p.k + k) * out_plane + pix;
  };
  auto w_at = [&](int64_t k, int64_t c, int64_t t) {
    return nhwc ? (k * taps + t) * cg + c : (k * cg + c) * taps + t;
  };
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t o = 0; o < out_plane; ++o) {
        int64_t oc[3] = {0, 0, 0};
        for (int64_t i = S - 1, r = o; i >= 0; --i) {
          oc[i] = r % p.out[i];
          r /= p.out[i];
        }
        double acc = 0;
        for (int64_t t = 0; t < taps; ++t) {
          int64_t pix = 0;
          bool inside = true;
          for (int64_t i = 0, r = t, div = taps; i < S; ++i) {
            div /= p.filter[i];
            const int64_t q = r / div;
            r %= div;
            const int64_t at = oc[i] * p.strides[i] - p.pads_begin[i] + q * p.dilations[i];
            inside &= at >= 0 && at < p.in[i];
            pix = pix * p.in[i] + at;
          }
          if (!inside) continue;
          for (int64_t c = 0; c < cg; ++c)
            acc += static_cast<double>(x[x_at(n, (k / kg) * cg + c, pix)]) * w[w_at(k, c, t)];
        }
        if (bias) acc += bias[k];
        if (z) acc += z[y_at(n, k, o)];
        if (p.activation == engine::ConvActivation::kRelu && acc < 0) acc = 0;
        y[y_at(n, k, o)] = static_cast<float>(acc);
      }
  return Status::ok_status();
}

}  // namespace graphc::emu
