// STUB: to be implemented
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

Status infer_MatMul(ShapeContext& ctx) { return unsupported("MatMul: shape rule not implemented"); }
Status infer_Gemm(ShapeContext& ctx) { return unsupported("Gemm: shape rule not implemented"); }
Status infer_Einsum(ShapeContext& ctx) { return unsupported("Einsum: shape rule not implemented"); }
Status infer_Conv(ShapeContext& ctx) { return unsupported("Conv: shape rule not implemented"); }
Status infer_ConvTranspose(ShapeContext& ctx) { return unsupported("ConvTranspose: shape rule not implemented"); }

}  // namespace graphc::ir::shape_rules
