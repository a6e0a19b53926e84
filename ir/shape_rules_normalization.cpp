// STUB: to be implemented
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

Status infer_BatchNormalization(ShapeContext& ctx) { return unsupported("BatchNormalization: shape rule not implemented"); }
Status infer_LayerNormalization(ShapeContext& ctx) { return unsupported("LayerNormalization: shape rule not implemented"); }
Status infer_InstanceNormalization(ShapeContext& ctx) { return unsupported("InstanceNormalization: shape rule not implemented"); }
Status infer_LRN(ShapeContext& ctx) { return unsupported("LRN: shape rule not implemented"); }
Status infer_MeanVarianceNormalization(ShapeContext& ctx) { return unsupported("MeanVarianceNormalization: shape rule not implemented"); }

}  // namespace graphc::ir::shape_rules
