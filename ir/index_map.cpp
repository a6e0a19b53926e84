#include "ir/index_map.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "ir/data_movement_params.h"
#include "ir/shape_inference.h"

namespace graphc::ir {

namespace {

const Tensor* constant_input(const Graph& g, const Node& n, size_t i) {
  if (!n.has_input(i)) return nullptr;
  const Value& v = g.value(n.inputs[i]);
  return v.constant ? &*v.constant : nullptr;
}

Expected<std::vector<int64_t>> ints(const Graph& g, const Node& n, size_t i, const char* what) {
  const Tensor* t = constant_input(g, n, i);
  if (!t || !is_integer(t->dtype()))
    return unsupported("node '{}' ({}): {} is not a build-time integer tensor", n.name,
                       op_name(n.op), what);
  return t->to_i64_vector();
}

Expected<std::optional<std::vector<int64_t>>> optional_ints(const Graph& g, const Node& n, size_t i,
                                                            const char* what) {
  if (!n.has_input(i)) return std::optional<std::vector<int64_t>>();
  ASSIGN_OR_RETURN(auto v, ints(g, n, i, what));
  return std::optional<std::vector<int64_t>>(std::move(v));
}

}  // namespace

std::vector<size_t> index_map_data_inputs(const Node& n) {
  if (n.op != OpKind::Concat) return {0};
  std::vector<size_t> all;
  for (size_t i = 0; i < n.inputs.size(); ++i) all.push_back(i);
  return all;
}

Expected<IndexMapStep> index_map_step(const Graph& g, const Node& n) {
  for (ValueId v : n.inputs)
    if (v != kNoValue && !g.value(v).has_shape)
      return unsupported("node '{}': an input has no static shape", n.name);
  for (ValueId v : n.outputs)
    if (v != kNoValue && !g.value(v).has_shape)
      return unsupported("node '{}': an output has no static shape", n.name);
  if (n.inputs.empty() || !n.has_input(0) || n.outputs.empty())
    return unsupported("node '{}': no data input", n.name);
  const Shape& in = g.value(n.inputs[0]).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  IndexMapStep s;
  switch (n.op) {
    case OpKind::Identity: s.kind = IndexMapStep::Kind::kSame; return s;
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze: s.kind = IndexMapStep::Kind::kReshape; return s;
    case OpKind::Transpose: {
      s.kind = IndexMapStep::Kind::kTranspose;
      ASSIGN_OR_RETURN(s.perm, dm::transpose_perm(n.attrs.get_ints("perm"), n.attrs.has("perm"),
                                                  rank));
      return s;
    }
    case OpKind::Slice: {
      s.kind = IndexMapStep::Kind::kSlice;
      ASSIGN_OR_RETURN(auto starts, ints(g, n, 1, "starts"));
      ASSIGN_OR_RETURN(auto ends, ints(g, n, 2, "ends"));
      ASSIGN_OR_RETURN(auto axes, optional_ints(g, n, 3, "axes"));
      ASSIGN_OR_RETURN(auto steps, optional_ints(g, n, 4, "steps"));
      ASSIGN_OR_RETURN(auto p, dm::slice_params(in, starts, ends, axes, steps));
      s.start = p.start;
      s.step = p.step;
      return s;
    }
    case OpKind::Pad: {
      s.kind = IndexMapStep::Kind::kPad;
      if (n.attrs.get_string("mode", "constant") != "constant")
        return unsupported("node '{}': only constant Pad is an index map", n.name);
      ASSIGN_OR_RETURN(auto pads, ints(g, n, 1, "pads"));
      ASSIGN_OR_RETURN(auto axes, optional_ints(g, n, 3, "axes"));
      ASSIGN_OR_RETURN(auto p, dm::pad_params(in, pads, axes, dm::PadMode::kConstant));
      const DType dt = g.value(n.inputs[0]).dtype;
      Tensor value(dt, {});
      if (n.has_input(2)) {
        const Tensor* c = constant_input(g, n, 2);
        if (!c || c->dtype() != dt || c->numel() != 1)
          return unsupported("node '{}': the pad value is not one build-time {}", n.name,
                             dtype_name(dt));
        std::memcpy(value.mutable_data(), c->data(), dtype_size(dt));
      } else {
        value.set_f64(0, n.attrs.get_float("_value", 0.0));
      }
      s.pad_value = std::move(value);
      s.pad_begin = p.begin;
      for (size_t d = 0; d < in.size(); ++d) {
        const int64_t lo = std::max<int64_t>(-p.begin[d], 0);
        s.pad_lo.push_back(lo);
        s.pad_w.push_back(in[d] - lo - std::max<int64_t>(-p.end[d], 0));
      }
      return s;
    }
    case OpKind::Concat: {
      s.kind = IndexMapStep::Kind::kConcat;
      const Shape& out = g.value(n.outputs[0]).shape;
      ASSIGN_OR_RETURN(s.axis, normalize_axis(n.attrs.get_int("axis", 0),
                                              static_cast<int64_t>(out.size())));
      int64_t at = 0;
      for (ValueId v : n.inputs) {
        if (v == kNoValue) return unsupported("node '{}': an omitted Concat input", n.name);
        s.offsets.push_back(at);
        at += g.value(v).shape[static_cast<size_t>(s.axis)];
      }
      return s;
    }
    case OpKind::Split: {
      s.kind = IndexMapStep::Kind::kSplit;
      ASSIGN_OR_RETURN(s.axis, normalize_axis(n.attrs.get_int("axis", 0), rank));
      ASSIGN_OR_RETURN(auto split, optional_ints(g, n, 1, "split"));
      ASSIGN_OR_RETURN(auto sizes, dm::split_sizes(in[static_cast<size_t>(s.axis)], split,
                                                   n.attrs.get_int("num_outputs", -1),
                                                   static_cast<int64_t>(n.outputs.size())));
      int64_t at = 0;
      for (int64_t sz : sizes) {
        s.offsets.push_back(at);
        at += sz;
      }
      return s;
    }
    case OpKind::Expand:
      s.kind = IndexMapStep::Kind::kExpand;
      if (!constant_input(g, n, 1))
        return unsupported("node '{}': the Expand shape is not known at build time", n.name);
      return s;
    case OpKind::Tile:
      s.kind = IndexMapStep::Kind::kTile;
      if (!constant_input(g, n, 1))
        return unsupported("node '{}': the Tile repeats are not known at build time", n.name);
      return s;
    case OpKind::Gather: {
      s.kind = IndexMapStep::Kind::kGather;
      ASSIGN_OR_RETURN(s.axis, normalize_axis(n.attrs.get_int("axis", 0), rank));
      ASSIGN_OR_RETURN(auto idx, ints(g, n, 1, "indices"));
      const int64_t dim = in[static_cast<size_t>(s.axis)];
      for (int64_t& i : idx) {
        if (i < 0) i += dim;
        if (i < 0 || i >= dim)
          return unsupported("node '{}': a Gather index is out of range", n.name);
      }
      s.indices = std::move(idx);
      s.indices_shape = g.value(n.inputs[1]).shape;
      return s;
    }
    default: break;
  }
  return unsupported("node '{}': {} is not an index map", n.name, op_name(n.op));
}

namespace {

const SymShape& sym_shape(const SymbolicShapes& sym, ValueId v) {
  return sym.values[static_cast<size_t>(v)].shape;
}

// Dim `d` of `n`'s input 0 over the range must not vary: `why` says what
// the map took from it.
Status fixed_dim(const Graph& g, const Node& n, const SymbolicShapes& sym, size_t d,
                 const char* why) {
  const SymShape& in = sym_shape(sym, n.inputs[0]);
  if (d < in.size() && !in[d].is_constant())
    return unsupported("node '{}' ({}): {} dim {} of '{}', which is {} over the shape range",
                       n.name, op_name(n.op), why, d, g.value(n.inputs[0]).name,
                       sym.shape_string(n.inputs[0]));
  return Status::ok_status();
}

// The first dim of `in` that is neither 1 nor the dim of `out` it lines up
// with (numpy's right alignment; a dim of `in` beyond `out`'s rank counts),
// or nothing: `in` is read at `out`'s coordinates or broadcast along dims of
// one element.
std::optional<size_t> broadcast_of_other_size(const SymShape& in, const SymShape& out) {
  if (in.size() > out.size()) return 0;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d].constant() != 1 && in[d] != out[lead + d]) return d;
  return std::nullopt;
}

// Dim `d` of the input, where it varies, passes whole to the output.
Status whole_where_varying(const Graph& g, const Node& n, const SymbolicShapes& sym, size_t d,
                           bool untouched_at_opt) {
  const SymShape& in = sym_shape(sym, n.inputs[0]);
  const SymShape& out = sym_shape(sym, n.outputs[0]);
  if (in[d].is_constant() || (untouched_at_opt && d < out.size() && out[d] == in[d]))
    return Status::ok_status();
  return fixed_dim(g, n, sym, d, "cuts or repeats");
}

}  // namespace

Status index_map_follows_range(const Graph& g, const Node& n, const SymbolicShapes& sym) {
  ASSIGN_OR_RETURN(IndexMapStep s, index_map_step(g, n));
  const std::vector<size_t> data = index_map_data_inputs(n);
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.has_input(i) && std::find(data.begin(), data.end(), i) == data.end() &&
        (!g.value(n.inputs[i]).constant ||
         sym.values[static_cast<size_t>(n.inputs[i])].depends_on_symbols()))
      return unsupported("node '{}' ({}): input {} varies over the shape range", n.name,
                         op_name(n.op), i);
  const size_t rank = sym_shape(sym, n.inputs[0]).size();
  switch (s.kind) {
    case IndexMapStep::Kind::kSame:
    case IndexMapStep::Kind::kReshape:
    case IndexMapStep::Kind::kTranspose: return Status::ok_status();
    case IndexMapStep::Kind::kSlice:
      for (size_t d = 0; d < rank; ++d)
        RETURN_IF_ERROR(whole_where_varying(g, n, sym, d, s.start[d] == 0 && s.step[d] == 1));
      return Status::ok_status();
    case IndexMapStep::Kind::kPad:
      for (size_t d = 0; d < rank; ++d)
        RETURN_IF_ERROR(whole_where_varying(
            g, n, sym, d,
            s.pad_begin[d] == 0 && s.pad_lo[d] == 0 && s.pad_w[d] == g.value(n.inputs[0]).shape[d]));
      return Status::ok_status();
    case IndexMapStep::Kind::kTile:
      for (size_t d = 0; d < rank; ++d) RETURN_IF_ERROR(whole_where_varying(g, n, sym, d, true));
      return Status::ok_status();
    case IndexMapStep::Kind::kExpand:
      if (auto d = broadcast_of_other_size(sym_shape(sym, n.inputs[0]), sym_shape(sym, n.outputs[0])))
        return unsupported("node '{}' (Expand): '{}' ({}) is broadcast along dim {}, which "
                           "varies over the shape range",
                           n.name, g.value(n.inputs[0]).name, sym.shape_string(n.inputs[0]), *d);
      return Status::ok_status();
    case IndexMapStep::Kind::kGather:
      return fixed_dim(g, n, sym, static_cast<size_t>(s.axis), "picks along");
    case IndexMapStep::Kind::kSplit:
      return fixed_dim(g, n, sym, static_cast<size_t>(s.axis), "splits");
    case IndexMapStep::Kind::kConcat:
      // Offsets along a varying axis are sums of run-time sizes: the kernel
      // reads them from its size block.
      return Status::ok_status();
  }
  return internal_error("node '{}': unhandled index map", n.name);
}

Status broadcast_follows_range(const Graph& g, const Node& n, const SymbolicShapes& sym) {
  for (ValueId o : n.outputs) {
    if (o == kNoValue) continue;
    const SymShape& out = sym_shape(sym, o);
    for (ValueId v : n.inputs) {
      if (v == kNoValue) continue;
      const SymShape& in = sym_shape(sym, v);
      if (in.size() > out.size())
        return unsupported("node '{}': input '{}' has more dims than the output", n.name,
                           g.value(v).name);
      if (broadcast_of_other_size(in, out))
        return unsupported(
            "node '{}' ({}): input '{}' ({}) is broadcast along a dim that varies over the "
            "shape range",
            n.name, op_name(n.op), g.value(v).name, sym.shape_string(v));
    }
  }
  return Status::ok_status();
}

}  // namespace graphc::ir
