// Renders an elementwise node or FusedGroup(kind "elementwise") as one CUDA
// kernel. The group body is an expression DAG: each body node becomes one
// `const T tN = <expr>;` line, expressions come from the op table in
// cuda_ops.cpp, loads and stores use per-operand broadcast offsets computed
// here at build time.
#include "emit/cuda/cuda_elementwise.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>

#include "emit/cuda/codegen_util.h"
#include "emit/cuda/cuda_index_map.h"
#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/kernel_sizes.h"

namespace graphc::emit {

using ir::DType;
using ir::Shape;
using ir::ValueId;

Expected<std::vector<int64_t>> broadcast_strides(const Shape& in, const Shape& out) {
  if (in.size() > out.size())
    return invalid_argument("shape {} does not broadcast to {}", ir::shape_to_string(in),
                            ir::shape_to_string(out));
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  int64_t step = 1;
  for (size_t k = in.size(); k-- > 0;) {
    const int64_t d = in[k], o = out[lead + k];
    if (d != o && d != 1)
      return invalid_argument("shape {} does not broadcast to {}", ir::shape_to_string(in),
                              ir::shape_to_string(out));
    strides[lead + k] = (d == 1) ? 0 : step;
    step *= d;
  }
  return strides;
}

namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // grid-stride covers the rest

using ir::DimExpr;
using ir::SymShape;

// One buffer the kernel reads or writes (a parameter or an embedded array).
// Shapes and strides are expressions over the shape range (constants in a
// static build: kernel_sizes.h).
struct Operand {
  std::string ptr;  // "in0", "out1", "k2" (embedded constant array)
  DType dtype;
  SymShape shape;
  std::vector<DimExpr> strides;      // over the iteration shape
  bool full = false;                 // numel == iteration numel: read/written at i
  bool scalar = false;               // one element: read once, before the loop
  const ir::Tensor* data = nullptr;  // embedded constants only
};

bool is_one(const DimExpr& d) { return d.constant() == 1; }
bool is_zero(const DimExpr& d) { return d.constant() == 0; }
// A dim the index math walks: not a constant 0 or 1.
bool spans(const DimExpr& d) {
  auto c = d.constant();
  return !c || *c > 1;
}

Expected<SymShape> broadcast_shapes(const SymShape& a, const SymShape& b) {
  SymShape r(std::max(a.size(), b.size()), DimExpr(1));
  for (size_t k = 0; k < r.size(); ++k) {
    DimExpr x = k < r.size() - a.size() ? DimExpr(1) : a[k - (r.size() - a.size())];
    DimExpr y = k < r.size() - b.size() ? DimExpr(1) : b[k - (r.size() - b.size())];
    if (x != y && !is_one(x) && !is_one(y))
      return invalid_model("outputs of shapes {} and {} share no iteration shape",
                           ir::sym_shape_to_string(a), ir::sym_shape_to_string(b));
    r[k] = is_one(x) ? y : x;
  }
  return r;
}

// broadcast_strides over the range: a dim is broadcast where the operand's is
// the constant 1, and must otherwise be the iteration dim itself.
Expected<std::vector<DimExpr>> sym_broadcast_strides(const SymShape& in, const SymShape& out) {
  auto refuse = [&]() {
    return invalid_argument("shape {} does not broadcast to {} over the whole range",
                            ir::sym_shape_to_string(in), ir::sym_shape_to_string(out));
  };
  if (in.size() > out.size()) return refuse();
  std::vector<DimExpr> strides(out.size(), DimExpr(0));
  const size_t lead = out.size() - in.size();
  DimExpr step(1);
  for (size_t k = in.size(); k-- > 0;) {
    const DimExpr& d = in[k];
    if (d != out[lead + k] && !is_one(d)) return refuse();
    strides[lead + k] = is_one(d) ? DimExpr(0) : step;
    step = step * d;
  }
  return strides;
}

class Builder {
 public:
  Builder(const ir::Graph& outer, const ir::Node& node, KernelSizes& sizes)
      : outer_(outer), node_(node), sizes_(sizes) {}
  Expected<GeneratedKernel> run();

 private:
  Status collect();
  Status emit_body(std::string& out, const std::string& idx_type, bool vector);
  std::string offset_expr(const Operand& op) const;  // may add sizes to sizes_
  // Element k of a broadcast operand's vector: its offset at the vector's first
  // element (computed before the k loop) plus k steps along the last dim.
  std::string vector_element_offset(const Operand& op) const;

  const ir::Graph& outer_;
  const ir::Node& node_;
  KernelSizes& sizes_;
  const ir::Graph* body_ = nullptr;
  std::vector<ir::NodeId> order_;          // body nodes to evaluate
  std::map<ValueId, size_t> input_of_;     // body value -> index in inputs_
  std::map<ValueId, size_t> constant_of_;  // body value -> index in consts_ (arrays)
  std::vector<Operand> inputs_, outputs_, consts_;
  std::vector<ValueId> output_values_;      // body value of each output
  std::vector<std::string> scalar_consts_;  // "const T kN = lit;"
  std::map<ValueId, std::string> var_;      // body value -> identifier
  GeneratedKernel k_;
  SymShape iter_;
  DimExpr numel_;
  int64_t max_numel_ = 0;  // over the range
  bool fp16_ = false, bf16_ = false;
};

Status Builder::collect() {
  const bool fused = node_.op == ir::OpKind::FusedGroup;
  if (fused) {
    if (node_.fusion != ir::FusionKind::kElementwise)
      return unsupported("node '{}': a FusedGroup of kind '{}' is not an elementwise kernel",
                         node_.name, ir::fusion_kind_name(node_.fusion));
    if (!node_.body) return invalid_model("node '{}': FusedGroup without a body", node_.name);
    body_ = node_.body.get();
    if (body_->inputs.size() != node_.inputs.size() ||
        body_->outputs.size() != node_.outputs.size())
      return invalid_model("node '{}': body inputs/outputs do not match the node's", node_.name);
    ASSIGN_OR_RETURN(order_, ir::topological_order(*body_));
  } else {
    if (!ir::is_elementwise(node_.op))
      return unsupported("node '{}': op {} is not elementwise", node_.name, ir::op_name(node_.op));
    body_ = &outer_;
    order_ = {static_cast<ir::NodeId>(&node_ - outer_.nodes.data())};
  }
  auto note_dtype = [&](const ir::Value& v, const std::string& what) -> Status {
    if (!v.has_shape)
      return invalid_model("node '{}': {} '{}' has no static shape", node_.name, what, v.name);
    if (cuda::compute_type(v.dtype).empty())
      return unsupported("node '{}': dtype {} of '{}' is not supported in CUDA kernels", node_.name,
                         ir::dtype_name(v.dtype), v.name);
    fp16_ |= v.dtype == DType::kFloat16;
    bf16_ |= v.dtype == DType::kBFloat16;
    return Status::ok_status();
  };
  // Outputs fix the iteration shape.
  for (size_t j = 0; j < node_.outputs.size(); ++j) {
    const ir::Value& v = outer_.value(node_.outputs[j]);
    RETURN_IF_ERROR(note_dtype(v, "output"));
    const SymShape shape = sizes_.shape(outer_, node_.outputs[j]);
    if (j == 0) iter_ = shape;
    ASSIGN_OR_RETURN(iter_, broadcast_shapes(iter_, shape));
    output_values_.push_back(fused ? body_->outputs[j] : node_.outputs[j]);
  }
  if (!sizes_.dynamic()) {  // overflow checked before any expression multiplies
    Shape concrete;
    for (const auto& d : iter_) concrete.push_back(*d.constant());
    RETURN_IF_ERROR(ir::checked_shape_numel(concrete).status());
  }
  numel_ = dims_product(iter_);
  ASSIGN_OR_RETURN(max_numel_, sizes_.upper_bound(numel_));
  // `shape`: the operand's shape over the range (an embedded constant's own).
  auto make = [&](std::string ptr, const ir::Value& v, const SymShape& shape) -> Expected<Operand> {
    Operand op{std::move(ptr), v.dtype, shape, {}, false, false, nullptr};
    ASSIGN_OR_RETURN(op.strides, sym_broadcast_strides(shape, iter_));
    const DimExpr n = dims_product(shape);
    op.full = n == numel_;
    op.scalar = is_one(n) && !op.full;
    return op;
  };
  for (size_t j = 0; j < node_.outputs.size(); ++j) {
    ASSIGN_OR_RETURN(auto op, make(fmt::format("out{}", j), outer_.value(node_.outputs[j]),
                                   sizes_.shape(outer_, node_.outputs[j])));
    outputs_.push_back(std::move(op));
  }
  // Inputs: each distinct outer value once.
  std::map<ValueId, size_t> seen;
  for (size_t i = 0; i < node_.inputs.size(); ++i) {
    ValueId outer_id = node_.inputs[i];
    if (outer_id == ir::kNoValue) continue;
    ValueId body_id = fused ? body_->inputs[i] : outer_id;
    auto it = seen.find(outer_id);
    if (it == seen.end()) {
      const ir::Value& v = outer_.value(outer_id);
      RETURN_IF_ERROR(note_dtype(v, "input"));
      ASSIGN_OR_RETURN(auto op, make(fmt::format("in{}", inputs_.size()), v,
                                     sizes_.shape(outer_, outer_id)));
      it = seen.emplace(outer_id, inputs_.size()).first;
      inputs_.push_back(std::move(op));
      k_.args.push_back(outer_id);
    }
    input_of_[body_id] = it->second;
  }
  for (ValueId o : node_.outputs) k_.args.push_back(o);
  // Constants embedded in a fused body: scalars become literals, others arrays.
  if (fused) {
    for (ir::NodeId nid : order_)
      for (ValueId in : body_->node(nid).inputs) {
        if (in == ir::kNoValue || input_of_.count(in) || var_.count(in) || constant_of_.count(in))
          continue;
        const ir::Value& v = body_->value(in);
        if (!v.constant) continue;
        RETURN_IF_ERROR(note_dtype(v, "constant"));
        if (v.constant->numel() == 1) {
          std::string name = fmt::format("k{}", scalar_consts_.size() + consts_.size());
          scalar_consts_.push_back(fmt::format("const {} {} = {};", cuda::compute_type(v.dtype),
                                               name, scalar_literal(*v.constant)));
          var_[in] = name;
        } else {
          ASSIGN_OR_RETURN(auto op,
                           make(fmt::format("k{}", scalar_consts_.size() + consts_.size()), v,
                                SymShape(v.shape.begin(), v.shape.end())));
          op.data = &*v.constant;
          constant_of_[in] = consts_.size();
          consts_.push_back(std::move(op));
        }
      }
  }
  return Status::ok_status();
}

std::string Builder::offset_expr(const Operand& op) const {
  if (op.full) return "i";
  if (op.scalar) return "0";
  std::string e;
  for (size_t d = 0; d < iter_.size(); ++d)
    if (!is_zero(op.strides[d]) && spans(iter_[d]))
      e += fmt::format("{}c{} * {}", e.empty() ? "" : " + ", d, sizes_.code(op.strides[d]));
  return e.empty() ? "0" : e;
}

std::string Builder::vector_element_offset(const Operand& op) const {
  const DimExpr last = op.strides.empty() ? DimExpr(0) : op.strides.back();
  if (is_zero(last) || is_one(iter_.back())) return "o" + op.ptr;
  return fmt::format("o{} + k * {}", op.ptr, sizes_.code(last));
}

// The loop body: loads, one line per body node, stores. In the vector path
// element k of the thread's vector is addressed through e<ptr>[k] (full
// buffers) or o<ptr> + k * last-dim stride (broadcast ones).
Status Builder::emit_body(std::string& s, const std::string& idx, bool vector) {
  const std::string ind = vector ? "      " : "    ";
  std::map<ValueId, std::string> var = var_;
  auto element = [&](const Operand& op) {
    if (vector && op.full) return fmt::format("e{}[k]", op.ptr);
    if (vector && !op.scalar) return fmt::format("{}[{}]", op.ptr, vector_element_offset(op));
    return fmt::format("{}[{}]", op.ptr, offset_expr(op));
  };
  for (const auto& [body_id, k] : input_of_) {
    const Operand& op = inputs_[k];
    std::string name = fmt::format("a{}", k);
    if (!op.scalar)
      s += fmt::format("{}const {} {} = {};\n", ind, cuda::compute_type(op.dtype), name,
                       cuda::load_expr(op.dtype, element(op)));
    var[body_id] = name;
  }
  for (const auto& [body_id, k] : constant_of_) {
    const Operand& op = consts_[k];
    std::string name = fmt::format("a{}_{}", op.ptr, k);
    std::string at = vector && op.full ? "i * " + std::to_string(k_.vector_width) + " + k"
                     : vector          ? vector_element_offset(op)
                                       : offset_expr(op);
    s += fmt::format("{}const {} {} = {};\n", ind, cuda::compute_type(op.dtype), name,
                     constant_load(op.ptr, op.dtype, at));
    var[body_id] = name;
  }
  int tmp = 0;
  for (ir::NodeId nid : order_) {
    const ir::Node& n = body_->node(nid);
    if (n.dead) continue;
    cuda::OpOperands ops;
    ops.node = &n;
    for (ValueId in : n.inputs) {
      if (in == ir::kNoValue) {
        ops.in.emplace_back();
        ops.in_dtype.push_back(DType::kUndefined);
        continue;
      }
      auto it = var.find(in);
      if (it == var.end())
        return invalid_model("node '{}': body value '{}' is read before it is computed", node_.name,
                             body_->value(in).name);
      ops.in.push_back(it->second);
      ops.in_dtype.push_back(body_->value(in).dtype);
    }
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const ir::Value& ov = body_->value(n.outputs[o]);
      if (cuda::compute_type(ov.dtype).empty())
        return unsupported("node '{}': dtype {} is not supported in CUDA kernels", n.name,
                           ir::dtype_name(ov.dtype));
      ops.out_dtype = ov.dtype;
      ops.out_index = o;
      ASSIGN_OR_RETURN(std::string e, cuda::op_expression(ops));
      std::string name = fmt::format("t{}", tmp++);
      s += fmt::format("{}const {} {} = {};\n", ind, cuda::compute_type(ov.dtype), name, e);
      var[n.outputs[o]] = name;
    }
  }
  for (size_t j = 0; j < outputs_.size(); ++j) {
    const Operand& op = outputs_[j];
    auto it = var.find(output_values_[j]);
    if (it == var.end())
      return invalid_model("node '{}': output {} is never computed", node_.name, j);
    std::string store = cuda::store_expr(op.dtype, it->second);
    if (vector || op.full) {
      s += fmt::format("{}{} = {};\n", ind, element(op), store);
      continue;
    }
    // A smaller output is written once: where its broadcast coordinates are 0.
    std::string cond;
    for (size_t d = 0; d < iter_.size(); ++d)
      if (is_zero(op.strides[d]) && spans(iter_[d]))
        cond += fmt::format("{}c{} == 0", cond.empty() ? "" : " && ", d);
    s += fmt::format("{}{}{} = {};\n", ind, cond.empty() ? "" : "if (" + cond + ") ", element(op),
                     store);
  }
  (void)idx;
  return Status::ok_status();
}

Expected<GeneratedKernel> Builder::run() {
  RETURN_IF_ERROR(collect());
  // Vector width: 16 bytes of the widest full-shape buffer (see the header);
  // with an int8, uint8 or float8 one 16 elements, so the 8-bit buffer moves
  // 16 bytes too and the wider ones two or four 16-byte accesses (at most
  // float32's four).
  // Broadcast inputs (a bias row, a per-channel scale) do not stop it when the
  // vector stays inside one row of the last dim: their elements are then at
  // one offset plus k steps along that dim.
  size_t widest = 0;
  bool vectorizable = true, broadcast = false, bytes8 = false;
  auto quantized_byte = [](DType t) {
    return t == DType::kInt8 || t == DType::kUInt8 || ir::is_narrow_float(t);
  };
  for (const auto& op : inputs_) {
    if (op.full) {
      widest = std::max(widest, ir::dtype_size(op.dtype));
      bytes8 |= quantized_byte(op.dtype);
    } else if (!op.scalar) {
      broadcast = true;
    }
  }
  for (const auto& op : consts_) broadcast |= !op.full;
  for (const auto& op : outputs_) {
    vectorizable &= op.full;
    widest = std::max(widest, ir::dtype_size(op.dtype));
    bytes8 |= quantized_byte(op.dtype);
  }
  // Over a range the width must divide the row (or numel) at every shape:
  // its constant factors must.
  int64_t vec = 1;
  if (vectorizable && widest > 0 && widest <= 8) {
    vec = static_cast<int64_t>(bytes8 && widest <= 4 ? 16 : 16 / widest);
    const DimExpr row = broadcast && !iter_.empty() ? iter_.back() : numel_;
    while (vec > 1 && !row.divisible_by(vec)) vec /= 2;
  }
  k_.vector_width = vec;
  // 16-byte accesses per vector of the widest buffer (over 1 only with 8-bit ones).
  const int64_t chunks = std::max<int64_t>(1, vec * static_cast<int64_t>(widest) / 16);
  const DimExpr items = DimExpr::floor_div(numel_, DimExpr(vec));
  const DimExpr blocks = DimExpr::max(
      DimExpr(1), DimExpr::min(DimExpr::ceil_div(items, DimExpr(kThreads)), DimExpr(kMaxBlocks)));
  k_.threads_per_block = kThreads;
  ASSIGN_OR_RETURN(k_.blocks, sizes_.upper_bound(blocks));
  if (!blocks.is_constant()) k_.grid_x = blocks;
  const int64_t max_items = max_numel_ / vec;
  const bool wide = max_items * chunks + k_.blocks * kThreads > INT32_MAX;
  const std::string idx = wide ? "long long" : "int";
  const std::string cidx = max_numel_ > INT32_MAX ? "long long" : idx;

  std::string iteration = sizes_.shape_string(iter_);
  if (!sizes_.dynamic()) {
    Shape concrete;
    for (const auto& d : iter_) concrete.push_back(*d.constant());
    iteration = ir::shape_to_string(concrete);
  }
  std::string s = fmt::format("// graphc elementwise kernel: node {} ({}), iteration shape {}\n",
                              sanitize(node_.name, 80), ir::op_name(node_.op), iteration);
  if (fp16_) s += "#include <cuda_fp16.h>\n";
  if (bf16_) s += "#include <cuda_bf16.h>\n";
  s += cuda::device_prelude();
  s += "@NARROW@";
  for (const auto& op : consts_) s += constant_array(op.ptr, *op.data);
  s += "@SIZE_DECL@";
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") @ENTRY@(";
  std::string params;
  for (const auto& op : inputs_)
    params += fmt::format("{}const {}* __restrict__ {}", params.empty() ? "" : ", ",
                          cuda::storage_type(op.dtype), op.ptr);
  for (const auto& op : outputs_)
    params += fmt::format("{}{}* __restrict__ {}", params.empty() ? "" : ", ",
                          cuda::storage_type(op.dtype), op.ptr);
  s += params + "@SIZE_PARAM@) {\n@SIZE_LOCALS@";
  for (const auto& c : scalar_consts_) s += "  " + c + "\n";
  for (const auto& [body_id, k] : input_of_)
    if (inputs_[k].scalar)
      s += fmt::format("  const {} a{} = {};\n", cuda::compute_type(inputs_[k].dtype), k,
                       cuda::load_expr(inputs_[k].dtype, inputs_[k].ptr + "[0]"));
  s += fmt::format("  const {0} n = {1};\n  const {0} stride = ({0})blockDim.x * gridDim.x;\n", idx,
                   sizes_.code(items));
  s += fmt::format(
      "  for ({0} i = ({0})blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {{\n", idx);
  std::string body;
  if (vec > 1) {
    // Each full buffer moves vec elements as one 2/4/8/16-byte access, or
    // (over 16 bytes) as an array of 16-byte ones.
    auto raw_type = [](size_t bytes) {
      return bytes == 16  ? "uint4"
             : bytes == 8 ? "uint2"
             : bytes == 4 ? "unsigned int"
                          : "unsigned short";
    };
    for (const auto& op : inputs_) {
      if (!op.full) continue;
      size_t bytes = ir::dtype_size(op.dtype) * static_cast<size_t>(vec);
      if (bytes > 16) {
        s += fmt::format("    uint4 r{0}[{1}];\n#pragma unroll\n    for (int q = 0; q < {1}; ++q) "
                         "r{0}[q] = reinterpret_cast<const uint4*>({0})[i * {1} + q];\n",
                         op.ptr, bytes / 16);
        s += fmt::format("    const {0}* e{1} = reinterpret_cast<const {0}*>(r{1});\n",
                         cuda::storage_type(op.dtype), op.ptr);
        continue;
      }
      s += fmt::format("    const {0} r{1} = reinterpret_cast<const {0}*>({1})[i];\n",
                       raw_type(bytes), op.ptr);
      s += fmt::format("    const {0}* e{1} = reinterpret_cast<const {0}*>(&r{1});\n",
                       cuda::storage_type(op.dtype), op.ptr);
    }
    for (const auto& op : outputs_) {
      size_t bytes = ir::dtype_size(op.dtype) * static_cast<size_t>(vec);
      s += bytes > 16 ? fmt::format("    uint4 r{}[{}];\n", op.ptr, bytes / 16)
                      : fmt::format("    {} r{};\n", raw_type(bytes), op.ptr);
      s += fmt::format("    {0}* e{1} = reinterpret_cast<{0}*>({2}r{1});\n",
                       cuda::storage_type(op.dtype), op.ptr, bytes > 16 ? "" : "&");
    }
    if (broadcast) {
      // Coordinates of the vector's first element, where some operand is
      // broadcast along that dim; a broadcast operand's offset there.
      s += fmt::format("    {} r = ({})i * {};\n", cidx, cidx, vec);
      for (size_t d = iter_.size(); d-- > 0;) {
        if (is_one(iter_[d])) continue;
        s += fmt::format("    const {} c{} = r % {};\n", cidx, d, sizes_.code(iter_[d]));
        s += fmt::format("    r /= {};\n", sizes_.code(iter_[d]));
      }
      for (const auto* group : {&inputs_, &consts_})
        for (const auto& op : *group)
          if (!op.full && !op.scalar)
            s += fmt::format("    const {} o{} = {};\n", cidx, op.ptr, offset_expr(op));
    }
    s += fmt::format("#pragma unroll\n    for (int k = 0; k < {}; ++k) {{\n", vec);
    RETURN_IF_ERROR(emit_body(body, idx, true));
    s += body + "    }\n";
    for (const auto& op : outputs_) {
      size_t bytes = ir::dtype_size(op.dtype) * static_cast<size_t>(vec);
      if (bytes > 16)
        s += fmt::format("#pragma unroll\n    for (int q = 0; q < {1}; ++q) "
                         "reinterpret_cast<uint4*>({0})[i * {1} + q] = r{0}[q];\n",
                         op.ptr, bytes / 16);
      else
        s += fmt::format("    reinterpret_cast<{0}*>({1})[i] = r{1};\n", raw_type(bytes), op.ptr);
    }
  } else {
    // Coordinates of i, only where some operand is broadcast along that dim.
    bool need = false;
    for (const auto* group : {&inputs_, &outputs_, &consts_})
      for (const auto& op : *group) need |= !op.full && !op.scalar;
    if (need) {
      s += fmt::format("    {} r = i;\n", idx);
      for (size_t d = iter_.size(); d-- > 0;) {
        if (is_one(iter_[d])) continue;
        s += fmt::format("    const {} c{} = r % {};\n", idx, d, sizes_.code(iter_[d]));
        s += fmt::format("    r /= {};\n", sizes_.code(iter_[d]));
      }
    }
    RETURN_IF_ERROR(emit_body(body, idx, false));
    s += body;
  }
  s += "  }\n}\n";
  auto fill = [&](const std::string& marker, const std::string& text) {
    s.replace(s.find(marker), marker.size(), text);
  };
  // The narrow-type and 8-bit conversions only where the body converts one.
  fill("@NARROW@", cuda::conversion_preludes(s));
  fill("@SIZE_DECL@", sizes_.declaration());
  fill("@SIZE_PARAM@", sizes_.parameter());
  fill("@SIZE_LOCALS@", sizes_.locals(cidx));
  k_.sizes = sizes_.block();
  k_.name = "ew_" + sanitize(node_.name, 40);
  k_.entry = kernel_entry_name("ew", s);
  for (size_t p = s.find("@ENTRY@"); p != std::string::npos; p = s.find("@ENTRY@"))
    s.replace(p, 7, k_.entry);
  k_.source = std::move(s);
  return k_;
}

}  // namespace

Expected<GeneratedKernel> generate_elementwise_kernel(const ir::Graph& graph, ir::NodeId node,
                                                      const ir::SymbolicShapes* range) {
  if (node < 0 || static_cast<size_t>(node) >= graph.nodes.size())
    return invalid_argument("generate_elementwise_kernel: node id {} out of range", node);
  if (has_index_maps(graph.node(node))) return generate_index_map_kernel(graph, node, range);
  KernelSizes sizes(range);
  Builder b(graph, graph.node(node), sizes);
  return b.run();
}

}  // namespace graphc::emit
