#include "reference/executor.h"

#include <array>

#include "reference/kernels.h"

namespace graphc::reference {

using ir::Graph;
using ir::Node;
using ir::Tensor;
using ir::ValueId;

namespace {
using Kernel = Status (*)(KernelContext&);
constexpr std::array<Kernel, ir::kOpCount> kKernels{{
#define GRAPHC_OP(name, ...) &kernels::run_##name,
#include "ir/ops.def"
#undef GRAPHC_OP
}};
static_assert(kKernels.size() == static_cast<size_t>(ir::kOpCount));

std::string node_where(const Node& n) {
  return fmt::format("node '{}' ({})", n.name, ir::op_name(n.op));
}
}  // namespace

std::vector<int64_t> strides_of(const ir::Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * shape[static_cast<size_t>(i) + 1];
  return s;
}

int64_t broadcast_offset(const std::vector<int64_t>& out_idx, const ir::Shape& in_shape,
                         const std::vector<int64_t>& in_strides) {
  size_t lead = out_idx.size() - in_shape.size();
  int64_t off = 0;
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (in_shape[d] != 1) off += out_idx[lead + d] * in_strides[d];
  return off;
}

bool next_index(std::vector<int64_t>& idx, const ir::Shape& shape) {
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    auto du = static_cast<size_t>(d);
    if (++idx[du] < shape[du]) return true;
    idx[du] = 0;
  }
  return false;
}

Expected<std::vector<Tensor>> evaluate_node(const Graph& graph, const Node& node,
                                            const std::vector<const Tensor*>& inputs) {
  KernelContext ctx{node, inputs, {}};
  for (ValueId out : node.outputs) {
    if (out == ir::kNoValue) {
      ctx.outputs.emplace_back();
      continue;
    }
    const auto& v = graph.value(out);
    if (!v.has_shape) return internal_error("output '{}' has no inferred shape", v.name);
    ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(v.dtype, v.shape, int64_t{1} << 36));
    ctx.outputs.push_back(std::move(t));
  }
  Status st = kKernels[static_cast<size_t>(node.op)](ctx);
  if (!st.ok()) return st;
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o] == ir::kNoValue) continue;
    const auto& v = graph.value(node.outputs[o]);
    if (ctx.outputs[o].shape() != v.shape || ctx.outputs[o].dtype() != v.dtype)
      return internal_error("kernel produced {}[{}] for output {}, shape inference said {}[{}]",
                            ir::dtype_name(ctx.outputs[o].dtype()),
                            ir::shape_to_string(ctx.outputs[o].shape()), o,
                            ir::dtype_name(v.dtype), ir::shape_to_string(v.shape));
  }
  return std::move(ctx.outputs);
}

ir::ConstantEvaluator constant_evaluator() {
  return [](const Graph& g, const Node& n, const std::vector<const Tensor*>& in) {
    return evaluate_node(g, n, in);
  };
}

Expected<std::map<std::string, Tensor>> execute(const Graph& graph,
                                                const std::map<std::string, Tensor>& inputs,
                                                const ExecuteOptions& options) {
  std::vector<std::optional<Tensor>> env(graph.values.size());
  for (const auto& [name, t] : inputs) {
    auto id = graph.find_value(name);
    if (!id || !graph.is_graph_input(*id)) return not_found("'{}' is not a graph input", name);
  }
  for (ValueId in : graph.inputs) {
    const auto& v = graph.value(in);
    auto it = inputs.find(v.name);
    if (it == inputs.end()) return not_found("no data given for graph input '{}'", v.name);
    if (it->second.dtype() != v.dtype || it->second.shape() != v.shape)
      return invalid_argument("input '{}' is {}[{}], the graph expects {}[{}]", v.name,
                              ir::dtype_name(it->second.dtype()),
                              ir::shape_to_string(it->second.shape()), ir::dtype_name(v.dtype),
                              ir::shape_to_string(v.shape));
    env[static_cast<size_t>(in)] = it->second;
  }
  for (size_t i = 0; i < graph.values.size(); ++i) {
    const auto& v = graph.values[i];
    if (v.constant && v.producer < 0 && !graph.is_graph_input(static_cast<ValueId>(i)))
      env[i] = *v.constant;
  }
  ASSIGN_OR_RETURN(auto order, ir::topological_order(graph));
  // Last use of each value, to free intermediates early.
  std::vector<int64_t> last_use(graph.values.size(), -1);
  for (size_t k = 0; k < order.size(); ++k)
    for (ValueId in : graph.node(order[k]).inputs)
      if (in != ir::kNoValue) last_use[static_cast<size_t>(in)] = static_cast<int64_t>(k);
  for (ValueId out : graph.outputs) last_use[static_cast<size_t>(out)] = INT64_MAX;

  for (size_t k = 0; k < order.size(); ++k) {
    const Node& node = graph.node(order[k]);
    std::vector<const Tensor*> in;
    for (ValueId id : node.inputs) {
      if (id == ir::kNoValue) {
        in.push_back(nullptr);
        continue;
      }
      auto& slot = env[static_cast<size_t>(id)];
      if (!slot) return internal_error("value '{}' used before it was computed", graph.value(id).name);
      in.push_back(&*slot);
    }
    auto result = evaluate_node(graph, node, in);
    if (!result.ok()) return result.status().with_context(node_where(node));
    for (size_t o = 0; o < node.outputs.size(); ++o)
      if (node.outputs[o] != ir::kNoValue) env[static_cast<size_t>(node.outputs[o])] = std::move((*result)[o]);
    if (!options.keep_intermediates) {
      for (ValueId id : node.inputs)
        if (id != ir::kNoValue && last_use[static_cast<size_t>(id)] == static_cast<int64_t>(k) &&
            graph.value(id).producer >= 0)
          env[static_cast<size_t>(id)].reset();
    }
  }
  std::map<std::string, Tensor> outputs;
  for (ValueId out : graph.outputs) {
    auto& slot = env[static_cast<size_t>(out)];
    if (!slot) return internal_error("graph output '{}' was not computed", graph.value(out).name);
    outputs[graph.value(out).name] = *slot;
  }
  return outputs;
}

}  // namespace graphc::reference
