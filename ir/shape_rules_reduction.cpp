// STUB: to be implemented
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

Status infer_ReduceSum(ShapeContext& ctx) { return unsupported("ReduceSum: shape rule not implemented"); }
Status infer_ReduceMean(ShapeContext& ctx) { return unsupported("ReduceMean: shape rule not implemented"); }
Status infer_ReduceMax(ShapeContext& ctx) { return unsupported("ReduceMax: shape rule not implemented"); }
Status infer_ReduceMin(ShapeContext& ctx) { return unsupported("ReduceMin: shape rule not implemented"); }
Status infer_ReduceProd(ShapeContext& ctx) { return unsupported("ReduceProd: shape rule not implemented"); }
Status infer_ReduceL1(ShapeContext& ctx) { return unsupported("ReduceL1: shape rule not implemented"); }
Status infer_ReduceL2(ShapeContext& ctx) { return unsupported("ReduceL2: shape rule not implemented"); }
Status infer_ReduceLogSum(ShapeContext& ctx) { return unsupported("ReduceLogSum: shape rule not implemented"); }
Status infer_ReduceLogSumExp(ShapeContext& ctx) { return unsupported("ReduceLogSumExp: shape rule not implemented"); }
Status infer_ReduceSumSquare(ShapeContext& ctx) { return unsupported("ReduceSumSquare: shape rule not implemented"); }
Status infer_ArgMax(ShapeContext& ctx) { return unsupported("ArgMax: shape rule not implemented"); }
Status infer_ArgMin(ShapeContext& ctx) { return unsupported("ArgMin: shape rule not implemented"); }
Status infer_Softmax(ShapeContext& ctx) { return unsupported("Softmax: shape rule not implemented"); }
Status infer_LogSoftmax(ShapeContext& ctx) { return unsupported("LogSoftmax: shape rule not implemented"); }
Status infer_Hardmax(ShapeContext& ctx) { return unsupported("Hardmax: shape rule not implemented"); }
Status infer_TopK(ShapeContext& ctx) { return unsupported("TopK: shape rule not implemented"); }

}  // namespace graphc::ir::shape_rules
