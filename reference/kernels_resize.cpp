// Reference kernel for Resize (nearest, n-linear and n-cubic, optional
// antialias for linear and cubic),
// written to follow the ONNX reference implementation (onnx/reference/ops/
// op_resize.py): interpolation is separable, so each resized axis is done in
// turn, in the order of `axes`. For every output position along an axis,
// ir/resize_taps.h derives the source coordinate x_original, a set of taps
// (input indices) and their weights exactly as the ONNX reference does
// (including its tie-breaking, edge clamping and exclude_outside
// renormalisation); the CUDA generator (emit/cuda/cuda_resize.cpp) uses the same taps.
//
// Nearest mode gathers input elements bit-exactly (every dtype, int64
// included); linear and cubic compute in double and store once at the end
// (integers: round half to even, then saturate, as onnx's saturate_cast).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/pool_resize_params.h"
#include "ir/resize_taps.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

namespace {

using AxisTaps = ir::ResizeAxisTaps;
using ir::ResizeParams;
using ir::Tensor;

// Nearest: each axis maps an output position to one input index, or to a
// constant (extrapolation_value, or 0 when exclude_outside removed the only
// tap). Along the processing order the last axis with a constant decides it.
Status resize_nearest(const ResizeParams& p, const std::vector<AxisTaps>& taps, const Tensor& x,
                      Tensor& y) {
  const size_t r = x.shape().size();
  enum : int8_t { kCopy = 0, kExtrapolate = 1, kZero = 2 };
  std::vector<std::vector<int64_t>> src(r);
  std::vector<std::vector<int8_t>> kind(r);
  std::vector<int> order(r, -1);  // processing position of each resized axis
  for (size_t d = 0; d < r; ++d) {
    src[d].resize(static_cast<size_t>(y.shape()[d]));
    kind[d].assign(static_cast<size_t>(y.shape()[d]), kCopy);
    for (int64_t i = 0; i < y.shape()[d]; ++i) src[d][static_cast<size_t>(i)] = i;  // identity
  }
  for (size_t a = 0; a < taps.size(); ++a) {
    const AxisTaps& t = taps[a];
    const auto d = static_cast<size_t>(t.axis);
    order[d] = static_cast<int>(a);
    for (int64_t i = 0; i < t.out; ++i) {
      const auto iu = static_cast<size_t>(i);
      if (t.extrapolate[iu]) {
        kind[d][iu] = kExtrapolate;
        continue;
      }
      bool found = false;
      for (int64_t k = 0; k < t.n; ++k) {
        const auto ku = static_cast<size_t>(i * t.n + k);
        if (t.w[ku] != 0) {
          src[d][iu] = t.idx[ku];
          found = true;
        }
      }
      if (!found) kind[d][iu] = kZero;
    }
  }
  const size_t es = ir::dtype_size(x.dtype());
  const uint8_t* in = x.data();
  uint8_t* out = y.mutable_data();
  const auto in_strides = strides_of(x.shape());
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t off = 0;
    int best = -1;
    int8_t what = kCopy;
    for (size_t d = 0; d < r; ++d) {
      const auto iu = static_cast<size_t>(idx[d]);
      off += src[d][iu] * in_strides[d];
      if (kind[d][iu] != kCopy && order[d] > best) {
        best = order[d];
        what = kind[d][iu];
      }
    }
    if (what == kCopy) {
      std::memcpy(out + static_cast<size_t>(o) * es, in + static_cast<size_t>(off) * es, es);
    } else {
      ir::resize_store(y, o, what == kExtrapolate ? p.extrapolation_value : 0.0);
    }
    next_index(idx, y.shape());
  }
  return Status::ok_status();
}

// Linear and cubic (optionally antialiased): one axis at a time in double.
Status resize_interpolate(const ResizeParams& p, const std::vector<AxisTaps>& taps, const Tensor& x,
                          Tensor& y) {
  ir::Shape shape = x.shape();
  std::vector<double> cur = x.to_f64_vector();
  for (const AxisTaps& t : taps) {
    const auto d = static_cast<size_t>(t.axis);
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < d; ++k) outer *= shape[k];
    for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    std::vector<double> next(static_cast<size_t>(outer * t.out * inner));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < t.out; ++i) {
        const auto iu = static_cast<size_t>(i);
        for (int64_t j = 0; j < inner; ++j) {
          double v;
          if (t.extrapolate[iu]) {
            v = p.extrapolation_value;
          } else {
            v = 0;
            for (int64_t k = 0; k < t.n; ++k) {
              const auto ku = static_cast<size_t>(i * t.n + k);
              v += t.w[ku] * cur[static_cast<size_t>((o * t.in + t.idx[ku]) * inner + j)];
            }
          }
          next[static_cast<size_t>((o * t.out + i) * inner + j)] = v;
        }
      }
    }
    cur = std::move(next);
    shape[d] = t.out;
  }
  for (int64_t i = 0; i < y.numel(); ++i) ir::resize_store(y, i, cur[static_cast<size_t>(i)]);
  return Status::ok_status();
}

}  // namespace

Status run_Resize(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  auto input = [&](size_t i) { return ctx.has_input(i) ? ctx.inputs[i] : nullptr; };
  ASSIGN_OR_RETURN(ResizeParams p,
                   ir::resize_params(ctx.attrs(), x.shape(), input(1), input(2), input(3)));
  Tensor& y = ctx.out(0);
  if (y.shape() != p.out_shape)
    return internal_error("Resize: output shape {} does not match the computed {}",
                          ir::shape_to_string(y.shape()), ir::shape_to_string(p.out_shape));
  if (p.mode != ResizeParams::Mode::kNearest && x.dtype() == ir::DType::kBool)
    return invalid_model("Resize: mode {} needs a numeric input, got bool",
                         p.mode == ResizeParams::Mode::kLinear ? "linear" : "cubic");
  if (y.numel() == 0) return Status::ok_status();
  const std::vector<AxisTaps> taps = ir::resize_taps(p, x.shape());
  if (p.mode == ResizeParams::Mode::kNearest) return resize_nearest(p, taps, x, y);
  return resize_interpolate(p, taps, x, y);
}

}  // namespace graphc::reference::kernels
