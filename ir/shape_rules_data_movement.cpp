// STUB: to be implemented
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

Status infer_Shape(ShapeContext& ctx) { return unsupported("Shape: shape rule not implemented"); }
Status infer_Size(ShapeContext& ctx) { return unsupported("Size: shape rule not implemented"); }
Status infer_Reshape(ShapeContext& ctx) { return unsupported("Reshape: shape rule not implemented"); }
Status infer_Flatten(ShapeContext& ctx) { return unsupported("Flatten: shape rule not implemented"); }
Status infer_Squeeze(ShapeContext& ctx) { return unsupported("Squeeze: shape rule not implemented"); }
Status infer_Unsqueeze(ShapeContext& ctx) { return unsupported("Unsqueeze: shape rule not implemented"); }
Status infer_Transpose(ShapeContext& ctx) { return unsupported("Transpose: shape rule not implemented"); }
Status infer_Concat(ShapeContext& ctx) { return unsupported("Concat: shape rule not implemented"); }
Status infer_Split(ShapeContext& ctx) { return unsupported("Split: shape rule not implemented"); }
Status infer_Slice(ShapeContext& ctx) { return unsupported("Slice: shape rule not implemented"); }
Status infer_Gather(ShapeContext& ctx) { return unsupported("Gather: shape rule not implemented"); }
Status infer_GatherElements(ShapeContext& ctx) { return unsupported("GatherElements: shape rule not implemented"); }
Status infer_GatherND(ShapeContext& ctx) { return unsupported("GatherND: shape rule not implemented"); }
Status infer_ScatterElements(ShapeContext& ctx) { return unsupported("ScatterElements: shape rule not implemented"); }
Status infer_ScatterND(ShapeContext& ctx) { return unsupported("ScatterND: shape rule not implemented"); }
Status infer_Expand(ShapeContext& ctx) { return unsupported("Expand: shape rule not implemented"); }
Status infer_Tile(ShapeContext& ctx) { return unsupported("Tile: shape rule not implemented"); }
Status infer_Pad(ShapeContext& ctx) { return unsupported("Pad: shape rule not implemented"); }
Status infer_ConstantOfShape(ShapeContext& ctx) { return unsupported("ConstantOfShape: shape rule not implemented"); }
Status infer_Range(ShapeContext& ctx) { return unsupported("Range: shape rule not implemented"); }
Status infer_Trilu(ShapeContext& ctx) { return unsupported("Trilu: shape rule not implemented"); }
Status infer_DepthToSpace(ShapeContext& ctx) { return unsupported("DepthToSpace: shape rule not implemented"); }
Status infer_SpaceToDepth(ShapeContext& ctx) { return unsupported("SpaceToDepth: shape rule not implemented"); }
Status infer_OneHot(ShapeContext& ctx) { return unsupported("OneHot: shape rule not implemented"); }
Status infer_EyeLike(ShapeContext& ctx) { return unsupported("EyeLike: shape rule not implemented"); }
Status infer_CumSum(ShapeContext& ctx) { return unsupported("CumSum: shape rule not implemented"); }

}  // namespace graphc::ir::shape_rules
