// Symbolic shape rules of the data movement and shape arithmetic ops
// exporters write around transformers and CNNs (see ir/symbolic_rules.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "ir/symbolic_rules_util.h"

namespace graphc::ir::symbolic::detail {

Status transpose(SymContext& ctx) {
  const SymShape& in = ctx.shape(0);
  std::vector<int64_t> perm = ctx.attrs().get_ints("perm");
  if (perm.empty())
    for (size_t i = in.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != in.size()) return invalid_model("perm has {} entries for rank {}", perm.size(), in.size());
  SymShape out;
  for (int64_t p : perm) {
    ASSIGN_OR_RETURN(int64_t k, axis_in(p, in.size()));
    out.push_back(in[static_cast<size_t>(k)]);
  }
  ctx.outputs[0] = with_shape(out);
  return Status::ok_status();
}

Status reshape(SymContext& ctx) {
  const SymShape& in = ctx.shape(0);
  const auto* target = ctx.elements(1);
  if (!target)
    return unsupported("the target shape (input 1) is neither a constant nor shape arithmetic "
                       "graphc follows");
  const bool allowzero = ctx.attrs().get_int("allowzero", 0) != 0;
  SymShape out;
  int infer_at = -1;
  DimExpr known(1);
  for (size_t i = 0; i < target->size(); ++i) {
    const DimExpr& t = (*target)[i];
    auto c = t.constant();
    if (c && *c == -1) {
      if (infer_at >= 0) return invalid_model("more than one -1 in the target shape");
      infer_at = static_cast<int>(i);
      out.emplace_back(0);
      continue;
    }
    if (c && *c == 0 && !allowzero) {
      if (i >= in.size()) return invalid_model("target dim {} is 0 but the input has rank {}", i, in.size());
      out.push_back(in[i]);
    } else {
      out.push_back(t);
    }
    known = known * out.back();
  }
  if (infer_at >= 0) out[static_cast<size_t>(infer_at)] = DimExpr::floor_div(product(in), known);
  ctx.outputs[0] = with_shape(out);
  if (ctx.input(0).elements && out.size() <= 1) ctx.outputs[0].elements = ctx.input(0).elements;
  return Status::ok_status();
}

Status flatten(SymContext& ctx) {
  const SymShape& in = ctx.shape(0);
  int64_t axis = ctx.attrs().get_int("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(in.size());
  if (axis < 0 || axis > static_cast<int64_t>(in.size())) return invalid_model("axis out of range");
  ctx.outputs[0] = with_shape({product(in, 0, static_cast<size_t>(axis)), product(in, static_cast<size_t>(axis))});
  return Status::ok_status();
}

static Expected<std::vector<int64_t>> axes_of(const SymContext& ctx) {
  if (ctx.num_inputs() > 1 && ctx.has_input(1)) return ctx.constant_ints(1, "axes");
  return ctx.attrs().get_ints("axes");
}

// Squeeze/Unsqueeze: a new shape over the same elements, which stay followed.
static Status reshaped_view(SymContext& ctx, SymShape shape) {
  SymValue v = with_shape(std::move(shape));
  v.elements = ctx.input(0).elements;
  ctx.outputs[0] = std::move(v);
  return Status::ok_status();
}

Status squeeze(SymContext& ctx) {
  const SymShape& in = ctx.shape(0);
  ASSIGN_OR_RETURN(auto axes, axes_of(ctx));
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].is_constant())
        return unsupported("Squeeze without axes of a dim that varies over the range");
      drop[i] = *in[i].constant() == 1;
    }
  }
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t k, axis_in(a, in.size()));
    drop[static_cast<size_t>(k)] = true;
  }
  SymShape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return reshaped_view(ctx, std::move(out));
}

Status unsqueeze(SymContext& ctx) {
  const SymShape& in = ctx.shape(0);
  ASSIGN_OR_RETURN(auto axes, axes_of(ctx));
  const size_t rank = in.size() + axes.size();
  std::vector<bool> add(rank, false);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t k, axis_in(a, rank));
    add[static_cast<size_t>(k)] = true;
  }
  SymShape out;
  size_t next = 0;
  for (size_t i = 0; i < rank; ++i) out.push_back(add[i] ? DimExpr(1) : in[next++]);
  return reshaped_view(ctx, std::move(out));
}

Status concat(SymContext& ctx) {
  const SymShape& first = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, axis_in(ctx.attrs().get_int("axis", 0), first.size()));
  SymShape out = first;
  out[static_cast<size_t>(axis)] = DimExpr(0);
  std::vector<DimExpr> elements;
  bool track = first.size() == 1;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const SymShape& s = ctx.shape(i);
    if (s.size() != first.size()) return invalid_model("inputs of different ranks");
    out[static_cast<size_t>(axis)] = out[static_cast<size_t>(axis)] + s[static_cast<size_t>(axis)];
    const auto* e = ctx.elements(i);
    if (track && e) elements.insert(elements.end(), e->begin(), e->end());
    track = track && e;
  }
  SymValue v = with_shape(out);
  if (track) v.elements = std::move(elements);
  ctx.outputs[0] = std::move(v);
  return Status::ok_status();
}

Status shape_op(SymContext& ctx) {
  const SymShape& in = ctx.shape(0);
  const auto rank = static_cast<int64_t>(in.size());
  int64_t start = ctx.attrs().get_int("start", 0), end = ctx.attrs().get_int("end", rank);
  if (start < 0) start = std::max<int64_t>(0, start + rank);
  if (end < 0) end = std::max<int64_t>(0, end + rank);
  start = std::min(start, rank);
  end = std::min(end, rank);
  std::vector<DimExpr> e;
  for (int64_t i = start; i < end; ++i) e.push_back(in[static_cast<size_t>(i)]);
  ctx.outputs[0] = with_elements(std::move(e));
  return Status::ok_status();
}

Status gather(SymContext& ctx) {
  const SymShape& data = ctx.shape(0);
  const SymShape& indices = ctx.shape(1);
  ASSIGN_OR_RETURN(int64_t axis, axis_in(ctx.attrs().get_int("axis", 0), data.size()));
  SymShape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  SymValue v = with_shape(out);
  const auto* e = ctx.elements(0);
  if (e && data.size() == 1 && indices.size() <= 1 && ctx.elements(1)) {
    auto idx = ctx.constant_ints(1, "indices");
    if (idx.ok()) {
      std::vector<DimExpr> picked;
      for (int64_t i : *idx) {
        const auto n = static_cast<int64_t>(e->size());
        if (i < -n || i >= n) return invalid_model("index {} out of range for {} elements", i, n);
        picked.push_back((*e)[static_cast<size_t>(i < 0 ? i + n : i)]);
      }
      v.elements = std::move(picked);
    }
  }
  ctx.outputs[0] = std::move(v);
  return Status::ok_status();
}

// max(e, c), settled by the range's bounds where they decide it.
static DimExpr at_least(const SymContext& ctx, const DimExpr& e, int64_t c) {
  if (auto lo = ctx.lower_bound(e); lo && *lo >= c) return e;
  if (auto hi = ctx.upper_bound(e); hi && *hi <= c) return DimExpr(c);
  return DimExpr::max(e, DimExpr(c));
}

// One sliced dim: the length of [start, end) by step over a dim of size d,
// clamped as ONNX does. Constant d: exact; symbolic d: min/max where the
// range does not settle the clamp.
static DimExpr slice_length(const SymContext& ctx, const DimExpr& d, int64_t start, int64_t end, int64_t step,
                     DimExpr* start_at) {
  auto clamp_index = [&](int64_t i, bool is_end) -> DimExpr {
    // ONNX clamps to [0, d] (step > 0); with step < 0 starts to [0, d-1], ends to [-1, d-1].
    const int64_t hi_bias = step > 0 ? 0 : -1;
    const int64_t floor = step < 0 && is_end ? -1 : 0;
    if (i < 0) return at_least(ctx, d + DimExpr(i), floor);
    auto lo = ctx.lower_bound(d);
    if (lo && i <= *lo + hi_bias) return DimExpr(i);
    auto hi = ctx.upper_bound(d);
    if (hi && i >= *hi + hi_bias && (is_end || step < 0)) return d + DimExpr(hi_bias);
    return DimExpr::min(DimExpr(i), d + DimExpr(hi_bias));
  };
  const DimExpr s = clamp_index(start, false), e = clamp_index(end, true);
  *start_at = s;
  if (step > 0) return at_least(ctx, DimExpr::ceil_div(e - s, DimExpr(step)), 0);
  return at_least(ctx, DimExpr::ceil_div(s - e, DimExpr(-step)), 0);
}

// A slice bound that is shape arithmetic varying over the range (a position
// table cut to the sequence: `[:seq]`), step > 0: clamped to [0, d] where the
// range's bounds settle it.
static Expected<DimExpr> varying_bound(const SymContext& ctx, const DimExpr& i, const DimExpr& d) {
  auto lo = ctx.lower_bound(i);
  if (!lo || *lo < 0)
    return unsupported("a slice bound {} that may be negative over the shape range", i.to_string());
  auto hi = ctx.upper_bound(i), d_lo = ctx.lower_bound(d);
  if (hi && d_lo && *hi <= *d_lo) return i;
  return DimExpr::min(i, d);
}

// Slice's optional axes (0..n-1) and steps (1) filled in, and the check that
// starts, ends, axes and steps have one entry per sliced axis.
static Status default_slice_axes(size_t starts, size_t ends, std::vector<int64_t>& axes,
                          std::vector<int64_t>& steps) {
  if (axes.empty())
    for (size_t i = 0; i < starts; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts, 1);
  if (ends != starts || axes.size() != starts || steps.size() != starts)
    return invalid_model("starts, ends, axes and steps differ in length");
  return Status::ok_status();
}

// Slice whose starts or ends vary over the range (constant axes and steps > 0).
static Status slice_varying(SymContext& ctx, const std::vector<DimExpr>& starts,
                     const std::vector<DimExpr>& ends) {
  const SymShape& in = ctx.shape(0);
  std::vector<int64_t> axes, steps;
  if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
    ASSIGN_OR_RETURN(axes, ctx.constant_ints(3, "axes"));
  }
  if (ctx.num_inputs() > 4 && ctx.has_input(4)) {
    ASSIGN_OR_RETURN(steps, ctx.constant_ints(4, "steps"));
  }
  RETURN_IF_ERROR(default_slice_axes(starts.size(), ends.size(), axes, steps));
  SymShape out = in;
  for (size_t k = 0; k < starts.size(); ++k) {
    ASSIGN_OR_RETURN(int64_t axis, axis_in(axes[k], in.size()));
    const DimExpr& d = in[static_cast<size_t>(axis)];
    auto s = starts[k].constant(), e = ends[k].constant();
    if (s && e) {
      DimExpr start_at;
      out[static_cast<size_t>(axis)] = slice_length(ctx, d, *s, *e, steps[k], &start_at);
      continue;
    }
    if (steps[k] <= 0)
      return unsupported("a slice with step {} and bounds that vary over the shape range",
                         steps[k]);
    DimExpr start_at, end_at;
    if (s) {
      slice_length(ctx, d, *s, 0, steps[k], &start_at);
    } else {
      ASSIGN_OR_RETURN(start_at, varying_bound(ctx, starts[k], d));
    }
    if (e && *e < 0) {
      end_at = at_least(ctx, d + DimExpr(*e), 0);
    } else {
      ASSIGN_OR_RETURN(end_at, varying_bound(ctx, ends[k], d));
    }
    out[static_cast<size_t>(axis)] =
        at_least(ctx, DimExpr::ceil_div(end_at - start_at, DimExpr(steps[k])), 0);
  }
  ctx.outputs[0] = with_shape(out);
  return Status::ok_status();
}

Status slice(SymContext& ctx) {
  const SymShape& in = ctx.shape(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.num_inputs() > 1) {
    // Bounds that vary over the range (shape arithmetic).
    const auto *sv = ctx.elements(1), *ev = ctx.elements(2);
    const bool fixed = ctx.constant_ints(1, "starts").ok() && ctx.constant_ints(2, "ends").ok();
    if (sv && ev && !fixed) return slice_varying(ctx, *sv, *ev);
    ASSIGN_OR_RETURN(starts, ctx.constant_ints(1, "starts"));
    ASSIGN_OR_RETURN(ends, ctx.constant_ints(2, "ends"));
    if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
      ASSIGN_OR_RETURN(axes, ctx.constant_ints(3, "axes"));
    }
    if (ctx.num_inputs() > 4 && ctx.has_input(4)) {
      ASSIGN_OR_RETURN(steps, ctx.constant_ints(4, "steps"));
    }
  } else {
    starts = ctx.attrs().get_ints("starts");
    ends = ctx.attrs().get_ints("ends");
    axes = ctx.attrs().get_ints("axes");
  }
  RETURN_IF_ERROR(default_slice_axes(starts.size(), ends.size(), axes, steps));
  SymShape out = in;
  const auto* elements = ctx.elements(0);
  std::optional<std::vector<DimExpr>> sliced;
  for (size_t k = 0; k < starts.size(); ++k) {
    ASSIGN_OR_RETURN(int64_t axis, axis_in(axes[k], in.size()));
    if (steps[k] == 0) return invalid_model("a slice step is 0");
    DimExpr start_at;
    out[static_cast<size_t>(axis)] =
        slice_length(ctx, in[static_cast<size_t>(axis)], starts[k], ends[k], steps[k], &start_at);
    // A slice of shape integers: follow it when its bounds are constants.
    if (elements && in.size() == 1) {
      auto s = start_at.constant();
      auto n = out[0].constant();
      if (s && n) {
        std::vector<DimExpr> e;
        for (int64_t i = 0; i < *n; ++i) {
          const int64_t at = *s + i * steps[k];
          if (at < 0 || at >= static_cast<int64_t>(elements->size())) break;
          e.push_back((*elements)[static_cast<size_t>(at)]);
        }
        if (static_cast<int64_t>(e.size()) == *n) sliced = std::move(e);
      }
    }
  }
  SymValue v = with_shape(out);
  v.elements = std::move(sliced);
  ctx.outputs[0] = std::move(v);
  return Status::ok_status();
}

Status split(SymContext& ctx) {
  const SymShape& in = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, axis_in(ctx.attrs().get_int("axis", 0), in.size()));
  std::vector<int64_t> sizes;
  if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
    ASSIGN_OR_RETURN(sizes, ctx.constant_ints(1, "split"));
  } else {
    sizes = ctx.attrs().get_ints("split");
  }
  const size_t n = ctx.outputs.size();
  for (size_t o = 0; o < n; ++o) {
    SymShape s = in;
    if (!sizes.empty()) {
      if (sizes.size() != n) return invalid_model("{} split sizes for {} outputs", sizes.size(), n);
      s[static_cast<size_t>(axis)] = DimExpr(sizes[o]);
    } else {
      // Equal parts (the last smaller when it does not divide: opset 18).
      const DimExpr part = DimExpr::ceil_div(in[static_cast<size_t>(axis)], DimExpr(static_cast<int64_t>(n)));
      s[static_cast<size_t>(axis)] =
          o + 1 < n ? part : in[static_cast<size_t>(axis)] - part * DimExpr(static_cast<int64_t>(n - 1));
    }
    ctx.outputs[o] = with_shape(s);
  }
  return Status::ok_status();
}

Status expand(SymContext& ctx) {
  const auto* target = ctx.elements(1);
  if (!target) return unsupported("the target shape (input 1) is not shape arithmetic graphc follows");
  ASSIGN_OR_RETURN(SymShape out, broadcast(ctx.shape(0), *target));
  ctx.outputs[0] = with_shape(out);
  return Status::ok_status();
}

Status constant_of_shape(SymContext& ctx) {
  const auto* target = ctx.elements(0);
  if (!target) return unsupported("the shape (input 0) is not shape arithmetic graphc follows");
  ctx.outputs[0] = with_shape(*target);
  return Status::ok_status();
}

Status range(SymContext& ctx) {
  const auto *start = ctx.elements(0), *limit = ctx.elements(1), *delta = ctx.elements(2);
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 || delta->size() != 1)
    return unsupported("Range bounds that are not shape arithmetic graphc follows");
  auto step = (*delta)[0].constant();
  if (!step || *step <= 0) return unsupported("Range with a step that is not a positive constant");
  const DimExpr n = DimExpr::max(DimExpr::ceil_div((*limit)[0] - (*start)[0], DimExpr(*step)), DimExpr(0));
  SymValue v = with_shape({n});
  if (auto c = n.constant(); c && *c <= 64) {
    std::vector<DimExpr> e;
    for (int64_t i = 0; i < *c; ++i) e.push_back((*start)[0] + DimExpr(i * *step));
    v.elements = std::move(e);
  }
  ctx.outputs[0] = std::move(v);
  return Status::ok_status();
}

Status tile(SymContext& ctx) {
  ASSIGN_OR_RETURN(auto repeats, ctx.constant_ints(1, "repeats"));
  SymShape out = ctx.shape(0);
  if (repeats.size() != out.size()) return invalid_model("repeats has {} entries for rank {}", repeats.size(), out.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = out[i] * DimExpr(repeats[i]);
  ctx.outputs[0] = with_shape(out);
  return Status::ok_status();
}

Status pad(SymContext& ctx) {
  std::vector<int64_t> pads;
  if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
    ASSIGN_OR_RETURN(pads, ctx.constant_ints(1, "pads"));
  } else {
    pads = ctx.attrs().get_ints("pads");
  }
  SymShape out = ctx.shape(0);
  std::vector<int64_t> axes;
  if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
    ASSIGN_OR_RETURN(axes, ctx.constant_ints(3, "axes"));
  }
  if (axes.empty())
    for (size_t i = 0; i < out.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (pads.size() != 2 * axes.size()) return invalid_model("pads has {} entries for {} axes", pads.size(), axes.size());
  for (size_t k = 0; k < axes.size(); ++k) {
    ASSIGN_OR_RETURN(int64_t a, axis_in(axes[k], out.size()));
    out[static_cast<size_t>(a)] = out[static_cast<size_t>(a)] + DimExpr(pads[k] + pads[k + axes.size()]);
  }
  ctx.outputs[0] = with_shape(out);
  return Status::ok_status();
}

}  // namespace graphc::ir::symbolic::detail
