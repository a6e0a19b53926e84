// STUB: to be implemented
#include "reference/kernels.h"

namespace graphc::reference::kernels {

Status run_MaxPool(KernelContext& ctx) { return unsupported("MaxPool: reference kernel not implemented"); }
Status run_AveragePool(KernelContext& ctx) { return unsupported("AveragePool: reference kernel not implemented"); }
Status run_GlobalAveragePool(KernelContext& ctx) { return unsupported("GlobalAveragePool: reference kernel not implemented"); }
Status run_GlobalMaxPool(KernelContext& ctx) { return unsupported("GlobalMaxPool: reference kernel not implemented"); }
Status run_Resize(KernelContext& ctx) { return unsupported("Resize: reference kernel not implemented"); }

}  // namespace graphc::reference::kernels
