// FusedGroup: its outputs are its body's outputs. The body was shape-inferred
// when the group was formed; this rule checks the boundary still agrees.
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

Status infer_FusedGroup(ShapeContext& ctx) {
  const Graph* body = ctx.node().body.get();
  if (!body) return ctx.error("FusedGroup has no body");
  if (body->inputs.size() != ctx.num_inputs() || body->outputs.size() != ctx.num_outputs())
    return ctx.error("FusedGroup body has {} inputs / {} outputs, the node {} / {}",
                     body->inputs.size(), body->outputs.size(), ctx.num_inputs(), ctx.num_outputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Value& bv = body->value(body->inputs[i]);
    if (bv.dtype != ctx.dtype(i) || bv.shape != ctx.shape(i))
      return ctx.error("FusedGroup input {} is {}[{}] but its body expects {}[{}]", i,
                       dtype_name(ctx.dtype(i)), shape_to_string(ctx.shape(i)), dtype_name(bv.dtype),
                       shape_to_string(bv.shape));
  }
  for (size_t o = 0; o < ctx.num_outputs(); ++o) {
    const Value& bv = body->value(body->outputs[o]);
    ctx.set_output(o, bv.dtype, bv.shape);
  }
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
