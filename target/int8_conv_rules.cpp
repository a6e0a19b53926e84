#include "target/int8_conv_rules.h"

#include "ir/conv_geometry.h"
#include "target/cuda/cuda_target.h"

namespace graphc::target {

Status int8_conv_geometry_ok(const ir::AttributeMap& attrs, const ir::Shape& x,
                             const ir::Shape& w) {
  if (x.size() != 4 || w.size() != 4) return unsupported("not a 2-D conv (rank {})", x.size());
  auto geo = ir::resolve_conv_geometry(attrs, x, w, nullptr, false);
  if (!geo.ok()) return geo.status();
  if (geo->channels_last) return unsupported("channels-last (the int8 conv runs NCHW)");
  // Depthwise and grouped convs have K = taps x channels/group (9 for a 3x3
  // depthwise): too short for a 32-deep int8 MMA step; they stay float.
  if (geo->group != 1) return unsupported("groups = {} (the int8 conv takes groups = 1)", geo->group);
  constexpr int64_t kMaxInt = 2147483647;
  const int64_t k = geo->in_channels * ir::shape_numel(geo->kernel);
  if (ir::shape_numel(x) >= kMaxInt || geo->batch * ir::shape_numel(geo->out_spatial) >= kMaxInt ||
      ir::shape_numel(geo->output_shape()) >= kMaxInt || k >= kMaxInt)
    return unsupported("sizes exceed the int8 conv's 32-bit indices");
  return Status::ok_status();
}

Status int8_conv_target_ok(const Target* target) {
  const auto* cuda = dynamic_cast<const CudaTarget*>(target);
  if (cuda && cuda->options().min_sm < 80)
    return unsupported("the int8 conv needs sm_80 or newer (the oldest --arch is sm_{})",
                       cuda->options().min_sm);
  return Status::ok_status();
}

Status int8_conv_takes(const ir::Graph& g, const ir::Node& n) {
  if (n.op != ir::OpKind::ConvInteger) return unsupported("not a ConvInteger");
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return unsupported("needs x, w and y");
  if (n.has_input(2) || n.has_input(3)) return unsupported("it has zero-point inputs");
  const ir::Value& x = g.value(n.inputs[0]);
  const ir::Value& w = g.value(n.inputs[1]);
  const ir::Value& y = g.value(n.outputs[0]);
  if (!x.has_shape || !w.has_shape || !y.has_shape) return unsupported("shapes unknown");
  if (x.dtype != ir::DType::kInt8 || w.dtype != ir::DType::kInt8)
    return unsupported("operands are {} x {}, not int8 x int8", ir::dtype_name(x.dtype),
                       ir::dtype_name(w.dtype));
  if (y.dtype != ir::DType::kInt32) return unsupported("output is not int32");
  const int64_t pad = n.attrs.get_int(ir::kPadValueAttr, 0);
  if (pad < -128 || pad > 127) return unsupported("pad value {} is not an int8", pad);
  return int8_conv_geometry_ok(n.attrs, x.shape, w.shape);
}

}  // namespace graphc::target
