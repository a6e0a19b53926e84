// Reference kernels for If, Loop and Scan: each run of a sub-graph types it
// for the values at hand (ir::infer_subgraph, the values as constants so
// shape arithmetic on them resolves) and executes it with the reference
// executor.
#include <cstring>

#include "ir/control_flow.h"
#include "reference/executor.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

using ir::Graph;
using ir::Tensor;

namespace {

// Runs `sub` on `inputs`. They are typed as constants, since for this run
// they are: shape arithmetic on them (a nested If's condition, a Slice bound
// from the loop counter) resolves as it would at build time. Outputs in
// sub-graph output order.
Expected<std::vector<Tensor>> run_subgraph(const Graph& sub, const std::vector<const Tensor*>& inputs) {
  std::vector<ir::SubgraphInput> types;
  for (const Tensor* t : inputs) types.push_back({t->dtype(), t->shape(), t});
  ir::ShapeInferenceOptions options;
  options.evaluator = constant_evaluator();
  ASSIGN_OR_RETURN(Graph g, ir::infer_subgraph(sub, types, options));
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < g.inputs.size(); ++i) feeds[g.value(g.inputs[i]).name] = *inputs[i];
  auto result = execute(g, feeds);
  if (!result.ok()) return result.status().with_context(fmt::format("sub-graph '{}'", sub.name));
  std::vector<Tensor> outs;
  for (ir::ValueId id : g.outputs) outs.push_back(result->at(g.value(id).name));
  return outs;
}

Status check_same_type(const Tensor& got, const Tensor& want, const char* what, size_t i) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return invalid_argument("{} {} is {}[{}] at run time, shape inference said {}[{}]", what, i,
                            ir::dtype_name(got.dtype()), ir::shape_to_string(got.shape()),
                            ir::dtype_name(want.dtype()), ir::shape_to_string(want.shape()));
  return Status::ok_status();
}

// Element ranges around `axis`: outer x len x inner (inner in bytes).
struct AxisSplit {
  int64_t outer = 1, len = 1, inner_bytes = 1;
};
AxisSplit split_at(const Tensor& t, int64_t axis) {
  AxisSplit s;
  s.inner_bytes = static_cast<int64_t>(ir::dtype_size(t.dtype()));
  for (int64_t d = 0; d < t.rank(); ++d) {
    int64_t n = t.shape()[static_cast<size_t>(d)];
    if (d < axis) s.outer *= n;
    else if (d == axis) s.len = n;
    else s.inner_bytes *= n;
  }
  return s;
}

// t[..., index, ...] along `axis`, the axis dropped.
Tensor take_along(const Tensor& t, int64_t axis, int64_t index) {
  Tensor out(t.dtype(), ir::shape_without_axis(t.shape(), axis));
  AxisSplit s = split_at(t, axis);
  auto inner = static_cast<size_t>(s.inner_bytes);
  for (int64_t o = 0; o < s.outer; ++o)
    std::memcpy(out.mutable_data() + o * s.inner_bytes,
                t.data() + (o * s.len + index) * s.inner_bytes, inner);
  return out;
}

// out[..., index, ...] = piece along `axis`.
void put_along(Tensor& out, int64_t axis, int64_t index, const Tensor& piece) {
  AxisSplit s = split_at(out, axis);
  auto inner = static_cast<size_t>(s.inner_bytes);
  for (int64_t o = 0; o < s.outer; ++o)
    std::memcpy(out.mutable_data() + (o * s.len + index) * s.inner_bytes,
                piece.data() + o * s.inner_bytes, inner);
}

// One unbatched Scan over `states` and `scans`; writes `outs` (states, then scan outputs).
Status scan_once(const Graph& body, const ir::ScanParams& p, std::vector<Tensor> states,
                 const std::vector<Tensor>& scans, const std::vector<const Tensor*>& captures,
                 std::vector<Tensor>& outs) {
  for (int64_t t = 0; t < p.seq_len; ++t) {
    std::vector<Tensor> slices;
    for (int64_t j = 0; j < p.scans; ++j) {
      auto u = static_cast<size_t>(j);
      int64_t at = p.input_reverse[u] ? p.seq_len - 1 - t : t;
      slices.push_back(take_along(scans[u], p.input_axes[u], at));
    }
    std::vector<const Tensor*> ins;
    for (auto& s : states) ins.push_back(&s);
    for (auto& s : slices) ins.push_back(&s);
    for (auto* c : captures) ins.push_back(c);
    ASSIGN_OR_RETURN(auto res, run_subgraph(body, ins));
    for (int64_t i = 0; i < p.states; ++i) {
      auto u = static_cast<size_t>(i);
      RETURN_IF_ERROR(check_same_type(res[u], states[u], "state", u));
      states[u] = res[u];
    }
    for (int64_t k = 0; k < p.outputs; ++k) {
      auto u = static_cast<size_t>(k);
      Tensor& out = outs[static_cast<size_t>(p.states + k)];
      if (out.dtype() == ir::DType::kUndefined) continue;  // an omitted output
      int64_t axis = p.output_axes[u] < 0 ? p.output_axes[u] + out.rank() : p.output_axes[u];
      int64_t at = p.output_reverse[u] ? p.seq_len - 1 - t : t;
      const Tensor& piece = res[static_cast<size_t>(p.states + k)];
      if (piece.shape() != ir::shape_without_axis(out.shape(), axis))
        return invalid_argument("scan output {} is [{}] at step {}, expected [{}]", k,
                                ir::shape_to_string(piece.shape()), t,
                                ir::shape_to_string(ir::shape_without_axis(out.shape(), axis)));
      put_along(out, axis, at, piece);
    }
  }
  for (int64_t i = 0; i < p.states; ++i) outs[static_cast<size_t>(i)] = states[static_cast<size_t>(i)];
  return Status::ok_status();
}

}  // namespace

Status run_If(KernelContext& ctx) {
  const bool cond = ctx.in(0).get_i64(0) != 0;
  std::vector<const Tensor*> captures(ctx.inputs.begin() + 1, ctx.inputs.end());
  ASSIGN_OR_RETURN(auto outs, run_subgraph(*ctx.node.subgraphs[cond ? 0 : 1], captures));
  for (size_t o = 0; o < ctx.outputs.size(); ++o) {
    if (ctx.node.outputs[o] == ir::kNoValue) continue;
    RETURN_IF_ERROR(check_same_type(outs[o], ctx.out(o), "output", o));
    ctx.out(o) = outs[o];
  }
  return Status::ok_status();
}

Status run_Loop(KernelContext& ctx) {
  const Graph& body = *ctx.node.subgraphs[0];
  const auto c = static_cast<size_t>(ir::captured_count(ctx.node));
  const size_t formal = ctx.inputs.size() - c;  // M and cond may have been dropped at import
  const size_t n = formal > 2 ? formal - 2 : 0;
  const size_t k = ctx.outputs.size() - n;
  // A hostile trip count must not hang the compiler (constant folding runs this kernel).
  constexpr int64_t kMaxTrips = int64_t{1} << 24;
  const int64_t trips = ctx.has_input(0) ? ctx.in(0).get_i64(0) : kMaxTrips + 1;
  bool cond = ctx.has_input(1) ? ctx.in(1).get_i64(0) != 0 : true;
  std::vector<Tensor> carried;
  for (size_t i = 0; i < n; ++i) carried.push_back(ctx.in(2 + i));
  int64_t done = 0;
  for (; done < trips && cond; ++done) {
    if (done == kMaxTrips)
      return unsupported("Loop runs past {} iterations, the reference executor's limit", kMaxTrips);
    Tensor iter = Tensor::scalar_i64(done);
    Tensor cond_in(ir::DType::kBool, {});
    cond_in.set_i64(0, 1);
    std::vector<const Tensor*> ins{&iter, &cond_in};
    for (auto& v : carried) ins.push_back(&v);
    for (size_t i = ctx.inputs.size() - c; i < ctx.inputs.size(); ++i) ins.push_back(ctx.inputs[i]);
    ASSIGN_OR_RETURN(auto res, run_subgraph(body, ins));
    cond = res[0].get_i64(0) != 0;
    for (size_t i = 0; i < n; ++i) {
      RETURN_IF_ERROR(check_same_type(res[1 + i], carried[i], "loop-carried value", i));
      carried[i] = res[1 + i];
    }
    for (size_t j = 0; j < k; ++j) {
      if (ctx.node.outputs[n + j] == ir::kNoValue) continue;
      Tensor& out = ctx.out(n + j);
      if (done >= out.shape()[0])
        return invalid_argument("scan output {} has room for {} iterations", j, out.shape()[0]);
      RETURN_IF_ERROR(check_same_type(res[1 + n + j],
                                      Tensor(out.dtype(), ir::shape_without_axis(out.shape(), 0)),
                                      "scan output", j));
      put_along(out, 0, done, res[1 + n + j]);
    }
  }
  if (k > 0 && done != trips)
    return unsupported("Loop stopped after {} of {} iterations: its scan outputs would have a "
                       "run-time length (graphc needs static shapes)",
                       done, trips);
  for (size_t i = 0; i < n; ++i) ctx.out(i) = carried[i];
  return Status::ok_status();
}

Status run_Scan(KernelContext& ctx) {
  std::vector<const ir::Shape*> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    shapes.push_back(ctx.has_input(i) ? &ctx.in(i).shape() : nullptr);
  ASSIGN_OR_RETURN(ir::ScanParams p, ir::scan_params(ctx.node, shapes));
  const Graph& body = *ctx.node.subgraphs[0];
  std::vector<const Tensor*> captures(ctx.inputs.end() - p.captures, ctx.inputs.end());
  auto gather = [&](int64_t from, int64_t count, int64_t batch) {
    std::vector<Tensor> v;
    for (int64_t i = from; i < from + count; ++i) {
      const Tensor& t = ctx.in(static_cast<size_t>(i));
      v.push_back(batch < 0 ? t : take_along(t, 0, batch));
    }
    return v;
  };
  if (!p.batched)
    return scan_once(body, p, gather(0, p.states, -1), gather(p.states, p.scans, -1), captures,
                     ctx.outputs);
  for (int64_t b = 0; b < p.batch; ++b) {  // opset 8: one scan per batch row
    std::vector<Tensor> outs;
    for (auto& o : ctx.outputs)
      outs.push_back(o.dtype() == ir::DType::kUndefined ? Tensor() : take_along(o, 0, b));
    RETURN_IF_ERROR(scan_once(body, p, gather(0, p.states, b), gather(p.states, p.scans, b),
                              captures, outs));
    for (size_t o = 0; o < outs.size(); ++o)
      if (ctx.outputs[o].dtype() != ir::DType::kUndefined) put_along(ctx.outputs[o], 0, b, outs[o]);
  }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
