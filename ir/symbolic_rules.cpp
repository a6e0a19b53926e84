// Symbolic shape rules for the op families transformers and CNNs are made of:
// elementwise and broadcasting ops, normalizations, reductions, MatMul/Gemm,
// Conv and pooling, and the data movement and shape arithmetic exporters emit
// (Shape, Gather, Concat, Slice, Reshape, Squeeze/Unsqueeze, Expand, Range,
// ConstantOfShape ...). Each mirrors its concrete rule in ir/shape_rules_*.cpp
// with dims as DimExprs; ops not here are refused by name.
//
// A second rule beside the concrete one departs from "one shape rule per op"
// (DESIGN.md): ir::Shape is int64 across the compiler, so making every rule
// symbolic at once would touch all of it. The symbolic rules are instead
// checked against the concrete ones, value by value, at every point of every
// range a build is given and over every node test (tests/symbolic_shapes_test.cpp),
// so the two cannot drift apart unnoticed.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <optional>

#include "ir/symbolic_rules.h"
#include "ir/conv_geometry.h"

namespace graphc::ir::symbolic {

namespace {

Expected<int64_t> axis_in(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return invalid_model("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + r : axis;
}

DimExpr product(const SymShape& s, size_t from = 0, size_t to = SIZE_MAX) {
  DimExpr p(1);
  for (size_t i = from; i < std::min(to, s.size()); ++i) p = p * s[i];
  return p;
}

SymValue with_shape(SymShape s) {
  SymValue v;
  v.shape = std::move(s);
  return v;
}

SymValue with_elements(std::vector<DimExpr> e, bool scalar = false) {
  SymValue v;
  if (!scalar) v.shape = {DimExpr(static_cast<int64_t>(e.size()))};
  v.elements = std::move(e);
  return v;
}

// Reduction axes: the `axes` attribute (older opsets) or input 1.
Expected<std::vector<bool>> reduce_mask(const SymContext& ctx, size_t rank) {
  std::vector<int64_t> axes;
  bool given = false;
  if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
    ASSIGN_OR_RETURN(axes, ctx.constant_ints(1, "axes"));
    given = true;
  } else if (ctx.attrs().has("axes")) {
    axes = ctx.attrs().get_ints("axes");
    given = true;
  }
  std::vector<bool> mask(rank, false);
  if (!given || axes.empty()) {
    const bool noop = ctx.attrs().get_int("noop_with_empty_axes", 0) != 0;
    if (!noop) std::fill(mask.begin(), mask.end(), true);
    return mask;
  }
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t k, axis_in(a, rank));
    mask[static_cast<size_t>(k)] = true;
  }
  return mask;
}

SymShape reduced(const SymShape& s, const std::vector<bool>& mask, bool keepdims) {
  SymShape out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!mask[i])
      out.push_back(s[i]);
    else if (keepdims)
      out.emplace_back(1);
  }
  return out;
}

// Elementwise arithmetic on tracked shape integers (Add, Sub, Mul, Div).
Status arithmetic(SymContext& ctx) {
  ASSIGN_OR_RETURN(SymShape shape, broadcast(ctx.shape(0), ctx.shape(1)));
  SymValue out = with_shape(shape);
  const auto* a = ctx.elements(0);
  const auto* b = ctx.elements(1);
  const bool integer = is_integer(ctx.typed_input(0).dtype);
  if (a && b && integer && shape.size() <= 1) {
    const size_t n = std::max(a->size(), b->size());
    if ((a->size() == n || a->size() == 1) && (b->size() == n || b->size() == 1)) {
      std::vector<DimExpr> e;
      for (size_t k = 0; k < n; ++k) {
        const DimExpr& x = (*a)[a->size() == 1 ? 0 : k];
        const DimExpr& y = (*b)[b->size() == 1 ? 0 : k];
        switch (ctx.node().op) {
          case OpKind::Add: e.push_back(x + y); break;
          case OpKind::Sub: e.push_back(x - y); break;
          case OpKind::Mul: e.push_back(x * y); break;
          default: e.push_back(DimExpr::floor_div(x, y)); break;  // dims are >= 0: truncation
        }
      }
      out.elements = std::move(e);
    }
  }
  ctx.outputs[0] = std::move(out);
  return Status::ok_status();
}

// The broadcast of the first `count` inputs present.
Expected<SymShape> broadcast_inputs(const SymContext& ctx, size_t count) {
  SymShape out;
  bool first = true;
  for (size_t i = 0; i < std::min(count, ctx.num_inputs()); ++i) {
    if (!ctx.has_input(i)) continue;
    if (first) {
      out = ctx.shape(i);
      first = false;
      continue;
    }
    ASSIGN_OR_RETURN(out, broadcast(out, ctx.shape(i)));
  }
  return out;
}

Status broadcast_all(SymContext& ctx, size_t count) {
  ASSIGN_OR_RETURN(SymShape out, broadcast_inputs(ctx, count));
  for (auto& o : ctx.outputs) o = with_shape(out);
  return Status::ok_status();
}

// Element k of a followed 1-D (or scalar) input broadcast to n elements.
const DimExpr& element(const std::vector<DimExpr>& e, size_t k) { return e[e.size() == 1 ? 0 : k]; }

// The elements of a broadcast over followed inputs, when every one has 1 or n.
std::optional<size_t> followed_length(const SymContext& ctx, std::initializer_list<size_t> inputs) {
  size_t n = 1;
  for (size_t i : inputs) {
    const auto* e = ctx.elements(i);
    if (!e || ctx.shape(i).size() > 1) return std::nullopt;
    if (e->size() != 1 && n != 1 && e->size() != n) return std::nullopt;
    n = std::max(n, e->size());
  }
  return n;
}

// Equal and Where on shape integers, as exporters write them to build Expand
// and Reshape targets (Where(Equal(shape, -1), 1, shape)). A dim is never
// negative, so it is never equal to a negative constant.
Status equal_or_where(SymContext& ctx) {
  const bool is_where = ctx.node().op == OpKind::Where;
  ASSIGN_OR_RETURN(SymShape shape, broadcast_inputs(ctx, ctx.num_inputs()));
  SymValue out = with_shape(shape);
  auto n = is_where ? followed_length(ctx, {0, 1, 2}) : followed_length(ctx, {0, 1});
  if (n && shape.size() <= 1) {
    std::vector<DimExpr> e;
    for (size_t k = 0; k < *n; ++k) {
      const DimExpr& x = element(*ctx.elements(0), k);
      const DimExpr& y = element(*ctx.elements(1), k);
      if (is_where) {
        auto c = x.constant();
        if (!c) break;
        e.push_back(*c != 0 ? y : element(*ctx.elements(2), k));
        continue;
      }
      auto cx = x.constant(), cy = y.constant();
      if (x == y) {
        e.emplace_back(1);
      } else if (cx && cy) {
        e.emplace_back(0);
      } else if ((cx && *cx < 0 && ctx.lower_bound(y).value_or(-1) >= 0) ||
                 (cy && *cy < 0 && ctx.lower_bound(x).value_or(-1) >= 0)) {
        e.emplace_back(0);
      } else {
        break;
      }
    }
    if (e.size() == *n) out.elements = std::move(e);
  }
  ctx.outputs[0] = std::move(out);
  return Status::ok_status();
}

Status same_as_input0(SymContext& ctx) {
  SymValue v = with_shape(ctx.shape(0));
  if (ctx.node().op == OpKind::Identity) v.elements = ctx.input(0).elements;
  for (auto& o : ctx.outputs) o = v;
  return Status::ok_status();
}

Status cast(SymContext& ctx) {
  SymValue v = with_shape(ctx.shape(0));
  const auto to = static_cast<DType>(ctx.attrs().get_int("to", 0));
  if (is_integer(to) && is_integer(ctx.typed_input(0).dtype)) v.elements = ctx.input(0).elements;
  ctx.outputs[0] = std::move(v);
  return Status::ok_status();
}

Status matmul(SymContext& ctx) {
  SymShape a = ctx.shape(0), b = ctx.shape(1);
  if (a.empty() || b.empty()) return invalid_model("MatMul of a scalar");
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), DimExpr(1));
  if (b1) b.push_back(DimExpr(1));
  const DimExpr& k_a = a.back();
  const DimExpr& k_b = b[b.size() - 2];
  if (k_a != k_b && !(k_a.is_constant() || k_b.is_constant()))
    return unsupported("inner dims {} and {} are not the same over the range", k_a.to_string(),
                       k_b.to_string());
  SymShape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  ASSIGN_OR_RETURN(SymShape out, broadcast(batch_a, batch_b));
  if (!a1) out.push_back(a[a.size() - 2]);
  if (!b1) out.push_back(b.back());
  ctx.outputs[0] = with_shape(out);
  return Status::ok_status();
}

Status gemm(SymContext& ctx) {
  const SymShape& a = ctx.shape(0);
  const SymShape& b = ctx.shape(1);
  if (a.size() != 2 || b.size() != 2) return invalid_model("Gemm inputs must be 2-D");
  const bool ta = ctx.attrs().get_int("transA", 0) != 0, tb = ctx.attrs().get_int("transB", 0) != 0;
  ctx.outputs[0] = with_shape({ta ? a[1] : a[0], tb ? b[0] : b[1]});
  return Status::ok_status();
}

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

Expected<std::vector<int64_t>> axes_of(const SymContext& ctx) {
  if (ctx.num_inputs() > 1 && ctx.has_input(1)) return ctx.constant_ints(1, "axes");
  return ctx.attrs().get_ints("axes");
}

// Squeeze/Unsqueeze: a new shape over the same elements, which stay followed.
Status reshaped_view(SymContext& ctx, SymShape shape) {
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
DimExpr at_least(const SymContext& ctx, const DimExpr& e, int64_t c) {
  if (auto lo = ctx.lower_bound(e); lo && *lo >= c) return e;
  if (auto hi = ctx.upper_bound(e); hi && *hi <= c) return DimExpr(c);
  return DimExpr::max(e, DimExpr(c));
}

// One sliced dim: the length of [start, end) by step over a dim of size d,
// clamped as ONNX does. Constant d: exact; symbolic d: min/max where the
// range does not settle the clamp.
DimExpr slice_length(const SymContext& ctx, const DimExpr& d, int64_t start, int64_t end, int64_t step,
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
Expected<DimExpr> varying_bound(const SymContext& ctx, const DimExpr& i, const DimExpr& d) {
  auto lo = ctx.lower_bound(i);
  if (!lo || *lo < 0)
    return unsupported("a slice bound {} that may be negative over the shape range", i.to_string());
  auto hi = ctx.upper_bound(i), d_lo = ctx.lower_bound(d);
  if (hi && d_lo && *hi <= *d_lo) return i;
  return DimExpr::min(i, d);
}

// Slice's optional axes (0..n-1) and steps (1) filled in, and the check that
// starts, ends, axes and steps have one entry per sliced axis.
Status default_slice_axes(size_t starts, size_t ends, std::vector<int64_t>& axes,
                          std::vector<int64_t>& steps) {
  if (axes.empty())
    for (size_t i = 0; i < starts; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts, 1);
  if (ends != starts || axes.size() != starts || steps.size() != starts)
    return invalid_model("starts, ends, axes and steps differ in length");
  return Status::ok_status();
}

// Slice whose starts or ends vary over the range (constant axes and steps > 0).
Status slice_varying(SymContext& ctx, const std::vector<DimExpr>& starts,
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

// SymShape counterparts of ir::to_channels_first / to_channels_last.
SymShape channels_first(const SymShape& s) {
  SymShape out{s[0], s.back()};
  out.insert(out.end(), s.begin() + 1, s.end() - 1);
  return out;
}
SymShape channels_last(const SymShape& s) {
  SymShape out{s[0]};
  out.insert(out.end(), s.begin() + 2, s.end());
  out.push_back(s[1]);
  return out;
}

// Conv, MaxPool, AveragePool: N, then channels, then each spatial dim. A
// Conv the optimizer made channels-last (its '_channels_last' attribute)
// holds X, W and Y as N x spatial x C: the rule runs on the channels-first
// view and gives Y back channels-last.
Status window(SymContext& ctx, bool conv) {
  const bool last = conv && ir::is_channels_last(ctx.attrs());
  if (ctx.shape(0).size() < 3)
    return invalid_model("input of rank {} has no spatial dims", ctx.shape(0).size());
  const SymShape x = last ? channels_first(ctx.shape(0)) : ctx.shape(0);
  const size_t spatial = x.size() - 2;
  std::vector<int64_t> kernel = ctx.attrs().get_ints("kernel_shape");
  if (conv && kernel.empty()) {
    const Shape& w_in = ctx.typed_input(1).shape;
    const Shape w = last ? ir::to_channels_first(w_in) : w_in;
    kernel.assign(w.begin() + 2, w.end());
  }
  if (kernel.size() != spatial) return invalid_model("kernel_shape has {} dims for {} spatial", kernel.size(), spatial);
  auto strides = ctx.attrs().get_ints("strides", std::vector<int64_t>(spatial, 1));
  auto dilations = ctx.attrs().get_ints("dilations", std::vector<int64_t>(spatial, 1));
  auto pads = ctx.attrs().get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  const std::string auto_pad = ctx.attrs().get_string("auto_pad", "NOTSET");
  const bool ceil_mode = ctx.attrs().get_int("ceil_mode", 0) != 0;
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial)
    return invalid_model("strides, dilations or pads do not match {} spatial dims", spatial);
  SymShape out{x[0]};
  if (conv) {
    const Shape& w = ctx.typed_input(1).shape;
    out.emplace_back(w[0]);
  } else {
    out.push_back(x[1]);
  }
  for (size_t i = 0; i < spatial; ++i) {
    const DimExpr& d = x[i + 2];
    const DimExpr s(strides[i]);
    const int64_t extent = dilations[i] * (kernel[i] - 1) + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out.push_back(DimExpr::ceil_div(d, s));
    } else if (auto_pad == "VALID") {
      out.push_back(DimExpr::floor_div(d - DimExpr(extent), s) + DimExpr(1));
    } else {
      const DimExpr span = d + DimExpr(pads[i] + pads[i + spatial] - extent);
      DimExpr n = (ceil_mode ? DimExpr::ceil_div(span, s) : DimExpr::floor_div(span, s)) + DimExpr(1);
      // ceil_mode: the last window must start inside the input or its left pad.
      if (ceil_mode) n = DimExpr::min(n, DimExpr::ceil_div(d + DimExpr(pads[i]), s));
      out.push_back(n);
    }
  }
  if (last) out = channels_last(out);
  ctx.outputs[0] = with_shape(out);
  for (size_t o = 1; o < ctx.outputs.size(); ++o) ctx.outputs[o] = with_shape(out);  // MaxPool indices
  return Status::ok_status();
}

Status global_pool(SymContext& ctx) {
  SymShape out = ctx.shape(0);
  for (size_t i = 2; i < out.size(); ++i) out[i] = DimExpr(1);
  ctx.outputs[0] = with_shape(out);
  return Status::ok_status();
}

// Attention (the ONNX op, and graphc's fused attention): Y only, without a
// KV cache. 4-D Q/K/V: Y = [B, Hq, Lq, Dv]; 3-D: Y = [B, Lq, Hq * Dv] with
// Dv = V's last dim / kv_num_heads.
Status attention(SymContext& ctx) {
  for (size_t i : {size_t{4}, size_t{5}})
    if (ctx.has_input(i))
      return unsupported("Attention with a KV cache (past_key/past_value) has no symbolic rule yet");
  for (size_t o = 1; o < ctx.outputs.size(); ++o)
    if (ctx.node().outputs[o] != kNoValue)
      return unsupported("Attention's present_key/value and qk outputs have no symbolic rule yet");
  const SymShape &q = ctx.shape(0), &v = ctx.shape(2);
  if (q.size() == 4 && v.size() == 4) {
    ctx.outputs[0] = with_shape({q[0], q[1], q[2], v[3]});
    return Status::ok_status();
  }
  if (q.size() != 3 || v.size() != 3)
    return invalid_model("Attention takes 3-D or 4-D Q and V, not {}-D and {}-D", q.size(), v.size());
  const int64_t hq = ctx.attrs().get_int("q_num_heads", 0), hkv = ctx.attrs().get_int("kv_num_heads", 0);
  if (hq < 1 || hkv < 1) return invalid_model("3-D Attention needs q_num_heads and kv_num_heads");
  ctx.outputs[0] = with_shape({q[0], q[1], DimExpr(hq) * DimExpr::floor_div(v[2], DimExpr(hkv))});
  return Status::ok_status();
}

Status layer_norm(SymContext& ctx) {
  const SymShape& x = ctx.shape(0);
  ASSIGN_OR_RETURN(int64_t axis, axis_in(ctx.attrs().get_int("axis", -1), x.size()));
  ctx.outputs[0] = with_shape(x);
  SymShape stats = x;
  for (size_t i = static_cast<size_t>(axis); i < stats.size(); ++i) stats[i] = DimExpr(1);
  for (size_t o = 1; o < ctx.outputs.size(); ++o) ctx.outputs[o] = with_shape(stats);
  return Status::ok_status();
}

}  // namespace

Expected<std::vector<int64_t>> SymContext::constant_ints(size_t i, const char* what) const {
  const auto* e = elements(i);
  if (!e)
    return unsupported("input {} ({}) must be a constant or shape arithmetic graphc follows", i, what);
  std::vector<int64_t> out;
  for (const auto& x : *e) {
    auto c = x.constant();
    if (!c) return unsupported("input {} ({}) varies over the shape range ({})", i, what, x.to_string(symbols_.names));
    out.push_back(*c);
  }
  return out;
}

std::optional<int64_t> SymContext::lower_bound(const DimExpr& e) const {
  if (auto c = e.constant()) return c;
  if (!e.is_monotone()) return std::nullopt;
  auto v = e.evaluate(symbols_.min);
  return v.ok() ? std::optional<int64_t>(*v) : std::nullopt;
}

std::optional<int64_t> SymContext::upper_bound(const DimExpr& e) const {
  if (auto c = e.constant()) return c;
  if (!e.is_monotone()) return std::nullopt;
  auto v = e.evaluate(symbols_.max);
  return v.ok() ? std::optional<int64_t>(*v) : std::nullopt;
}

Expected<SymShape> broadcast(const SymShape& a, const SymShape& b) {
  const size_t rank = std::max(a.size(), b.size());
  SymShape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const DimExpr da = i < rank - a.size() ? DimExpr(1) : a[i - (rank - a.size())];
    const DimExpr db = i < rank - b.size() ? DimExpr(1) : b[i - (rank - b.size())];
    auto ca = da.constant(), cb = db.constant();
    if (da == db || (cb && *cb == 1)) {
      out[i] = da;
    } else if (ca && *ca == 1) {
      out[i] = db;
    } else if (ca || cb) {
      out[i] = ca ? da : db;  // the varying dim must equal the constant: the range check holds it
    } else {
      return unsupported("dims {} and {} do not broadcast over the whole range", da.to_string(),
                         db.to_string());
    }
  }
  return out;
}

Status infer_node(SymContext& ctx) {
  const OpKind op = ctx.node().op;
  switch (op) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div: return arithmetic(ctx);
    case OpKind::Identity:
    case OpKind::CastLike:
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::Hardmax:
    case OpKind::CumSum:
    case OpKind::Trilu:
    case OpKind::LRN:
    case OpKind::BatchNormalization:
    case OpKind::InstanceNormalization:
    case OpKind::MeanVarianceNormalization:
    case OpKind::LpNormalization:
    case OpKind::GroupNormalization:
    case OpKind::RMSNormalization: return same_as_input0(ctx);
    case OpKind::Cast: return cast(ctx);
    case OpKind::Equal:
    case OpKind::Where: return equal_or_where(ctx);
    case OpKind::Dropout: return broadcast_all(ctx, 1);
    case OpKind::LayerNormalization: return layer_norm(ctx);
    case OpKind::Attention: return attention(ctx);
    case OpKind::MatMul: return matmul(ctx);
    case OpKind::Gemm: return gemm(ctx);
    case OpKind::Transpose: return transpose(ctx);
    case OpKind::Reshape: return reshape(ctx);
    case OpKind::Flatten: return flatten(ctx);
    case OpKind::Squeeze: return squeeze(ctx);
    case OpKind::Unsqueeze: return unsqueeze(ctx);
    case OpKind::Concat: return concat(ctx);
    case OpKind::Split: return split(ctx);
    case OpKind::Slice: return slice(ctx);
    case OpKind::Gather: return gather(ctx);
    case OpKind::GatherElements:
      ctx.outputs[0] = with_shape(ctx.shape(1));
      return Status::ok_status();
    case OpKind::Shape: return shape_op(ctx);
    case OpKind::Size: {
      ctx.outputs[0] = with_elements({product(ctx.shape(0))}, true);
      return Status::ok_status();
    }
    case OpKind::Expand: return expand(ctx);
    case OpKind::ConstantOfShape: return constant_of_shape(ctx);
    case OpKind::Range: return range(ctx);
    case OpKind::Tile: return tile(ctx);
    case OpKind::Pad: return pad(ctx);
    case OpKind::Conv: return window(ctx, true);
    case OpKind::MaxPool:
    case OpKind::AveragePool: return window(ctx, false);
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool: return global_pool(ctx);
    case OpKind::ArgMax:
    case OpKind::ArgMin: {
      const SymShape& x = ctx.shape(0);
      ASSIGN_OR_RETURN(int64_t axis, axis_in(ctx.attrs().get_int("axis", 0), x.size()));
      std::vector<bool> mask(x.size(), false);
      mask[static_cast<size_t>(axis)] = true;
      ctx.outputs[0] = with_shape(reduced(x, mask, ctx.attrs().get_int("keepdims", 1) != 0));
      return Status::ok_status();
    }
    default: break;
  }
  const OpCategory cat = op_info(op).category;
  if (cat == OpCategory::kUnary || cat == OpCategory::kBinary || cat == OpCategory::kVariadic ||
      op == OpKind::Where || op == OpKind::Clip)
    return broadcast_all(ctx, ctx.num_inputs());
  if (cat == OpCategory::kReduction && std::string_view(op_name(op)).substr(0, 6) == "Reduce") {
    const SymShape& x = ctx.shape(0);
    ASSIGN_OR_RETURN(auto mask, reduce_mask(ctx, x.size()));
    ctx.outputs[0] = with_shape(reduced(x, mask, ctx.attrs().get_int("keepdims", 1) != 0));
    return Status::ok_status();
  }
  return unsupported("{} has no symbolic shape rule yet: engines that serve a shape range cannot "
                     "take it where its input shapes vary",
                     op_name(op));
}

}  // namespace graphc::ir::symbolic
