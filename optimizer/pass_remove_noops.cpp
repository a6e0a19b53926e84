// Removes nodes that compute nothing at inference: Identity, Dropout (its
// mask output unused), Cast to the same dtype, Reshape/Flatten/Squeeze/
// Unsqueeze/Expand whose output shape equals the input shape.
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

namespace {
bool is_noop(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.empty() || n.inputs[0] == ir::kNoValue || n.outputs.empty()) return false;
  const ir::Value& in = g.value(n.inputs[0]);
  const ir::Value& out = g.value(n.outputs[0]);
  bool same_type = in.dtype == out.dtype && in.shape == out.shape;
  switch (n.op) {
    case ir::OpKind::Identity: return true;
    case ir::OpKind::Dropout:
      // Only the data output may be read; a read mask stays (it is all-true, but keep it simple).
      return n.outputs.size() < 2 || n.outputs[1] == ir::kNoValue ||
             g.consumers(n.outputs[1]).empty();
    case ir::OpKind::Cast:
    case ir::OpKind::CastLike:
    case ir::OpKind::Reshape:
    case ir::OpKind::Flatten:
    case ir::OpKind::Squeeze:
    case ir::OpKind::Unsqueeze:
    case ir::OpKind::Expand: return same_type;
    default: return false;
  }
}
}  // namespace

Status remove_noops(ir::Graph& g, PassContext& ctx) {
  for (auto& n : g.nodes) {
    // CastLike reads its second input only for the dtype: as a Cast it no
    // longer looks like a two-input (broadcasting) op to fusion and codegen.
    if (!n.dead && n.op == ir::OpKind::CastLike && n.inputs.size() == 2) {
      const ir::DType to = g.value(n.inputs[1]).dtype;
      n.op = ir::OpKind::Cast;
      n.inputs.resize(1);
      n.attrs.set("to",
                  ir::Attribute::of_int(static_cast<int64_t>(to)));  // DType numbers are ONNX's
      ctx.count("remove-noops: CastLike became Cast");
    }
    if (n.dead || !is_noop(g, n)) continue;
    if (n.op == ir::OpKind::Dropout && n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue &&
        g.is_graph_output(n.outputs[1]))
      continue;
    if (!bypass_value(g, n.outputs[0], n.inputs[0])) continue;
    n.dead = true;
    ctx.count("remove-noops: nodes removed");
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
