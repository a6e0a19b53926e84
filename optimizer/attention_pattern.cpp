// Matching the attention pattern (see attention_pattern.h). Everything here
// reads the graph; nothing changes it.
//
// The forms, as exporters write them (B batch, H heads, L lengths, D head size):
//   scores = MatMul(Q, Kᵀ)      Q [B, H, Lq, D]; Kᵀ [B, H, D, Lk] from
//       Transpose(K, 0,1,3,2)                      (HF eager, SDPA legacy export)
//       Transpose(K_bshd, 0,2,3,1)                 (the head split and Kᵀ merged
//                                                   by cancel-transposes)
//       Reshape(Transpose(Reshape(K, [-1,L,D]), 0,2,1), [B,H,D,L]) (SDPA dynamo)
//   scale: Div/Mul of the scores by a scalar, and/or Mul by a scalar on Q and
//       on Kᵀ (SDPA: sqrt(scale) on each), Q before the head split (Whisper)
//   mask: Add(scores, bias) and/or Where(cond, scores, fill) /
//       Where(cond, fill, scores) with fill <= -1e4 or -inf
//   probabilities = Softmax(axis=-1); output = MatMul(probabilities, V)
//   Q/K/V head split: Transpose(Reshape(x [B, L, H*D] -> [B, L, H, D]), 0,2,1,3)
//   GQA repeat (HF repeat_kv, SDPA enable_gqa): Reshape(Expand|Tile(
//       Unsqueeze(kv, 2) -> [B, Hkv, n, L, D]) -> [B, Hkv*n, L, D]); MQA also
//       Expand|Tile of [B, 1, L, D] to [B, H, L, D]
//   head merge: Reshape(Transpose(output, 0,2,1,3) -> [B, Lq, H*Dv])
// Rank-3 scores [B', Lq, Lk] (one head, or heads folded into the batch as in
// bmm-style code) are matched too, as the 3-D form with one head.
#include "optimizer/attention_pattern.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "ir/data_movement_params.h"
#include "ir/reduction_util.h"
#include "ir/shape_inference.h"
#include "optimizer/rewrite_util.h"
#include "reference/executor.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;

namespace {

const Node* producer(const Graph& g, ValueId v) {
  if (v == ir::kNoValue) return nullptr;
  NodeId p = g.value(v).producer;
  if (p < 0 || g.node(p).dead) return nullptr;
  return &g.node(p);
}

const Shape& shape_of(const Graph& g, ValueId v) { return g.value(v).shape; }
std::string name_of(const Node& n) { return fmt::format("{} '{}'", ir::op_name(n.op), n.name); }

std::optional<std::vector<int64_t>> perm_of(const Graph& g, const Node& t) {
  if (t.op != OpKind::Transpose || t.inputs.empty()) return std::nullopt;
  auto rank = static_cast<int64_t>(shape_of(g, t.inputs[0]).size());
  auto p = ir::dm::transpose_perm(t.attrs.get_ints("perm"), t.attrs.has("perm"), rank);
  if (!p.ok()) return std::nullopt;
  return *p;
}

bool is_reshape_like(OpKind op) {
  return op == OpKind::Reshape || op == OpKind::Flatten || op == OpKind::Squeeze ||
         op == OpKind::Unsqueeze;
}

std::vector<int64_t> swap_last_two(size_t rank) {
  std::vector<int64_t> p(rank);
  for (size_t i = 0; i < rank; ++i) p[i] = static_cast<int64_t>(i);
  std::swap(p[rank - 1], p[rank - 2]);
  return p;
}

bool is_identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// For Mul/Div by a one-element constant that keeps the other operand's shape:
// that operand and the factor the node multiplies it by.
std::optional<std::pair<ValueId, double>> scalar_scaling(const Graph& g, const Node& n) {
  if ((n.op != OpKind::Mul && n.op != OpKind::Div) || n.inputs.size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    if (n.op == OpKind::Div && side == 0) continue;  // only x / s
    auto s = scalar_constant(g, n.inputs[static_cast<size_t>(side)]);
    ValueId x = n.inputs[static_cast<size_t>(1 - side)];
    if (!s || !std::isfinite(*s) || *s == 0 || is_constant(g, x)) continue;
    if (shape_of(g, x) != shape_of(g, n.outputs[0])) continue;
    return std::make_pair(x, n.op == OpKind::Div ? 1.0 / *s : *s);
  }
  return std::nullopt;
}

// Skips ops that copy their input unchanged: Identity, and Slice/Expand/Tile
// whose output has the input's shape (Slice with positive steps).
ValueId skip_copies(const Graph& g, ValueId v) {
  for (int guard = 0; guard < 8; ++guard) {
    const Node* n = producer(g, v);
    if (!n || n->inputs.empty() || n->outputs.size() != 1) return v;
    ValueId in = n->inputs[0];
    bool same = in != ir::kNoValue && shape_of(g, in) == shape_of(g, v);
    bool copy =
        n->op == OpKind::Identity || (same && (n->op == OpKind::Expand || n->op == OpKind::Tile));
    if (same && n->op == OpKind::Slice) {
      copy = true;
      if (n->has_input(4)) {
        const auto& st = g.value(n->inputs[4]).constant;
        if (!st) return v;
        for (int64_t s : st->to_i64_vector()) copy = copy && s > 0;
      }
    }
    if (!copy) return v;
    v = in;
  }
  return v;
}

// Peels scalar Mul/Div (and copies) off `v`, multiplying `factor`.
ValueId peel_scale(const Graph& g, ValueId v, double& factor) {
  for (int guard = 0; guard < 8; ++guard) {
    v = skip_copies(g, v);
    const Node* n = producer(g, v);
    auto s = n ? scalar_scaling(g, *n) : std::nullopt;
    if (!s) return v;
    factor *= s->second;
    v = s->first;
  }
  return v;
}

// The single live reader of `v` (nullptr: none, several, or a graph output).
const Node* sole_reader(const Graph& g, ValueId v) {
  if (g.is_graph_output(v)) return nullptr;
  auto c = g.consumers(v);
  return c.size() == 1 ? &g.node(c[0]) : nullptr;
}

// The single live reader of `v` other than Shape ops (collected in
// `shapes`): over a shape range the exporters' Shape -> Gather -> Concat
// arithmetic is not folded, so a head merge's transposed output is also
// read by the Shape that sizes its Reshape.
const Node* sole_reader_but_shapes(const Graph& g, ValueId v, std::vector<NodeId>& shapes) {
  if (g.is_graph_output(v)) return nullptr;
  const Node* only = nullptr;
  for (NodeId c : g.consumers(v)) {
    if (g.node(c).op == OpKind::Shape) {
      shapes.push_back(c);
    } else if (only) {
      return nullptr;
    } else {
      only = &g.node(c);
    }
  }
  return only;
}

std::string readers_text(const Graph& g, ValueId v) {
  std::string out;
  for (NodeId c : g.consumers(v)) out += (out.empty() ? "" : ", ") + name_of(g.node(c));
  if (g.is_graph_output(v)) out += std::string(out.empty() ? "" : ", ") + "a graph output";
  return out.empty() ? "nothing" : out;
}

// True when `v` comes from a MatMul through mask/scale ops (so it is the
// scores side of an Add or Where).
bool leads_to_matmul(const Graph& g, ValueId v, int depth = 0) {
  const Node* n = producer(g, v);
  if (!n || depth > 8) return false;
  if (n->op == OpKind::MatMul) return true;
  if (n->op != OpKind::Add && n->op != OpKind::Where && n->op != OpKind::Mul &&
      n->op != OpKind::Div)
    return false;
  for (ValueId in : n->inputs)
    if (in != ir::kNoValue && leads_to_matmul(g, in, depth + 1)) return true;
  return false;
}

bool broadcasts_into(const Shape& mask, const Shape& scores) {
  if (mask.size() > scores.size()) return false;
  auto b = ir::broadcast_shapes(mask, scores);
  return b.ok() && *b == scores;
}

// A bias Where(c, 0, -inf) (or Where(c, -inf, 0)) of bool c: the mask term c.
std::optional<MaskTerm> bool_as_bias(const Graph& g, ValueId bias) {
  const Node* w = producer(g, bias);
  if (!w || w->op != OpKind::Where || g.value(w->inputs[0]).dtype != ir::DType::kBool ||
      shape_of(g, w->inputs[0]) != shape_of(g, bias))
    return std::nullopt;
  auto a = scalar_constant(g, w->inputs[1]), b = scalar_constant(g, w->inputs[2]);
  const double inf = std::numeric_limits<double>::infinity();
  if (!a || !b || !((*a == 0 && *b == -inf) || (*a == -inf && *b == 0))) return std::nullopt;
  MaskTerm t;
  t.kind = MaskTerm::Kind::kWhere;
  t.value = w->inputs[0];
  t.fill = -inf;
  t.fill_when_true = *a == -inf;
  return t;
}

// The GQA/MQA repeat of K or V heads: x, holding [B, H, L, D] (`as4`; x's
// own shape may differ: a reshape merged into it), as a repeat of
// [B, Hkv, L, D] in ONNX's grouping (query head h reads kv head h / (H/Hkv)).
std::optional<ValueId> repeated_from(const Graph& g, ValueId x, const Shape& as4) {
  x = skip_copies(g, x);
  const Node* n = producer(g, x);
  if (!n || as4.size() != 4) return std::nullopt;
  auto expands = [](OpKind op) { return op == OpKind::Expand || op == OpKind::Tile; };
  auto is_5d_repeat = [&](const Shape& s5) {
    return s5.size() == 5 && s5[0] == as4[0] && s5[1] * s5[2] == as4[1] && s5[3] == as4[2] &&
           s5[4] == as4[3];
  };
  ValueId e5 = ir::kNoValue;
  if (shape_of(g, x) == as4) {
    // MQA: [B, 1, L, D] expanded (or tiled) to [B, H, L, D].
    if (expands(n->op)) {
      const Shape& in = shape_of(g, n->inputs[0]);
      if (in == Shape{as4[0], 1, as4[2], as4[3]} && as4[1] > 1) return n->inputs[0];
      return std::nullopt;
    }
    // GQA (HF repeat_kv): Reshape(Expand(Unsqueeze(kv, 2))).
    if (!is_reshape_like(n->op)) return std::nullopt;
    e5 = n->inputs[0];
  } else {
    e5 = x;  // the Reshape merged into a later one (SDPA dynamo's Kᵀ)
  }
  const Shape& s5 = shape_of(g, e5);
  if (!is_5d_repeat(s5)) return std::nullopt;
  const Node* e = producer(g, e5);
  if (!e || !expands(e->op)) return std::nullopt;
  ValueId u5 = e->inputs[0];
  if (shape_of(g, u5) != Shape{s5[0], s5[1], 1, s5[3], s5[4]}) return std::nullopt;
  const Node* u = producer(g, u5);
  if (!u || !is_reshape_like(u->op)) return std::nullopt;
  ValueId kv = u->inputs[0];
  if (shape_of(g, kv) != Shape{s5[0], s5[1], s5[3], s5[4]}) return std::nullopt;
  return kv;
}

// The head split of x4 [B, H, L, D]: Transpose(s [B, L, H, D], 0,2,1,3), s
// any reshape of a [B, L, H*D] tensor (or a Reshape alone with one head).
// Returns the tensor the split started from (any shape of that many elements).
std::optional<ValueId> head_split_source(const Graph& g, ValueId x4) {
  x4 = skip_copies(g, x4);
  const Node* n = producer(g, x4);
  const Shape& s = shape_of(g, x4);
  if (!n || s.size() != 4) return std::nullopt;
  if (auto p = perm_of(g, *n); p && *p == std::vector<int64_t>{0, 2, 1, 3}) {
    ValueId bshd = skip_copies(g, n->inputs[0]);
    const Node* r = producer(g, bshd);
    return r && is_reshape_like(r->op) ? r->inputs[0] : bshd;
  }
  if (s[1] == 1 && is_reshape_like(n->op)) return n->inputs[0];  // one head: a view
  return std::nullopt;
}

// Resolves how the attention reads K from Kᵀ `kt` ([.., D, Lk]).
void key_from_transposed(const Graph& g, ValueId kt, int rank, OperandSource& src) {
  kt = peel_scale(g, kt, src.factor);
  src.shape4 = shape_of(g, kt);
  std::swap(src.shape4[src.shape4.size() - 1], src.shape4[src.shape4.size() - 2]);
  const auto swap = swap_last_two(static_cast<size_t>(rank));
  const Node* n = producer(g, kt);
  if (n && n->op == OpKind::Transpose) {
    auto p = perm_of(g, *n);
    if (p && *p == swap) {
      src.v4 = peel_scale(g, n->inputs[0], src.factor);
      return;
    }
    if (p && rank == 4 && *p == std::vector<int64_t>{0, 2, 3, 1}) {
      // Kᵀ straight from [B, L, H, D]: K is its (0,2,1,3) transpose.
      src.transpose_of = n->inputs[0];
      src.perm = {0, 2, 1, 3};
      const Node* r = producer(g, skip_copies(g, n->inputs[0]));
      src.split_from = r && is_reshape_like(r->op) ? r->inputs[0] : n->inputs[0];
      return;
    }
    if (p) {  // K = Transpose(x, p∘swap)
      std::vector<int64_t> q(p->size());
      for (size_t i = 0; i < q.size(); ++i) q[i] = (*p)[static_cast<size_t>(swap[i])];
      if (is_identity(q)) {
        src.v4 = n->inputs[0];
      } else {
        src.transpose_of = n->inputs[0];
        src.perm = q;
      }
      return;
    }
  }
  // The dynamo exporter's Kᵀ: Reshape(Transpose(Reshape(K, [-1, L, D]), 0,2,1), [.., D, L]).
  if (n && is_reshape_like(n->op)) {
    const Node* t = producer(g, n->inputs[0]);
    auto p = t ? perm_of(g, *t) : std::nullopt;
    const Node* r1 = t ? producer(g, t->inputs[0]) : nullptr;
    if (p && *p == std::vector<int64_t>{0, 2, 1} && r1 && is_reshape_like(r1->op)) {
      // r1 flattens K (any shape of B*H*L*D elements: an earlier reshape may
      // have merged into it) to [B*H, L, D].
      ValueId k = r1->inputs[0];
      Shape want = shape_of(g, kt);
      std::swap(want[want.size() - 1], want[want.size() - 2]);
      const Shape& flat = shape_of(g, r1->outputs[0]);
      if (flat.size() == 3 && flat[1] == want[want.size() - 2] && flat[2] == want.back() &&
          ir::shape_numel(shape_of(g, k)) == ir::shape_numel(want)) {
        src.shape4 = want;
        src.v4 = shape_of(g, k) == want ? peel_scale(g, k, src.factor) : k;
        return;
      }
    }
  }
  src.transpose_of = kt;
  src.perm = swap;
}

class Matcher {
 public:
  Matcher(const Graph& g, NodeId softmax) : g_(g) { m_.softmax = softmax; }
  std::variant<AttentionMatch, std::string> run();

 private:
  std::optional<std::string> walk_scores(ValueId x);
  std::optional<std::string> check_operand_shapes();
  void find_gqa_and_layout();
  void find_causal();

  const Graph& g_;
  AttentionMatch m_;
};

std::variant<AttentionMatch, std::string> Matcher::run() {
  const Node& sm = g_.node(m_.softmax);
  ValueId x = sm.inputs[0];
  const Shape& xs = shape_of(g_, x);
  m_.scores_shape = xs;
  m_.dtype = g_.value(x).dtype;
  if (xs.size() != 3 && xs.size() != 4)
    return fmt::format("its input has rank {}; attention scores are [B, H, Lq, Lk] or [B, Lq, Lk]",
                       xs.size());
  m_.rank = static_cast<int>(xs.size());
  auto split = ir::softmax_split(sm.attrs, xs);
  if (!split.ok() || split->inner != 1 || split->n != xs.back())
    return std::string("it normalises over another axis than the last (key) axis");
  if (!ir::is_float(m_.dtype)) return std::string("its input is not a float tensor");
  // Forward: the probabilities feed MatMul(P, V) alone.
  ValueId p = sm.outputs[0];
  const Node* pv = sole_reader(g_, p);
  if (!pv || pv->op != OpKind::MatMul || pv->inputs[0] != p || pv->inputs[1] == p)
    return fmt::format("its output is read by {}, not by MatMul(probabilities, V) alone",
                       readers_text(g_, p));
  m_.output_matmul = g_.value(pv->outputs[0]).producer;
  // Backward: mask ops, scale ops, MatMul(Q, Kᵀ).
  if (auto why = walk_scores(x)) return *why;
  if (auto why = check_operand_shapes()) return *why;
  find_gqa_and_layout();
  // ONNX's Attention multiplies Q and K by sqrt(scale) each: no sign to carry.
  if (!(m_.scale() >= 0))
    return fmt::format("the scores are scaled by {:g}; Attention's scale must be >= 0", m_.scale());
  find_causal();
  return std::move(m_);
}

std::optional<std::string> Matcher::walk_scores(ValueId x) {
  ValueId cur = x;
  bool scaled = false;
  for (int guard = 0; guard < 16; ++guard) {
    if (shape_of(g_, cur) != m_.scores_shape)
      return fmt::format("the scores change shape before the Softmax ('{}' is {})",
                         g_.value(cur).name, ir::shape_to_string(shape_of(g_, cur)));
    if (!sole_reader(g_, cur))
      return fmt::format("the scores '{}' are also read by {}", g_.value(cur).name,
                         readers_text(g_, cur));
    const Node* n = producer(g_, cur);
    if (!n)
      return fmt::format("the scores '{}' are not computed by MatMul(Q, K^T)", g_.value(cur).name);
    const NodeId id = g_.value(cur).producer;
    if (n->op == OpKind::MatMul) {
      m_.scores_matmul = id;
      return std::nullopt;
    }
    if (auto s = scalar_scaling(g_, *n)) {
      m_.score_factor *= s->second;
      scaled = true;
      m_.chain.push_back(id);
      cur = s->first;
      continue;
    }
    if (n->op == OpKind::Add || n->op == OpKind::Where) {
      if (scaled)
        return fmt::format(
            "{} masks the scores before they are scaled (the mask would be "
            "scaled too)",
            name_of(*n));
      MaskTerm term;
      ValueId scores = ir::kNoValue;
      if (n->op == OpKind::Add) {
        bool a = leads_to_matmul(g_, n->inputs[0]), b = leads_to_matmul(g_, n->inputs[1]);
        if (a == b) return fmt::format("{}: cannot tell the scores from the mask", name_of(*n));
        scores = n->inputs[a ? 0 : 1];
        term.value = n->inputs[a ? 1 : 0];
        // Where(c, 0, -inf) added (SDPA's bool mask) is the bool c itself.
        if (auto c = bool_as_bias(g_, term.value)) term = *c;
      } else {
        term.kind = MaskTerm::Kind::kWhere;
        term.value = n->inputs[0];
        bool scores_first = leads_to_matmul(g_, n->inputs[1]);
        scores = n->inputs[scores_first ? 1 : 2];
        ValueId fill = n->inputs[scores_first ? 2 : 1];
        term.fill_when_true = !scores_first;
        auto f = scalar_constant(g_, fill);
        if (!f || !(*f <= kLargeNegative))
          return fmt::format(
              "{} fills masked scores with {}, not a large negative (<= {:g}) "
              "or -inf",
              name_of(*n), f ? fmt::format("{:g}", *f) : "'" + g_.value(fill).name + "'",
              kLargeNegative);
        term.fill = *f;
        if (g_.value(term.value).dtype != ir::DType::kBool)
          return fmt::format("{}: the condition is not bool", name_of(*n));
      }
      const Shape& ms = shape_of(g_, term.value);
      if (!broadcasts_into(ms, m_.scores_shape))
        return fmt::format("the mask '{}' {} does not broadcast to the scores {}",
                           g_.value(term.value).name, ir::shape_to_string(ms),
                           ir::shape_to_string(m_.scores_shape));
      m_.masks.push_back(term);
      m_.chain.push_back(id);
      cur = scores;
      continue;
    }
    return fmt::format(
        "the scores come from {}, not from MatMul(Q, K^T) through a scalar scale "
        "and Add/Where masks",
        name_of(*n));
  }
  return std::string("the chain between MatMul and Softmax is too long");
}

std::optional<std::string> Matcher::check_operand_shapes() {
  const Node& qk = g_.node(m_.scores_matmul);
  const Node& pv = g_.node(m_.output_matmul);
  const Shape& a = shape_of(g_, qk.inputs[0]);
  const Shape& kt = shape_of(g_, qk.inputs[1]);
  const Shape& v = shape_of(g_, pv.inputs[1]);
  const Shape& s = m_.scores_shape;
  const size_t r = s.size();
  if (a.size() != r || kt.size() != r || v.size() != r)
    return fmt::format("Q {}, K^T {} and V {} do not all have the scores' rank {}",
                       ir::shape_to_string(a), ir::shape_to_string(kt), ir::shape_to_string(v), r);
  // Batch dims: Q's are the scores'; K and V may broadcast over heads (MQA).
  for (size_t d = 0; d + 2 < r; ++d) {
    bool head = r == 4 && d == 1;
    auto ok = [&](int64_t dim) { return dim == s[d] || (head && dim == 1); };
    if (a[d] != s[d] || !ok(kt[d]) || !ok(v[d]))
      return fmt::format("Q {}, K^T {} and V {} broadcast over the batch", ir::shape_to_string(a),
                         ir::shape_to_string(kt), ir::shape_to_string(v));
  }
  if (r == 4 && kt[1] != v[1]) return fmt::format("K has {} heads but V has {}", kt[1], v[1]);
  if (v[r - 2] != s[r - 1])
    return fmt::format("V {} does not have the {} keys of the scores", ir::shape_to_string(v),
                       s[r - 1]);
  m_.q_heads = r == 4 ? s[1] : 1;
  m_.kv_heads = r == 4 ? kt[1] : 1;
  return std::nullopt;
}

void Matcher::find_gqa_and_layout() {
  const Node& qk = g_.node(m_.scores_matmul);
  const Node& pv = g_.node(m_.output_matmul);
  m_.q.v4 = peel_scale(g_, qk.inputs[0], m_.q.factor);
  m_.q.shape4 = shape_of(g_, m_.q.v4);
  key_from_transposed(g_, qk.inputs[1], m_.rank, m_.k);
  m_.v.v4 = skip_copies(g_, pv.inputs[1]);
  m_.v.shape4 = shape_of(g_, m_.v.v4);
  if (m_.rank == 3) return;  // the 3-D form with one head: no head split, no merge
  // GQA: both K and V repeated from the same number of heads.
  if (m_.k.v4 != ir::kNoValue && m_.kv_heads == m_.q_heads) {
    auto k = repeated_from(g_, m_.k.v4, m_.k.shape4);
    auto v = repeated_from(g_, m_.v.v4, m_.v.shape4);
    if (k && v && shape_of(g_, *k)[1] == shape_of(g_, *v)[1]) {
      m_.k.v4 = *k;
      m_.v.v4 = *v;
      m_.k.shape4 = shape_of(g_, *k);
      m_.v.shape4 = shape_of(g_, *v);
      m_.kv_heads = shape_of(g_, *k)[1];
      m_.gqa = true;
    }
  }
  // Head splits (Q and K may carry a scalar scale before the split).
  m_.q.heads = m_.q_heads;
  m_.k.heads = m_.v.heads = m_.kv_heads;
  if (auto q = head_split_source(g_, m_.q.v4))
    m_.q.split_from = peel_scale(g_, *q, m_.q.split_factor);
  if (m_.k.v4 != ir::kNoValue && shape_of(g_, m_.k.v4) == m_.k.shape4)
    if (auto k = head_split_source(g_, m_.k.v4)) m_.k.split_from = *k;
  if (m_.k.split_from != ir::kNoValue)
    m_.k.split_from = peel_scale(g_, m_.k.split_from, m_.k.split_factor);
  if (auto v = head_split_source(g_, m_.v.v4)) m_.v.split_from = *v;
  // Head merge: Reshape(Transpose(Y, 0,2,1,3)) (a Reshape alone with one head).
  ValueId y = pv.outputs[0];
  const Node* t = sole_reader(g_, y);
  if (!t) return;
  auto p = perm_of(g_, *t);
  if (p && *p == std::vector<int64_t>{0, 2, 1, 3}) {
    std::vector<NodeId> shapes;
    const Node* r = sole_reader_but_shapes(g_, t->outputs[0], shapes);
    if (!r || !is_reshape_like(r->op)) return;
    m_.merge_shape_readers = std::move(shapes);
    m_.merge_transpose = g_.value(t->outputs[0]).producer;
    m_.merge_reshape = g_.value(r->outputs[0]).producer;
  } else if (m_.q_heads == 1 && is_reshape_like(t->op)) {
    m_.merge_reshape = g_.value(t->outputs[0]).producer;
  }
  m_.three_d = m_.merge_reshape >= 0 && m_.q.split_from != ir::kNoValue &&
               m_.k.split_from != ir::kNoValue && m_.v.split_from != ir::kNoValue;
}

// A mask that is a constant causal triangle becomes is_causal (and goes).
void Matcher::find_causal() {
  for (size_t i = 0; i < m_.masks.size(); ++i) {
    const MaskTerm& t = m_.masks[i];
    auto c = evaluate_constant(g_, t.value, int64_t{1} << 25);
    if (!c) continue;
    bool causal = t.kind == MaskTerm::Kind::kAdditive
                      ? is_causal_mask(*c, m_.scores_shape, false)
                      : is_causal_mask(*c, m_.scores_shape, t.fill_when_true);
    if (!causal) continue;
    m_.is_causal = true;
    m_.masks.erase(m_.masks.begin() + static_cast<std::ptrdiff_t>(i));
    return;  // one triangle is enough; a second would be an ordinary mask
  }
}

}  // namespace

std::variant<AttentionMatch, std::string> match_attention(const Graph& g, NodeId softmax) {
  return Matcher(g, softmax).run();
}

std::optional<ir::Tensor> evaluate_constant(const Graph& g, ValueId v, int64_t max_elements) {
  std::map<ValueId, ir::Tensor> memo;
  std::function<const ir::Tensor*(ValueId, int)> eval = [&](ValueId id,
                                                            int depth) -> const ir::Tensor* {
    const ir::Value& val = g.value(id);
    if (val.constant) return &*val.constant;
    if (auto it = memo.find(id); it != memo.end()) return &it->second;
    const Node* n = producer(g, id);
    if (!n || depth > 32 || ir::shape_numel(val.shape) > max_elements) return nullptr;
    std::vector<const ir::Tensor*> ins;
    for (ValueId in : n->inputs) {
      if (in == ir::kNoValue) {
        ins.push_back(nullptr);
        continue;
      }
      const ir::Tensor* t = eval(in, depth + 1);
      if (!t) return nullptr;
      ins.push_back(t);
    }
    auto outs = reference::evaluate_node(g, *n, ins);
    if (!outs.ok()) return nullptr;
    for (size_t o = 0; o < n->outputs.size(); ++o)
      if (n->outputs[o] != ir::kNoValue) memo[n->outputs[o]] = std::move((*outs)[o]);
    auto it = memo.find(id);
    return it == memo.end() ? nullptr : &it->second;
  };
  const ir::Tensor* t = eval(v, 0);
  if (!t) return std::nullopt;
  return *t;
}

bool is_causal_mask(const ir::Tensor& mask, const Shape& scores, bool negate) {
  const Shape& ms = mask.shape();
  if (ms.size() > scores.size() || scores.size() < 2) return false;
  const int64_t lq = scores[scores.size() - 2], lk = scores.back();
  // The mask's own leading dims (each a broadcast copy must be causal too).
  const size_t r = ms.size();
  const int64_t mq = r >= 2 ? ms[r - 2] : 1, mk = r >= 1 ? ms[r - 1] : 1;
  const int64_t lead = r >= 2 ? mask.numel() / (mq * mk) : 1;
  const bool is_bool = mask.dtype() == ir::DType::kBool;
  for (int64_t l = 0; l < lead; ++l)
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j) {
        int64_t off = l * mq * mk + (mq == 1 ? 0 : i) * mk + (mk == 1 ? 0 : j);
        double v = mask.get_f64(off);
        bool allowed = j <= i;
        if (is_bool) {
          if (((v != 0) != negate) != allowed) return false;
        } else if (allowed ? v != 0 : !(v <= kLargeNegative)) {
          return false;
        }
      }
  return true;
}

}  // namespace graphc::optimizer
