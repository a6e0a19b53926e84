// STUB: to be implemented
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

Status infer_MaxPool(ShapeContext& ctx) { return unsupported("MaxPool: shape rule not implemented"); }
Status infer_AveragePool(ShapeContext& ctx) { return unsupported("AveragePool: shape rule not implemented"); }
Status infer_GlobalAveragePool(ShapeContext& ctx) { return unsupported("GlobalAveragePool: shape rule not implemented"); }
Status infer_GlobalMaxPool(ShapeContext& ctx) { return unsupported("GlobalMaxPool: shape rule not implemented"); }
Status infer_Resize(ShapeContext& ctx) { return unsupported("Resize: shape rule not implemented"); }

}  // namespace graphc::ir::shape_rules
