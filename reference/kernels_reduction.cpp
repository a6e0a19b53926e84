// STUB: to be implemented
#include "reference/kernels.h"

namespace graphc::reference::kernels {

Status run_ReduceSum(KernelContext& ctx) { return unsupported("ReduceSum: reference kernel not implemented"); }
Status run_ReduceMean(KernelContext& ctx) { return unsupported("ReduceMean: reference kernel not implemented"); }
Status run_ReduceMax(KernelContext& ctx) { return unsupported("ReduceMax: reference kernel not implemented"); }
Status run_ReduceMin(KernelContext& ctx) { return unsupported("ReduceMin: reference kernel not implemented"); }
Status run_ReduceProd(KernelContext& ctx) { return unsupported("ReduceProd: reference kernel not implemented"); }
Status run_ReduceL1(KernelContext& ctx) { return unsupported("ReduceL1: reference kernel not implemented"); }
Status run_ReduceL2(KernelContext& ctx) { return unsupported("ReduceL2: reference kernel not implemented"); }
Status run_ReduceLogSum(KernelContext& ctx) { return unsupported("ReduceLogSum: reference kernel not implemented"); }
Status run_ReduceLogSumExp(KernelContext& ctx) { return unsupported("ReduceLogSumExp: reference kernel not implemented"); }
Status run_ReduceSumSquare(KernelContext& ctx) { return unsupported("ReduceSumSquare: reference kernel not implemented"); }
Status run_ArgMax(KernelContext& ctx) { return unsupported("ArgMax: reference kernel not implemented"); }
Status run_ArgMin(KernelContext& ctx) { return unsupported("ArgMin: reference kernel not implemented"); }
Status run_Softmax(KernelContext& ctx) { return unsupported("Softmax: reference kernel not implemented"); }
Status run_LogSoftmax(KernelContext& ctx) { return unsupported("LogSoftmax: reference kernel not implemented"); }
Status run_Hardmax(KernelContext& ctx) { return unsupported("Hardmax: reference kernel not implemented"); }
Status run_TopK(KernelContext& ctx) { return unsupported("TopK: reference kernel not implemented"); }

}  // namespace graphc::reference::kernels
