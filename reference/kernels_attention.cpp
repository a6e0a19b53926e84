// Reference kernel of Attention (ONNX opsets 23-25), following ONNX's own
// reference (onnx/reference/ops/op_attention.py) step by step, in double:
//   present K/V = concat(past, new) on the sequence axis;
//   s = (Q*sqrt(scale)) . (K*sqrt(scale)), query head h reading key/value
//       head h / (Hq/Hkv) (GQA/MQA);
//   softcap > 0: s = softcap * tanh(s / softcap);
//   x = s + bias, bias = mask (bool: 0 / -inf; float: added; keys past the
//       mask's last dim: -inf) + causal (-inf where j > i + offset) + window
//       + nonpad (-inf where j >= nonpad_kv_seqlen[b]), offset = past length,
//       or nonpad_kv_seqlen[b] - Lq with the external cache, else 0;
//   p = softmax(x) over keys; a row whose bias is -inf everywhere (fully
//       masked) is 0, not NaN;  Y = p . V.
// softmax_precision only changes rounding; everything here is double.
#include <cmath>
#include <limits>

#include "ir/attention_params.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

namespace {

using ir::AttentionParams;
using ir::Shape;
using ir::Tensor;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Concatenates past (optional, [B, Hkv, P, D]) and new keys/values (3-D or
// 4-D per `p`) into [B, Hkv, T, D] doubles.
std::vector<double> present(const AttentionParams& p, const Tensor* past, const Tensor& cur,
                            int64_t d) {
  std::vector<double> out(static_cast<size_t>(p.batch * p.kv_heads * p.total_len * d));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.kv_heads; ++h)
      for (int64_t t = 0; t < p.total_len; ++t)
        for (int64_t e = 0; e < d; ++e) {
          double v;
          if (t < p.past_len) {
            v = past->get_f64(((b * p.kv_heads + h) * p.past_len + t) * d + e);
          } else {
            int64_t j = t - p.past_len;
            v = p.three_d ? cur.get_f64(((b * p.kv_len + j) * p.kv_heads + h) * d + e)
                          : cur.get_f64(((b * p.kv_heads + h) * p.kv_len + j) * d + e);
          }
          out[static_cast<size_t>(((b * p.kv_heads + h) * p.total_len + t) * d + e)] = v;
        }
  return out;
}

// The additive mask bias of key j for (b, h, i), -inf where masked.
class Bias {
 public:
  Bias(const AttentionParams& p, const KernelContext& ctx) : p_(p) {
    if (p.has_mask) {
      mask_ = &ctx.in(ir::kAttnMask);
      const Shape& m = p.mask_shape;
      strides_ = strides_of(m);
      lead_ = 4 - m.size();
    }
    if (p.has_nonpad) nonpad_ = ctx.in(ir::kAttnNonpadKvSeqlen).to_i64_vector();
  }

  double operator()(int64_t b, int64_t h, int64_t i, int64_t j) const {
    double bias = 0;
    if (mask_) {
      const Shape& m = p_.mask_shape;
      if (j >= m.back()) {
        bias = kNegInf;  // ONNX pads a short mask with masked keys
      } else {
        const int64_t coord[4] = {b, h, i, j};
        int64_t off = 0;
        for (size_t d = 0; d < m.size(); ++d)
          if (m[d] != 1) off += coord[lead_ + d] * strides_[d];
        double v = mask_->get_f64(off);
        bias = p_.mask_is_bool ? (v != 0 ? 0.0 : kNegInf) : v;
      }
    }
    const int64_t offset = p_.has_nonpad ? nonpad_[static_cast<size_t>(b)] - p_.q_len : p_.past_len;
    if (p_.is_causal && j > i + offset) bias += kNegInf;
    if (p_.left_window >= 0 || p_.right_window >= 0) {
      const int64_t diff = i + offset - j;
      bool allowed = (p_.left_window < 0 || diff <= p_.left_window) &&
                     (p_.right_window < 0 || -diff <= p_.right_window);
      if (!allowed) bias += kNegInf;
    }
    if (p_.has_nonpad && j >= nonpad_[static_cast<size_t>(b)]) bias += kNegInf;
    return bias;
  }

 private:
  const AttentionParams& p_;
  const Tensor* mask_ = nullptr;
  std::vector<int64_t> strides_;
  size_t lead_ = 0;
  std::vector<int64_t> nonpad_;
};

}  // namespace

Status run_Attention(KernelContext& ctx) {
  std::vector<const Shape*> shapes;
  std::vector<ir::DType> dtypes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    shapes.push_back(ctx.has_input(i) ? &ctx.in(i).shape() : nullptr);
    dtypes.push_back(ctx.has_input(i) ? ctx.in(i).dtype() : ir::DType::kUndefined);
  }
  ASSIGN_OR_RETURN(AttentionParams p, ir::attention_params(ctx.attrs(), shapes, dtypes));
  const Tensor& q = ctx.in(ir::kAttnQ);
  const Tensor* past_k = p.has_past ? &ctx.in(ir::kAttnPastKey) : nullptr;
  const Tensor* past_v = p.has_past ? &ctx.in(ir::kAttnPastValue) : nullptr;
  const std::vector<double> k = present(p, past_k, ctx.in(ir::kAttnK), p.head_size);
  const std::vector<double> v = present(p, past_v, ctx.in(ir::kAttnV), p.v_head_size);
  auto wants = [&](size_t o) {
    return o < ctx.node.outputs.size() && ctx.node.outputs[o] != ir::kNoValue;
  };
  for (auto [o, src] : {std::pair{ir::kAttnPresentKey, &k}, std::pair{ir::kAttnPresentValue, &v}})
    if (wants(o))
      for (size_t e = 0; e < src->size(); ++e)
        ctx.out(o).set_f64(static_cast<int64_t>(e), (*src)[e]);
  const bool qk_out = wants(ir::kAttnQkMatmulOutput);
  const Bias bias_of(p, ctx);
  // ONNX scales Q and K by sqrt(scale) each (a negative scale gives NaN there too).
  const double root = std::sqrt(p.scale);
  const int64_t T = p.total_len, D = p.head_size, Dv = p.v_head_size;
  std::vector<double> qrow(static_cast<size_t>(D)), s(static_cast<size_t>(T)),
      bias(static_cast<size_t>(T)), x(static_cast<size_t>(T)), y(static_cast<size_t>(Dv));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const int64_t kvh = h / p.group();
      const double* kb = k.data() + (b * p.kv_heads + kvh) * T * D;
      const double* vb = v.data() + (b * p.kv_heads + kvh) * T * Dv;
      for (int64_t i = 0; i < p.q_len; ++i) {
        for (int64_t d = 0; d < D; ++d)
          qrow[static_cast<size_t>(d)] =
              root * (p.three_d ? q.get_f64(((b * p.q_len + i) * p.q_heads + h) * D + d)
                                : q.get_f64(((b * p.q_heads + h) * p.q_len + i) * D + d));
        bool all_masked = T > 0;
        double mx = kNegInf;
        bool nan = false;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += qrow[static_cast<size_t>(d)] * (root * kb[j * D + d]);
          if (p.softcap > 0) dot = p.softcap * std::tanh(dot / p.softcap);
          const auto ju = static_cast<size_t>(j);
          s[ju] = dot;
          bias[ju] = bias_of(b, h, i, j);
          all_masked = all_masked && bias[ju] == kNegInf;
          x[ju] = dot + bias[ju];
          nan = nan || std::isnan(x[ju]);
          mx = std::max(mx, x[ju]);
        }
        // Probabilities in x: softmax, NaN in gives NaN out (as numpy's max),
        // an all -inf row gives 0, and a fully masked row is 0.
        const int64_t qk_base = ((b * p.q_heads + h) * p.q_len + i) * T;
        if (qk_out && p.qk_mode != ir::QkOutputMode::kProbabilities)
          for (int64_t j = 0; j < T; ++j)
            ctx.out(ir::kAttnQkMatmulOutput)
                .set_f64(qk_base + j, p.qk_mode == ir::QkOutputMode::kMasked
                                          ? x[static_cast<size_t>(j)]
                                          : s[static_cast<size_t>(j)]);
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          auto ju = static_cast<size_t>(j);
          x[ju] = nan ? std::nan("") : mx == kNegInf ? 0.0 : std::exp(x[ju] - mx);
          sum += x[ju];
        }
        for (int64_t j = 0; j < T; ++j) {
          auto ju = static_cast<size_t>(j);
          x[ju] = all_masked ? 0.0 : sum == 0 ? x[ju] : x[ju] / sum;
        }
        if (qk_out && p.qk_mode == ir::QkOutputMode::kProbabilities)
          for (int64_t j = 0; j < T; ++j)
            ctx.out(ir::kAttnQkMatmulOutput).set_f64(qk_base + j, x[static_cast<size_t>(j)]);
        std::fill(y.begin(), y.end(), 0.0);
        for (int64_t j = 0; j < T; ++j) {
          const double pj = x[static_cast<size_t>(j)];
          for (int64_t e = 0; e < Dv; ++e) y[static_cast<size_t>(e)] += pj * vb[j * Dv + e];
        }
        for (int64_t e = 0; e < Dv; ++e) {
          int64_t off = p.three_d ? ((b * p.q_len + i) * p.q_heads + h) * Dv + e
                                  : ((b * p.q_heads + h) * p.q_len + i) * Dv + e;
          ctx.out(ir::kAttnY).set_f64(off, y[static_cast<size_t>(e)]);
        }
      }
    }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
