#include "target/cuda/cudnn_rules.h"

#include <fmt/format.h>

#include "ir/conv_geometry.h"
#include "target/cuda/depthwise_tile_rules.h"
#include "target/cuda/direct_conv_rules.h"

namespace graphc::target {

namespace {

using engine::ConvActivation;
using engine::ConvParams;
using ir::DType;
using ir::Shape;

// A node's values seen from the outer graph: a fused group's body inputs map
// 1:1 to the group node's inputs; a value computed or embedded in the body
// has no outer id.
struct Scope {
  const ir::Node* outer;  // the group node, or nullptr for a plain node
  const ir::Graph* body;
  ir::ValueId outer_of(ir::ValueId v) const {
    if (!outer) return v;
    for (size_t i = 0; i < body->inputs.size() && i < outer->inputs.size(); ++i)
      if (body->inputs[i] == v) return outer->inputs[i];
    return ir::kNoValue;
  }
  // The call operand for body value `v`: its outer value, or the body's
  // constant; nothing (value kNoValue, embedded null) for a computed value.
  CallOperand operand(ir::ValueId v) const {
    const ir::ValueId o = outer_of(v);
    if (o != ir::kNoValue) return {o, nullptr};
    const ir::Value& val = body->value(v);
    if (outer && val.constant && !body->is_graph_input(v)) return {ir::kNoValue, &val};
    return {};
  }
};

bool found(const CallOperand& o) { return o.value != ir::kNoValue || o.embedded; }

bool library_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
}

struct Plan {
  ConvParams p;
  CallOperand x, w, bias, residual, y;
};

// The anchor's own operands and geometry. Errors are reasons to stay generated.
Expected<Plan> plan_anchor(const ir::Graph& g, const ir::Node& n, const Scope& scope) {
  Plan out;
  ConvParams& p = out.p;
  const bool transpose = n.op == ir::OpKind::ConvTranspose;
  if (n.op != ir::OpKind::Conv && !transpose)
    return unsupported("{} is not Conv or ConvTranspose", ir::op_name(n.op));
  if (!n.has_input(0) || !n.has_input(1) || n.outputs.empty())
    return unsupported("operands missing");
  const ir::Value& vx = g.value(n.inputs[0]);
  const ir::Value& vw = g.value(n.inputs[1]);
  const ir::Value& vy = g.value(n.outputs[0]);
  if (!library_dtype(vx.dtype) || vw.dtype != vx.dtype || vy.dtype != vx.dtype)
    return unsupported("dtype {} (cuDNN path: float32, float16, bfloat16)",
                       ir::dtype_name(vx.dtype));
  const ir::Value* vb = n.has_input(2) ? &g.value(n.inputs[2]) : nullptr;
  if (vb && vb->dtype != vx.dtype) return unsupported("the bias has another dtype");
  auto geo =
      ir::resolve_conv_geometry(n.attrs, vx.shape, vw.shape, vb ? &vb->shape : nullptr, transpose);
  if (!geo.ok()) return unsupported("geometry: {}", geo.status().message());
  const size_t rank = geo->spatial_rank();
  if (rank < 1 || rank > static_cast<size_t>(ConvParams::kMaxSpatial))
    return unsupported("{} spatial dims (cuDNN path: 1 to 3)", rank);
  if (geo->output_shape() != vy.shape) return unsupported("the output shape does not match");
  p.op = transpose ? engine::ConvOp::kBackwardData : engine::ConvOp::kForward;
  p.layout = geo->channels_last ? engine::ConvLayout::kNhwc : engine::ConvLayout::kNchw;
  p.dtype = static_cast<int32_t>(vx.dtype);
  p.spatial_rank = static_cast<int32_t>(rank);
  p.n = geo->batch;
  p.c = geo->in_channels;
  p.k = geo->out_channels;
  p.groups = geo->group;
  for (size_t i = 0; i < rank; ++i) {
    if (geo->pads_begin[i] != geo->pads_end[i] || geo->pads_begin[i] < 0)
      return unsupported("pads {}/{} on spatial dim {} (cuDNN takes symmetric, non-negative pads)",
                         geo->pads_begin[i], geo->pads_end[i], i);
    p.in[i] = geo->in_spatial[i];
    p.out[i] = geo->out_spatial[i];
    p.filter[i] = geo->kernel[i];
    p.strides[i] = geo->strides[i];
    p.dilations[i] = geo->dilations[i];
    p.pads_begin[i] = p.pads_end[i] = geo->pads_begin[i];
  }
  // cuDNN runs ConvTranspose as the data gradient of the forward conv from y
  // to x: that conv must give back x's dims (output_padding is what the
  // forward conv's floor division drops, so it passes when < stride).
  for (size_t i = 0; transpose && i < rank; ++i)
    if (engine::conv_forward_out_dim(p.out[i], p.filter[i], p.pads_begin[i], p.pads_end[i],
                                     p.strides[i], p.dilations[i]) != p.in[i])
      return unsupported(
          "ConvTranspose output dim {} is not the data gradient of a forward conv "
          "(output_padding >= stride?)",
          i);
  out.x = scope.operand(n.inputs[0]);
  out.w = scope.operand(n.inputs[1]);
  if (!found(out.x) || !found(out.w))
    return unsupported("an operand is computed inside the fused group");
  if (vb) {
    out.bias = scope.operand(n.inputs[2]);
    if (!found(out.bias)) return unsupported("the bias is computed inside the fused group");
    p.has_bias = true;
  }
  // The descriptor's own checks (extents within 32-bit indexing, ...).
  auto checked = engine::decode_conv_params(engine::encode_conv_params(p));
  if (!checked.ok()) return unsupported("{}", checked.status().message());
  return out;
}

// True when `s` broadcast against the output `y` (rank >= 2) holds one value
// per channel (axis 1, or the last axis when channels-last) and nothing else:
// a per-channel bias.
bool per_channel(const Shape& s, const Shape& y, bool channels_last) {
  if (s.size() > y.size() || y.size() < 2) return false;
  const size_t lead = y.size() - s.size();
  const size_t channel_axis = channels_last ? y.size() - 1 : 1;
  if (lead > channel_axis) return false;  // the channel axis is not covered
  for (size_t i = 0; i < s.size(); ++i) {
    const bool channel = lead + i == channel_axis;
    if (s[i] != (channel ? y[channel_axis] : 1)) return false;
  }
  return true;
}

// Folds the leading ops of the group's epilogue chain (anchor output -> ...
// -> group output) that cuDNN computes into the plan; `taken` counts them.
// OK when the whole chain was taken.
Status plan_epilogue(const ir::Graph& body, const ir::Node& anchor, const ir::Node& group,
                     const Scope& scope, Plan& plan, size_t& taken) {
  ConvParams& p = plan.p;
  ir::ValueId cur = anchor.outputs[0];
  const ir::Value& y = body.value(cur);
  for (;;) {
    const auto users = body.consumers(cur);
    if (body.is_graph_output(cur)) {
      if (!users.empty() || body.outputs.size() != 1)
        return unsupported("an intermediate of the epilogue is read outside the kernel");
      plan.y = {group.outputs[0], nullptr};
      return Status::ok_status();
    }
    if (users.size() != 1) return unsupported("the epilogue branches");
    const ir::Node& e = body.node(users[0]);
    if (e.outputs.size() != 1 || body.value(e.outputs[0]).shape != y.shape ||
        body.value(e.outputs[0]).dtype != y.dtype)
      return unsupported("epilogue op {} changes the shape or dtype", ir::op_name(e.op));
    if (p.activation != ConvActivation::kNone)
      return unsupported("{} after the Relu (cuDNN: act(conv + z + bias))", ir::op_name(e.op));
    if (e.op == ir::OpKind::Add) {
      if (e.inputs.size() != 2 || e.inputs[0] == e.inputs[1])
        return unsupported("an Add of the convolution with itself");
      const ir::ValueId other_body = e.inputs[0] == cur ? e.inputs[1] : e.inputs[0];
      const ir::Value& other = body.value(other_body);
      const CallOperand other_operand = scope.operand(other_body);
      if (!found(other_operand) || other.dtype != y.dtype)
        return unsupported("an Add operand computed in the group or of another dtype");
      if (per_channel(other.shape, y.shape, p.layout == engine::ConvLayout::kNhwc) && !p.has_bias) {
        plan.bias = other_operand;
        p.has_bias = true;
      } else if (other.shape == y.shape && !p.has_residual) {
        plan.residual = other_operand;
        p.has_residual = true;
      } else {
        return unsupported(
            "an Add of shape {} (cuDNN: one per-channel bias and one output-shaped "
            "residual)",
            ir::shape_to_string(other.shape));
      }
    } else if (e.op == ir::OpKind::Relu) {
      p.activation = ConvActivation::kRelu;
    } else {
      return unsupported("epilogue op {}", ir::op_name(e.op));
    }
    ++taken;
    cur = e.outputs[0];
  }
}

// `anchor_ok`: the convolution itself is expressible (a failure, if any, is in
// the epilogue after `taken` ops: a split can still give cuDNN the anchor).
Expected<Plan> plan_call(const ir::Graph& g, ir::NodeId id, size_t& taken, bool& anchor_ok) {
  const ir::Node& n = g.node(id);
  if (n.op != ir::OpKind::FusedGroup) {
    ASSIGN_OR_RETURN(Plan plan, plan_anchor(g, n, Scope{nullptr, &g}));
    anchor_ok = true;
    plan.y = {n.outputs[0], nullptr};
    return plan;
  }
  if (!n.body) return unsupported("fused group without a body");
  const ir::Graph& body = *n.body;
  const ir::Node* anchor = nullptr;
  for (const ir::Node& bn : body.nodes) {
    if (bn.dead || (bn.op != ir::OpKind::Conv && bn.op != ir::OpKind::ConvTranspose)) continue;
    if (anchor) return unsupported("two convolutions in one group");
    anchor = &bn;
  }
  if (!anchor) return unsupported("no Conv/ConvTranspose in the group");
  if (n.outputs.size() != 1) return unsupported("the group has several outputs");
  const Scope scope{&n, &body};
  ASSIGN_OR_RETURN(Plan plan, plan_anchor(body, *anchor, scope));
  anchor_ok = true;
  RETURN_IF_ERROR(plan_epilogue(body, *anchor, n, scope, plan, taken));
  return plan;
}

// The anchor conv of kernel `id` (a plain node or a fused group's body) and
// its geometry.
struct Anchor {
  ir::ConvGeometry geo;
  DType dtype = DType::kUndefined;
  const ir::Node* node = nullptr;  // the Conv (in a group's body)
};
std::optional<Anchor> anchor_of(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  const ir::Graph* body = &g;
  const ir::Node* a = &n;
  if (n.op == ir::OpKind::FusedGroup) {
    if (!n.body) return std::nullopt;
    body = n.body.get();
    a = nullptr;
    for (const ir::Node& bn : body->nodes)
      if (!bn.dead && (bn.op == ir::OpKind::Conv || bn.op == ir::OpKind::ConvTranspose)) {
        if (a) return std::nullopt;
        a = &bn;
      }
    if (!a) return std::nullopt;
  }
  if (a->op != ir::OpKind::Conv || !a->has_input(0) || !a->has_input(1)) return std::nullopt;
  const ir::Value& x = body->value(a->inputs[0]);
  const ir::Value& w = body->value(a->inputs[1]);
  const ir::Value* b = a->has_input(2) ? &body->value(a->inputs[2]) : nullptr;
  auto geo = ir::resolve_conv_geometry(a->attrs, x.shape, w.shape, b ? &b->shape : nullptr, false);
  if (!geo.ok()) return std::nullopt;
  return Anchor{*geo, x.dtype, a};
}

// "; tiled: ..." / "; untiled: ..." for a channels-last depthwise conv the
// direct kernel runs (depthwise_tile_rules.h), else "".
std::string depthwise_variant(const std::optional<Anchor>& a) {
  if (!a || !a->geo.channels_last || !is_depthwise(a->geo) || !direct_conv_takes(a->geo))
    return "";
  return "; " + choose_depthwise_tile(a->geo, a->dtype, a->node->attrs).reason;
}

// In auto mode: the reason to give a depthwise conv to the generated direct
// kernel by the cost model, or nullopt to keep cuDNN. `residual`: cuDNN's
// plan reads a residual; `split`: cuDNN would take only part of the epilogue.
std::optional<std::string> depthwise_generated(const ir::Graph& graph, ir::NodeId node,
                                               const ConvOptions& options, bool residual,
                                               bool split, std::string& cudnn_note) {
  const auto a = anchor_of(graph, node);
  if (!a || !is_depthwise(a->geo) || !direct_conv_takes(a->geo) || !library_dtype(a->dtype))
    return std::nullopt;
  const DepthwiseCost c = depthwise_cost(a->geo, a->dtype, options.gpu, residual, split);
  const std::string costs =
      fmt::format("{:.1f} us generated vs ~{:.1f} us cuDNN modelled on {}", c.generated_us,
                  c.cudnn_us, gpu_name(options.gpu));
  if (!c.generated_wins()) {
    cudnn_note = " (depthwise: " + costs + ")";
    return std::nullopt;
  }
  return fmt::format("generated depthwise ({}, {}x{}): {}{}",
                     a->geo.channels_last ? "channels-last" : "NCHW", a->geo.kernel[0],
                     a->geo.kernel[1], costs, depthwise_variant(a));
}

}  // namespace

bool direct_depthwise_takes_conv(const ir::Graph& g, const ir::Node& n) {
  if (n.op != ir::OpKind::Conv || !n.has_input(0) || !n.has_input(1)) return false;
  const ir::Value& x = g.value(n.inputs[0]);
  const ir::Value& w = g.value(n.inputs[1]);
  const ir::Value* b = n.has_input(2) ? &g.value(n.inputs[2]) : nullptr;
  if (!library_dtype(x.dtype) || w.dtype != x.dtype || (b && b->dtype != x.dtype)) return false;
  auto geo = ir::resolve_conv_geometry(n.attrs, x.shape, w.shape, b ? &b->shape : nullptr, false);
  return geo.ok() && is_depthwise(*geo) && direct_conv_takes(*geo);
}

Expected<ConvMode> parse_conv_mode(std::string_view flag) {
  if (flag == "auto") return ConvMode::kAuto;
  if (flag == "cudnn" || flag == "cuDNN") return ConvMode::kCudnn;
  if (flag == "generated") return ConvMode::kGenerated;
  return invalid_argument("--conv '{}': expected auto, cudnn or generated", flag);
}

std::string_view conv_mode_name(ConvMode mode) {
  switch (mode) {
    case ConvMode::kAuto: return "auto";
    case ConvMode::kCudnn: return "cudnn";
    case ConvMode::kGenerated: return "generated";
  }
  return "?";
}

// Whether kernel `id` is the int8 conv (a ConvInteger, alone or anchoring a group).
static bool is_int8_conv(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.op == ir::OpKind::ConvInteger) return true;
  if (n.op != ir::OpKind::FusedGroup || !n.body) return false;
  for (const ir::Node& bn : n.body->nodes)
    if (!bn.dead && bn.op == ir::OpKind::ConvInteger) return true;
  return false;
}

ConvChoice choose_conv_lowering(const ir::Graph& graph, ir::NodeId node,
                                const ConvOptions& options) {
  ConvChoice out;
  if (is_int8_conv(graph, node)) {
    // cuDNN's int8 convs scale by one float per tensor: the per-channel
    // dequantize (and requantize) would need an int32 round trip through HBM.
    out.reason = "generated: int8 tensor-core conv (mma.sync m16n8k32 s8, int32 accumulation, "
                 "dequantize/requantize in its epilogue)";
    return out;
  }
  if (options.mode == ConvMode::kGenerated) {
    out.reason = "generated (--conv generated)" + depthwise_variant(anchor_of(graph, node));
    return out;
  }
  bool anchor_ok = false;
  auto plan = plan_call(graph, node, out.epilogue_ops_taken, anchor_ok);
  std::string cudnn_note;
  if (options.mode == ConvMode::kAuto && (plan.ok() || anchor_ok)) {
    const ir::Node& n = graph.node(node);
    const bool split = !plan.ok() && n.op == ir::OpKind::FusedGroup && n.outputs.size() == 1;
    if (auto why = depthwise_generated(graph, node, options, plan.ok() && plan->p.has_residual,
                                       split, cudnn_note)) {
      ConvChoice generated;
      generated.reason = std::move(*why);
      return generated;
    }
  }
  if (!plan.ok()) {
    out.reason = "generated: " + plan.status().message();
    const ir::Node& n = graph.node(node);
    if (anchor_ok && n.op == ir::OpKind::FusedGroup && n.outputs.size() == 1)
      out.split_after = out.epilogue_ops_taken;
    return out;
  }
  ConvParams& p = plan->p;
  if (p.dtype == static_cast<int32_t>(DType::kFloat32) && options.allow_tf32)
    p.compute = engine::ConvCompute::kF32FastTf32;
  CudnnConvCall call;
  call.params = p;
  call.args = {plan->x, plan->w};
  if (p.has_bias) call.args.push_back(plan->bias);
  if (p.has_residual) call.args.push_back(plan->residual);
  call.args.push_back(plan->y);
  out.call = std::move(call);
  out.reason = "cuDNN" + cudnn_note;
  // Part (a) of a split group: name the generated epilogue that follows.
  const std::string after = graph.node(node).attrs.get_string(kSplitEpilogueAttr, "");
  if (!after.empty()) out.reason += ", then generated epilogue: " + after;
  return out;
}

bool cudnn_takes_conv(const ir::Graph& g, const ir::Node& n) {
  return n.op != ir::OpKind::FusedGroup && plan_anchor(g, n, Scope{nullptr, &g}).ok();
}

}  // namespace graphc::target
