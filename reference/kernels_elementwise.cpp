// STUB: to be implemented
#include "reference/kernels.h"

namespace graphc::reference::kernels {

Status run_Abs(KernelContext& ctx) { return unsupported("Abs: reference kernel not implemented"); }
Status run_Neg(KernelContext& ctx) { return unsupported("Neg: reference kernel not implemented"); }
Status run_Exp(KernelContext& ctx) { return unsupported("Exp: reference kernel not implemented"); }
Status run_Log(KernelContext& ctx) { return unsupported("Log: reference kernel not implemented"); }
Status run_Sqrt(KernelContext& ctx) { return unsupported("Sqrt: reference kernel not implemented"); }
Status run_Reciprocal(KernelContext& ctx) { return unsupported("Reciprocal: reference kernel not implemented"); }
Status run_Sigmoid(KernelContext& ctx) { return unsupported("Sigmoid: reference kernel not implemented"); }
Status run_Tanh(KernelContext& ctx) { return unsupported("Tanh: reference kernel not implemented"); }
Status run_Relu(KernelContext& ctx) { return unsupported("Relu: reference kernel not implemented"); }
Status run_LeakyRelu(KernelContext& ctx) { return unsupported("LeakyRelu: reference kernel not implemented"); }
Status run_Elu(KernelContext& ctx) { return unsupported("Elu: reference kernel not implemented"); }
Status run_Selu(KernelContext& ctx) { return unsupported("Selu: reference kernel not implemented"); }
Status run_Celu(KernelContext& ctx) { return unsupported("Celu: reference kernel not implemented"); }
Status run_HardSigmoid(KernelContext& ctx) { return unsupported("HardSigmoid: reference kernel not implemented"); }
Status run_HardSwish(KernelContext& ctx) { return unsupported("HardSwish: reference kernel not implemented"); }
Status run_Softplus(KernelContext& ctx) { return unsupported("Softplus: reference kernel not implemented"); }
Status run_Softsign(KernelContext& ctx) { return unsupported("Softsign: reference kernel not implemented"); }
Status run_Erf(KernelContext& ctx) { return unsupported("Erf: reference kernel not implemented"); }
Status run_Gelu(KernelContext& ctx) { return unsupported("Gelu: reference kernel not implemented"); }
Status run_Sin(KernelContext& ctx) { return unsupported("Sin: reference kernel not implemented"); }
Status run_Cos(KernelContext& ctx) { return unsupported("Cos: reference kernel not implemented"); }
Status run_Tan(KernelContext& ctx) { return unsupported("Tan: reference kernel not implemented"); }
Status run_Asin(KernelContext& ctx) { return unsupported("Asin: reference kernel not implemented"); }
Status run_Acos(KernelContext& ctx) { return unsupported("Acos: reference kernel not implemented"); }
Status run_Atan(KernelContext& ctx) { return unsupported("Atan: reference kernel not implemented"); }
Status run_Sinh(KernelContext& ctx) { return unsupported("Sinh: reference kernel not implemented"); }
Status run_Cosh(KernelContext& ctx) { return unsupported("Cosh: reference kernel not implemented"); }
Status run_Asinh(KernelContext& ctx) { return unsupported("Asinh: reference kernel not implemented"); }
Status run_Acosh(KernelContext& ctx) { return unsupported("Acosh: reference kernel not implemented"); }
Status run_Atanh(KernelContext& ctx) { return unsupported("Atanh: reference kernel not implemented"); }
Status run_Floor(KernelContext& ctx) { return unsupported("Floor: reference kernel not implemented"); }
Status run_Ceil(KernelContext& ctx) { return unsupported("Ceil: reference kernel not implemented"); }
Status run_Round(KernelContext& ctx) { return unsupported("Round: reference kernel not implemented"); }
Status run_Sign(KernelContext& ctx) { return unsupported("Sign: reference kernel not implemented"); }
Status run_Not(KernelContext& ctx) { return unsupported("Not: reference kernel not implemented"); }
Status run_IsNaN(KernelContext& ctx) { return unsupported("IsNaN: reference kernel not implemented"); }
Status run_IsInf(KernelContext& ctx) { return unsupported("IsInf: reference kernel not implemented"); }
Status run_Shrink(KernelContext& ctx) { return unsupported("Shrink: reference kernel not implemented"); }
Status run_ThresholdedRelu(KernelContext& ctx) { return unsupported("ThresholdedRelu: reference kernel not implemented"); }
Status run_Add(KernelContext& ctx) { return unsupported("Add: reference kernel not implemented"); }
Status run_Sub(KernelContext& ctx) { return unsupported("Sub: reference kernel not implemented"); }
Status run_Mul(KernelContext& ctx) { return unsupported("Mul: reference kernel not implemented"); }
Status run_Div(KernelContext& ctx) { return unsupported("Div: reference kernel not implemented"); }
Status run_Pow(KernelContext& ctx) { return unsupported("Pow: reference kernel not implemented"); }
Status run_Mod(KernelContext& ctx) { return unsupported("Mod: reference kernel not implemented"); }
Status run_And(KernelContext& ctx) { return unsupported("And: reference kernel not implemented"); }
Status run_Or(KernelContext& ctx) { return unsupported("Or: reference kernel not implemented"); }
Status run_Xor(KernelContext& ctx) { return unsupported("Xor: reference kernel not implemented"); }
Status run_BitShift(KernelContext& ctx) { return unsupported("BitShift: reference kernel not implemented"); }
Status run_Equal(KernelContext& ctx) { return unsupported("Equal: reference kernel not implemented"); }
Status run_Less(KernelContext& ctx) { return unsupported("Less: reference kernel not implemented"); }
Status run_LessOrEqual(KernelContext& ctx) { return unsupported("LessOrEqual: reference kernel not implemented"); }
Status run_Greater(KernelContext& ctx) { return unsupported("Greater: reference kernel not implemented"); }
Status run_GreaterOrEqual(KernelContext& ctx) { return unsupported("GreaterOrEqual: reference kernel not implemented"); }
Status run_PRelu(KernelContext& ctx) { return unsupported("PRelu: reference kernel not implemented"); }
Status run_Max(KernelContext& ctx) { return unsupported("Max: reference kernel not implemented"); }
Status run_Min(KernelContext& ctx) { return unsupported("Min: reference kernel not implemented"); }
Status run_Mean(KernelContext& ctx) { return unsupported("Mean: reference kernel not implemented"); }
Status run_Sum(KernelContext& ctx) { return unsupported("Sum: reference kernel not implemented"); }
Status run_Where(KernelContext& ctx) { return unsupported("Where: reference kernel not implemented"); }
Status run_Clip(KernelContext& ctx) { return unsupported("Clip: reference kernel not implemented"); }
Status run_Cast(KernelContext& ctx) { return unsupported("Cast: reference kernel not implemented"); }
Status run_CastLike(KernelContext& ctx) { return unsupported("CastLike: reference kernel not implemented"); }
Status run_Identity(KernelContext& ctx) { return unsupported("Identity: reference kernel not implemented"); }
Status run_Dropout(KernelContext& ctx) { return unsupported("Dropout: reference kernel not implemented"); }

}  // namespace graphc::reference::kernels
