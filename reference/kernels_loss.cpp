// Reference kernels of the losses NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (ONNX opsets 12/13).
//
// The input [N, C, d1..dk] is viewed as [N, C, D] (D = d1*..*dk, 1 for rank 2)
// and the target [N, d1..dk] as [N, D]. For each (n, d) with target t:
//   t == ignore_index:  loss 0, weight 0
//   otherwise:          0 <= t < C or an error; w = weight[t] (1 without weight),
//                       loss = -w * v[n, t, d]
// where v is the input (NLL) or log_softmax of the input over axis 1 (SCE).
// reduction "none" stores the per-element losses, "sum" their sum, "mean"
// sum(loss) / sum(w) (ignored elements count in neither). Everything is
// computed in double; fp16/bf16/float32 widen exactly and round once on store.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "reference/kernels.h"

namespace graphc::reference::kernels {

using ir::Tensor;

namespace {

Status run_loss(KernelContext& ctx, bool softmax) {
  const Tensor& x = ctx.in(0);
  const Tensor& target = ctx.in(1);
  const Tensor* weight = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  const auto& shape = x.shape();
  if (shape.size() < 2) return invalid_model("input 0 (input) must have rank >= 2");
  const int64_t n_batch = shape[0], classes = shape[1];
  int64_t inner = 1;
  for (size_t i = 2; i < shape.size(); ++i) inner *= shape[i];
  if (target.numel() != n_batch * inner)
    return invalid_model("input 1 (target) has {} elements, expected {}", target.numel(),
                         n_batch * inner);
  if (weight && weight->numel() != classes)
    return invalid_model("input 2 (weight) has {} elements, expected C = {}", weight->numel(),
                         classes);

  std::optional<int64_t> ignore;
  if (ctx.attrs().has("ignore_index")) ignore = ctx.attrs().get_int("ignore_index", 0);
  const std::string reduction = ctx.attrs().get_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return invalid_model("attribute reduction = '{}'; expected 'none', 'sum' or 'mean'", reduction);

  // v: the values the loss gathers from (log-probabilities for SCE), in double.
  std::vector<double> v(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) v[static_cast<size_t>(i)] = x.get_f64(i);
  if (softmax) {
    for (int64_t n = 0; n < n_batch; ++n)
      for (int64_t d = 0; d < inner; ++d) {
        auto at = [&](int64_t c) -> double& {
          return v[static_cast<size_t>((n * classes + c) * inner + d)];
        };
        if (classes == 0) continue;
        double mx = at(0);
        for (int64_t c = 1; c < classes; ++c) mx = std::max(mx, at(c));
        double sum = 0;
        for (int64_t c = 0; c < classes; ++c) sum += std::exp(at(c) - mx);
        double log_sum = std::log(sum);
        for (int64_t c = 0; c < classes; ++c) at(c) = at(c) - mx - log_sum;
      }
    bool want_log_prob = ctx.node.outputs.size() > 1 && ctx.node.outputs[1] != ir::kNoValue;
    if (want_log_prob)
      for (int64_t i = 0; i < x.numel(); ++i) ctx.out(1).set_f64(i, v[static_cast<size_t>(i)]);
  }

  Tensor& out = ctx.out(0);
  double loss_sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t d = 0; d < inner; ++d) {
      const int64_t flat = n * inner + d;
      const int64_t t = target.get_i64(flat);
      double loss = 0, w = 0;
      if (!(ignore && t == *ignore)) {
        if (t < 0 || t >= classes)
          return out_of_range(
              "input 1 (target) element {} = {} is out of range: classes are [0, {}){}", flat, t,
              classes, ignore ? fmt::format(" and ignore_index is {}", *ignore) : std::string());
        w = weight ? weight->get_f64(t) : 1.0;
        loss = -w * v[static_cast<size_t>((n * classes + t) * inner + d)];
      }
      if (reduction == "none") out.set_f64(flat, loss);
      loss_sum += loss;
      weight_sum += w;
    }
  if (reduction == "sum") out.set_f64(0, loss_sum);
  if (reduction == "mean") out.set_f64(0, loss_sum / weight_sum);
  return Status::ok_status();
}

}  // namespace

Status run_NegativeLogLikelihoodLoss(KernelContext& ctx) { return run_loss(ctx, false); }
Status run_SoftmaxCrossEntropyLoss(KernelContext& ctx) { return run_loss(ctx, true); }

}  // namespace graphc::reference::kernels
