#include "tests/emu/cudnn_conv_emu.h"

#include "engine_format/conv_params.h"
#include "support/half.h"
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
  // float32, or float16 (the fp16 engines' channels-last convs) summed in
  // double and rounded once, as cuDNN's float accumulation nearly does.
  if ((p.dtype != 1 && p.dtype != 10) || p.op != engine::ConvOp::kForward)
    return internal_error("launch '{}': the emulator runs float32/float16 forward convs only",
                          l.name);
  const bool half = p.dtype == 10;
  auto base = [&](int k) { return ptr[static_cast<size_t>(l.args[static_cast<size_t>(k)])]; };
  auto load = [half](const uint8_t* b, int64_t i) {
    return half ? static_cast<double>(half_bits_to_float(reinterpret_cast<const uint16_t*>(b)[i]))
                : static_cast<double>(reinterpret_cast<const float*>(b)[i]);
  };
  const uint8_t* x = base(0);
  const uint8_t* w = base(1);
  const uint8_t* bias = p.has_bias ? base(p.bias_arg()) : nullptr;
  const uint8_t* z = p.has_residual ? base(p.residual_arg()) : nullptr;
  uint8_t* y = base(p.y_arg());
  auto store = [&](int64_t i, double v) {
    if (half)
      reinterpret_cast<uint16_t*>(y)[i] = float_to_half_bits(static_cast<float>(v));
    else
      reinterpret_cast<float*>(y)[i] = static_cast<float>(v);
  };
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
            acc += load(x, x_at(n, (k / kg) * cg + c, pix)) * load(w, w_at(k, c, t));
        }
        if (bias) acc += load(bias, k);
        if (z) acc += load(z, y_at(n, k, o));
        if (p.activation == engine::ConvActivation::kRelu && acc < 0) acc = 0;
        store(y_at(n, k, o), acc);
      }
  return Status::ok_status();
}

}  // namespace graphc::emu
