// fuse-attention: the attention exporters spell out (MatMul(Q, Kᵀ), scale,
// masks, Softmax, MatMul(P, V), with the head split/merge and GQA repeats
// around it; attention_pattern.h lists the forms) becomes one ONNX Attention
// node, so one kernel computes it and the B·H·Lq·Lk scores never reach
// memory. The rewrite keeps the meaning exactly:
//  - the scalar factors on the scores, on Q and on Kᵀ multiply into `scale`;
//  - a constant causal triangle (j <= i) becomes is_causal = 1 and goes;
//  - other masks stay as ordinary nodes feeding attn_mask: one Add's bias as
//    it is, Where(c, scores, -inf) as the bool c (Not(c) for Where(c, -inf,
//    scores)), a finite Where fill F as the bias Where(c, 0, F), several
//    masks summed into one bias;
//  - the 3-D form [B, L, H*D] (q_num_heads/kv_num_heads set) when Q, K and V
//    come from head splits and the output goes to a head merge: those
//    Reshape/Transposes go too; else the 4-D form [B, H, L, D];
//  - a GQA/MQA repeat of K and V heads goes (kv_num_heads < q_num_heads).
// Where the Softmax stays, PassContext::attention_notes says which part of
// the pattern did not match. The Attention node lists every ONNX node it
// replaced (Node::absorbed), for inspect.
// Fully masked rows: where every key of a row is masked by -inf the unfused
// graph gives NaN (softmax of -inf), Attention gives 0 (ONNX's rule); where
// they are masked by a finite fill F the unfused graph averages V and so does
// Attention when F absorbs the scores (F + s == F: HF's finfo.min), else it
// weighs V by softmax(s). docs/attention.md.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/shape_inference.h"
#include "optimizer/attention_pattern.h"
#include "optimizer/fusion_group.h"
#include "optimizer/passes.h"

namespace graphc::optimizer {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;

namespace {

class Rewriter {
 public:
  Rewriter(Graph& g, const AttentionMatch& m) : g_(g), m_(m) {
    name_ = g.unique_name(g.node(m.softmax).name + "/attention");
  }
  Status run();
  size_t replaced() const { return absorbed_.size(); }

 private:
  ValueId value(const std::string& hint, DType dt, Shape shape) {
    ir::Value v;
    v.name = g_.unique_name(name_ + "/" + hint);
    v.dtype = dt;
    v.shape = std::move(shape);
    v.has_shape = true;
    return g_.add_value(std::move(v));
  }
  ValueId node(OpKind op, const std::string& hint, std::vector<ValueId> ins, DType dt, Shape shape,
               ir::AttributeMap attrs = {}) {
    ValueId out = value(hint, dt, std::move(shape));
    Node n;
    n.op = op;
    n.name = g_.unique_name(name_ + "/" + hint);
    n.inputs = std::move(ins);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    g_.add_node(std::move(n));
    return out;
  }
  ValueId i64_constant(const std::string& hint, const std::vector<int64_t>& v) {
    return g_.add_constant(g_.unique_name(name_ + "/" + hint),
                           ir::Tensor::from_i64(v, {static_cast<int64_t>(v.size())}));
  }
  ValueId scalar(const std::string& hint, double v) {
    ir::Tensor t(m_.dtype, {});
    t.set_f64(0, v);
    return g_.add_constant(g_.unique_name(name_ + "/" + hint), std::move(t));
  }
  ValueId reshaped(ValueId v, const Shape& to, const std::string& hint) {
    if (g_.value(v).shape == to) return v;
    return node(OpKind::Reshape, hint, {v, i64_constant(hint + "_shape", to)}, g_.value(v).dtype,
                to);
  }
  ValueId operand(const OperandSource& s, const std::string& hint);
  ValueId mask();
  void remove(NodeId id);

  Graph& g_;
  const AttentionMatch& m_;
  std::string name_;
  std::vector<NodeId> removed_;
  std::vector<std::string> absorbed_;
  std::vector<ValueId> freed_;  // inputs of removed nodes: their producers may die too
};

// The value the Attention reads for Q, K or V.
ValueId Rewriter::operand(const OperandSource& s, const std::string& hint) {
  if (m_.three_d) {
    const Shape& x = s.shape4;  // [B, H, L, D]
    return reshaped(s.split_from, {x[0], x[2], x[1] * x[3]}, hint + "_3d");
  }
  if (s.v4 != ir::kNoValue) return reshaped(s.v4, s.shape4, hint + "_4d");
  Shape in = g_.value(s.transpose_of).shape, out(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = in[static_cast<size_t>(s.perm[i])];
  ir::AttributeMap a;
  a.set("perm", ir::Attribute::of_ints(s.perm));
  return node(OpKind::Transpose, hint, {s.transpose_of}, g_.value(s.transpose_of).dtype, out, a);
}

// One attn_mask from the masks left (kNoValue: none).
ValueId Rewriter::mask() {
  if (m_.masks.empty()) return ir::kNoValue;
  const double inf = std::numeric_limits<double>::infinity();
  auto bool_mask = [&](const MaskTerm& t) {
    if (!t.fill_when_true) return t.value;
    return node(OpKind::Not, "keep", {t.value}, DType::kBool, g_.value(t.value).shape);
  };
  auto bias = [&](const MaskTerm& t) {
    if (t.kind == MaskTerm::Kind::kAdditive) return t.value;
    ValueId zero = scalar("zero", 0.0), fill = scalar("fill", t.fill);
    return node(OpKind::Where, "bias",
                {t.value, t.fill_when_true ? fill : zero, t.fill_when_true ? zero : fill}, m_.dtype,
                g_.value(t.value).shape);
  };
  ValueId out;
  const MaskTerm& first = m_.masks[0];
  if (m_.masks.size() == 1 && first.kind == MaskTerm::Kind::kWhere && first.fill == -inf) {
    out = bool_mask(first);
  } else {
    out = bias(first);
    for (size_t i = 1; i < m_.masks.size(); ++i) {
      ValueId next = bias(m_.masks[i]);
      auto shape = ir::broadcast_shapes(g_.value(out).shape, g_.value(next).shape);
      out = node(OpKind::Add, "mask_sum", {out, next}, m_.dtype, *shape);
    }
  }
  // Attention pads a mask's last dim instead of broadcasting it: a mask that
  // is the same for every key (a scalar, or last dim 1) is expanded to Lk.
  const int64_t lk = m_.scores_shape.back();
  if (g_.value(out).shape.empty() || g_.value(out).shape.back() != lk) {
    Shape s = g_.value(out).shape;
    if (s.empty()) s.push_back(1);
    std::vector<int64_t> to(s.begin(), s.end());
    to.back() = lk;
    out = node(OpKind::Expand, "mask_keys", {out, i64_constant("mask_keys_shape", to)},
               g_.value(out).dtype, to);
  }
  // Rank-3 scores [B', Lq, Lk] are [B', 1, Lq, Lk] to Attention.
  if (m_.rank == 3 && g_.value(out).shape.size() == 3) {
    Shape s = g_.value(out).shape;
    s.insert(s.begin() + 1, 1);
    out = node(OpKind::Unsqueeze, "mask_4d", {out, i64_constant("mask_axes", {1})},
               g_.value(out).dtype, s);
  }
  return out;
}

void Rewriter::remove(NodeId id) {
  Node& n = g_.node(id);
  if (n.dead) return;
  n.dead = true;
  removed_.push_back(id);
  for (ValueId in : n.inputs)
    if (in != ir::kNoValue) freed_.push_back(in);
}

Status Rewriter::run() {
  const Node& pv = g_.node(m_.output_matmul);
  const ValueId y4 = pv.outputs[0];
  Node a;
  a.op = OpKind::Attention;
  a.name = name_;
  a.inputs = {operand(m_.q, "q"), operand(m_.k, "k"), operand(m_.v, "v")};
  if (ValueId mk = mask(); mk != ir::kNoValue) a.inputs.push_back(mk);
  a.attrs.set("scale", ir::Attribute::of_float(m_.scale()));
  if (m_.is_causal) a.attrs.set("is_causal", ir::Attribute::of_int(1));
  const bool heads_attrs = m_.three_d || m_.rank == 3;
  if (heads_attrs) {
    a.attrs.set("q_num_heads", ir::Attribute::of_int(m_.q_heads));
    a.attrs.set("kv_num_heads", ir::Attribute::of_int(m_.kv_heads));
  }
  // Output: the MatMul's for the 4-D form (and rank-3 scores); the head
  // merge's Reshape output for the 3-D form, or a new value it then reshapes.
  std::vector<NodeId> gone{m_.softmax, m_.scores_matmul, m_.output_matmul};
  gone.insert(gone.end(), m_.chain.begin(), m_.chain.end());
  if (m_.three_d) {
    const Shape& s = g_.value(y4).shape;  // [B, H, Lq, Dv]
    const Shape y3{s[0], s[2], s[1] * s[3]};
    Node& merge = g_.node(m_.merge_reshape);
    if (g_.value(merge.outputs[0]).shape == y3) {
      a.outputs = {merge.outputs[0]};
      gone.push_back(m_.merge_reshape);
    } else {
      ValueId out = value("y", m_.dtype, y3);
      a.outputs = {out};
      merge.inputs[0] = out;
    }
    if (m_.merge_transpose >= 0) gone.push_back(m_.merge_transpose);
    if (!m_.merge_shape_readers.empty()) {
      // The Shapes that read the removed transpose's [B, Lq, H, Dv] output
      // read a view of that shape (0s copy the output's varying dims).
      const ValueId view =
          node(OpKind::Reshape, "y_heads", {a.outputs[0], i64_constant("y_heads_shape", {0, 0, s[1], s[3]})},
               m_.dtype, {s[0], s[2], s[1], s[3]});
      for (NodeId id : m_.merge_shape_readers) g_.node(id).inputs[0] = view;
    }
  } else {
    a.outputs = {y4};
  }
  for (NodeId id : gone) remove(id);
  const NodeId added = g_.add_node(std::move(a));
  // Producers nothing reads any more (head splits, repeats, the causal
  // triangle's construction) go with the pattern.
  while (!freed_.empty()) {
    ValueId v = freed_.back();
    freed_.pop_back();
    NodeId p = g_.value(v).producer;
    if (p < 0 || g_.node(p).dead) continue;
    bool unread = true;
    for (ValueId o : g_.node(p).outputs)
      if (o != ir::kNoValue && (g_.is_graph_output(o) || !g_.consumers(o).empty())) unread = false;
    if (unread) remove(p);
  }
  // Reports list the replaced ONNX nodes in model order.
  std::sort(removed_.begin(), removed_.end());
  for (NodeId id : removed_) {
    const Node& n = g_.node(id);
    absorbed_.push_back(n.name);
    absorbed_.insert(absorbed_.end(), n.absorbed.begin(), n.absorbed.end());
  }
  g_.node(added).absorbed = absorbed_;
  return Status::ok_status();
}

}  // namespace

Status fuse_attention(Graph& g, PassContext& ctx) {
  g.rebuild_producers();
  std::vector<NodeId> softmaxes;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].dead && g.nodes[i].op == OpKind::Softmax)
      softmaxes.push_back(static_cast<NodeId>(i));
  int fused = 0;
  for (NodeId s : softmaxes) {
    if (g.node(s).dead) continue;
    auto match = match_attention(g, s);
    if (auto* why = std::get_if<std::string>(&match)) {
      ctx.attention_notes.push_back(fmt::format("Softmax '{}': {}", g.node(s).name, *why));
      continue;
    }
    const AttentionMatch& m = std::get<AttentionMatch>(match);
    Rewriter rw(g, m);
    RETURN_IF_ERROR(rw.run());
    g.rebuild_producers();
    ++fused;
    ctx.count("fuse-attention: attentions fused");
    ctx.count("fuse-attention: nodes replaced", static_cast<int64_t>(rw.replaced()));
    if (m.three_d) ctx.count("fuse-attention: 3-D form (head split/merge removed)");
    if (m.is_causal) ctx.count("fuse-attention: causal masks folded into is_causal");
    if (m.gqa) ctx.count("fuse-attention: GQA/MQA repeats removed");
  }
  if (fused == 0) return Status::ok_status();
  RETURN_IF_ERROR(sort_nodes(g));
  // The new nodes' shapes were set by hand; the shape rules must agree.
  return ir::infer_shapes(g).with_context("shape inference after fuse-attention");
}

}  // namespace graphc::optimizer
