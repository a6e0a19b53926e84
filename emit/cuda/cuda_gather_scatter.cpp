// Gather, GatherElements, GatherND, ScatterElements, ScatterND.
//
// Indices may be runtime data. A negative index wraps once, as in the
// reference; an index still out of range is an error Status there, which a
// kernel cannot return: the gathers then write zero and the scatters skip
// that update, so nothing is ever read or written out of bounds.
//
// Scatters never race and give the reference's sequential result with
// duplicate indices: ScatterElements computes each output element alone,
// scanning (in order) the updates that can target it; ScatterND gives each
// thread one column of the update chunk and a block of rows, copies them from
// data, then applies every tuple that hits its rows in tuple order.
#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/shape_inference.h"

namespace graphc::emit::dm {

namespace {

int64_t prod(const ir::Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= s[d];
  return n;
}

Status check_indices(const AnchorFrame& f, size_t k) {
  const ir::DType t = f.input(k).dtype;
  if (t != ir::DType::kInt32 && t != ir::DType::kInt64)
    return invalid_model("node '{}' ({}): indices must be int32 or int64, got {}", f.node_name,
                         ir::op_name(f.anchor->op), ir::dtype_name(t));
  return Status::ok_status();
}

// Statements declaring `long long <name>`: index input `k` at flat `pos`,
// wrapped by `dim`, and `bool <name>_ok` whether it is in [0, dim).
std::string read_index(const AnchorFrame& f, size_t k, const std::string& pos,
                       const std::string& name, int64_t dim, const std::string& indent) {
  std::string s = fmt::format("{}long long {} = (long long){};\n", indent, name, f.load(k, pos));
  s += fmt::format("{}if ({} < 0) {} += {}LL;\n", indent, name, name, dim);
  s += fmt::format("{}const bool {}_ok = {} >= 0 && {} < {}LL;\n", indent, name, name, name, dim);
  return s;
}

// The reference's reduce_typed: `acc` combined with `u` (compute types), then
// rounded to the storage type, as the reference stores after every update.
Expected<std::string> reduce_step(const AnchorFrame& f, ir::DType t, const std::string& acc,
                                  const std::string& u) {
  const std::string red = f.anchor->attrs.get_string("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return invalid_model("node '{}': reduction '{}' is not one of none, add, mul, max, min",
                         f.node_name, red);
  const bool is_bool = t == ir::DType::kBool;
  const bool is_int = ir::is_integer(t);
  std::string e;
  if (red == "none") {
    e = u;
  } else if (red == "add") {
    e = is_bool  ? fmt::format("({} || {})", acc, u)
        : is_int ? fmt::format("g_add({}, {})", acc, u)
                 : fmt::format("({} + {})", acc, u);
  } else if (red == "mul") {
    e = is_bool  ? fmt::format("({} && {})", acc, u)
        : is_int ? fmt::format("g_mul({}, {})", acc, u)
                 : fmt::format("({} * {})", acc, u);
  } else {
    const bool mx = red == "max";
    // std::max(a, b) is (a < b) ? b : a; std::min(a, b) is (b < a) ? b : a.
    std::string pick = mx ? fmt::format("(({0} < {1}) ? {1} : {0})", acc, u)
                          : fmt::format("(({1} < {0}) ? {1} : {0})", acc, u);
    e = ir::is_float(t)
            ? fmt::format("(({0} != {0} || {1} != {1}) ? ({0} + {1}) : {2})", acc, u, pick)
            : pick;
  }
  if (t == ir::DType::kFloat16 || t == ir::DType::kBFloat16)
    e = cuda::load_expr(t, cuda::store_expr(t, e));
  return fmt::format("{} = {};", acc, e);
}

// The parameter of output 0 when the frame writes it directly (`p<n>[i] = v`,
// a plain node): scatters that update in place read it back.
Expected<std::string> direct_output(const AnchorFrame& f, ir::DType dt) {
  const std::string out = fmt::format("p{}", f.args.size() - 1);
  if (f.num_outputs() != 1 || !f.has_output(0) ||
      f.setup.find(fmt::format("{}[i] = {};", out, cuda::store_expr(dt, "v"))) == std::string::npos)
    return unsupported("node '{}': {} with a fused epilogue", f.node_name,
                       ir::op_name(f.anchor->op));
  return out;
}

}  // namespace

Expected<GeneratedKernel> gather_kernel(const AnchorFrame& f) {
  RETURN_IF_ERROR(check_indices(f, 1));
  const ir::Shape& ds = f.input(0).shape;
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(f.anchor->attrs.get_int("axis", 0),
                                                    static_cast<int64_t>(ds.size())));
  const auto ax = static_cast<size_t>(axis);
  const int64_t dim = ds[ax], inner = prod(ds, ax + 1, ds.size());
  const int64_t n = ir::shape_numel(f.input(1).shape);
  const ir::DType dt = f.output(0).dtype;
  // Each index copies a run of `inner` elements starting at a multiple of it.
  const Mover m = Mover::for_copy(f, inner % Mover::lanes(dt) == 0);
  std::string per;
  per += fmt::format("    const IX o = i / (IX){};\n", n * inner);
  per += fmt::format("    const IX k = (i / (IX){}) % (IX){};\n", inner, n);
  per += fmt::format("    const IX r = i % (IX){};\n", inner);
  per += read_index(f, 1, "k", "j", dim, "    ");
  per += fmt::format(
      "    {}\n",
      m.store(0, "i",
              fmt::format("j_ok ? {} : {}",
                          m.load(0, fmt::format("(o * (IX){} + (IX)j) * (IX){} + r", dim, inner)),
                          m.zero())));
  return finish_copy_kernel(f, m, "gather", ir::shape_numel(f.output(0).shape), per);
}

Expected<GeneratedKernel> gather_elements_kernel(const AnchorFrame& f) {
  RETURN_IF_ERROR(check_indices(f, 1));
  const ir::Shape &ds = f.input(0).shape, &is = f.input(1).shape;
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(f.anchor->attrs.get_int("axis", 0),
                                                    static_cast<int64_t>(ds.size())));
  if (is.size() != ds.size())
    return invalid_model("node '{}': GatherElements indices rank {} differs from data rank {}",
                         f.node_name, is.size(), ds.size());
  const auto ax = static_cast<size_t>(axis);
  const auto strides = row_strides(ds);
  std::string per = decompose(is, "i", "c", "IX");
  per += read_index(f, 1, "i", "j", ds[ax], "    ");
  std::string src;
  for (size_t d = 0; d < ds.size(); ++d)
    src += fmt::format(" + {} * (IX){}", d == ax ? std::string("(IX)j") : fmt::format("c{}", d),
                       strides[d]);
  per += fmt::format("    {}\n", f.store(0, "i",
                                         fmt::format("j_ok ? {} : {}", f.load(0, "(IX)0" + src),
                                                     zero_of(f.output(0).dtype))));
  return finish_flat_kernel(f, "gather_elements", ir::shape_numel(is), per);
}

Expected<GeneratedKernel> gather_nd_kernel(const AnchorFrame& f) {
  RETURN_IF_ERROR(check_indices(f, 1));
  const ir::Shape &ds = f.input(0).shape, &is = f.input(1).shape;
  const int64_t b = f.anchor->attrs.get_int("batch_dims", 0);
  if (is.empty() || b < 0 || static_cast<size_t>(b) >= is.size() ||
      static_cast<size_t>(b) > ds.size())
    return invalid_model("node '{}': GatherND batch_dims {} does not fit indices rank {}",
                         f.node_name, b, is.size());
  const auto bu = static_cast<size_t>(b);
  const int64_t k = is.back();
  if (k < 1 || bu + static_cast<size_t>(k) > ds.size())
    return invalid_model("node '{}': GatherND index tuples of length {} do not fit data rank {}",
                         f.node_name, k, ds.size());
  const int64_t per_batch = prod(is, bu, is.size() - 1);
  const int64_t chunk = prod(ds, bu + static_cast<size_t>(k), ds.size());
  const int64_t batch_stride = prod(ds, bu, ds.size());
  const auto strides = row_strides(ds);
  std::string per;
  per += fmt::format("    const IX tuple = i / (IX){};\n", chunk);
  per += fmt::format("    const IX e = i % (IX){};\n", chunk);
  per += fmt::format("    IX off = (tuple / (IX){}) * (IX){} + e;\n", per_batch, batch_stride);
  per += "    bool ok = true;\n";
  for (int64_t c = 0; c < k; ++c) {
    const auto d = bu + static_cast<size_t>(c);
    const std::string name = fmt::format("j{}", c);
    per += read_index(f, 1, fmt::format("tuple * (IX){} + (IX){}", k, c), name, ds[d], "    ");
    per +=
        fmt::format("    ok = ok && {}_ok;\n    off += (IX){} * (IX){};\n", name, name, strides[d]);
  }
  per += fmt::format(
      "    {}\n",
      f.store(0, "i", fmt::format("ok ? {} : {}", f.load(0, "off"), zero_of(f.output(0).dtype))));
  return finish_flat_kernel(f, "gather_nd", ir::shape_numel(f.output(0).shape), per);
}

namespace {

// Up to this many updates along the axis, each output element scans the ones
// that can target it; beyond, one thread per line along the axis applies
// them (O(data + updates) work instead of O(data x updates along the axis)).
constexpr int64_t kScanUpdates = 32;

// One thread per line of data along the axis (fixed off-axis coordinates):
// copies the line, then applies the line's updates in order, in place. Lines
// are disjoint, so nothing races; the order within a line is the reference's.
Expected<GeneratedKernel> scatter_elements_lines(const AnchorFrame& f, size_t ax,
                                                 const std::string& step) {
  const ir::Shape &ds = f.input(0).shape, &is = f.input(1).shape;
  const ir::DType dt = f.input(0).dtype;
  ASSIGN_OR_RETURN(const std::string out, direct_output(f, dt));
  const auto ds_strides = row_strides(ds), is_strides = row_strides(is);
  ir::Shape lines_shape;
  std::vector<std::string> coord(ds.size());
  for (size_t d = 0; d < ds.size(); ++d) {
    if (d == ax) continue;
    coord[d] = fmt::format("c{}", lines_shape.size());
    lines_shape.push_back(ds[d]);
  }
  std::string per = decompose(lines_shape, "i", "c", "IX");
  std::string line_base = "(IX)0", idx_base = "(IX)0", cond = "true";
  for (size_t d = 0; d < ds.size(); ++d) {
    if (d == ax) continue;
    line_base += fmt::format(" + {} * (IX){}", coord[d], ds_strides[d]);
    idx_base += fmt::format(" + {} * (IX){}", coord[d], is_strides[d]);
    if (is[d] < ds[d]) cond += fmt::format(" && {} < (IX){}", coord[d], is[d]);
  }
  const std::string ct = cuda::compute_type(dt);
  per += fmt::format("    const IX lb = {};\n", line_base);
  per += fmt::format("    for (IX a = 0; a < (IX){}; ++a) {}\n", ds[ax],
                     f.store(0, fmt::format("lb + a * (IX){}", ds_strides[ax]),
                             f.load(0, fmt::format("lb + a * (IX){}", ds_strides[ax]))));
  per += fmt::format("    if ({}) {{\n", cond);
  per += fmt::format("      const IX base = {};\n", idx_base);
  per += fmt::format("      for (IX t = 0; t < (IX){}; ++t) {{\n", is[ax]);
  per += fmt::format("        const IX p = base + t * (IX){};\n", is_strides[ax]);
  per += read_index(f, 1, "p", "j", ds[ax], "        ");
  per += "        if (!j_ok) continue;\n";
  per += fmt::format("        const IX at = lb + (IX)j * (IX){};\n", ds_strides[ax]);
  per += fmt::format("        {} acc = {};\n", ct, cuda::load_expr(dt, out + "[at]"));
  per += fmt::format("        const {} u = {};\n", ct, f.load(2, "p"));
  per += fmt::format("        {}\n        {}\n      }}\n    }}\n", step, f.store(0, "at", "acc"));
  return finish_flat_kernel(f, "scatter_elements_lines", ir::shape_numel(lines_shape), per);
}

}  // namespace

// Output element at coordinates c: data[c], then every update at indices
// position p (p equal to c off the axis, any along it) whose index equals
// c[axis], in increasing p[axis] (the reference's flat order).
Expected<GeneratedKernel> scatter_elements_kernel(const AnchorFrame& f) {
  RETURN_IF_ERROR(check_indices(f, 1));
  const ir::Shape &ds = f.input(0).shape, &is = f.input(1).shape;
  const ir::DType dt = f.input(0).dtype;
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(f.anchor->attrs.get_int("axis", 0),
                                                    static_cast<int64_t>(ds.size())));
  if (is.size() != ds.size() || f.input(2).shape != is)
    return invalid_model("node '{}': ScatterElements indices/updates shapes do not match data",
                         f.node_name);
  const auto ax = static_cast<size_t>(axis);
  const auto is_strides = row_strides(is);
  ASSIGN_OR_RETURN(std::string step, reduce_step(f, dt, "acc", "u"));
  if (is[ax] > kScanUpdates) return scatter_elements_lines(f, ax, step);
  std::string per = decompose(ds, "i", "c", "IX");
  per += fmt::format("    {} acc = {};\n", cuda::compute_type(dt), f.load(0, "i"));
  if (ir::shape_numel(is) > 0) {
    std::string cond = "true", base = "(IX)0";
    for (size_t d = 0; d < ds.size(); ++d) {
      if (d == ax) continue;
      if (is[d] < ds[d]) cond += fmt::format(" && c{} < (IX){}", d, is[d]);
      base += fmt::format(" + c{} * (IX){}", d, is_strides[d]);
    }
    per += fmt::format("    if ({}) {{\n", cond);
    per += fmt::format("      const IX base = {};\n", base);
    per += fmt::format("      for (IX t = 0; t < (IX){}; ++t) {{\n", is[ax]);
    per += fmt::format("        const IX p = base + t * (IX){};\n", is_strides[ax]);
    per += read_index(f, 1, "p", "j", ds[ax], "        ");
    per += fmt::format("        if (!j_ok || j != (long long)c{}) continue;\n", ax);
    per += fmt::format("        const {} u = {};\n", cuda::compute_type(dt), f.load(2, "p"));
    per += fmt::format("        {}\n      }}\n    }}\n", step);
  }
  per += fmt::format("    {}\n", f.store(0, "i", "acc"));
  return finish_flat_kernel(f, "scatter_elements", ir::shape_numel(ds), per);
}

Expected<GeneratedKernel> scatter_nd_kernel(const AnchorFrame& f) {
  RETURN_IF_ERROR(check_indices(f, 1));
  const ir::Shape &ds = f.input(0).shape, &is = f.input(1).shape;
  const ir::DType dt = f.input(0).dtype;
  if (is.empty() || is.back() < 1 || static_cast<size_t>(is.back()) > ds.size())
    return invalid_model("node '{}': ScatterND index tuples do not fit data rank {}", f.node_name,
                         ds.size());
  const auto k = static_cast<size_t>(is.back());
  const int64_t tuples = prod(is, 0, is.size() - 1);
  const int64_t chunk = prod(ds, k, ds.size());
  const int64_t rows = chunk == 0 ? 0 : ir::shape_numel(ds) / chunk;
  const auto strides = row_strides(ds);
  // Threads = chunk columns x row groups; a group of `per_group` consecutive
  // rows is owned by one thread per column, so updates never race.
  const int64_t groups = std::clamp<int64_t>(chunk > 0 ? (int64_t{1} << 16) / chunk : 1, 1,
                                             std::max<int64_t>(rows, 1));
  const int64_t per_group = rows == 0 ? 0 : (rows + groups - 1) / groups;
  ASSIGN_OR_RETURN(std::string step, reduce_step(f, dt, "acc", "u"));
  const std::string ct = cuda::compute_type(dt);
  // The output buffer is read back between updates: a plain node writes it
  // directly (data movement kernels are never fused with an epilogue).
  ASSIGN_OR_RETURN(const std::string out, direct_output(f, dt));
  std::string per;
  per += fmt::format("    const IX col = i % (IX){};\n", std::max<int64_t>(chunk, 1));
  per += fmt::format("    const IX g = i / (IX){};\n", std::max<int64_t>(chunk, 1));
  per += fmt::format("    const IX row0 = g * (IX){};\n", per_group);
  per += fmt::format("    const IX row1 = row0 + (IX){} < (IX){} ? row0 + (IX){} : (IX){};\n",
                     per_group, rows, per_group, rows);
  per += fmt::format("    for (IX r = row0; r < row1; ++r) {}\n",
                     f.store(0, fmt::format("r * (IX){} + col", chunk),
                             f.load(0, fmt::format("r * (IX){} + col", chunk))));
  if (tuples > 0 && chunk > 0) {
    per += fmt::format("    for (IX t = 0; t < (IX){}; ++t) {{\n", tuples);
    per += "      IX off = 0;\n      bool ok = true;\n";
    for (size_t c = 0; c < k; ++c) {
      const std::string name = fmt::format("j{}", c);
      per += read_index(f, 1, fmt::format("t * (IX){} + (IX){}", k, c), name, ds[c], "      ");
      per += fmt::format("      ok = ok && {}_ok;\n      off += (IX){} * (IX){};\n", name, name,
                         strides[c]);
    }
    per += fmt::format("      const IX r = off / (IX){};\n", chunk);
    per += "      if (!ok || r < row0 || r >= row1) continue;\n";
    per += "      const IX at = off + col;\n";
    per += fmt::format("      {} acc = {};\n", ct, cuda::load_expr(dt, out + "[at]"));
    per += fmt::format("      const {} u = {};\n", ct,
                       f.load(2, fmt::format("t * (IX){} + col", chunk)));
    per += fmt::format("      {}\n      {}\n    }}\n", step, f.store(0, "at", "acc"));
  }
  return finish_flat_kernel(f, "scatter_nd", groups * std::max<int64_t>(chunk, 1), per);
}

}  // namespace graphc::emit::dm
