// STUB: to be implemented
#include "reference/kernels.h"

namespace graphc::reference::kernels {

Status run_BatchNormalization(KernelContext& ctx) { return unsupported("BatchNormalization: reference kernel not implemented"); }
Status run_LayerNormalization(KernelContext& ctx) { return unsupported("LayerNormalization: reference kernel not implemented"); }
Status run_InstanceNormalization(KernelContext& ctx) { return unsupported("InstanceNormalization: reference kernel not implemented"); }
Status run_LRN(KernelContext& ctx) { return unsupported("LRN: reference kernel not implemented"); }
Status run_MeanVarianceNormalization(KernelContext& ctx) { return unsupported("MeanVarianceNormalization: reference kernel not implemented"); }

}  // namespace graphc::reference::kernels
