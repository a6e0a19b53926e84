#include "ir/shape_inference.h"

#include <array>

#include "ir/shape_rules.h"
#include "support/checked_math.h"

namespace graphc::ir {

namespace {
constexpr std::array<ShapeRule, kOpCount> kShapeRules{{
#define GRAPHC_OP(name, ...) &shape_rules::infer_##name,
#include "ir/ops.def"
#undef GRAPHC_OP
}};
static_assert(kShapeRules.size() == static_cast<size_t>(kOpCount));

std::string node_where(const Node& n) {
  return fmt::format("node '{}' ({})", n.name, op_name(n.op));
}
}  // namespace

const Tensor* ShapeContext::constant_for_subgraph(size_t i) const {
  if (!has_input(i)) return nullptr;
  const auto& v = graph_.value(node_.inputs[i]);
  return v.constant ? &*v.constant : nullptr;
}

const Tensor* ShapeContext::constant(size_t i) const {
  const Tensor* t = constant_for_subgraph(i);
  if (t && options_ && options_->on_constant_read)
    options_->on_constant_read(graph_, node_.inputs[i]);
  return t;
}

Expected<std::vector<int64_t>> ShapeContext::constant_ints(size_t i, const char* what) const {
  const Tensor* t = constant(i);
  if (!t)
    return unsupported("input {} ({}) must be known at build time; graphc needs static shapes",
                       i, what);
  if (!is_integer(t->dtype()))
    return invalid_model("input {} ({}) must be an integer tensor, got {}", i, what,
                         dtype_name(t->dtype()));
  return t->to_i64_vector();
}

void ShapeContext::set_output(size_t i, DType dtype, Shape shape) {
  if (out_dtypes.size() < num_outputs()) {
    out_dtypes.resize(num_outputs(), DType::kUndefined);
    out_shapes.resize(num_outputs());
    out_constants.resize(num_outputs());
  }
  out_dtypes[i] = dtype;
  out_shapes[i] = std::move(shape);
}

void ShapeContext::set_output_constant(size_t i, Tensor value) {
  set_output(i, value.dtype(), value.shape());
  out_constants[i] = std::move(value);
}

Expected<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return invalid_model("shapes {} and {} cannot be broadcast", shape_to_string(a),
                           shape_to_string(b));
    }
  }
  return out;
}

Expected<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return invalid_model("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

namespace shape_rules {
Status same_as_input(ShapeContext& ctx, size_t input) {
  for (size_t o = 0; o < ctx.num_outputs(); ++o) ctx.set_output(o, ctx.dtype(input), ctx.shape(input));
  return Status::ok_status();
}

Status broadcast_inputs(ShapeContext& ctx, DType out_dtype) {
  Shape out;
  bool first = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (first) {
      out = ctx.shape(i);
      first = false;
      continue;
    }
    ASSIGN_OR_RETURN(out, broadcast_shapes(out, ctx.shape(i)));
  }
  ctx.set_output(0, out_dtype, out);
  return Status::ok_status();
}
}  // namespace shape_rules

Status bind_input_shapes(Graph& graph, const std::map<std::string, Shape>& shapes) {
  for (const auto& [name, shape] : shapes) {
    auto id = graph.find_value(name);
    if (!id || !graph.is_graph_input(*id)) {
      std::string known;
      for (ValueId in : graph.inputs) known += (known.empty() ? "" : ", ") + graph.value(in).name;
      return invalid_argument("--shape names '{}', which is not a model input (inputs: {})", name,
                              known);
    }
    Value& v = graph.value(*id);
    if (v.has_shape && v.shape.size() != shape.size())
      return invalid_argument("--shape {}:{} has rank {}, but the model declares rank {}", name,
                              shape_to_string(shape), shape.size(), v.shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < 0)
        return invalid_argument("--shape {}: dim {} is negative", name, d);
      bool symbolic = d < v.dim_names.size() && !v.dim_names[d].empty();
      if (v.has_shape && !symbolic && v.shape[d] >= 0 && v.shape[d] != shape[d])
        return invalid_argument("--shape {}:{} conflicts with the model's fixed dim {} = {}", name,
                                shape_to_string(shape), d, v.shape[d]);
    }
    v.shape = shape;
    v.has_shape = true;
    v.dim_names.assign(shape.size(), "");
  }
  std::string unbound;
  for (ValueId in : graph.inputs) {
    const Value& v = graph.value(in);
    std::vector<std::string> dims;
    for (size_t d = 0; d < v.shape.size(); ++d)
      if (v.shape[d] < 0)
        dims.push_back(d < v.dim_names.size() && !v.dim_names[d].empty() ? v.dim_names[d] : "?");
    if (!v.has_shape) dims.push_back("unknown rank");
    if (!dims.empty())
      unbound += fmt::format("\n  {}: dims {} (declared {})", v.name, fmt::join(dims, ", "),
                             shape_to_string(v.shape));
  }
  if (!unbound.empty())
    return invalid_argument(
        "model inputs have unbound symbolic dims; bind them with --shape NAME:DxDx...{}", unbound);
  return Status::ok_status();
}

Status infer_shapes(Graph& graph, const ShapeInferenceOptions& options) {
  ASSIGN_OR_RETURN(auto order, topological_order(graph));
  for (NodeId id : order) {
    Node& node = graph.node(id);
    const OpInfo& info = op_info(node.op);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] == kNoValue) continue;
      const Value& v = graph.value(node.inputs[i]);
      if (!v.has_shape || v.dtype == DType::kUndefined)
        return invalid_model("input {} '{}' has no known type or shape", i, v.name)
            .with_context(node_where(node));
    }
    ShapeContext ctx(graph, node, &options);
    ctx.set_output(0, DType::kUndefined, {});
    Status st = kShapeRules[static_cast<size_t>(node.op)](ctx);
    if (!st.ok()) return st.with_context(node_where(node));
    int64_t total_out = 0;
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o] == kNoValue) continue;
      if (ctx.out_dtypes[o] == DType::kUndefined)
        return internal_error("shape rule left output {} untyped", o).with_context(node_where(node));
      auto numel = checked_numel(ctx.out_shapes[o]);
      if (!numel || *numel > options.max_tensor_elements)
        return out_of_range("output {} has shape {}, beyond graphc's tensor size limit", o,
                            shape_to_string(ctx.out_shapes[o]))
            .with_context(node_where(node));
      total_out += *numel;
      Value& out = graph.value(node.outputs[o]);
      out.dtype = ctx.out_dtypes[o];
      out.shape = ctx.out_shapes[o];
      out.has_shape = true;
      if (ctx.out_constants[o]) out.constant = std::move(*ctx.out_constants[o]);
    }
    // Constant propagation: evaluate small nodes whose inputs are all known.
    bool all_const = !node.inputs.empty();
    std::vector<const Tensor*> in_tensors;
    for (ValueId in : node.inputs) {
      if (in == kNoValue) {
        in_tensors.push_back(nullptr);
        continue;
      }
      const Value& v = graph.value(in);
      if (!v.constant) all_const = false;
      in_tensors.push_back(v.constant ? &*v.constant : nullptr);
    }
    bool outputs_known = true;
    for (ValueId out : node.outputs)
      if (out != kNoValue && !graph.value(out).constant) outputs_known = false;
    if (all_const && !outputs_known && options.evaluator &&
        total_out <= options.propagate_max_elements) {
      auto result = options.evaluator(graph, node, in_tensors);
      if (!result.ok()) return result.status().with_context(node_where(node));
      for (size_t o = 0; o < node.outputs.size() && o < result->size(); ++o)
        if (node.outputs[o] != kNoValue) graph.value(node.outputs[o]).constant = (*result)[o];
    }
    (void)info;
  }
  return Status::ok_status();
}

}  // namespace graphc::ir
