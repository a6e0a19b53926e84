// Reference kernels for RNN, GRU and LSTM (ONNX semantics, every direction,
// activation list, clip, sequence_lens, initial states, peepholes, both
// layouts). Computed in double, one batch row and one time step at a time;
// the state is carried in double and rounded only into the outputs. Time
// steps at or past a row's sequence length leave Y zero; Y_h/Y_c hold the
// state after the row's last step (the initial state for a length of 0).
#include <algorithm>

#include "ir/recurrent_params.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

using ir::RecurrentParams;
using ir::Tensor;

namespace {

// Flat offsets of the layout-dependent tensors.
struct Indexer {
  const RecurrentParams& p;
  int64_t x(int64_t t, int64_t b, int64_t i) const {
    return (p.layout == 0 ? t * p.batch + b : b * p.seq_len + t) * p.input_size + i;
  }
  int64_t y(int64_t t, int64_t d, int64_t b, int64_t h) const {
    int64_t row = p.layout == 0 ? (t * p.num_directions + d) * p.batch + b
                                : (b * p.seq_len + t) * p.num_directions + d;
    return row * p.hidden + h;
  }
  int64_t state(int64_t d, int64_t b, int64_t h) const {
    return (p.layout == 0 ? d * p.batch + b : b * p.num_directions + d) * p.hidden + h;
  }
};

struct Cell {
  const RecurrentParams& p;
  const Tensor& x;
  const Tensor& w;
  const Tensor& r;
  const Tensor* bias;
  const Tensor* peephole;
  int64_t d;

  double clip(double v) const { return p.clip ? std::clamp(v, -*p.clip, *p.clip) : v; }
  // Row `row` of W (gate-major) times X[t, b, :], plus W's bias.
  double input_part(int64_t row, int64_t t, int64_t b, const Indexer& ix) const {
    const int64_t gh = p.gates * p.hidden;
    double s = bias ? bias->get_f64(d * 2 * gh + row) : 0.0;
    const int64_t base = (d * gh + row) * p.input_size;
    for (int64_t i = 0; i < p.input_size; ++i) s += x.get_f64(ix.x(t, b, i)) * w.get_f64(base + i);
    return s;
  }
  // Row `row` of R times the vector h, plus R's bias.
  double recurrent_part(int64_t row, const std::vector<double>& h) const {
    const int64_t gh = p.gates * p.hidden;
    double s = bias ? bias->get_f64(d * 2 * gh + gh + row) : 0.0;
    const int64_t base = (d * gh + row) * p.hidden;
    for (int64_t k = 0; k < p.hidden; ++k) s += h[static_cast<size_t>(k)] * r.get_f64(base + k);
    return s;
  }
  double peep(int64_t gate, int64_t j) const {  // gate 0: i, 1: o, 2: f
    return peephole ? peephole->get_f64(d * 3 * p.hidden + gate * p.hidden + j) : 0.0;
  }
};

// One step: h (and c for LSTM) advance in place.
void step(const Cell& cell, const Indexer& ix, int64_t t, int64_t b, std::vector<double>& h,
          std::vector<double>& c) {
  const RecurrentParams& p = cell.p;
  const auto& act = p.activations[static_cast<size_t>(cell.d)];
  const int64_t H = p.hidden;
  std::vector<double> next(static_cast<size_t>(H));
  if (p.op == ir::OpKind::RNN) {
    for (int64_t j = 0; j < H; ++j)
      next[static_cast<size_t>(j)] =
          act[0].apply(cell.clip(cell.input_part(j, t, b, ix) + cell.recurrent_part(j, h)));
  } else if (p.op == ir::OpKind::GRU) {  // gates z, r, h
    std::vector<double> rh(static_cast<size_t>(H));
    std::vector<double> z(static_cast<size_t>(H)), rg(static_cast<size_t>(H));
    for (int64_t j = 0; j < H; ++j) {
      auto u = static_cast<size_t>(j);
      z[u] = act[0].apply(cell.clip(cell.input_part(j, t, b, ix) + cell.recurrent_part(j, h)));
      rg[u] = act[0].apply(
          cell.clip(cell.input_part(H + j, t, b, ix) + cell.recurrent_part(H + j, h)));
      rh[u] = rg[u] * h[u];
    }
    for (int64_t j = 0; j < H; ++j) {
      auto u = static_cast<size_t>(j);
      double xh = cell.input_part(2 * H + j, t, b, ix);
      double hh = p.linear_before_reset ? rg[u] * cell.recurrent_part(2 * H + j, h)
                                        : cell.recurrent_part(2 * H + j, rh);
      double cand = act[1].apply(cell.clip(xh + hh));
      next[u] = (1.0 - z[u]) * cand + z[u] * h[u];
    }
  } else {  // LSTM: gates i, o, f, c; peepholes i, o, f
    std::vector<double> next_c(static_cast<size_t>(H));
    for (int64_t j = 0; j < H; ++j) {
      auto u = static_cast<size_t>(j);
      auto pre = [&](int64_t g) {
        return cell.input_part(g * H + j, t, b, ix) + cell.recurrent_part(g * H + j, h);
      };
      double ig = act[0].apply(cell.clip(pre(0) + cell.peep(0, j) * c[u]));
      double fg = p.input_forget ? 1.0 - ig
                                 : act[0].apply(cell.clip(pre(2) + cell.peep(2, j) * c[u]));
      double cand = act[1].apply(cell.clip(pre(3)));
      next_c[u] = fg * c[u] + ig * cand;
      double og = act[0].apply(cell.clip(pre(1) + cell.peep(1, j) * next_c[u]));
      next[u] = og * act[2].apply(next_c[u]);
    }
    c = std::move(next_c);
  }
  h = std::move(next);
}

Status run_recurrent(KernelContext& ctx) {
  std::vector<const ir::Shape*> shapes;
  std::vector<ir::DType> dtypes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    shapes.push_back(ctx.has_input(i) ? &ctx.in(i).shape() : nullptr);
    dtypes.push_back(ctx.has_input(i) ? ctx.in(i).dtype() : ir::DType::kUndefined);
  }
  ASSIGN_OR_RETURN(RecurrentParams p, ir::recurrent_params(ctx.node.op, ctx.attrs(), shapes, dtypes));
  const bool lstm = p.op == ir::OpKind::LSTM;
  auto opt_in = [&](size_t i) -> const Tensor* { return ctx.has_input(i) ? &ctx.in(i) : nullptr; };
  const Tensor* seq_lens = opt_in(ir::kRnnSeqLens);
  const Tensor* init_h = opt_in(ir::kRnnInitialH);
  const Tensor* init_c = lstm ? opt_in(ir::kRnnInitialC) : nullptr;
  auto out = [&](size_t o) -> Tensor* {
    return o < ctx.outputs.size() && ctx.node.outputs[o] != ir::kNoValue ? &ctx.out(o) : nullptr;
  };
  Tensor* y = out(0);
  Tensor* y_h = out(1);
  Tensor* y_c = lstm ? out(2) : nullptr;
  Indexer ix{p};
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t len = p.seq_len;
    if (seq_lens) {
      len = seq_lens->get_i64(b);
      if (len < 0 || len > p.seq_len)
        return invalid_argument("sequence_lens[{}] is {}, outside [0, {}]", b, len, p.seq_len);
    }
    for (int64_t d = 0; d < p.num_directions; ++d) {
      const bool reverse = p.direction == ir::RnnDirection::kReverse || d == 1;
      Cell cell{p, ctx.in(ir::kRnnX), ctx.in(ir::kRnnW), ctx.in(ir::kRnnR),
                opt_in(ir::kRnnB), lstm ? opt_in(ir::kRnnP) : nullptr, d};
      std::vector<double> h(static_cast<size_t>(p.hidden), 0.0), c(h);
      for (int64_t j = 0; j < p.hidden; ++j) {
        if (init_h) h[static_cast<size_t>(j)] = init_h->get_f64(ix.state(d, b, j));
        if (init_c) c[static_cast<size_t>(j)] = init_c->get_f64(ix.state(d, b, j));
      }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        step(cell, ix, t, b, h, c);
        if (y)
          for (int64_t j = 0; j < p.hidden; ++j) y->set_f64(ix.y(t, d, b, j), h[static_cast<size_t>(j)]);
      }
      for (int64_t j = 0; j < p.hidden; ++j) {
        if (y_h) y_h->set_f64(ix.state(d, b, j), h[static_cast<size_t>(j)]);
        if (y_c) y_c->set_f64(ix.state(d, b, j), c[static_cast<size_t>(j)]);
      }
    }
  }
  return Status::ok_status();
}

}  // namespace

Status run_RNN(KernelContext& ctx) { return run_recurrent(ctx); }
Status run_GRU(KernelContext& ctx) { return run_recurrent(ctx); }
Status run_LSTM(KernelContext& ctx) { return run_recurrent(ctx); }

}  // namespace graphc::reference::kernels
