#include "optimizer/node_builder.h"

namespace graphc::optimizer {

ir::ValueId NodeBuilder::value(const std::string& hint, ir::DType dtype, const ir::Shape& shape) {
  ir::Value v;
  v.name = g.unique_name(src_name + "/" + hint);
  v.dtype = dtype;
  v.shape = shape;
  v.has_shape = true;
  return g.add_value(std::move(v));
}

ir::ValueId NodeBuilder::constant(const std::string& hint, ir::Tensor t) {
  return g.add_constant(g.unique_name(src_name + "/" + hint), std::move(t));
}

ir::ValueId NodeBuilder::emit(ir::OpKind op, const std::string& hint,
                              std::vector<ir::ValueId> inputs, ir::DType dtype,
                              const ir::Shape& shape, ir::ValueId result, ir::AttributeMap attrs) {
  ir::Node n;
  n.op = op;
  n.name = g.unique_name(src_name + "/" + hint);
  n.inputs = std::move(inputs);
  n.outputs = {result == ir::kNoValue ? value(hint, dtype, shape) : result};
  n.attrs = std::move(attrs);
  n.absorbed = {src_name};
  out.push_back(std::move(n));
  return out.back().outputs[0];
}

ir::ValueId NodeBuilder::cast(const std::string& hint, ir::ValueId in, ir::DType to,
                              ir::ValueId result) {
  ir::AttributeMap a;
  a.set("to", ir::Attribute::of_int(static_cast<int64_t>(to)));
  const ir::Shape s = shape(in);
  return emit(ir::OpKind::Cast, hint, {in}, to, s, result, std::move(a));
}

ir::ValueId NodeBuilder::reshape(const std::string& hint, ir::ValueId in, const ir::Shape& to) {
  if (shape(in) == to) return in;
  ir::ValueId target = constant(hint + "_shape", ir::Tensor::from_i64(
                                                     std::vector<int64_t>(to.begin(), to.end()),
                                                     {static_cast<int64_t>(to.size())}));
  const ir::DType d = dtype(in);
  return emit(ir::OpKind::Reshape, hint, {in, target}, d, to);
}

}  // namespace graphc::optimizer
