#include "emit/cuda/cuda_dm_common.h"

#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/cuda_ops.h"

namespace graphc::emit::dm {

namespace {
constexpr int64_t kMaxBlocks = 8192;  // a few waves on an H100; the loop strides over the rest
}

std::vector<int64_t> row_strides(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

LaunchShape flat_launch(int64_t n, int64_t threads) {
  LaunchShape l;
  l.block = {threads, 1, 1};
  l.grid = {std::clamp<int64_t>((n + threads - 1) / threads, 1, kMaxBlocks), 1, 1};
  return l;
}

ir::DimExpr flat_blocks(const ir::DimExpr& n, int64_t threads) {
  return ir::DimExpr::max(ir::DimExpr(1), ir::DimExpr::min(ir::DimExpr::ceil_div(n, threads),
                                                           ir::DimExpr(kMaxBlocks)));
}

std::string index_type(int64_t max_numel) {
  return max_numel + kMaxBlocks * 1024 < (int64_t{1} << 31) ? "int" : "long long";
}

int64_t max_numel(const AnchorFrame& f) {
  int64_t m = 1;
  for (size_t k = 0; k < f.num_inputs(); ++k)
    if (f.has_input(k)) m = std::max(m, ir::shape_numel(f.input(k).shape));
  for (size_t k = 0; k < f.num_outputs(); ++k)
    if (f.has_output(k)) m = std::max(m, ir::shape_numel(f.output(k).shape));
  return m;
}

std::string decompose(const ir::Shape& shape, const std::string& idx, const std::string& prefix,
                      const std::string& ix, const std::string& indent) {
  std::string s;
  if (shape.empty()) return s;
  s += fmt::format("{}{} r_{} = {};\n", indent, ix, prefix, idx);
  for (size_t d = shape.size(); d-- > 0;) {
    if (d == 0) {
      s += fmt::format("{}const {} {}0 = r_{};\n", indent, ix, prefix, prefix);
    } else {
      s += fmt::format("{}const {} {}{} = r_{} % {};\n", indent, ix, prefix, d, prefix, shape[d]);
      s += fmt::format("{}r_{} /= {};\n", indent, prefix, shape[d]);
    }
  }
  return s;
}

Expected<GeneratedKernel> finish_flat_kernel(const AnchorFrame& f, const std::string& prefix,
                                             int64_t n, const std::string& per_element,
                                             const std::string& helpers) {
  const std::string ix = index_type(max_numel(f));
  LaunchShape launch = flat_launch(n);
  std::string body = fmt::format("  typedef {} IX;\n", ix);
  body += fmt::format(
      "  for (IX i = (IX)blockIdx.x * (IX)blockDim.x + (IX)threadIdx.x; i < (IX){}; i += "
      "(IX)blockDim.x * (IX)gridDim.x) {{\n",
      n);
  body += per_element;
  body += "  }\n";
  return finish_anchor_kernel(f, prefix, helpers, body, launch);
}

Expected<std::vector<int64_t>> constant_ints(const AnchorFrame& f, size_t k, const char* what) {
  const ir::Tensor* t = f.constant_input(k);
  if (!t)
    return unsupported("node '{}' ({}): {} (input {}) must be known at build time", f.node_name,
                       ir::op_name(f.anchor->op), what, k);
  if (!ir::is_integer(t->dtype()))
    return invalid_model("node '{}' ({}): {} must be an integer tensor, got {}", f.node_name,
                         ir::op_name(f.anchor->op), what, ir::dtype_name(t->dtype()));
  return t->to_i64_vector();
}

std::string zero_of(ir::DType t) { return cuda::int_literal(t, 0); }

std::string add_expr(ir::DType t, const std::string& a, const std::string& b) {
  if (t == ir::DType::kBool) return fmt::format("({} || {})", a, b);
  if (ir::is_integer(t)) return fmt::format("g_add({}, {})", a, b);
  if (t == ir::DType::kFloat64) return fmt::format("__dadd_rn({}, {})", a, b);
  return fmt::format("__fadd_rn({}, {})", a, b);
}

const std::string& index_helpers() {
  static const std::string text =
      R"(// An index as the reference reads it (Tensor::get_i64): floats truncate,
// NaN gives 0, out-of-range values saturate.
template <class T> G_HD long long g_index_of(T v) { return (long long)v; }
G_HD long long g_index_of(unsigned long long v) { return (long long)v; }
G_HD long long g_index_of(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return 9223372036854775807LL;
  if (v <= -9.2233720368547758e18) return -9223372036854775807LL - 1;
  return (long long)v;
}
G_HD long long g_index_of(float v) { return g_index_of((double)v); }
G_HD long long g_index_of(bool v) { return v ? 1 : 0; }
)";
  return text;
}

int64_t Mover::lanes(ir::DType dtype) {
  const auto size = static_cast<int64_t>(ir::dtype_size(dtype));
  return size > 0 && size <= 16 ? 16 / size : 1;
}

Mover Mover::for_copy(const AnchorFrame& f, bool vectorizable) {
  Mover m(f);
  if (!vectorizable || !f.has_output(0)) return m;
  const ir::DType dt = f.output(0).dtype;
  const int64_t width = lanes(dt);
  if (width < 2) return m;
  // A plain node: anchor values are the kernel's own parameters, read and
  // written as `p<n>[i]` by the frame's lambdas.
  auto param_of = [&](ir::ValueId v, bool output) -> std::string {
    for (size_t a = 0; a < f.args.size(); ++a) {
      const size_t at = output ? f.args.size() - 1 - a : a;
      if (f.args[at] == v) return fmt::format("p{}", at);
    }
    return "";
  };
  for (size_t k = 0; k < f.num_inputs(); ++k) {
    std::string p;
    if (f.has_input(k) && f.input(k).dtype == dt) {
      p = param_of(f.anchor->inputs[k], false);
      if (p.empty() || f.setup.find(p + "[i]") == std::string::npos) return m;
    }
    m.in_param_.push_back(p);
  }
  for (size_t k = 0; k < f.num_outputs(); ++k) {
    std::string p;
    if (f.has_output(k)) {
      if (f.output(k).dtype != dt) return m;
      p = param_of(f.anchor->outputs[k], true);
      if (p.empty() || f.setup.find(p + "[i] = ") == std::string::npos) return m;
    }
    m.out_param_.push_back(p);
  }
  m.width_ = width;
  return m;
}

std::string Mover::load(size_t k, const std::string& idx) const {
  if (width_ == 1 || k >= in_param_.size() || in_param_[k].empty()) return f_->load(k, idx);
  return fmt::format("reinterpret_cast<const uint4*>({})[({}) / {}]", in_param_[k], idx, width_);
}

std::string Mover::store(size_t k, const std::string& idx, const std::string& value) const {
  if (width_ == 1) return f_->store(k, idx, value);
  if (k >= out_param_.size() || out_param_[k].empty()) return ";";
  return fmt::format("reinterpret_cast<uint4*>({})[({}) / {}] = {};", out_param_[k], idx, width_,
                     value);
}

std::string Mover::zero() const {
  return width_ == 1 ? zero_of(f_->output(0).dtype) : "make_uint4(0u, 0u, 0u, 0u)";
}

Expected<GeneratedKernel> finish_copy_kernel(const AnchorFrame& f, const Mover& m,
                                             const std::string& prefix, int64_t n,
                                             const std::string& per_element,
                                             const std::string& helpers) {
  const int64_t w = m.width();
  if (w == 1) return finish_flat_kernel(f, prefix, n, per_element, helpers);
  if (n % w != 0)
    return internal_error("kernel for '{}': {} elements are not whole vectors of {}", f.node_name,
                          n, w);
  const std::string ix = index_type(max_numel(f));
  std::string body = fmt::format("  typedef {} IX;\n", ix);
  body += fmt::format(
      "  for (IX iv = (IX)blockIdx.x * (IX)blockDim.x + (IX)threadIdx.x; iv < (IX){}; iv += "
      "(IX)blockDim.x * (IX)gridDim.x) {{\n",
      n / w);
  body += fmt::format("    const IX i = iv * (IX){};  // first of {} elements\n", w, w);
  body += per_element;
  body += "  }\n";
  return finish_anchor_kernel(f, prefix + "_v" + std::to_string(w), helpers, body,
                              flat_launch(n / w));
}

}  // namespace graphc::emit::dm
