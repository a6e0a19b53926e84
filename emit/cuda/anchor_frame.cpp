// Builds the load/store lambdas of an anchor kernel (see anchor_frame.h).
// A value is rendered at a flat index of some iteration shape S: a kernel
// parameter or embedded constant is read at its broadcast offset, a body node
// is evaluated from its operands with the op table's CUDA expression.
#include "emit/cuda/anchor_frame.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "emit/cuda/codegen_util.h"
#include "emit/cuda/cuda_ops.h"

namespace graphc::emit {

using ir::DType;
using ir::Shape;
using ir::ValueId;

namespace {

class FrameBuilder {
 public:
  FrameBuilder(const ir::Graph& outer, const ir::Node& node) : outer_(outer), node_(node) {}
  Expected<AnchorFrame> run();

 private:
  Status find_anchor();
  Status check_dtype(const ir::Value& v);
  Status bind_parameters();
  Status embed_constants();
  // Statements computing `v` at flat index `i` of shape `iter` into an
  // identifier (returned); `known` holds what this scope already computed.
  Expected<std::string> render(ValueId v, const Shape& iter, std::map<ValueId, std::string>& known,
                               std::string& out, int& tmp);
  std::string coords(const Shape& iter) const;
  Expected<std::string> broadcast_offset(const Shape& value, const Shape& iter);

  const ir::Graph& outer_;
  const ir::Node& node_;
  AnchorFrame f_;
  const ir::Graph* body_ = nullptr;
  bool fused_ = false;
  std::map<ValueId, std::string> param_of_;    // body input value -> parameter name
  std::map<ValueId, std::string> out_param_;   // body output value -> parameter name
  bool used_coords_ = false;                   // the last rendered scope needs c<d>
  std::map<ValueId, std::string> literal_of_;  // body value -> scalar literal
  std::map<ValueId, std::string> array_of_;    // body value -> embedded constant array
  bool fp16_ = false, bf16_ = false;
};

Status FrameBuilder::check_dtype(const ir::Value& v) {
  if (!v.has_shape)
    return invalid_model("node '{}': value '{}' has no static shape", node_.name, v.name);
  if (cuda::compute_type(v.dtype).empty())
    return unsupported("node '{}': dtype {} of '{}' is not supported in CUDA kernels", node_.name,
                       ir::dtype_name(v.dtype), v.name);
  fp16_ |= v.dtype == DType::kFloat16;
  bf16_ |= v.dtype == DType::kBFloat16;
  return Status::ok_status();
}

Status FrameBuilder::find_anchor() {
  fused_ = node_.op == ir::OpKind::FusedGroup;
  if (!fused_) {
    if (ir::is_elementwise(node_.op))
      return invalid_argument("node '{}': {} is elementwise, not an anchor kernel", node_.name,
                              ir::op_name(node_.op));
    body_ = &outer_;
    f_.anchor = &node_;
    return Status::ok_status();
  }
  if (!node_.body) return invalid_model("node '{}': FusedGroup without a body", node_.name);
  body_ = node_.body.get();
  if (body_->inputs.size() != node_.inputs.size() || body_->outputs.size() != node_.outputs.size())
    return invalid_model("node '{}': body inputs/outputs do not match the node's", node_.name);
  for (const auto& n : body_->nodes) {
    if (n.dead || ir::is_elementwise(n.op)) continue;
    if (f_.anchor)
      return unsupported("node '{}': fused group has two non-elementwise nodes ('{}', '{}')",
                         node_.name, f_.anchor->name, n.name);
    f_.anchor = &n;
  }
  if (!f_.anchor)
    return invalid_argument("node '{}': fused group has no anchor (an elementwise group?)",
                            node_.name);
  return Status::ok_status();
}

Status FrameBuilder::bind_parameters() {
  std::map<ValueId, std::string> by_outer;  // each distinct outer value is one parameter
  auto add_param = [&](ValueId outer_id, bool is_output) -> Expected<std::string> {
    if (!is_output)
      if (auto it = by_outer.find(outer_id); it != by_outer.end()) return it->second;
    const ir::Value& v = outer_.value(outer_id);
    RETURN_IF_ERROR(check_dtype(v));
    std::string name = fmt::format("p{}", f_.args.size());
    f_.params += fmt::format("{}{}{}* __restrict__ {}", f_.params.empty() ? "" : ", ",
                             is_output ? "" : "const ", cuda::storage_type(v.dtype), name);
    f_.args.push_back(outer_id);
    if (!is_output) by_outer[outer_id] = name;
    return name;
  };
  for (size_t i = 0; i < node_.inputs.size(); ++i) {
    if (node_.inputs[i] == ir::kNoValue) continue;
    ASSIGN_OR_RETURN(std::string p, add_param(node_.inputs[i], false));
    param_of_[fused_ ? body_->inputs[i] : node_.inputs[i]] = p;
  }
  for (size_t j = 0; j < node_.outputs.size(); ++j) {
    if (node_.outputs[j] == ir::kNoValue) continue;
    ASSIGN_OR_RETURN(std::string p, add_param(node_.outputs[j], true));
    out_param_[fused_ ? body_->outputs[j] : node_.outputs[j]] = p;
  }
  return Status::ok_status();
}

// A fused body's own constants: one element becomes a literal, more an array.
Status FrameBuilder::embed_constants() {
  if (!fused_) return Status::ok_status();
  for (const auto& n : body_->nodes) {
    if (n.dead) continue;
    for (ValueId in : n.inputs) {
      if (in == ir::kNoValue || param_of_.count(in) || literal_of_.count(in) || array_of_.count(in))
        continue;
      const ir::Value& v = body_->value(in);
      if (!v.constant) continue;
      RETURN_IF_ERROR(check_dtype(v));
      if (v.constant->numel() == 1) {
        literal_of_[in] = scalar_literal(*v.constant);
      } else {
        std::string name = fmt::format("kc{}", array_of_.size());
        f_.preamble += constant_array(name, *v.constant);
        array_of_[in] = name;
      }
    }
  }
  return Status::ok_status();
}

std::string FrameBuilder::coords(const Shape& iter) const {
  std::string s = "    long long r_ = i;\n";
  for (size_t d = iter.size(); d-- > 0;) {
    s += fmt::format("    const long long c{} = r_ % {};\n", d, iter[d]);
    s += fmt::format("    r_ /= {};\n", iter[d]);
  }
  s += "    (void)r_;\n";
  return s;
}

Expected<std::string> FrameBuilder::broadcast_offset(const Shape& value, const Shape& iter) {
  if (value == iter) return std::string("i");
  if (ir::shape_numel(value) == 1) return std::string("0");
  ASSIGN_OR_RETURN(auto strides, broadcast_strides(value, iter));
  std::string e;
  for (size_t d = 0; d < iter.size(); ++d)
    if (strides[d] != 0 && iter[d] > 1)
      e += fmt::format("{}c{} * {}LL", e.empty() ? "" : " + ", d, strides[d]);
  used_coords_ |= !e.empty();
  return e.empty() ? std::string("0") : e;
}

Expected<std::string> FrameBuilder::render(ValueId v, const Shape& iter,
                                           std::map<ValueId, std::string>& known, std::string& out,
                                           int& tmp) {
  if (auto it = known.find(v); it != known.end()) return it->second;
  const ir::Value& val = body_->value(v);
  RETURN_IF_ERROR(check_dtype(val));
  const std::string ctype = cuda::compute_type(val.dtype);
  std::string name = fmt::format("t{}", tmp++);
  if (auto it = literal_of_.find(v); it != literal_of_.end()) {
    out += fmt::format("    const {} {} = {};\n", ctype, name, it->second);
  } else if (auto p = param_of_.find(v); p != param_of_.end()) {
    ASSIGN_OR_RETURN(std::string off, broadcast_offset(val.shape, iter));
    out += fmt::format("    const {} {} = {};\n", ctype, name,
                       cuda::load_expr(val.dtype, p->second + "[" + off + "]"));
  } else if (auto a = array_of_.find(v); a != array_of_.end()) {
    ASSIGN_OR_RETURN(std::string off, broadcast_offset(val.shape, iter));
    out += fmt::format("    const {} {} = {};\n", ctype, name,
                       constant_load(a->second, val.dtype, off));
  } else if (val.producer >= 0 && &body_->node(val.producer) != f_.anchor &&
             ir::is_elementwise(body_->node(val.producer).op)) {
    const ir::Node& n = body_->node(val.producer);
    if (ir::shape_numel(val.shape) != ir::shape_numel(iter) && val.shape != iter)
      return unsupported("node '{}': fused node '{}' has shape {}, not the kernel's {}", node_.name,
                         n.name, ir::shape_to_string(val.shape), ir::shape_to_string(iter));
    cuda::OpOperands ops;
    ops.node = &n;
    for (ValueId in : n.inputs) {
      if (in == ir::kNoValue) {
        ops.in.emplace_back();
        ops.in_dtype.push_back(DType::kUndefined);
        continue;
      }
      ASSIGN_OR_RETURN(std::string operand, render(in, iter, known, out, tmp));
      ops.in.push_back(operand);
      ops.in_dtype.push_back(body_->value(in).dtype);
    }
    size_t index = 0;
    while (index < n.outputs.size() && n.outputs[index] != v) ++index;
    ops.out_dtype = val.dtype;
    ops.out_index = index;
    ASSIGN_OR_RETURN(std::string e, cuda::op_expression(ops));
    out += fmt::format("    const {} {} = {};\n", ctype, name, e);
  } else {
    return unsupported("node '{}': value '{}' cannot be computed element by element here",
                       node_.name, val.name);
  }
  known[v] = name;
  return name;
}

Expected<AnchorFrame> FrameBuilder::run() {
  RETURN_IF_ERROR(find_anchor());
  f_.graph = body_;
  f_.outer_graph = &outer_;
  f_.outer_node = &node_;
  f_.node_name = node_.name;
  RETURN_IF_ERROR(bind_parameters());
  RETURN_IF_ERROR(embed_constants());
  const ir::Node& a = *f_.anchor;
  // Loads: anchor input k at flat index i of its own shape.
  f_.input_params.assign(a.inputs.size(), "");
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    if (a.inputs[k] == ir::kNoValue) continue;
    if (auto p = param_of_.find(a.inputs[k]); p != param_of_.end()) f_.input_params[k] = p->second;
    const ir::Value& in = body_->value(a.inputs[k]);
    RETURN_IF_ERROR(check_dtype(in));
    std::map<ValueId, std::string> known;
    std::string stmts;
    int tmp = 0;
    used_coords_ = false;
    ASSIGN_OR_RETURN(std::string result, render(a.inputs[k], in.shape, known, stmts, tmp));
    const bool need_coords = used_coords_;
    f_.setup += fmt::format(
        "  auto load_in{} = [&](long long i) -> {} {{\n{}{}    return {};\n  }};\n", k,
        cuda::compute_type(in.dtype), need_coords ? coords(in.shape) : "", stmts, result);
  }
  // Stores: anchor output k, then every group output computed from it.
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    ValueId ov = a.outputs[k];
    if (ov == ir::kNoValue) continue;
    const ir::Value& o = body_->value(ov);
    RETURN_IF_ERROR(check_dtype(o));
    // Values that depend on this output (the epilogue), in body node order.
    std::set<ValueId> reach{ov};
    for (const auto& n : body_->nodes) {
      if (n.dead || &n == f_.anchor) continue;
      bool hit = false;
      for (ValueId in : n.inputs) hit |= in != ir::kNoValue && reach.count(in);
      if (hit)
        for (ValueId out : n.outputs) reach.insert(out);
    }
    std::map<ValueId, std::string> known{{ov, "v"}};
    std::string stmts;
    int tmp = 0;
    used_coords_ = false;
    const std::vector<ValueId>& results = fused_ ? body_->outputs : a.outputs;
    for (ValueId r : results) {
      if (r == ir::kNoValue || !reach.count(r)) continue;
      if (fused_ && r != ov) {
        if (body_->value(r).shape != o.shape)
          return unsupported("node '{}': group output '{}' has shape {}, not the anchor's {}",
                             node_.name, body_->value(r).name,
                             ir::shape_to_string(body_->value(r).shape),
                             ir::shape_to_string(o.shape));
      } else if (r != ov) {
        continue;
      }
      ASSIGN_OR_RETURN(std::string value, render(r, o.shape, known, stmts, tmp));
      auto p = out_param_.find(r);
      if (p == out_param_.end())
        return internal_error("node '{}': output '{}' has no parameter", node_.name,
                              body_->value(r).name);
      stmts += fmt::format("    {}[i] = {};\n", p->second,
                           cuda::store_expr(body_->value(r).dtype, value));
    }
    const bool need_coords = used_coords_;
    f_.setup +=
        fmt::format("  auto store_out{} = [&](long long i, {} v) {{\n{}{}    (void)v;\n  }};\n", k,
                    cuda::compute_type(o.dtype), need_coords ? coords(o.shape) : "", stmts);
  }
  std::string head;
  if (fp16_) head += "#include <cuda_fp16.h>\n";
  if (bf16_) head += "#include <cuda_bf16.h>\n";
  // The narrow-type and 8-bit conversions only where this kernel converts one.
  f_.preamble = head + cuda::device_prelude() +
                cuda::conversion_preludes(f_.setup + f_.preamble) + f_.preamble;
  return f_;
}

}  // namespace

const ir::Tensor* AnchorFrame::constant_input(size_t k) const {
  if (!has_input(k)) return nullptr;
  const ir::Value& v = input(k);
  if (v.constant) return &*v.constant;
  if (!outer_graph || !outer_node || outer_graph == graph) return nullptr;
  const ir::ValueId id = anchor->inputs[k];
  for (size_t i = 0; i < graph->inputs.size() && i < outer_node->inputs.size(); ++i) {
    if (graph->inputs[i] != id || outer_node->inputs[i] == ir::kNoValue) continue;
    const ir::Value& bound = outer_graph->value(outer_node->inputs[i]);
    return bound.constant ? &*bound.constant : nullptr;
  }
  return nullptr;
}

std::string AnchorFrame::load(size_t k, const std::string& idx) const {
  return fmt::format("load_in{}({})", k, idx);
}

std::string AnchorFrame::store(size_t k, const std::string& idx, const std::string& value) const {
  return fmt::format("store_out{}({}, {});", k, idx, value);
}

Expected<AnchorFrame> make_anchor_frame(const ir::Graph& outer, ir::NodeId node) {
  if (node < 0 || static_cast<size_t>(node) >= outer.nodes.size())
    return invalid_argument("make_anchor_frame: node id {} out of range", node);
  FrameBuilder b(outer, outer.node(node));
  return b.run();
}

Expected<GeneratedKernel> finish_anchor_kernel(const AnchorFrame& frame, const std::string& prefix,
                                               const std::string& helpers, const std::string& body,
                                               const LaunchShape& launch) {
  const auto& g = launch.grid;
  const auto& b = launch.block;
  const int64_t threads = b[0] * b[1] * b[2];
  if (threads < 1 || threads > 1024 || b[2] > 64)
    return internal_error("kernel for '{}': block {}x{}x{} is not a valid CUDA block",
                          frame.node_name, b[0], b[1], b[2]);
  if (g[0] < 1 || g[0] > 2147483647LL || g[1] < 1 || g[1] > 65535 || g[2] < 1 || g[2] > 65535)
    return unsupported("kernel for '{}': grid {}x{}x{} exceeds CUDA limits", frame.node_name, g[0],
                       g[1], g[2]);
  if (launch.shared_bytes < 0 || launch.shared_bytes > 227 * 1024)
    return unsupported("kernel for '{}': {} bytes of shared memory exceed the 227 KiB limit",
                       frame.node_name, launch.shared_bytes);
  std::string s = fmt::format("// graphc {} kernel: node {} ({})\n", prefix,
                              sanitize(frame.node_name, 80), ir::op_name(frame.anchor->op));
  s += frame.preamble + helpers;
  // Run-time sizes (a shape range): the block's struct, parameter and locals.
  const KernelSizes* sizes = frame.sizes;
  if (sizes) s += sizes->declaration();
  s += "extern \"C\" __global__ void @ENTRY@(" + frame.params +
       (sizes ? sizes->parameter() : std::string()) + ") {\n";
  if (sizes) s += sizes->locals("long long");
  s += frame.setup + body + "}\n";
  GeneratedKernel k;
  k.name = prefix + "_" + sanitize(frame.node_name, 40);
  k.entry = kernel_entry_name(prefix, s);
  for (size_t p = s.find("@ENTRY@"); p != std::string::npos; p = s.find("@ENTRY@"))
    s.replace(p, 7, k.entry);
  k.source = std::move(s);
  k.args = frame.args;
  k.blocks = g[0];
  k.grid_y = g[1];
  k.grid_z = g[2];
  k.threads_per_block = b[0];
  k.block_y = b[1];
  k.block_z = b[2];
  k.shared_bytes = launch.shared_bytes;
  if (sizes) k.sizes = sizes->block();
  k.grid_x = launch.grid_x;
  return k;
}

}  // namespace graphc::emit
