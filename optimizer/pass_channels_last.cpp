// Channels-last convolutions (as TensorRT and torch.compile pick for fp16
// convs): cuDNN's fp16/bf16 convolutions run on tensor cores in NHWC, and in
// NCHW it transposes internally or falls back to slower kernels (ResNet-50 at
// batch 32 spent 97% of its time in NCHW cuDNN convs). ONNX models are
// channels-first, so each 2-D fp16/bf16 Conv that runs channels-last on the
// target (Target::library_takes_conv: what cuDNN takes, and the depthwise
// convs of the generated direct kernel, whose channel-vector loads want NHWC
// too) becomes
//   Transpose(to NCHW) <- Conv[_channels_last](Transpose(to NHWC) <- x, W permuted)
// and the transposes are then moved out of the way:
//   - sink: an elementwise op whose non-constant inputs all come from a
//     to-NCHW Transpose (or already have a channels-last copy, as a residual
//     input a conv also reads) runs channels-last instead, with one Transpose
//     after it (per-channel constants such as [1, C, 1, 1] are re-laid-out at
//     build time);
//   - cancel: to-NHWC(to-NCHW(v)) is v (cancel-transposes).
// What is left are transposes where a channels-first op really needs NCHW
// (the model's input and output, pooling, Flatten): one per boundary, not per conv.
// Runs only when the target has a convolution library (PassContext::target).
#include <algorithm>
#include <map>

#include "ir/conv_geometry.h"
#include "ir/data_movement_params.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;

namespace {

constexpr size_t kRank = 4;  // 2-D convolutions: NCHW <-> NHWC

bool static_rank4(const Graph& g, ValueId v) {
  if (v == ir::kNoValue) return false;
  const ir::Value& val = g.value(v);
  if (!val.has_shape || val.shape.size() != kRank) return false;
  return std::all_of(val.shape.begin(), val.shape.end(), [](int64_t d) { return d >= 0; });
}

// The convs this pass turns NHWC: fp16/bf16 2-D convs with constant weights
// and static shapes that the target runs channels-last (asked of the node as
// it stands, so a conv neither cuDNN nor the direct depthwise kernel would
// take, which would then have no kernel since the other generated convs are
// channels-first, stays as it is).
bool converts(const Graph& g, const Node& n, const PassContext& ctx) {
  if (n.op != OpKind::Conv || n.dead || ir::is_channels_last(n.attrs) || n.outputs.size() != 1 ||
      !n.has_input(0) || !n.has_input(1))
    return false;
  const ir::Value& x = g.value(n.inputs[0]);
  const ir::Value& w = g.value(n.inputs[1]);
  if (x.dtype != ir::DType::kFloat16 && x.dtype != ir::DType::kBFloat16) return false;
  if (!w.constant || !static_rank4(g, n.inputs[0]) || !static_rank4(g, n.inputs[1]) ||
      !static_rank4(g, n.outputs[0]))
    return false;
  return ctx.target->library_takes_conv(g, n);
}

// New nodes are appended (add_node) and then put in place: each is ordered
// just before or just after the original node it belongs to.
class Rewriter {
 public:
  explicit Rewriter(Graph& g) : g_(g), original_(g.nodes.size()) {}

  ValueId new_value(ValueId like, const std::string& suffix, Shape shape) {
    ir::Value v;
    v.name = g_.unique_name(g_.value(like).name + suffix);
    v.dtype = g_.value(like).dtype;
    v.shape = std::move(shape);
    v.has_shape = true;
    return g_.add_value(std::move(v));
  }

  // Transpose(in) -> out, placed before (`after` false) or after node `owner`.
  void add_transpose(NodeId owner, bool after, ValueId in, ValueId out, std::vector<int64_t> perm) {
    Node t;
    t.op = OpKind::Transpose;
    t.name = g_.unique_name(g_.node(owner).name + (after ? "/to_nchw" : "/to_nhwc"));
    t.inputs = {in};
    t.outputs = {out};
    t.attrs.set("perm", ir::Attribute::of_ints(std::move(perm)));
    const NodeId id = g_.add_node(std::move(t));
    key_[id] = 3 * static_cast<int64_t>(owner) + (after ? 2 : 0);
  }

  // Orders the appended nodes next to their owners and re-links producers.
  Status place_new_nodes() {
    std::vector<std::pair<int64_t, NodeId>> order;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const auto id = static_cast<NodeId>(i);
      order.emplace_back(i < original_ ? 3 * static_cast<int64_t>(i) + 1 : key_.at(id), id);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Node> nodes;
    nodes.reserve(order.size());
    for (const auto& [key, id] : order)
      nodes.push_back(std::move(g_.nodes[static_cast<size_t>(id)]));
    g_.nodes = std::move(nodes);
    g_.rebuild_producers();
    // A reused channels-last copy (to_nhwc_copy) may sit after a reader that
    // was moved earlier: Kahn's stable order fixes that and keeps the rest.
    auto topo = ir::topological_order(g_);
    if (!topo.ok()) return topo.status();
    std::vector<Node> sorted;
    sorted.reserve(topo->size());
    for (NodeId id : *topo) sorted.push_back(std::move(g_.nodes[static_cast<size_t>(id)]));
    g_.nodes = std::move(sorted);
    g_.rebuild_producers();
    return Status::ok_status();
  }

 private:
  Graph& g_;
  size_t original_;
  std::map<NodeId, int64_t> key_;
};

// The output of a live Transpose to NHWC of `v` (a copy another conv or a
// sink already made), or kNoValue.
ValueId to_nhwc_copy(const Graph& g, ValueId v) {
  for (NodeId c : g.consumers(v)) {
    const Node& t = g.node(c);
    if (t.op == OpKind::Transpose && t.attrs.has("perm") &&
        t.attrs.get_ints("perm") == ir::channels_last_perm(kRank))
      return t.outputs[0];
  }
  return ir::kNoValue;
}

void convert_conv(Graph& g, Rewriter& rw, NodeId id) {
  const ValueId x = g.node(id).inputs[0];
  const ValueId y = g.node(id).outputs[0];
  const ir::Value& w = g.value(g.node(id).inputs[1]);
  const ValueId w_last =
      g.add_constant(g.unique_name(w.name + "/nhwc"), ir::to_channels_last(*w.constant));
  ValueId x_last = to_nhwc_copy(g, x);  // convs reading one input share its transpose
  if (x_last == ir::kNoValue) {
    x_last = rw.new_value(x, "/nhwc", ir::to_channels_last(g.value(x).shape));
    rw.add_transpose(id, false, x, x_last, ir::channels_last_perm(kRank));
  }
  const ValueId y_last = rw.new_value(y, "/nhwc", ir::to_channels_last(g.value(y).shape));
  rw.add_transpose(id, true, y_last, y, ir::channels_first_perm(kRank));
  Node& conv = g.node(id);
  conv.inputs[0] = x_last;
  conv.inputs[1] = w_last;
  conv.outputs[0] = y_last;
  conv.attrs.set(ir::kChannelsLastAttr, ir::Attribute::of_int(1));
}

bool sinkable_op(OpKind op) {
  const auto cat = ir::op_info(op).category;
  return cat == ir::OpCategory::kUnary || cat == ir::OpCategory::kBinary ||
         cat == ir::OpCategory::kVariadic || op == OpKind::Clip || op == OpKind::Cast ||
         op == OpKind::Where;
}

// The live Transpose to NCHW producing `v`, or -1.
NodeId to_nchw_producer(const Graph& g, ValueId v) {
  if (v == ir::kNoValue) return -1;
  const NodeId p = g.value(v).producer;
  if (p < 0 || g.node(p).dead || g.node(p).op != OpKind::Transpose) return -1;
  const Node& t = g.node(p);
  if (!static_rank4(g, t.inputs[0]) || !t.attrs.has("perm")) return -1;
  return t.attrs.get_ints("perm") == ir::channels_first_perm(kRank) ? p : -1;
}

// Once `user` reads past it, does transpose `t` go away? Yes when each of its
// other readers is an elementwise op (sunk in turn) or a Transpose (cancelled
// or merged): otherwise sinking would add a transpose, not move one.
bool transpose_goes_away(const Graph& g, NodeId t) {
  const ValueId out = g.node(t).outputs[0];
  if (g.is_graph_output(out)) return false;
  for (NodeId c : g.consumers(out))
    if (!sinkable_op(g.node(c).op) && g.node(c).op != OpKind::Transpose) return false;
  return true;
}

// A constant operand seen through the sink: broadcasts the same way before
// and after (a scalar or all-ones shape, as is), or holds one value per
// channel of a rank-4 NCHW result ([C,1,1] or [1,C,1,1]: re-laid-out as
// [1,1,1,C], the same bytes). Anything else blocks the sink.
std::optional<ValueId> constant_channels_last(Graph& g, ValueId v) {
  const ir::Value& c = g.value(v);
  const Shape& s = c.shape;
  if (std::all_of(s.begin(), s.end(), [](int64_t d) { return d == 1; })) return v;
  if (s.size() > kRank) return std::nullopt;
  Shape padded(kRank - s.size(), 1);
  padded.insert(padded.end(), s.begin(), s.end());
  for (size_t i = 0; i < kRank; ++i)
    if (i != 1 && padded[i] != 1) return std::nullopt;
  return g.add_constant(g.unique_name(c.name + "/nhwc"),
                        c.constant->reshaped(ir::to_channels_last(padded)));
}

bool try_sink(Graph& g, Rewriter& rw, NodeId id) {
  const Node& n = g.node(id);
  if (n.dead || !sinkable_op(n.op) || n.outputs.size() != 1 || !static_rank4(g, n.outputs[0]))
    return false;
  // A widening Cast (fp16 -> fp32 at the model's output) would make the
  // transpose after it move twice the bytes.
  if (n.op == OpKind::Cast &&
      ir::dtype_size(g.value(n.outputs[0]).dtype) > ir::dtype_size(g.value(n.inputs[0]).dtype))
    return false;
  std::vector<ValueId> inputs = n.inputs;
  bool any = false;
  for (ValueId& in : inputs) {
    if (in == ir::kNoValue) continue;
    if (const NodeId t = to_nchw_producer(g, in); t >= 0) {
      if (!transpose_goes_away(g, t)) return false;
      in = g.node(t).inputs[0];
      any = true;
    } else if (const ValueId copy = to_nhwc_copy(g, in); copy != ir::kNoValue) {
      in = copy;  // e.g. a residual input that a conv already reads channels-last
    } else if (!is_constant(g, in)) {
      return false;
    }
  }
  if (!any) return false;
  for (ValueId& in : inputs) {
    if (in == ir::kNoValue || !is_constant(g, in)) continue;
    auto moved = constant_channels_last(g, in);
    if (!moved) return false;
    in = *moved;
  }
  const ValueId out = g.node(id).outputs[0];
  const ValueId out_last = rw.new_value(out, "/nhwc", ir::to_channels_last(g.value(out).shape));
  g.node(id).inputs = inputs;
  g.node(id).outputs[0] = out_last;
  rw.add_transpose(id, true, out_last, out, ir::channels_first_perm(kRank));
  return true;
}

}  // namespace

Status convert_to_channels_last(Graph& g, PassContext& ctx) {
  if (!ctx.target) return Status::ok_status();
  {
    Rewriter rw(g);
    const auto count = static_cast<NodeId>(g.nodes.size());
    int64_t converted = 0;
    for (NodeId id = 0; id < count; ++id) {
      if (!converts(g, g.node(id), ctx)) continue;
      convert_conv(g, rw, id);
      ++converted;
    }
    // Nothing converted: the model's own transposes are left where they are.
    if (converted == 0) return Status::ok_status();
    ctx.count("channels-last: convolutions", converted);
    RETURN_IF_ERROR(rw.place_new_nodes());
  }
  {
    // Node order is topological, so one sweep carries a transpose down a chain.
    Rewriter rw(g);
    const auto count = static_cast<NodeId>(g.nodes.size());
    for (NodeId id = 0; id < count; ++id)
      if (try_sink(g, rw, id)) ctx.count("channels-last: elementwise ops moved past a transpose");
    RETURN_IF_ERROR(rw.place_new_nodes());
  }
  RETURN_IF_ERROR(cancel_transposes(g, ctx));
  return eliminate_dead_code(g, ctx);
}

}  // namespace graphc::optimizer
