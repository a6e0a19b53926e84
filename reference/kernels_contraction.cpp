// STUB: to be implemented
#include "reference/kernels.h"

namespace graphc::reference::kernels {

Status run_MatMul(KernelContext& ctx) { return unsupported("MatMul: reference kernel not implemented"); }
Status run_Gemm(KernelContext& ctx) { return unsupported("Gemm: reference kernel not implemented"); }
Status run_Einsum(KernelContext& ctx) { return unsupported("Einsum: reference kernel not implemented"); }
Status run_Conv(KernelContext& ctx) { return unsupported("Conv: reference kernel not implemented"); }
Status run_ConvTranspose(KernelContext& ctx) { return unsupported("ConvTranspose: reference kernel not implemented"); }

}  // namespace graphc::reference::kernels
