// STUB: to be implemented
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

Status infer_Abs(ShapeContext& ctx) { return unsupported("Abs: shape rule not implemented"); }
Status infer_Neg(ShapeContext& ctx) { return unsupported("Neg: shape rule not implemented"); }
Status infer_Exp(ShapeContext& ctx) { return unsupported("Exp: shape rule not implemented"); }
Status infer_Log(ShapeContext& ctx) { return unsupported("Log: shape rule not implemented"); }
Status infer_Sqrt(ShapeContext& ctx) { return unsupported("Sqrt: shape rule not implemented"); }
Status infer_Reciprocal(ShapeContext& ctx) { return unsupported("Reciprocal: shape rule not implemented"); }
Status infer_Sigmoid(ShapeContext& ctx) { return unsupported("Sigmoid: shape rule not implemented"); }
Status infer_Tanh(ShapeContext& ctx) { return unsupported("Tanh: shape rule not implemented"); }
Status infer_Relu(ShapeContext& ctx) { return unsupported("Relu: shape rule not implemented"); }
Status infer_LeakyRelu(ShapeContext& ctx) { return unsupported("LeakyRelu: shape rule not implemented"); }
Status infer_Elu(ShapeContext& ctx) { return unsupported("Elu: shape rule not implemented"); }
Status infer_Selu(ShapeContext& ctx) { return unsupported("Selu: shape rule not implemented"); }
Status infer_Celu(ShapeContext& ctx) { return unsupported("Celu: shape rule not implemented"); }
Status infer_HardSigmoid(ShapeContext& ctx) { return unsupported("HardSigmoid: shape rule not implemented"); }
Status infer_HardSwish(ShapeContext& ctx) { return unsupported("HardSwish: shape rule not implemented"); }
Status infer_Softplus(ShapeContext& ctx) { return unsupported("Softplus: shape rule not implemented"); }
Status infer_Softsign(ShapeContext& ctx) { return unsupported("Softsign: shape rule not implemented"); }
Status infer_Erf(ShapeContext& ctx) { return unsupported("Erf: shape rule not implemented"); }
Status infer_Gelu(ShapeContext& ctx) { return unsupported("Gelu: shape rule not implemented"); }
Status infer_Sin(ShapeContext& ctx) { return unsupported("Sin: shape rule not implemented"); }
Status infer_Cos(ShapeContext& ctx) { return unsupported("Cos: shape rule not implemented"); }
Status infer_Tan(ShapeContext& ctx) { return unsupported("Tan: shape rule not implemented"); }
Status infer_Asin(ShapeContext& ctx) { return unsupported("Asin: shape rule not implemented"); }
Status infer_Acos(ShapeContext& ctx) { return unsupported("Acos: shape rule not implemented"); }
Status infer_Atan(ShapeContext& ctx) { return unsupported("Atan: shape rule not implemented"); }
Status infer_Sinh(ShapeContext& ctx) { return unsupported("Sinh: shape rule not implemented"); }
Status infer_Cosh(ShapeContext& ctx) { return unsupported("Cosh: shape rule not implemented"); }
Status infer_Asinh(ShapeContext& ctx) { return unsupported("Asinh: shape rule not implemented"); }
Status infer_Acosh(ShapeContext& ctx) { return unsupported("Acosh: shape rule not implemented"); }
Status infer_Atanh(ShapeContext& ctx) { return unsupported("Atanh: shape rule not implemented"); }
Status infer_Floor(ShapeContext& ctx) { return unsupported("Floor: shape rule not implemented"); }
Status infer_Ceil(ShapeContext& ctx) { return unsupported("Ceil: shape rule not implemented"); }
Status infer_Round(ShapeContext& ctx) { return unsupported("Round: shape rule not implemented"); }
Status infer_Sign(ShapeContext& ctx) { return unsupported("Sign: shape rule not implemented"); }
Status infer_Not(ShapeContext& ctx) { return unsupported("Not: shape rule not implemented"); }
Status infer_IsNaN(ShapeContext& ctx) { return unsupported("IsNaN: shape rule not implemented"); }
Status infer_IsInf(ShapeContext& ctx) { return unsupported("IsInf: shape rule not implemented"); }
Status infer_Shrink(ShapeContext& ctx) { return unsupported("Shrink: shape rule not implemented"); }
Status infer_ThresholdedRelu(ShapeContext& ctx) { return unsupported("ThresholdedRelu: shape rule not implemented"); }
Status infer_Add(ShapeContext& ctx) { return unsupported("Add: shape rule not implemented"); }
Status infer_Sub(ShapeContext& ctx) { return unsupported("Sub: shape rule not implemented"); }
Status infer_Mul(ShapeContext& ctx) { return unsupported("Mul: shape rule not implemented"); }
Status infer_Div(ShapeContext& ctx) { return unsupported("Div: shape rule not implemented"); }
Status infer_Pow(ShapeContext& ctx) { return unsupported("Pow: shape rule not implemented"); }
Status infer_Mod(ShapeContext& ctx) { return unsupported("Mod: shape rule not implemented"); }
Status infer_And(ShapeContext& ctx) { return unsupported("And: shape rule not implemented"); }
Status infer_Or(ShapeContext& ctx) { return unsupported("Or: shape rule not implemented"); }
Status infer_Xor(ShapeContext& ctx) { return unsupported("Xor: shape rule not implemented"); }
Status infer_BitShift(ShapeContext& ctx) { return unsupported("BitShift: shape rule not implemented"); }
Status infer_Equal(ShapeContext& ctx) { return unsupported("Equal: shape rule not implemented"); }
Status infer_Less(ShapeContext& ctx) { return unsupported("Less: shape rule not implemented"); }
Status infer_LessOrEqual(ShapeContext& ctx) { return unsupported("LessOrEqual: shape rule not implemented"); }
Status infer_Greater(ShapeContext& ctx) { return unsupported("Greater: shape rule not implemented"); }
Status infer_GreaterOrEqual(ShapeContext& ctx) { return unsupported("GreaterOrEqual: shape rule not implemented"); }
Status infer_PRelu(ShapeContext& ctx) { return unsupported("PRelu: shape rule not implemented"); }
Status infer_Max(ShapeContext& ctx) { return unsupported("Max: shape rule not implemented"); }
Status infer_Min(ShapeContext& ctx) { return unsupported("Min: shape rule not implemented"); }
Status infer_Mean(ShapeContext& ctx) { return unsupported("Mean: shape rule not implemented"); }
Status infer_Sum(ShapeContext& ctx) { return unsupported("Sum: shape rule not implemented"); }
Status infer_Where(ShapeContext& ctx) { return unsupported("Where: shape rule not implemented"); }
Status infer_Clip(ShapeContext& ctx) { return unsupported("Clip: shape rule not implemented"); }
Status infer_Cast(ShapeContext& ctx) { return unsupported("Cast: shape rule not implemented"); }
Status infer_CastLike(ShapeContext& ctx) { return unsupported("CastLike: shape rule not implemented"); }
Status infer_Identity(ShapeContext& ctx) { return unsupported("Identity: shape rule not implemented"); }
Status infer_Dropout(ShapeContext& ctx) { return unsupported("Dropout: shape rule not implemented"); }

}  // namespace graphc::ir::shape_rules
