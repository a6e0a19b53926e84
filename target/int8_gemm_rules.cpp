#include "target/int8_gemm_rules.h"

namespace graphc::target {

Status int8_gemm_takes(const ir::Graph& g, const ir::Node& n) {
  if (n.op != ir::OpKind::MatMulInteger) return unsupported("not a MatMulInteger");
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return unsupported("needs A, B and Y");
  if (n.has_input(2) || n.has_input(3)) return unsupported("it has zero points");
  const ir::Value& a = g.value(n.inputs[0]);
  const ir::Value& b = g.value(n.inputs[1]);
  const ir::Value& y = g.value(n.outputs[0]);
  if (!a.has_shape || !b.has_shape || !y.has_shape) return unsupported("shapes unknown");
  if (a.dtype != ir::DType::kInt8 || b.dtype != ir::DType::kInt8)
    return unsupported("operands are {} x {}, not int8 x int8", ir::dtype_name(a.dtype),
                       ir::dtype_name(b.dtype));
  if (y.dtype != ir::DType::kInt32) return unsupported("output is not int32");
  if (a.shape.size() < 2 || b.shape.size() != 2)
    return unsupported("needs A of rank >= 2 and a 2-D B");
  return Status::ok_status();
}

}  // namespace graphc::target
