// Folds an inference BatchNormalization into the Conv that feeds it:
//   y = s * (conv(x, W) + B - mean) / sqrt(var + eps) + beta
//     = conv(x, W * k) + (B - mean) * k + beta,   k = s / sqrt(var + eps) per output channel.
// Needs constant W, B and BN parameters, and the Conv output read only by the BN.
#include <cmath>

#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::ValueId;

Status fold_batchnorm_into_conv(Graph& g, PassContext& ctx) {
  for (auto& bn : g.nodes) {
    if (bn.dead || bn.op != OpKind::BatchNormalization || bn.outputs.size() != 1) continue;
    ir::NodeId conv_id = g.value(bn.inputs[0]).producer;
    if (conv_id < 0) continue;
    Node& conv = g.node(conv_id);
    if (conv.dead || conv.op != OpKind::Conv || consumer_count(g, conv.outputs[0]) != 1 ||
        g.is_graph_output(conv.outputs[0]))
      continue;
    if (!is_constant(g, conv.inputs[1]) || (conv.has_input(2) && !is_constant(g, conv.inputs[2])))
      continue;
    bool params_const = true;
    for (size_t k = 1; k < 5; ++k) params_const = params_const && is_constant(g, bn.inputs[k]);
    if (!params_const) continue;
    const ir::Tensor& w = *g.value(conv.inputs[1]).constant;
    const ir::Tensor& scale = *g.value(bn.inputs[1]).constant;
    const ir::Tensor& beta = *g.value(bn.inputs[2]).constant;
    const ir::Tensor& mean = *g.value(bn.inputs[3]).constant;
    const ir::Tensor& var = *g.value(bn.inputs[4]).constant;
    int64_t m = w.shape()[0];
    if (scale.numel() != m || beta.numel() != m || mean.numel() != m || var.numel() != m) continue;
    double eps = bn.attrs.get_float("epsilon", 1e-5);
    ir::Tensor new_w(w.dtype(), w.shape());
    ir::Tensor new_b(w.dtype(), {m});
    int64_t per_channel = w.numel() / m;
    for (int64_t c = 0; c < m; ++c) {
      double k = scale.get_f64(c) / std::sqrt(var.get_f64(c) + eps);
      for (int64_t j = 0; j < per_channel; ++j)
        new_w.set_f64(c * per_channel + j, w.get_f64(c * per_channel + j) * k);
      double b = conv.has_input(2) ? g.value(conv.inputs[2]).constant->get_f64(c) : 0.0;
      new_b.set_f64(c, (b - mean.get_f64(c)) * k + beta.get_f64(c));
    }
    ValueId wid = g.add_constant(g.unique_name(conv.name + "/W_bn_folded"), std::move(new_w));
    ValueId bid = g.add_constant(g.unique_name(conv.name + "/B_bn_folded"), std::move(new_b));
    g.value(wid).is_initializer = g.value(bid).is_initializer = true;
    // The conv now writes the BN's output value (keeping its name).
    Node& conv_ref = g.node(conv_id);
    conv_ref.inputs.resize(3);
    conv_ref.inputs[1] = wid;
    conv_ref.inputs[2] = bid;
    conv_ref.outputs[0] = bn.outputs[0];
    conv_ref.absorbed.push_back(bn.name);
    bn.dead = true;
    g.rebuild_producers();
    ctx.count("fold-batchnorm: batch norms folded into conv");
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
