// Shape rule for Attention (ONNX opsets 23-25). The checks live in
// ir/attention_params.cpp, shared with the reference kernel.
//   Y:                [B, Hq, Lq, Dv] (4-D inputs) or [B, Lq, Hq*Dv] (3-D inputs)
//   present_key:      [B, Hkv, P+Lkv, D]   present_value: [B, Hkv, P+Lkv, Dv]
//   qk_matmul_output: [B, Hq, Lq, P+Lkv]
// All outputs have Q's dtype.
#include "ir/attention_params.h"
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

Status infer_Attention(ShapeContext& ctx) {
  std::vector<const Shape*> shapes;
  std::vector<DType> dtypes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    shapes.push_back(ctx.has_input(i) ? &ctx.shape(i) : nullptr);
    dtypes.push_back(ctx.has_input(i) ? ctx.dtype(i) : DType::kUndefined);
  }
  ASSIGN_OR_RETURN(AttentionParams p, attention_params(ctx.attrs(), shapes, dtypes));
  const Shape out_shapes[] = {p.y_shape(), p.present_key_shape(), p.present_value_shape(),
                              p.qk_output_shape()};
  for (size_t o = 0; o < ctx.num_outputs() && o < 4; ++o)
    if (ctx.node().outputs[o] != kNoValue) ctx.set_output(o, p.dtype, out_shapes[o]);
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
