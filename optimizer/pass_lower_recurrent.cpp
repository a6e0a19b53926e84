// lower-recurrent: RNN, GRU and LSTM become ops the GPU already runs. The
// input projection of every time step is one MatMul ([seq*batch, input] x
// [input, gates*hidden], the biases folded into one Add); each time step is
// then a recurrent MatMul ([batch, hidden] x [hidden, gates*hidden]) and the
// gate arithmetic, which the fusion passes turn into one elementwise kernel:
// a per-step launch sequence that the engine's CUDA graph replays without
// host round trips. sequence_lens becomes a per-step mask (Where): a row past
// its length keeps its state and writes zeros, which also gives the reverse
// direction's per-row start. Up to kMaxSteps unrolled steps; longer layers
// stay nodes (the reference runs them; the GPU lowering refuses them by name).
// It runs without a target too, so `conformance --optimize` checks it on the CPU.
#include "ir/recurrent_params.h"
#include "ir/shape_inference.h"
#include "optimizer/passes.h"
#include "reference/executor.h"

namespace graphc::optimizer {

namespace {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Tensor;
using ir::ValueId;

constexpr int64_t kMaxSteps = 512;  // seq_len x directions

struct Builder {
  Graph& g;
  std::string prefix;
  ir::DType dtype;
  std::vector<Node> nodes;

  ValueId value(const std::string& hint) {
    ir::Value v;
    v.name = g.unique_name(prefix + "/" + hint);
    return g.add_value(std::move(v));
  }
  ValueId op(OpKind k, std::vector<ValueId> ins, ir::AttributeMap attrs = {},
             const std::string& hint = "") {
    Node n;
    n.op = k;
    n.name = g.unique_name(prefix + "/" + std::string(ir::op_name(k)));
    n.inputs = std::move(ins);
    n.outputs = {value(hint.empty() ? std::string(ir::op_name(k)) : hint)};
    n.attrs = std::move(attrs);
    nodes.push_back(std::move(n));
    return nodes.back().outputs[0];
  }
  ValueId ints(std::vector<int64_t> v) {
    auto n = static_cast<int64_t>(v.size());
    return g.add_constant(g.unique_name(prefix + "/ints"), Tensor::from_i64(v, {n}));
  }
  ValueId index(int64_t i) {
    return g.add_constant(g.unique_name(prefix + "/index"), Tensor::scalar_i64(i));
  }
  ValueId scalar(double v) {
    Tensor t(dtype, {});
    t.set_f64(0, v);
    return g.add_constant(g.unique_name(prefix + "/scalar"), std::move(t));
  }
  static ir::AttributeMap attr(const char* name, int64_t v) {
    ir::AttributeMap a;
    a.set(name, ir::Attribute::of_int(v));
    return a;
  }
  static ir::AttributeMap attr_f(std::initializer_list<std::pair<const char*, double>> fs) {
    ir::AttributeMap a;
    for (const auto& [k, v] : fs) a.set(k, ir::Attribute::of_float(v));
    return a;
  }
  ValueId gather(ValueId x, int64_t i, int64_t axis) {
    return op(OpKind::Gather, {x, index(i)}, attr("axis", axis));
  }
  ValueId slice_cols(ValueId x, int64_t from, int64_t to) {  // along the last axis (1)
    return op(OpKind::Slice, {x, ints({from}), ints({to}), ints({1})});
  }
  ValueId transpose(ValueId x, std::vector<int64_t> perm) {
    ir::AttributeMap a;
    a.set("perm", ir::Attribute::of_ints(std::move(perm)));
    return op(OpKind::Transpose, {x}, a);
  }
  ValueId add(ValueId a, ValueId b) { return op(OpKind::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op(OpKind::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op(OpKind::Mul, {a, b}); }
  ValueId stack(const std::vector<ValueId>& parts, int64_t axis) {
    std::vector<ValueId> ex;
    for (ValueId p : parts) ex.push_back(op(OpKind::Unsqueeze, {p, ints({axis})}));
    return ex.size() == 1 ? ex[0] : op(OpKind::Concat, ex, attr("axis", axis));
  }
  ValueId activation(const ir::RnnActivation& a, ValueId x) {
    using K = ir::RnnActivation::Kind;
    switch (a.kind) {
      case K::kRelu: return op(OpKind::Relu, {x});
      case K::kTanh: return op(OpKind::Tanh, {x});
      case K::kSigmoid: return op(OpKind::Sigmoid, {x});
      case K::kAffine: return add(mul(x, scalar(a.alpha)), scalar(a.beta));
      case K::kLeakyRelu: return op(OpKind::LeakyRelu, {x}, attr_f({{"alpha", a.alpha}}));
      case K::kThresholdedRelu:
        return op(OpKind::ThresholdedRelu, {x}, attr_f({{"alpha", a.alpha}}));
      case K::kScaledTanh: return mul(op(OpKind::Tanh, {mul(x, scalar(a.beta))}), scalar(a.alpha));
      case K::kHardSigmoid:
        return op(OpKind::HardSigmoid, {x}, attr_f({{"alpha", a.alpha}, {"beta", a.beta}}));
      case K::kElu: return op(OpKind::Elu, {x}, attr_f({{"alpha", a.alpha}}));
      case K::kSoftsign: return op(OpKind::Softsign, {x});
      case K::kSoftplus: return op(OpKind::Softplus, {x});
    }
    return x;
  }
};

// One direction over all steps; returns the per-step outputs (time order) and the final states.
struct DirectionResult {
  std::vector<ValueId> ys;
  ValueId h, c;
};

DirectionResult lower_direction(Builder& b, const ir::RecurrentParams& p, const Node& n,
                                ValueId x, int64_t d, ValueId h0, ValueId c0, ValueId mask_lens) {
  const int64_t H = p.hidden, G = p.gates;
  const bool lstm = p.op == OpKind::LSTM, gru = p.op == OpKind::GRU;
  auto clip = [&](ValueId v) {
    return p.clip ? b.op(OpKind::Clip, {v, b.scalar(-*p.clip), b.scalar(*p.clip)}) : v;
  };
  const auto& act = p.activations[static_cast<size_t>(d)];
  ValueId w = b.gather(n.inputs[ir::kRnnW], d, 0);  // [G*H, I]
  ValueId r = b.gather(n.inputs[ir::kRnnR], d, 0);  // [G*H, H]
  // The input projection of every step at once: [S, B, I] x [I, G*H] (+ biases).
  ValueId xw = b.op(OpKind::MatMul, {x, b.transpose(w, {1, 0})}, {}, "input_projection");
  ValueId rb_h = ir::kNoValue;  // GRU: R's bias of the h gate, applied inside the reset
  if (n.has_input(ir::kRnnB)) {
    ValueId bias = b.gather(n.inputs[ir::kRnnB], d, 0);  // [2*G*H]
    ValueId wb = b.op(OpKind::Slice, {bias, b.ints({0}), b.ints({G * H}), b.ints({0})});
    ValueId rb = b.op(OpKind::Slice, {bias, b.ints({G * H}), b.ints({2 * G * H}), b.ints({0})});
    if (gru) {
      ValueId rb_zr = b.op(OpKind::Slice, {rb, b.ints({0}), b.ints({2 * H}), b.ints({0})});
      rb_h = b.op(OpKind::Slice, {rb, b.ints({2 * H}), b.ints({3 * H}), b.ints({0})});
      ValueId zeros = b.g.add_constant(b.g.unique_name(b.prefix + "/zeros"), Tensor(b.dtype, {H}));
      rb = b.op(OpKind::Concat, {rb_zr, zeros}, Builder::attr("axis", 0));
    }
    xw = b.add(xw, b.add(wb, rb));
  }
  ValueId rt = b.transpose(r, {1, 0});  // [H, G*H]
  ValueId rt_zr = gru ? b.slice_cols(rt, 0, 2 * H) : ir::kNoValue;
  ValueId rt_h = gru ? b.slice_cols(rt, 2 * H, 3 * H) : ir::kNoValue;
  ValueId peep = lstm && n.has_input(ir::kRnnP) ? b.gather(n.inputs[ir::kRnnP], d, 0) : ir::kNoValue;
  auto peep_part = [&](int64_t k) {  // 0: i, 1: o, 2: f
    return b.op(OpKind::Slice, {peep, b.ints({k * H}), b.ints({(k + 1) * H}), b.ints({0})});
  };
  const bool reverse = p.direction == ir::RnnDirection::kReverse || d == 1;
  DirectionResult res;
  res.ys.resize(static_cast<size_t>(p.seq_len));
  ValueId h = h0, c = c0;
  for (int64_t s = 0; s < p.seq_len; ++s) {
    const int64_t t = reverse ? p.seq_len - 1 - s : s;
    ValueId xt = b.gather(xw, t, 0);  // [B, G*H]
    ValueId hn, cn = c;
    if (p.op == OpKind::RNN) {
      hn = b.activation(act[0], clip(b.add(xt, b.op(OpKind::MatMul, {h, rt}))));
    } else if (gru) {
      ValueId zr = b.add(b.slice_cols(xt, 0, 2 * H), b.op(OpKind::MatMul, {h, rt_zr}));
      ValueId z = b.activation(act[0], clip(b.slice_cols(zr, 0, H)));
      ValueId rg = b.activation(act[0], clip(b.slice_cols(zr, H, 2 * H)));
      ValueId xh = b.slice_cols(xt, 2 * H, 3 * H);
      ValueId hh;
      if (p.linear_before_reset) {
        ValueId hr = b.op(OpKind::MatMul, {h, rt_h});
        if (rb_h != ir::kNoValue) hr = b.add(hr, rb_h);
        hh = b.add(xh, b.mul(rg, hr));
      } else {
        hh = b.add(xh, b.op(OpKind::MatMul, {b.mul(rg, h), rt_h}));
        if (rb_h != ir::kNoValue) hh = b.add(hh, rb_h);
      }
      ValueId cand = b.activation(act[1], clip(hh));
      hn = b.add(cand, b.mul(z, b.sub(h, cand)));  // (1 - z) * cand + z * h
    } else {  // LSTM: i, o, f, c
      ValueId pre = b.add(xt, b.op(OpKind::MatMul, {h, rt}));
      auto gate = [&](int64_t k) { return b.slice_cols(pre, k * H, (k + 1) * H); };
      ValueId ip = gate(0), op_ = gate(1), fp = gate(2), cp = gate(3);
      if (peep != ir::kNoValue) {
        ip = b.add(ip, b.mul(peep_part(0), c));
        fp = b.add(fp, b.mul(peep_part(2), c));
      }
      ValueId ig = b.activation(act[0], clip(ip));
      ValueId fg = p.input_forget ? b.sub(b.scalar(1.0), ig) : b.activation(act[0], clip(fp));
      cn = b.add(b.mul(fg, c), b.mul(ig, b.activation(act[1], clip(cp))));
      if (peep != ir::kNoValue) op_ = b.add(op_, b.mul(peep_part(1), cn));
      hn = b.mul(b.activation(act[0], clip(op_)), b.activation(act[2], cn));
    }
    if (mask_lens != ir::kNoValue) {
      // Row b advances only while t < sequence_lens[b]; Y is zero past it.
      ValueId live = b.op(OpKind::Unsqueeze,
                          {b.op(OpKind::Less, {b.index(t), mask_lens}), b.ints({1})});  // [B, 1]
      res.ys[static_cast<size_t>(t)] = b.op(OpKind::Where, {live, hn, b.scalar(0.0)});
      hn = b.op(OpKind::Where, {live, hn, h});
      if (lstm) cn = b.op(OpKind::Where, {live, cn, c});
    } else {
      res.ys[static_cast<size_t>(t)] = hn;
    }
    h = hn;
    c = cn;
  }
  res.h = h;
  res.c = c;
  return res;
}

// Builds the replacement of `n`; false (nothing built) when it stays a node.
bool lower(Builder& b, const Node& n, const ir::RecurrentParams& p) {
  if (p.seq_len * p.num_directions > kMaxSteps || p.seq_len == 0 || p.batch == 0) return false;
  const bool lstm = p.op == OpKind::LSTM;
  ValueId x = n.inputs[ir::kRnnX];
  if (p.layout == 1) x = b.transpose(x, {1, 0, 2});  // [S, B, I]
  auto state_in = [&](size_t input) -> ValueId {
    if (!n.has_input(input)) return ir::kNoValue;
    ValueId v = n.inputs[input];
    return p.layout == 1 ? b.transpose(v, {1, 0, 2}) : v;  // [D, B, H]
  };
  ValueId h0all = state_in(ir::kRnnInitialH);
  ValueId c0all = lstm ? state_in(ir::kRnnInitialC) : ir::kNoValue;
  ValueId lens = n.has_input(ir::kRnnSeqLens)
                     ? b.op(OpKind::Cast, {n.inputs[ir::kRnnSeqLens]},
                            Builder::attr("to", 7))  // int64, like the step index
                     : ir::kNoValue;
  std::vector<ValueId> ys, hs, cs;
  for (int64_t d = 0; d < p.num_directions; ++d) {
    Tensor zeros(p.dtype, {p.batch, p.hidden});
    ValueId zero_state = b.g.add_constant(b.g.unique_name(b.prefix + "/zero_state"), zeros);
    ValueId h0 = h0all != ir::kNoValue ? b.gather(h0all, d, 0) : zero_state;
    ValueId c0 = c0all != ir::kNoValue ? b.gather(c0all, d, 0) : zero_state;
    auto r = lower_direction(b, p, n, x, d, h0, c0, lens);
    ys.push_back(b.stack(r.ys, 0));  // [S, B, H]
    hs.push_back(r.h);
    cs.push_back(r.c);
  }
  ValueId y = b.stack(ys, 1);    // [S, D, B, H]
  ValueId yh = b.stack(hs, 0);   // [D, B, H]
  ValueId yc = b.stack(cs, 0);
  if (p.layout == 1) {
    y = b.transpose(y, {2, 0, 1, 3});
    yh = b.transpose(yh, {1, 0, 2});
    yc = b.transpose(yc, {1, 0, 2});
  }
  const ValueId results[] = {y, yh, yc};
  for (size_t o = 0; o < n.outputs.size() && o < 3; ++o) {
    if (n.outputs[o] == ir::kNoValue) continue;
    Node id;
    id.op = OpKind::Identity;
    id.name = b.g.unique_name(b.prefix + "/output");
    id.inputs = {results[o]};
    id.outputs = {n.outputs[o]};
    b.nodes.push_back(std::move(id));
  }
  return true;
}

}  // namespace

Status lower_recurrent(Graph& g, PassContext& ctx) {
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].dead || ir::op_info(g.nodes[i].op).category != ir::OpCategory::kRecurrent)
      continue;
    const Node n = g.nodes[i];
    std::vector<const ir::Shape*> shapes;
    std::vector<ir::DType> dtypes;
    for (ValueId in : n.inputs) {
      shapes.push_back(in == ir::kNoValue ? nullptr : &g.value(in).shape);
      dtypes.push_back(in == ir::kNoValue ? ir::DType::kUndefined : g.value(in).dtype);
    }
    auto p = ir::recurrent_params(n.op, n.attrs, shapes, dtypes);
    if (!p.ok()) return p.status().with_context(fmt::format("node '{}' ({})", n.name, ir::op_name(n.op)));
    Builder b{g, n.name, p->dtype, {}};
    if (!lower(b, n, *p)) continue;
    g.nodes[i].dead = true;
    for (auto& added : b.nodes) added.absorbed.push_back(n.name);
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), b.nodes.begin(), b.nodes.end());
    i += b.nodes.size();
    g.rebuild_producers();
    changed = true;
    ctx.count("lower-recurrent: layers lowered");
  }
  if (!changed) return Status::ok_status();
  g.compact();
  // The new values get their types from the shape rules, as at import.
  ir::ShapeInferenceOptions options;
  options.evaluator = reference::constant_evaluator();
  return ir::infer_shapes(g, options);
}

}  // namespace graphc::optimizer
