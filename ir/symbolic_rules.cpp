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
#include "ir/symbolic_rules_util.h"

namespace graphc::ir::symbolic {

namespace {

using namespace detail;

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
    case OpKind::GatherND: {
      // indices[:-1] + data[batch_dims + indices[-1]:]; the index tuple's
      // length must not vary.
      const SymShape &data = ctx.shape(0), &idx = ctx.shape(1);
      const int64_t b = ctx.attrs().get_int("batch_dims", 0);
      const auto last = idx.empty() ? std::nullopt : idx.back().constant();
      if (!last || b < 0 || static_cast<size_t>(b + *last) > data.size())
        return unsupported("GatherND: the indices' last dim must be fixed and within the data's rank");
      SymShape out(idx.begin(), idx.end() - 1);
      out.insert(out.end(), data.begin() + b + *last, data.end());
      ctx.outputs[0] = with_shape(out);
      return Status::ok_status();
    }
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
