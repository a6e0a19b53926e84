// STUB: to be implemented
#include "reference/kernels.h"

namespace graphc::reference::kernels {

Status run_Shape(KernelContext& ctx) { return unsupported("Shape: reference kernel not implemented"); }
Status run_Size(KernelContext& ctx) { return unsupported("Size: reference kernel not implemented"); }
Status run_Reshape(KernelContext& ctx) { return unsupported("Reshape: reference kernel not implemented"); }
Status run_Flatten(KernelContext& ctx) { return unsupported("Flatten: reference kernel not implemented"); }
Status run_Squeeze(KernelContext& ctx) { return unsupported("Squeeze: reference kernel not implemented"); }
Status run_Unsqueeze(KernelContext& ctx) { return unsupported("Unsqueeze: reference kernel not implemented"); }
Status run_Transpose(KernelContext& ctx) { return unsupported("Transpose: reference kernel not implemented"); }
Status run_Concat(KernelContext& ctx) { return unsupported("Concat: reference kernel not implemented"); }
Status run_Split(KernelContext& ctx) { return unsupported("Split: reference kernel not implemented"); }
Status run_Slice(KernelContext& ctx) { return unsupported("Slice: reference kernel not implemented"); }
Status run_Gather(KernelContext& ctx) { return unsupported("Gather: reference kernel not implemented"); }
Status run_GatherElements(KernelContext& ctx) { return unsupported("GatherElements: reference kernel not implemented"); }
Status run_GatherND(KernelContext& ctx) { return unsupported("GatherND: reference kernel not implemented"); }
Status run_ScatterElements(KernelContext& ctx) { return unsupported("ScatterElements: reference kernel not implemented"); }
Status run_ScatterND(KernelContext& ctx) { return unsupported("ScatterND: reference kernel not implemented"); }
Status run_Expand(KernelContext& ctx) { return unsupported("Expand: reference kernel not implemented"); }
Status run_Tile(KernelContext& ctx) { return unsupported("Tile: reference kernel not implemented"); }
Status run_Pad(KernelContext& ctx) { return unsupported("Pad: reference kernel not implemented"); }
Status run_ConstantOfShape(KernelContext& ctx) { return unsupported("ConstantOfShape: reference kernel not implemented"); }
Status run_Range(KernelContext& ctx) { return unsupported("Range: reference kernel not implemented"); }
Status run_Trilu(KernelContext& ctx) { return unsupported("Trilu: reference kernel not implemented"); }
Status run_DepthToSpace(KernelContext& ctx) { return unsupported("DepthToSpace: reference kernel not implemented"); }
Status run_SpaceToDepth(KernelContext& ctx) { return unsupported("SpaceToDepth: reference kernel not implemented"); }
Status run_OneHot(KernelContext& ctx) { return unsupported("OneHot: reference kernel not implemented"); }
Status run_EyeLike(KernelContext& ctx) { return unsupported("EyeLike: reference kernel not implemented"); }
Status run_CumSum(KernelContext& ctx) { return unsupported("CumSum: reference kernel not implemented"); }

}  // namespace graphc::reference::kernels
