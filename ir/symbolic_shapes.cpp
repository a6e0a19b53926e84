#include "ir/symbolic_shapes.h"

#include <fmt/format.h>

#include "ir/symbolic_rules.h"

namespace graphc::ir {

namespace {

// Integer tensors up to this many elements are followed element by element
// (shape vectors; weights are not).
constexpr int64_t kMaxTrackedElements = 64;

SymShape constant_shape(const Shape& s) { return SymShape(s.begin(), s.end()); }

SymValue from_typed(const Value& v) {
  SymValue out;
  out.shape = constant_shape(v.shape);
  // Booleans too: a folded Equal of shape integers is a Where's condition.
  if (v.constant && (is_integer(v.constant->dtype()) || v.constant->dtype() == DType::kBool) &&
      v.constant->numel() <= kMaxTrackedElements &&
      v.constant->rank() <= 1) {
    std::vector<DimExpr> e;
    for (int64_t x : v.constant->to_i64_vector()) e.emplace_back(x);
    out.elements = std::move(e);
  }
  return out;
}

std::string where(const Node& n) { return fmt::format("node '{}' ({})", n.name, op_name(n.op)); }

// A FusedGroup's outputs: its body inferred with the group's input shapes
// (body input i is the group's input i; the body keeps its own names).
Status infer_fused_group(const Node& n, const SymbolTable& symbols,
                         std::vector<SymValue>& values) {
  if (!n.body) return invalid_model("FusedGroup without a body");
  const Graph& body = *n.body;
  if (body.inputs.size() != n.inputs.size() || body.outputs.size() != n.outputs.size())
    return invalid_model("FusedGroup body inputs/outputs do not match the node's");
  std::map<std::string, SymShape> inputs;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.has_input(i))
      inputs[body.value(body.inputs[i]).name] = values[static_cast<size_t>(n.inputs[i])].shape;
  ASSIGN_OR_RETURN(SymbolicShapes inner, infer_symbolic_shapes(body, inputs, symbols));
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.outputs[o] != kNoValue)
      values[static_cast<size_t>(n.outputs[o])] = inner.values[static_cast<size_t>(body.outputs[o])];
  return Status::ok_status();
}

}  // namespace

bool SymValue::depends_on_symbols() const {
  for (const auto& d : shape)
    if (!d.is_constant()) return true;
  if (elements)
    for (const auto& e : *elements)
      if (!e.is_constant()) return true;
  return false;
}

std::string SymbolicShapes::shape_string(ValueId id) const {
  return sym_shape_to_string(values[static_cast<size_t>(id)].shape, symbol_names);
}

Expected<SymbolicShapes> infer_symbolic_shapes(const Graph& g,
                                               const std::map<std::string, SymShape>& inputs,
                                               const SymbolTable& symbols) {
  SymbolicShapes out;
  out.symbol_names = symbols.names;
  out.symbol_min = symbols.min;
  out.symbol_max = symbols.max;
  out.values.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) out.values[i] = from_typed(g.values[i]);
  for (const auto& [name, shape] : inputs) {
    auto id = g.find_value(name);
    if (!id || !g.is_graph_input(*id))
      return invalid_argument("symbolic shape given for '{}', which is not a model input", name);
    if (g.value(*id).shape.size() != shape.size())
      return invalid_argument("input '{}': symbolic shape {} has rank {}, the graph's is {}", name,
                              sym_shape_to_string(shape, symbols.names), shape.size(),
                              g.value(*id).shape.size());
    out.values[static_cast<size_t>(*id)].shape = shape;
    out.values[static_cast<size_t>(*id)].elements.reset();
  }
  ASSIGN_OR_RETURN(auto order, topological_order(g));
  for (NodeId nid : order) {
    const Node& n = g.node(nid);
    bool depends = false;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.has_input(i)) depends = depends || out.values[static_cast<size_t>(n.inputs[i])].depends_on_symbols();
    if (!depends) continue;  // its outputs keep their concrete shapes (from_typed)
    if (n.op == OpKind::FusedGroup) {
      Status st = infer_fused_group(n, symbols, out.values);
      if (!st.ok()) return st.with_context(where(n));
      continue;
    }
    if (!n.subgraphs.empty())
      return unsupported(
          "{}: control flow on a shape that varies over the range has no symbolic shape rule yet",
          where(n));
    symbolic::SymContext ctx(g, n, out.values, symbols);
    Status st = symbolic::infer_node(ctx);
    if (!st.ok()) return st.with_context(where(n));
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o] == kNoValue) continue;
      SymValue& v = out.values[static_cast<size_t>(n.outputs[o])];
      v = std::move(ctx.outputs[o]);
      if (v.elements && v.elements->size() > static_cast<size_t>(kMaxTrackedElements))
        v.elements.reset();
    }
  }
  return out;
}

Status check_symbolic_shapes_at(const SymbolicShapes& sym, const Graph& concrete,
                                const std::vector<int64_t>& point) {
  if (concrete.values.size() != sym.values.size())
    return internal_error("symbolic shapes of {} values checked against a graph of {}",
                          sym.values.size(), concrete.values.size());
  for (size_t i = 0; i < concrete.values.size(); ++i) {
    const Value& v = concrete.values[i];
    if (!v.has_shape) continue;
    const SymValue& s = sym.values[i];
    auto mismatch = [&](const std::string& what) {
      const std::string producer =
          v.producer >= 0 ? " made by " + where(concrete.node(v.producer)) : std::string();
      return internal_error("value '{}'{}: symbolic {} {} but {} at this point", v.name, producer,
                            what, sym_shape_to_string(s.shape, sym.symbol_names),
                            shape_to_string(v.shape));
    };
    if (s.shape.size() != v.shape.size()) return mismatch("shape");
    for (size_t d = 0; d < v.shape.size(); ++d) {
      ASSIGN_OR_RETURN(int64_t x, s.shape[d].evaluate(point));
      if (x != v.shape[d]) return mismatch("shape");
    }
    if (s.elements && v.constant && is_integer(v.constant->dtype())) {
      const auto actual = v.constant->to_i64_vector();
      bool same = actual.size() == s.elements->size();
      for (size_t k = 0; same && k < actual.size(); ++k) {
        ASSIGN_OR_RETURN(int64_t x, (*s.elements)[k].evaluate(point));
        same = x == actual[k];
      }
      if (!same) return mismatch("elements of shape");
    }
  }
  return Status::ok_status();
}

}  // namespace graphc::ir
