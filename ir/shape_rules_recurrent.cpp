// Shape rules for RNN, GRU and LSTM. The checks live in
// ir/recurrent_params.cpp, shared with the reference kernel.
//   Y: [seq, dirs, batch, hidden] (layout 0) or [batch, seq, dirs, hidden] (layout 1)
//   Y_h, Y_c: [dirs, batch, hidden] (layout 0) or [batch, dirs, hidden] (layout 1)
// Every output has X's dtype.
#include "ir/recurrent_params.h"
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {

Status infer_recurrent(ShapeContext& ctx) {
  std::vector<const Shape*> shapes;
  std::vector<DType> dtypes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    shapes.push_back(ctx.has_input(i) ? &ctx.shape(i) : nullptr);
    dtypes.push_back(ctx.has_input(i) ? ctx.dtype(i) : DType::kUndefined);
  }
  ASSIGN_OR_RETURN(RecurrentParams p, recurrent_params(ctx.node().op, ctx.attrs(), shapes, dtypes));
  for (size_t o = 0; o < ctx.num_outputs(); ++o)
    if (ctx.node().outputs[o] != kNoValue)
      ctx.set_output(o, p.dtype, o == 0 ? p.y_shape() : p.state_shape());
  return Status::ok_status();
}

}  // namespace

Status infer_RNN(ShapeContext& ctx) { return infer_recurrent(ctx); }
Status infer_GRU(ShapeContext& ctx) { return infer_recurrent(ctx); }
Status infer_LSTM(ShapeContext& ctx) { return infer_recurrent(ctx); }

}  // namespace graphc::ir::shape_rules
