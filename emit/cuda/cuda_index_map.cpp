// Renders an elementwise FusedGroup whose body reads through index maps (see
// cuda_index_map.h): the body is walked backwards from the output, each op
// turning the coordinates it is asked for into its source's coordinates.
#include "emit/cuda/cuda_index_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "emit/cuda/codegen_util.h"
#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/fused_range.h"
#include "emit/cuda/kernel_sizes.h"
#include "ir/index_map.h"

namespace graphc::emit {

using ir::DimExpr;
using ir::DType;
using ir::IndexMapStep;
using ir::SymShape;
using ir::ValueId;

bool has_index_maps(const ir::Node& n) {
  if (n.op != ir::OpKind::FusedGroup || !n.body) return false;
  for (const auto& inner : n.body->nodes)
    if (!inner.dead && !ir::is_elementwise(inner.op)) return true;
  return false;
}

namespace {

using Coords = std::vector<std::string>;

class Renderer {
 public:
  Renderer(const ir::Graph& outer, ir::NodeId id, const ir::SymbolicShapes* range)
      : outer_(outer), id_(id), node_(outer.node(id)), range_(range), sizes_(range) {}
  Expected<GeneratedKernel> run();

 private:
  // Statements that set `dest` (declared by the caller, of v's compute type)
  // to the element of body value `v` at `c`.
  Status value_at(ValueId v, const Coords& c, const std::string& dest, std::string& out,
                  const std::string& ind, int depth);
  Status map_at(const ir::Node& p, size_t out_index, const Coords& c, const std::string& dest,
                std::string& out, const std::string& ind, int depth);
  std::string fresh(const char* prefix) { return fmt::format("{}{}", prefix, fresh_++); }
  // Declares `const IX <name> = expr;` unless expr is already a name or 0.
  std::string coord(const std::string& expr, std::string& out, const std::string& ind);
  std::string offset(const SymShape& shape, const Coords& c);
  // A body value's shape: over the range, or its concrete shape.
  SymShape shape(ValueId v) const { return sizes_.shape(*body_, v); }
  // A size as kernel text: a literal, or a local of the size block.
  std::string size(const DimExpr& e) { return sizes_.code(e); }
  // Over a range: every map and broadcast of the body holds at every shape.
  Status check_range() const;
  // The input coordinates of Reshape `p` (output shape `os`, input `is`) for
  // output coordinates `c`.
  Coords reshape_coords(const ir::Node& p, const SymShape& os, const SymShape& is, const Coords& c,
                        std::string& out, const std::string& ind);

  const ir::Graph& outer_;
  const ir::NodeId id_;
  const ir::Node& node_;
  const ir::SymbolicShapes* range_;
  KernelSizes sizes_;
  ir::SymbolicShapes body_shapes_;  // over a range: the body's values' shapes
  const ir::Graph* body_ = nullptr;
  std::map<ValueId, size_t> input_of_;  // body value -> kernel input
  std::vector<ValueId> inputs_;         // outer values, kernel parameter order
  std::string file_scope_;              // embedded constant arrays
  std::map<ValueId, std::string> array_of_;
  int fresh_ = 0;
};

std::string Renderer::coord(const std::string& expr, std::string& out, const std::string& ind) {
  if (expr == "0" || expr.find_first_of(" +-*/%()") == std::string::npos) return expr;
  std::string name = fresh("c");
  out += fmt::format("{}const IX {} = {};\n", ind, name, expr);
  return name;
}

std::string Renderer::offset(const SymShape& shape, const Coords& c) {
  std::string e;
  DimExpr stride(1);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d].constant() != 1 && c[d] != "0")
      e = fmt::format("{}{}{}",
                      stride.constant() == 1 ? c[d]
                                             : fmt::format("{} * (IX){}", c[d], size(stride)),
                      e.empty() ? "" : " + ", e);
    stride = stride * shape[d];
  }
  return e.empty() ? "0" : e;
}

// The dims of more than one element on each side fall into groups whose
// products agree at every shape (a dim split in two, two merged, or equal);
// each group's coordinates are flattened and split again alone, so a division
// by a run-time size appears only where a group needs one ([L, B, 768] viewed
// as [L, B * 12, 64] divides by 768 and 12, not by B). Groups are grown on
// the opt shape's numbers (the smaller side takes its next dim) and closed
// where the products are equal as expressions, so they hold over the range.
Coords Renderer::reshape_coords(const ir::Node& p, const SymShape& os, const SymShape& is,
                                const Coords& c, std::string& out, const std::string& ind) {
  const ir::Shape& os_at = body_->value(p.outputs[0]).shape;
  const ir::Shape& is_at = body_->value(p.inputs[0]).shape;
  std::vector<size_t> a, b;  // the dims that count, output and input
  for (size_t d = 0; d < os.size(); ++d)
    if (os[d].constant() != 1) a.push_back(d);
  for (size_t d = 0; d < is.size(); ++d)
    if (is[d].constant() != 1) b.push_back(d);
  Coords ic(is.size(), "0");
  size_t ia = 0, ib = 0;
  while (ia < a.size() && ib < b.size()) {
    size_t ea = ia + 1, eb = ib + 1;
    DimExpr pa = os[a[ia]], pb = is[b[ib]];
    int64_t na = os_at[a[ia]], nb = is_at[b[ib]];
    while (pa != pb && (ea < a.size() || eb < b.size())) {
      if (eb == b.size() || (ea < a.size() && na <= nb)) {
        na *= os_at[a[ea]];
        pa = pa * os[a[ea++]];
      } else {
        nb *= is_at[b[eb]];
        pb = pb * is[b[eb++]];
      }
    }
    if (ea - ia == 1 && eb - ib == 1) {
      ic[b[ib]] = c[a[ia]];
    } else {
      // The group's flat index: its output coordinates, strides within it.
      SymShape group;
      Coords gc;
      for (size_t k = ia; k < ea; ++k) {
        group.push_back(os[a[k]]);
        gc.push_back(c[a[k]]);
      }
      const std::string f = coord(offset(group, gc), out, ind);
      DimExpr inner(1);
      for (size_t k = eb; k-- > ib;) {
        const size_t d = b[k];
        std::string ex = inner.constant() == 1 ? f : fmt::format("{} / (IX){}", f, size(inner));
        if (k != ib) ex = fmt::format("({}) % (IX){}", ex, size(is[d]));
        ic[d] = coord(ex, out, ind);
        inner = inner * is[d];
      }
    }
    ia = ea;
    ib = eb;
  }
  return ic;
}

Status Renderer::value_at(ValueId v, const Coords& c, const std::string& dest, std::string& out,
                          const std::string& ind, int depth) {
  if (depth > 64) return unsupported("node '{}': index map nested too deeply", node_.name);
  const ir::Value& val = body_->value(v);
  if (auto it = input_of_.find(v); it != input_of_.end()) {
    out += fmt::format("{}{} = {};\n", ind, dest,
                       cuda::load_expr(val.dtype, fmt::format("in{}[{}]", it->second,
                                                              offset(shape(v), c))));
    return Status::ok_status();
  }
  if (val.constant) {
    if (val.constant->numel() == 1) {
      out += fmt::format("{}{} = {};\n", ind, dest, scalar_literal(*val.constant));
      return Status::ok_status();
    }
    auto [it, added] = array_of_.emplace(v, fmt::format("k{}", array_of_.size()));
    if (added) file_scope_ += constant_array(it->second, *val.constant);
    out += fmt::format("{}{} = {};\n", ind, dest,
                       constant_load(it->second, val.dtype, offset(shape(v), c)));
    return Status::ok_status();
  }
  if (val.producer < 0)
    return invalid_model("node '{}': body value '{}' has no producer", node_.name, val.name);
  const ir::Node& p = body_->node(val.producer);
  size_t o = 0;
  while (o < p.outputs.size() && p.outputs[o] != v) ++o;
  return map_at(p, o, c, dest, out, ind, depth + 1);
}

Status Renderer::map_at(const ir::Node& p, size_t out_index, const Coords& c,
                        const std::string& dest, std::string& out, const std::string& ind,
                        int depth) {
  const SymShape os = shape(p.outputs[out_index]);
  const std::string in2 = ind + "  ";
  if (ir::is_elementwise(p.op)) {
    // Each operand at the output's coordinates, broadcast as numpy does.
    cuda::OpOperands ops;
    ops.node = &p;
    ops.out_dtype = body_->value(p.outputs[out_index]).dtype;
    ops.out_index = out_index;
    out += ind + "{\n";
    for (ValueId u : p.inputs) {
      if (u == ir::kNoValue) {
        ops.in.emplace_back();
        ops.in_dtype.push_back(DType::kUndefined);
        continue;
      }
      const ir::Value& uv = body_->value(u);
      const SymShape us = shape(u);
      const size_t lead = os.size() - us.size();
      Coords uc;
      for (size_t d = 0; d < us.size(); ++d)
        uc.push_back(us[d].constant() == 1 ? "0" : c[lead + d]);
      std::string t = fresh("t");
      out += fmt::format("{}{} {};\n", in2, cuda::compute_type(uv.dtype), t);
      RETURN_IF_ERROR(value_at(u, uc, t, out, in2, depth));
      ops.in.push_back(t);
      ops.in_dtype.push_back(uv.dtype);
    }
    ASSIGN_OR_RETURN(std::string e, cuda::op_expression(ops));
    out += fmt::format("{}{} = {};\n{}}}\n", in2, dest, e, ind);
    return Status::ok_status();
  }
  ASSIGN_OR_RETURN(IndexMapStep s, ir::index_map_step(*body_, p));
  const ValueId src = p.inputs[0];
  const SymShape is = shape(src);
  Coords ic;
  switch (s.kind) {
    case IndexMapStep::Kind::kSame: return value_at(src, c, dest, out, ind, depth);
    case IndexMapStep::Kind::kReshape:
      ic = reshape_coords(p, os, is, c, out, ind);
      return value_at(src, ic, dest, out, ind, depth);
    case IndexMapStep::Kind::kTranspose:
      ic.assign(is.size(), "0");
      for (size_t d = 0; d < os.size(); ++d) ic[static_cast<size_t>(s.perm[d])] = c[d];
      return value_at(src, ic, dest, out, ind, depth);
    case IndexMapStep::Kind::kSlice:
      for (size_t d = 0; d < is.size(); ++d) {
        std::string e = c[d];
        if (s.step[d] != 1) e = fmt::format("{} * (IX){}", e, s.step[d]);
        if (s.start[d] != 0) e = fmt::format("(IX){} + {}", s.start[d], e);
        ic.push_back(is[d].constant() == 1 ? "0" : coord(e, out, ind));
      }
      return value_at(src, ic, dest, out, ind, depth);
    case IndexMapStep::Kind::kSplit:
      ic = c;
      if (s.offsets[out_index] != 0)
        ic[static_cast<size_t>(s.axis)] = coord(
            fmt::format("{} + (IX){}", c[static_cast<size_t>(s.axis)], s.offsets[out_index]), out,
            ind);
      return value_at(src, ic, dest, out, ind, depth);
    case IndexMapStep::Kind::kExpand: {
      const size_t lead = os.size() - is.size();
      for (size_t d = 0; d < is.size(); ++d)
        ic.push_back(is[d].constant() == 1 ? "0" : c[lead + d]);
      return value_at(src, ic, dest, out, ind, depth);
    }
    case IndexMapStep::Kind::kTile:
      for (size_t d = 0; d < is.size(); ++d)
        ic.push_back(is[d].constant() == 1 ? "0"
                     : is[d] == os[d]       ? c[d]
                                            : coord(fmt::format("{} % (IX){}", c[d], size(is[d])),
                                                    out, ind));
      return value_at(src, ic, dest, out, ind, depth);
    case IndexMapStep::Kind::kGather: {
      const size_t axis = static_cast<size_t>(s.axis), q = s.indices_shape.size();
      Coords qc(c.begin() + static_cast<std::ptrdiff_t>(axis),
                c.begin() + static_cast<std::ptrdiff_t>(axis + q));
      ir::Tensor table(DType::kInt32, {static_cast<int64_t>(s.indices.size())});
      for (size_t k = 0; k < s.indices.size(); ++k)
        table.set_i64(static_cast<int64_t>(k), s.indices[k]);
      std::string name = fmt::format("g{}", fresh_++);
      file_scope_ += constant_array(name, table);
      for (size_t d = 0; d < axis; ++d) ic.push_back(c[d]);
      const SymShape qs(s.indices_shape.begin(), s.indices_shape.end());
      ic.push_back(coord(fmt::format("(IX)(int){}[{}]", name, offset(qs, qc)), out, ind));
      for (size_t d = axis + q; d < c.size(); ++d) ic.push_back(c[d]);
      return value_at(src, ic, dest, out, ind, depth);
    }
    case IndexMapStep::Kind::kPad: {
      std::string cond;
      for (size_t d = 0; d < is.size(); ++d) {
        const int64_t b = std::max<int64_t>(s.pad_begin[d], 0);
        // A dim that varies is never padded (ir::index_map_follows_range).
        const bool full = !os[d].is_constant() || (b == 0 && s.pad_w[d] == *os[d].constant());
        std::string q = c[d];
        if (b != 0) q = coord(fmt::format("{} - (IX){}", c[d], b), out, ind);
        if (!full) {
          if (b != 0) cond += fmt::format("{}{} >= 0", cond.empty() ? "" : " && ", q);
          if (s.pad_w[d] < *os[d].constant() - b)
            cond += fmt::format("{}{} < (IX){}", cond.empty() ? "" : " && ", q, s.pad_w[d]);
        }
        ic.push_back(s.pad_lo[d] == 0 ? q : fmt::format("({} + (IX){})", q, s.pad_lo[d]));
      }
      for (auto& x : ic) x = coord(x, out, ind);
      if (cond.empty()) return value_at(src, ic, dest, out, ind, depth);
      out += fmt::format("{}if ({}) {{\n", ind, cond);
      RETURN_IF_ERROR(value_at(src, ic, dest, out, in2, depth));
      out += fmt::format("{}}} else {{\n{}{} = {};\n{}}}\n", ind, in2, dest,
                         scalar_literal(*s.pad_value), ind);
      return Status::ok_status();
    }
    case IndexMapStep::Kind::kConcat: {
      const size_t axis = static_cast<size_t>(s.axis);
      // Offsets along the axis: sums of sizes, run-time ones where it varies.
      std::vector<DimExpr> offsets{DimExpr(0)};
      size_t last = 0;  // the last input with elements
      for (size_t k = 0; k < p.inputs.size(); ++k) {
        const DimExpr dim = shape(p.inputs[k])[axis];
        offsets.push_back(offsets.back() + dim);
        if (dim.constant() != 0) last = k;
      }
      bool opened = false;
      for (size_t k = 0; k <= last; ++k) {
        if (shape(p.inputs[k])[axis].constant() == 0) continue;
        if (k != last)
          out += fmt::format("{}{}if ({} < (IX){}) {{\n", ind, opened ? "} else " : "", c[axis],
                             size(offsets[k + 1]));
        else
          out += fmt::format("{}{}{{\n", ind, opened ? "} else " : "");
        opened = true;
        Coords kc = c;
        if (offsets[k].constant() != 0)
          kc[axis] = coord(fmt::format("{} - (IX){}", c[axis], size(offsets[k])), out, in2);
        RETURN_IF_ERROR(value_at(p.inputs[k], kc, dest, out, in2, depth));
      }
      out += ind + "}\n";
      return Status::ok_status();
    }
  }
  return internal_error("node '{}': unhandled index map", p.name);
}

Status Renderer::check_range() const {
  for (const auto& n : body_->nodes) {
    if (n.dead) continue;
    RETURN_IF_ERROR(ir::is_elementwise(n.op) ? ir::broadcast_follows_range(*body_, n, body_shapes_)
                                             : ir::index_map_follows_range(*body_, n, body_shapes_));
  }
  return Status::ok_status();
}

Expected<GeneratedKernel> Renderer::run() {
  if (!node_.body) return invalid_model("node '{}': FusedGroup without a body", node_.name);
  body_ = node_.body.get();
  if (node_.outputs.size() != 1 || body_->outputs.size() != 1)
    return unsupported("node '{}': an index-map group has one output", node_.name);
  if (body_->inputs.size() != node_.inputs.size())
    return invalid_model("node '{}': body inputs do not match the node's", node_.name);
  if (range_) {
    ASSIGN_OR_RETURN(body_shapes_, fused_body_shapes(outer_, id_, *range_));
    sizes_.set_body(body_, &body_shapes_);
    RETURN_IF_ERROR(check_range().with_context(fmt::format("index-map kernel '{}'", node_.name)));
  }
  bool fp16 = false, bf16 = false;
  int64_t max_numel = 1;
  for (size_t id = 0; id < body_->values.size(); ++id) {
    const ir::Value& v = body_->values[id];
    if (!v.has_shape) return invalid_model("node '{}': '{}' has no static shape", node_.name, v.name);
    if (cuda::compute_type(v.dtype).empty())
      return unsupported("node '{}': dtype {} is not supported in CUDA kernels", node_.name,
                         ir::dtype_name(v.dtype));
    fp16 |= v.dtype == DType::kFloat16;
    bf16 |= v.dtype == DType::kBFloat16;
    ASSIGN_OR_RETURN(int64_t most,
                     sizes_.upper_bound(dims_product(shape(static_cast<ValueId>(id)))));
    max_numel = std::max(max_numel, most);
  }
  std::map<ValueId, size_t> seen;  // outer value -> kernel input
  for (size_t i = 0; i < node_.inputs.size(); ++i) {
    const ValueId outer = node_.inputs[i];
    auto it = seen.find(outer);
    if (it == seen.end()) {
      it = seen.emplace(outer, inputs_.size()).first;
      inputs_.push_back(outer);
    }
    input_of_[body_->inputs[i]] = it->second;
  }
  const ir::Value& ov = body_->value(body_->outputs[0]);
  const SymShape os = shape(body_->outputs[0]);
  const DimExpr n = dims_product(os);
  ASSIGN_OR_RETURN(const int64_t most_n, sizes_.upper_bound(n));
  std::string per = "";
  Coords c;
  if (most_n > 0) {
    // The output coordinates of flat index i.
    per += "    IX r_o = i;\n";
    for (size_t d = os.size(); d-- > 0;) {
      if (d == 0) {
        per += "    const IX o0 = r_o;\n";
      } else {
        per += fmt::format("    const IX o{} = r_o % {};\n", d, size(os[d]));
        per += fmt::format("    r_o /= {};\n", size(os[d]));
      }
    }
    for (size_t d = 0; d < os.size(); ++d)
      c.push_back(os[d].constant() == 1 ? "0" : fmt::format("o{}", d));
    per += fmt::format("    {} v;\n", cuda::compute_type(ov.dtype));
    RETURN_IF_ERROR(value_at(body_->outputs[0], c, "v", per, "    ", 0));
    per += fmt::format("    out0[i] = {};\n", cuda::store_expr(ov.dtype, "v"));
  }
  const std::string count = size(n);
  std::string s = fmt::format("// graphc index-map kernel: node {}, output shape {}\n",
                              sanitize(node_.name, 80),
                              range_ ? sizes_.shape_string(os) : ir::shape_to_string(ov.shape));
  if (fp16) s += "#include <cuda_fp16.h>\n";
  if (bf16) s += "#include <cuda_bf16.h>\n";
  s += cuda::device_prelude();
  s += cuda::conversion_preludes(per);
  s += file_scope_;
  s += sizes_.declaration();
  std::string params;
  for (size_t k = 0; k < inputs_.size(); ++k)
    params += fmt::format("const {}* __restrict__ in{}, ",
                          cuda::storage_type(outer_.value(inputs_[k]).dtype), k);
  params += fmt::format("{}* __restrict__ out0", cuda::storage_type(ov.dtype));
  params += sizes_.parameter();
  // Over a range the grid follows the element count at run time (at most
  // its static limit; the loop strides over the rest).
  const LaunchShape launch = dm::flat_launch(most_n);
  const DimExpr blocks = dm::flat_blocks(n, launch.block[0]);
  s += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) @ENTRY@({}) {{\n",
                   launch.block[0], params);
  s += fmt::format("  typedef {} IX;\n", dm::index_type(max_numel));
  s += sizes_.locals("IX");
  s += fmt::format(
      "  for (IX i = (IX)blockIdx.x * (IX)blockDim.x + (IX)threadIdx.x; i < (IX){}; i += "
      "(IX)blockDim.x * (IX)gridDim.x) {{\n",
      count);
  s += per + "  }\n}\n";
  GeneratedKernel k;
  k.name = "im_" + sanitize(node_.name, 40);
  k.entry = kernel_entry_name("im", s);
  for (size_t p = s.find("@ENTRY@"); p != std::string::npos; p = s.find("@ENTRY@"))
    s.replace(p, 7, k.entry);
  k.source = std::move(s);
  k.args = inputs_;
  k.args.push_back(node_.outputs[0]);
  k.threads_per_block = launch.block[0];
  k.blocks = launch.grid[0];
  k.sizes = sizes_.block();
  if (!blocks.is_constant()) k.grid_x = blocks;
  return k;
}

}  // namespace

Expected<GeneratedKernel> generate_index_map_kernel(const ir::Graph& graph, ir::NodeId node,
                                                    const ir::SymbolicShapes* range) {
  if (node < 0 || static_cast<size_t>(node) >= graph.nodes.size())
    return invalid_argument("generate_index_map_kernel: node id {} out of range", node);
  Renderer r(graph, node, range);
  return r.run();
}

}  // namespace graphc::emit
