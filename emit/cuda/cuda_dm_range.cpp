#include "emit/cuda/cuda_dm_range.h"

#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/anchor_frame.h"
#include "emit/cuda/codegen_util.h"
#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/fused_range.h"
#include "emit/cuda/kernel_sizes.h"
#include "ir/data_movement_params.h"
#include "ir/shape_inference.h"

namespace graphc::emit {

using ir::DimExpr;
using ir::OpKind;
using ir::SymShape;

namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;  // as the static kernels: the loop strides over the rest

class RangeKernel {
 public:
  RangeKernel(const ir::Graph& graph, const ir::SymbolicShapes& range)
      : graph_(graph), range_(range), sizes_(&range) {}

  Status init(ir::NodeId node) {
    ASSIGN_OR_RETURN(f_, make_anchor_frame(graph_, node));
    return use_run_time_sizes(graph_, node, range_, true, sizes_, body_, f_);
  }
  const AnchorFrame& f() const { return f_; }
  const ir::Node& anchor() const { return *f_.anchor; }
  SymShape in(size_t k) const { return sizes_.shape(*f_.graph, f_.anchor->inputs[k]); }
  SymShape out(size_t k) const { return sizes_.shape(*f_.graph, f_.anchor->outputs[k]); }
  Expected<int64_t> most(const DimExpr& e) const { return sizes_.upper_bound(e); }
  Expected<int64_t> least(const DimExpr& e) const { return sizes_.lower_bound(e); }
  // A size as an IX expression: a literal, or a local of the size block.
  std::string c(const DimExpr& e) { return "(IX)" + sizes_.code(e); }
  std::string shape_string(const SymShape& s) const { return sizes_.shape_string(s); }

  // Integer elements of input k: a build-time constant, or shape arithmetic
  // graphc follows (then recorded as a shape argument, never read).
  Expected<std::vector<DimExpr>> ints(size_t k, const char* what) {
    const ir::ValueId v = f_.anchor->inputs[k];
    const ir::SymValue& s = sym(v);
    if (s.elements) {
      if (s.depends_on_symbols()) RETURN_IF_ERROR(take_as_shape(k, what));
      return *s.elements;
    }
    if (!s.depends_on_symbols())
      if (const ir::Tensor* t = f_.constant_input(k); t && ir::is_integer(t->dtype())) {
        std::vector<DimExpr> out;
        for (int64_t x : t->to_i64_vector()) out.emplace_back(x);
        return out;
      }
    return unsupported("node '{}' ({}): {} (input {}) must be known at build time or follow "
                       "from the input shapes",
                       f_.node_name, ir::op_name(f_.anchor->op), what, k);
  }
  // Input k's values are not read (the output shape says all): a shape
  // argument when they vary.
  Status shape_only(size_t k, const char* what) {
    if (!f_.has_input(k) || !sym(f_.anchor->inputs[k]).depends_on_symbols())
      return Status::ok_status();
    if (!sym(f_.anchor->inputs[k]).elements)
      return unsupported("node '{}' ({}): {} (input {}) is computed at run time", f_.node_name,
                         ir::op_name(f_.anchor->op), what, k);
    return take_as_shape(k, what);
  }

  // Per-element code for a flat index `i` over `n` output elements, wrapped
  // in a grid-stride loop; the grid follows `n` at run time. With `width`
  // above 1 (a dm::Mover's vectors; `n` a multiple of it at every shape)
  // `per` moves elements [i, i + width).
  Expected<GeneratedKernel> finish(const std::string& prefix, const DimExpr& n,
                                   const std::string& per, const std::string& helpers = "",
                                   int64_t width = 1) {
    int64_t largest = 1;
    for (const auto* list : {&f_.anchor->inputs, &f_.anchor->outputs})
      for (ir::ValueId v : *list) {
        if (v == ir::kNoValue) continue;
        ASSIGN_OR_RETURN(int64_t m, most(dims_product(sizes_.shape(*f_.graph, v))));
        largest = std::max(largest, m);
      }
    const std::string ix =
        largest + kMaxBlocks * kThreads < (int64_t{1} << 31) ? "int" : "long long";
    const DimExpr vectors = width == 1 ? n : DimExpr::floor_div(n, DimExpr(width));
    const DimExpr blocks = dm::flat_blocks(vectors, kThreads);
    LaunchShape launch;
    launch.block = {kThreads, 1, 1};
    ASSIGN_OR_RETURN(launch.grid[0], most(blocks));
    if (!blocks.is_constant()) launch.grid_x = blocks;
    std::string body = fmt::format("  typedef {} IX;\n", ix);
    body += fmt::format(
        "  for (IX {0} = (IX)blockIdx.x * (IX)blockDim.x + (IX)threadIdx.x; {0} < {1}; {0} += "
        "(IX)blockDim.x * (IX)gridDim.x) {{\n",
        width == 1 ? "i" : "iv", c(vectors));
    if (width > 1)
      body += fmt::format("    const IX i = iv * (IX){};  // first of {} elements\n", width, width);
    body += per;
    body += "  }\n";
    const std::string vec = width == 1 ? "" : fmt::format("_v{}", width);
    return finish_anchor_kernel(f_, prefix + vec + "_rt", helpers, body, launch);
  }

  // The tiled transpose over a run-time outer size (dm::outer_tiled_transpose):
  // its grid follows the tile count at run time.
  Expected<GeneratedKernel> finish_tiled(const std::string& prefix, const DimExpr& outer,
                                         const dm::OuterTiledTranspose& t) {
    const DimExpr blocks = DimExpr::max(
        DimExpr(1), DimExpr::min(outer * DimExpr(t.tiles_per_outer),
                                 DimExpr(dm::kTiledTransposeMaxBlocks)));
    LaunchShape launch;
    launch.block = {32, 8, 1};
    ASSIGN_OR_RETURN(launch.grid[0], most(blocks));
    if (!blocks.is_constant()) launch.grid_x = blocks;
    return finish_anchor_kernel(f_, prefix + "_rt", "", t.body, launch);
  }

  // `const IX <p><d> = ...;`: the coordinates of flat `idx` in `shape`.
  std::string decompose(const SymShape& shape, const std::string& idx, const std::string& p) {
    std::string s;
    if (shape.empty()) return s;
    s += fmt::format("    IX r_{} = {};\n", p, idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (d == 0) {
        s += fmt::format("    const IX {}0 = r_{};\n", p, p);
      } else {
        const std::string n = c(shape[d]);
        s += fmt::format("    const IX {}{} = r_{} % {};\n", p, d, p, n);
        s += fmt::format("    r_{} /= {};\n", p, n);
      }
    }
    return s;
  }

 private:
  const ir::SymValue& sym(ir::ValueId v) const {
    const ir::SymbolicShapes& s = f_.graph == &graph_ ? range_ : body_;
    return s.values[static_cast<size_t>(v)];
  }
  // Shape arithmetic computed inside a fused kernel is not followed.
  Status take_as_shape(size_t k, const char* what) {
    if (f_.graph == &graph_) return Status::ok_status();
    const auto& ins = f_.graph->inputs;
    if (std::find(ins.begin(), ins.end(), f_.anchor->inputs[k]) == ins.end())
      return unsupported("node '{}' ({}): {} is computed inside the fused kernel from shapes "
                         "that vary",
                         f_.node_name, ir::op_name(f_.anchor->op), what);
    return Status::ok_status();
  }

  const ir::Graph& graph_;
  const ir::SymbolicShapes& range_;
  KernelSizes sizes_;
  ir::SymbolicShapes body_;
  AnchorFrame f_;
};

// Row-major strides of `s` as expressions.
std::vector<DimExpr> strides_of(const SymShape& s) {
  std::vector<DimExpr> st(s.size(), DimExpr(1));
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// ` + c<d> * stride` terms, skipping dims of one element and zero strides.
std::string offset_terms(RangeKernel& k, const SymShape& iter, const std::vector<DimExpr>& st,
                         const std::string& p) {
  std::string s;
  for (size_t d = 0; d < iter.size(); ++d) {
    if (iter[d].constant() == 1 || st[d].constant() == 0) continue;
    s += st[d].constant() == 1 ? fmt::format(" + {}{}", p, d)
                               : fmt::format(" + {}{} * {}", p, d, k.c(st[d]));
  }
  return s;
}

Expected<GeneratedKernel> transpose(RangeKernel& k) {
  const SymShape is = k.in(0);
  const auto& attrs = k.anchor().attrs;
  ASSIGN_OR_RETURN(auto perm, ir::dm::transpose_perm(attrs.get_ints("perm"), attrs.has("perm"),
                                                     static_cast<int64_t>(is.size())));
  // Only dim 0 (a batch that stays first) varies: 32x32 tiles through shared
  // memory as the static kernel moves them, the tile count at run time (the
  // per-element gather below reads one side with a stride).
  bool inner_fixed = !is.empty() && !is[0].is_constant();
  for (size_t d = 1; d < is.size(); ++d) inner_fixed &= is[d].is_constant();
  if (inner_fixed) {
    ir::Shape in_max;
    for (const DimExpr& d : is) {
      ASSIGN_OR_RETURN(int64_t m, k.most(d));
      in_max.push_back(m);
    }
    if (auto t = dm::outer_tiled_transpose(k.f(), in_max, perm, k.c(is[0])))
      return k.finish_tiled("transpose", is[0], *t);
  }
  const std::vector<DimExpr> ist = strides_of(is);
  SymShape os;
  std::vector<DimExpr> st;
  for (int64_t p : perm) {
    os.push_back(is[static_cast<size_t>(p)]);
    st.push_back(ist[static_cast<size_t>(p)]);
  }
  // The innermost dim stays innermost with a fixed size of whole 16-byte
  // vectors: each thread moves one vector, as the static kernel does.
  const int64_t lanes = dm::Mover::lanes(k.f().input(0).dtype);
  const dm::Mover m = dm::Mover::for_copy(
      k.f(), perm.back() == static_cast<int64_t>(is.size()) - 1 && is.back().is_constant() &&
                 *is.back().constant() % lanes == 0);
  std::string per = k.decompose(os, "i", "c");
  per += fmt::format("    {}\n", m.store(0, "i", m.load(0, "(IX)0" + offset_terms(k, os, st, "c"))));
  return k.finish("transpose", dims_product(os), per, "", m.width());
}

// ONNX's clamp of a slice start (or end) `e` along a dim of size `d`, where
// the range's bounds settle it; Unsupported where they do not.
Expected<DimExpr> clamp_index(RangeKernel& k, const DimExpr& e, const DimExpr& d, int64_t step,
                              bool is_end) {
  const int64_t hi_bias = step > 0 ? 0 : -1;
  const int64_t floor = step < 0 && is_end ? -1 : 0;
  DimExpr x = e;
  if (auto c = e.constant(); c && *c < 0) x = d + e;
  ASSIGN_OR_RETURN(int64_t lo, k.least(x));
  ASSIGN_OR_RETURN(int64_t hi, k.most(x));
  ASSIGN_OR_RETURN(int64_t d_lo, k.least(d));
  ASSIGN_OR_RETURN(int64_t d_hi, k.most(d));
  if (auto c = e.constant(); c && *c < 0 && lo < floor) x = DimExpr::max(x, DimExpr(floor));
  else if (lo < floor)
    return unsupported("a slice bound {} may fall below {} over the range", e.to_string(), floor);
  if (hi > d_lo + hi_bias) {
    if (auto c = x.constant(); c && *c >= d_hi + hi_bias) x = d + DimExpr(hi_bias);
    else x = DimExpr::min(x, d + DimExpr(hi_bias));
  }
  return x;
}

Expected<GeneratedKernel> slice(RangeKernel& k) {
  const SymShape is = k.in(0), os = k.out(0);
  ASSIGN_OR_RETURN(auto starts, k.ints(1, "starts"));
  RETURN_IF_ERROR(k.shape_only(2, "ends"));  // the output shape holds them
  std::vector<int64_t> axes, steps;
  const auto rank = static_cast<int64_t>(is.size());
  if (k.f().has_input(3)) {
    ASSIGN_OR_RETURN(auto a, k.ints(3, "axes"));
    for (const auto& e : a) {
      auto c = e.constant();
      if (!c) return unsupported("node '{}': Slice axes vary over the range", k.f().node_name);
      axes.push_back(*c);
    }
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (k.f().has_input(4)) {
    ASSIGN_OR_RETURN(auto s, k.ints(4, "steps"));
    for (const auto& e : s) {
      auto c = e.constant();
      if (!c || *c == 0)
        return unsupported("node '{}': Slice steps must be nonzero constants", k.f().node_name);
      steps.push_back(*c);
    }
  } else {
    steps.assign(starts.size(), 1);
  }
  if (axes.size() != starts.size() || steps.size() != starts.size() || os.size() != is.size())
    return invalid_model("node '{}': starts, axes and steps differ in length", k.f().node_name);
  ASSIGN_OR_RETURN(axes, ir::dm::normalize_axes(axes, rank, "axes"));
  std::vector<DimExpr> start(is.size(), DimExpr(0));
  std::vector<int64_t> step(is.size(), 1);
  for (size_t j = 0; j < axes.size(); ++j) {
    const auto d = static_cast<size_t>(axes[j]);
    step[d] = steps[j];
    auto s = clamp_index(k, starts[j], is[d], steps[j], false);
    if (!s.ok())
      return s.status().with_context(fmt::format("node '{}' (Slice)", k.f().node_name));
    start[d] = *s;
  }
  const std::vector<DimExpr> ist = strides_of(is);
  DimExpr base(0);
  std::vector<DimExpr> st(is.size());
  for (size_t d = 0; d < is.size(); ++d) {
    base = base + start[d] * ist[d];
    st[d] = DimExpr(step[d]) * ist[d];
  }
  std::string per = k.decompose(os, "i", "c");
  per += fmt::format("    {}\n", k.f().store(0, "i", k.f().load(0, k.c(base) + offset_terms(k, os, st, "c"))));
  return k.finish("slice", dims_product(os), per);
}

Expected<GeneratedKernel> concat(RangeKernel& k) {
  const SymShape os = k.out(0);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(k.anchor().attrs.get_int("axis", 0),
                                                    static_cast<int64_t>(os.size())));
  const auto ax = static_cast<size_t>(axis);
  const DimExpr inner = dims_product(os, ax + 1, os.size()), dim = os[ax];
  std::string per;
  per += fmt::format("    const IX a = (i / {}) % {};\n", k.c(inner), k.c(dim));
  per += fmt::format("    const IX o = i / {};\n", k.c(inner * dim));
  per += fmt::format("    const IX r = i % {};\n", k.c(inner));
  DimExpr offset(0);
  bool first = true;
  for (size_t j = 0; j < k.anchor().inputs.size(); ++j) {
    if (!k.f().has_input(j)) continue;
    const DimExpr size = k.in(j)[ax];
    if (size.constant() == 0) continue;
    const std::string src =
        fmt::format("(o * {} + (a - {})) * {} + r", k.c(size), k.c(offset), k.c(inner));
    per += fmt::format("    {}if (a < {}) {{\n      {}\n    }}\n", first ? "" : "else ",
                       k.c(offset + size), k.f().store(0, "i", k.f().load(j, src)));
    first = false;
    offset = offset + size;
  }
  if (offset != dim)
    return invalid_model("node '{}': Concat inputs add up to {} along axis {}, output has {}",
                         k.f().node_name, offset.to_string(), axis, dim.to_string());
  return k.finish("concat", dims_product(os), per);
}

Expected<GeneratedKernel> split(RangeKernel& k) {
  const SymShape is = k.in(0);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(k.anchor().attrs.get_int("axis", 0),
                                                    static_cast<int64_t>(is.size())));
  const auto ax = static_cast<size_t>(axis);
  RETURN_IF_ERROR(k.shape_only(1, "split"));
  const DimExpr inner = dims_product(is, ax + 1, is.size()), dim = is[ax];
  std::string per;
  per += fmt::format("    const IX a = (i / {}) % {};\n", k.c(inner), k.c(dim));
  per += fmt::format("    const IX o = i / {};\n", k.c(inner * dim));
  per += fmt::format("    const IX r = i % {};\n", k.c(inner));
  per += fmt::format("    const auto v = {};\n", k.f().load(0, "i"));
  DimExpr offset(0);
  for (size_t j = 0; j < k.anchor().outputs.size(); ++j) {
    if (!k.f().has_output(j)) return unsupported("node '{}': Split with an omitted output over "
                                                 "the range", k.f().node_name);
    const DimExpr size = k.out(j)[ax];
    const std::string dst =
        fmt::format("(o * {} + (a - {})) * {} + r", k.c(size), k.c(offset), k.c(inner));
    per += fmt::format("    {}if (a >= {} && a < {}) {{\n      {}\n    }}\n", j ? "else " : "",
                       k.c(offset), k.c(offset + size), k.f().store(j, dst, "v"));
    offset = offset + size;
  }
  if (offset != dim)
    return invalid_model("node '{}': Split outputs add up to {} along axis {}, input has {}",
                         k.f().node_name, offset.to_string(), axis, dim.to_string());
  per += "    (void)v; (void)o; (void)r;\n";
  return k.finish("split", dims_product(is), per);
}

Expected<GeneratedKernel> gather(RangeKernel& k) {
  const ir::DType it = k.f().input(1).dtype;
  if (it != ir::DType::kInt32 && it != ir::DType::kInt64)
    return invalid_model("node '{}' (Gather): indices must be int32 or int64", k.f().node_name);
  const SymShape ds = k.in(0), idx = k.in(1);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(k.anchor().attrs.get_int("axis", 0),
                                                    static_cast<int64_t>(ds.size())));
  const auto ax = static_cast<size_t>(axis);
  const DimExpr dim = ds[ax], inner = dims_product(ds, ax + 1, ds.size());
  const DimExpr n = dims_product(idx);
  std::string per;
  per += fmt::format("    const IX o = i / {};\n", k.c(n * inner));
  per += fmt::format("    const IX k = (i / {}) % {};\n", k.c(inner), k.c(n));
  per += fmt::format("    const IX r = i % {};\n", k.c(inner));
  const std::string d = k.c(dim);
  per += fmt::format("    long long j = (long long){};\n", k.f().load(1, "k"));
  per += fmt::format("    if (j < 0) j += (long long){};\n", d);
  per += fmt::format("    const bool j_ok = j >= 0 && j < (long long){};\n", d);
  per += fmt::format(
      "    {}\n",
      k.f().store(0, "i",
                  fmt::format("j_ok ? {} : {}",
                              k.f().load(0, fmt::format("(o * {} + (IX)j) * {} + r", d, k.c(inner))),
                              dm::zero_of(k.f().output(0).dtype))));
  return k.finish("gather", dims_product(k.out(0)), per);
}

Expected<GeneratedKernel> expand(RangeKernel& k) {
  RETURN_IF_ERROR(k.shape_only(1, "shape"));
  const SymShape is = k.in(0), os = k.out(0);
  if (is.size() > os.size())
    return invalid_model("node '{}': Expand to a lower rank", k.f().node_name);
  const std::vector<DimExpr> ist = strides_of(is);
  std::vector<DimExpr> st(os.size(), DimExpr(0));
  const size_t lead = os.size() - is.size();
  for (size_t d = lead; d < os.size(); ++d) {
    const DimExpr& e = is[d - lead];
    if (e.constant() == 1) continue;  // broadcast
    if (e != os[d])
      return unsupported("node '{}' (Expand): input dim {} may be 1 or {} over the range",
                         k.f().node_name, k.shape_string({e}), k.shape_string({os[d]}));
    st[d] = ist[d - lead];
  }
  std::string per = k.decompose(os, "i", "c");
  per += fmt::format("    {}\n", k.f().store(0, "i", k.f().load(0, "(IX)0" + offset_terms(k, os, st, "c"))));
  return k.finish("expand", dims_product(os), per);
}

Expected<GeneratedKernel> range_op(RangeKernel& k) {
  const ir::DType dt = k.f().output(0).dtype;
  if (!ir::is_integer(dt))
    return unsupported("node '{}': a Range of {} over the shape range", k.f().node_name,
                       ir::dtype_name(dt));
  ASSIGN_OR_RETURN(auto start, k.ints(0, "start"));
  ASSIGN_OR_RETURN(auto delta, k.ints(2, "delta"));
  RETURN_IF_ERROR(k.shape_only(1, "limit"));
  if (start.size() != 1 || delta.size() != 1)
    return invalid_model("node '{}': Range start and delta must be scalars", k.f().node_name);
  std::string per = fmt::format("    const long long v = (long long){} + (long long)i * (long long){};\n",
                                k.c(start[0]), k.c(delta[0]));
  per += fmt::format("    {}\n", k.f().store(0, "i", fmt::format("({})v", cuda::compute_type(dt))));
  return k.finish("range", dims_product(k.out(0)), per);
}

Expected<GeneratedKernel> constant_of_shape(RangeKernel& k) {
  RETURN_IF_ERROR(k.shape_only(0, "shape"));
  const ir::DType dt = k.f().output(0).dtype;
  std::string value = dm::zero_of(dt);
  if (const ir::Attribute* a = k.anchor().attrs.find("value")) {
    if (a->kind != ir::Attribute::Kind::kTensor || a->t.numel() != 1 || a->t.dtype() != dt)
      return invalid_model("node '{}': attribute 'value' must be one {} element", k.f().node_name,
                           ir::dtype_name(dt));
    value = scalar_literal(a->t);
  }
  return k.finish("constant_of_shape", dims_product(k.out(0)),
                  fmt::format("    {}\n", k.f().store(0, "i", value)));
}

// One thread per row scans it in the reference's order (the static kernel's
// short-row path; long rows are rare in the models that vary).
Expected<GeneratedKernel> cumsum(RangeKernel& k) {
  const SymShape s = k.in(0);
  const ir::DType dt = k.f().input(0).dtype;
  ASSIGN_OR_RETURN(auto axis_v, k.ints(1, "axis"));
  if (axis_v.size() != 1 || !axis_v[0].is_constant())
    return invalid_model("node '{}': CumSum axis must be one constant", k.f().node_name);
  ASSIGN_OR_RETURN(int64_t axis,
                   ir::normalize_axis(*axis_v[0].constant(), static_cast<int64_t>(s.size())));
  const bool exclusive = k.anchor().attrs.get_int("exclusive", 0) != 0;
  const bool reverse = k.anchor().attrs.get_int("reverse", 0) != 0;
  const auto ax = static_cast<size_t>(axis);
  const DimExpr dim = s[ax], inner = dims_product(s, ax + 1, s.size());
  const DimExpr rows = dims_product(s, 0, ax) * inner;
  const std::string ct = cuda::compute_type(dt), zero = dm::zero_of(dt);
  const std::string pos = reverse ? fmt::format("({} - 1 - t)", k.c(dim)) : std::string("t");
  std::string per;
  per += fmt::format("    const IX base = (i / {0}) * {1} + i % {0};\n", k.c(inner), k.c(dim * inner));
  per += fmt::format("    {} acc = {};\n", ct, zero);
  per += fmt::format("    for (IX t = 0; t < {}; ++t) {{\n", k.c(dim));
  per += fmt::format("      const IX off = base + {} * {};\n", pos, k.c(inner));
  per += fmt::format("      const {} x = {};\n", ct, k.f().load(0, "off"));
  if (!exclusive) per += fmt::format("      acc = {};\n", dm::add_expr(dt, "acc", "x"));
  per += fmt::format("      {}\n", k.f().store(0, "off", "acc"));
  if (exclusive) per += fmt::format("      acc = {};\n", dm::add_expr(dt, "acc", "x"));
  per += "    }\n";
  return k.finish("cumsum", rows, per);
}

Expected<GeneratedKernel> gather_elements(RangeKernel& k) {
  const ir::DType it = k.f().input(1).dtype;
  if (it != ir::DType::kInt32 && it != ir::DType::kInt64)
    return invalid_model("node '{}' (GatherElements): indices must be int32 or int64",
                         k.f().node_name);
  const SymShape ds = k.in(0), is = k.in(1);
  if (ds.size() != is.size())
    return invalid_model("node '{}' (GatherElements): data and indices differ in rank",
                         k.f().node_name);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(k.anchor().attrs.get_int("axis", 0),
                                                    static_cast<int64_t>(ds.size())));
  const auto ax = static_cast<size_t>(axis);
  std::vector<DimExpr> st = strides_of(ds);
  const DimExpr along = st[ax];
  st[ax] = DimExpr(0);
  std::string per = k.decompose(is, "i", "c");
  const std::string d = k.c(ds[ax]);
  per += fmt::format("    long long j = (long long){};\n", k.f().load(1, "i"));
  per += fmt::format("    if (j < 0) j += (long long){};\n", d);
  per += fmt::format("    const bool j_ok = j >= 0 && j < (long long){};\n", d);
  per += fmt::format(
      "    {}\n",
      k.f().store(0, "i",
                  fmt::format("j_ok ? {} : {}",
                              k.f().load(0, fmt::format("(IX)j * {}{}", k.c(along),
                                                        offset_terms(k, is, st, "c"))),
                              dm::zero_of(k.f().output(0).dtype))));
  return k.finish("gather_elements", dims_product(is), per);
}

// GatherND: each output element's index tuple (the indices' last dim, fixed)
// picks a slice of the data after the batch dims; out of range reads 0, as
// the static kernel does.
Expected<GeneratedKernel> gather_nd(RangeKernel& k) {
  const ir::DType it = k.f().input(1).dtype;
  if (it != ir::DType::kInt32 && it != ir::DType::kInt64)
    return invalid_model("node '{}' (GatherND): indices must be int32 or int64", k.f().node_name);
  const SymShape ds = k.in(0), is = k.in(1);
  const int64_t b = k.anchor().attrs.get_int("batch_dims", 0);
  const auto tuple_len = is.empty() ? std::nullopt : is.back().constant();
  if (!tuple_len || b < 0 || static_cast<size_t>(b) >= is.size() ||
      static_cast<size_t>(b + *tuple_len) > ds.size() || *tuple_len < 1)
    return invalid_model("node '{}' (GatherND): batch_dims {} and index tuples do not fit the data",
                         k.f().node_name, b);
  const auto bu = static_cast<size_t>(b);
  const DimExpr per_batch = dims_product(is, bu, is.size() - 1);
  const DimExpr chunk = dims_product(ds, bu + static_cast<size_t>(*tuple_len), ds.size());
  const DimExpr batch_stride = dims_product(ds, bu, ds.size());
  const std::vector<DimExpr> st = strides_of(ds);
  std::string per;
  per += fmt::format("    const IX tuple = i / {};\n", k.c(chunk));
  per += fmt::format("    const IX e = i % {};\n", k.c(chunk));
  per += fmt::format("    IX off = (tuple / {}) * {} + e;\n", k.c(per_batch), k.c(batch_stride));
  per += "    bool ok = true;\n";
  for (int64_t c = 0; c < *tuple_len; ++c) {
    const auto d = bu + static_cast<size_t>(c);
    const std::string dim = k.c(ds[d]);
    per += fmt::format("    long long j{} = (long long){};\n", c,
                       k.f().load(1, fmt::format("tuple * (IX){} + (IX){}", *tuple_len, c)));
    per += fmt::format("    if (j{0} < 0) j{0} += (long long){1};\n", c, dim);
    per += fmt::format("    ok = ok && j{0} >= 0 && j{0} < (long long){1};\n", c, dim);
    per += fmt::format("    off += (IX)j{} * {};\n", c, k.c(st[d]));
  }
  per += fmt::format("    {}\n",
                     k.f().store(0, "i",
                                 fmt::format("ok ? {} : {}", k.f().load(0, "off"),
                                             dm::zero_of(k.f().output(0).dtype))));
  return k.finish("gather_nd", dims_product(k.out(0)), per);
}

}  // namespace

bool reads_as_shape(OpKind op, size_t input) {
  switch (op) {
    case OpKind::Reshape:
    case OpKind::Expand:
    case OpKind::Unsqueeze:
    case OpKind::Squeeze:
    case OpKind::Split:
    case OpKind::CumSum:
    case OpKind::Tile: return input == 1;
    case OpKind::Slice: return input >= 1;
    case OpKind::Range:
    case OpKind::ConstantOfShape: return true;
    default: return false;
  }
}

bool is_shape_values_node(const ir::Node& n, const ir::SymbolicShapes& range) {
  bool varies = false;
  for (ir::ValueId o : n.outputs) {
    if (o == ir::kNoValue) continue;
    const ir::SymValue& s = range.values[static_cast<size_t>(o)];
    if (!s.elements) return false;
    varies |= s.depends_on_symbols();
  }
  return varies;
}

Expected<GeneratedKernel> generate_shape_values_kernel(const ir::Graph& graph, ir::NodeId node,
                                                       const ir::SymbolicShapes& range) {
  const ir::Node& n = graph.node(node);
  KernelSizes sizes(&range);
  GeneratedKernel k;
  std::string params, stores;
  for (ir::ValueId o : n.outputs) {
    if (o == ir::kNoValue) continue;
    const ir::Value& v = graph.value(o);
    const std::string p = fmt::format("p{}", k.args.size());
    params += fmt::format("{}{}* __restrict__ {}", params.empty() ? "" : ", ",
                          cuda::storage_type(v.dtype), p);
    const auto& e = *range.values[static_cast<size_t>(o)].elements;
    for (size_t j = 0; j < e.size(); ++j)
      stores += fmt::format("    {}[{}] = ({})({});\n", p, j, cuda::storage_type(v.dtype),
                            sizes.code(e[j]));
    k.args.push_back(o);
  }
  std::string s = fmt::format("// graphc shape values kernel: node {} ({})\n", sanitize(n.name, 80),
                              ir::op_name(n.op));
  s += sizes.declaration();
  s += "extern \"C\" __global__ void @ENTRY@(" + params + sizes.parameter() + ") {\n";
  s += sizes.locals("long long");
  s += "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n" + stores + "  }\n}\n";
  k.name = "shape_values_" + sanitize(n.name, 40);
  k.entry = kernel_entry_name("shape_values", s);
  for (size_t p = s.find("@ENTRY@"); p != std::string::npos; p = s.find("@ENTRY@"))
    s.replace(p, 7, k.entry);
  k.source = std::move(s);
  k.blocks = 1;
  k.threads_per_block = 32;
  k.sizes = sizes.block();
  return k;
}

bool data_movement_takes_run_time_sizes(OpKind op) {
  switch (op) {
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Concat:
    case OpKind::Split:
    case OpKind::Gather:
    case OpKind::Expand:
    case OpKind::Range:
    case OpKind::CumSum:
    case OpKind::GatherElements:
    case OpKind::GatherND:
    case OpKind::ConstantOfShape: return true;
    default: return false;
  }
}

Expected<GeneratedKernel> generate_data_movement_range(const ir::Graph& graph, ir::NodeId node,
                                                       const ir::SymbolicShapes& range) {
  RangeKernel k(graph, range);
  {
    auto frame = make_anchor_frame(graph, node);
    if (!frame.ok()) return frame.status();
    if (!data_movement_takes_run_time_sizes(frame->anchor->op)) {
      const ir::ValueId v = first_varying_value(graph.node(node), range);
      return no_run_time_sizes(fmt::format("{} kernels", ir::op_name(frame->anchor->op)), graph,
                               v, range);
    }
  }
  RETURN_IF_ERROR(k.init(node));
  switch (k.anchor().op) {
    case OpKind::Transpose: return transpose(k);
    case OpKind::Slice: return slice(k);
    case OpKind::Concat: return concat(k);
    case OpKind::Split: return split(k);
    case OpKind::Gather: return gather(k);
    case OpKind::Expand: return expand(k);
    case OpKind::Range: return range_op(k);
    case OpKind::ConstantOfShape: return constant_of_shape(k);
    case OpKind::CumSum: return cumsum(k);
    case OpKind::GatherElements: return gather_elements(k);
    case OpKind::GatherND: return gather_nd(k);
    default: break;
  }
  return internal_error("node '{}': no run-time data movement kernel", graph.node(node).name);
}

}  // namespace graphc::emit
