#include "importer/importer.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "importer/model_parse.h"
#include "importer/node_importers.h"
#include "importer/subgraph.h"
#include "importer/tensor_proto.h"
#include "onnx/onnx.pb.h"
#include "support/checked_math.h"

namespace graphc::importer {

using ir::DType;
using ir::Graph;
using ir::Tensor;
using ir::ValueId;

namespace {
// ONNX ops whose output shape depends on input values.
bool data_dependent_shape(const std::string& op) {
  return op == "NonZero" || op == "Unique" || op == "NonMaxSuppression" || op == "Compress";
}
}  // namespace

namespace {

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }
std::string domain_label(const std::string& domain) {
  return is_default_domain(domain) ? "ai.onnx" : domain;
}

// Converts an AttributeProto; graph attributes (If/Loop/Scan) are taken
// apart before this, by attach_subgraphs (import_subgraph.cpp).
Expected<ir::Attribute> convert_attribute(const onnx::AttributeProto& a,
                                          const TensorLoadContext& tctx) {
  using onnx::AttributeProto;
  switch (a.type()) {
    case AttributeProto::INT: return ir::Attribute::of_int(a.i());
    case AttributeProto::FLOAT: return ir::Attribute::of_float(a.f());
    case AttributeProto::STRING: return ir::Attribute::of_string(a.s());
    case AttributeProto::INTS:
      return ir::Attribute::of_ints(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case AttributeProto::FLOATS:
      return ir::Attribute::of_floats(std::vector<double>(a.floats().begin(), a.floats().end()));
    case AttributeProto::STRINGS:
      return ir::Attribute::of_strings(
          std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case AttributeProto::TENSOR: {
      ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(a.t(), tctx));
      return ir::Attribute::of_tensor(std::move(t));
    }
    case AttributeProto::SPARSE_TENSOR: {
      ASSIGN_OR_RETURN(Tensor t, tensor_from_sparse_proto(a.sparse_tensor(), tctx));
      return ir::Attribute::of_tensor(std::move(t));
    }
    case AttributeProto::UNDEFINED:
      // Old exporters leave type unset; infer it from the populated field.
      if (a.has_i()) return ir::Attribute::of_int(a.i());
      if (a.has_f()) return ir::Attribute::of_float(a.f());
      if (a.has_s()) return ir::Attribute::of_string(a.s());
      if (a.has_t()) {
        ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(a.t(), tctx));
        return ir::Attribute::of_tensor(std::move(t));
      }
      if (a.ints_size()) return ir::Attribute::of_ints({a.ints().begin(), a.ints().end()});
      if (a.floats_size()) return ir::Attribute::of_floats({a.floats().begin(), a.floats().end()});
      if (a.strings_size())
        return ir::Attribute::of_strings({a.strings().begin(), a.strings().end()});
      return invalid_model("attribute '{}' has no type and no value", a.name());
    default:
      return unsupported("attribute '{}' of type {} is not supported", a.name(),
                         AttributeProto::AttributeType_IsValid(a.type())
                             ? AttributeProto::AttributeType_Name(a.type())
                             : std::to_string(static_cast<int>(a.type())));
  }
}

// Constant node in any of its forms -> a tensor.
Expected<Tensor> constant_node_value(const onnx::NodeProto& n, const TensorLoadContext& tctx) {
  using onnx::AttributeProto;
  if (n.input_size() != 0) return invalid_model("Constant takes no inputs, has {}", n.input_size());
  if (n.attribute_size() != 1)
    return invalid_model("Constant must have exactly one value attribute, has {}",
                         n.attribute_size());
  const auto& a = n.attribute(0);
  const std::string& k = a.name();
  if (!a.ref_attr_name().empty())
    return unsupported("Constant attribute '{}' refers to a function attribute", k);
  auto expect = [&](AttributeProto::AttributeType want) -> Status {
    if (a.type() == want || a.type() == AttributeProto::UNDEFINED) return Status::ok_status();
    return invalid_model("Constant attribute '{}' must be of type {}, is {}", k,
                         AttributeProto::AttributeType_Name(want),
                         AttributeProto::AttributeType_IsValid(a.type())
                             ? AttributeProto::AttributeType_Name(a.type())
                             : std::to_string(static_cast<int>(a.type())));
  };
  if (k == "value") {
    RETURN_IF_ERROR(expect(AttributeProto::TENSOR));
    if (!a.has_t()) return invalid_model("Constant attribute 'value' holds no tensor");
    return tensor_from_proto(a.t(), tctx);
  }
  if (k == "sparse_value") {
    RETURN_IF_ERROR(expect(AttributeProto::SPARSE_TENSOR));
    if (!a.has_sparse_tensor())
      return invalid_model("Constant attribute 'sparse_value' holds no sparse tensor");
    return tensor_from_sparse_proto(a.sparse_tensor(), tctx);
  }
  if (k == "value_float") {
    RETURN_IF_ERROR(expect(AttributeProto::FLOAT));
    return Tensor::from_f32({a.f()}, {});
  }
  if (k == "value_floats") {
    RETURN_IF_ERROR(expect(AttributeProto::FLOATS));
    return Tensor::from_f32(std::vector<float>(a.floats().begin(), a.floats().end()),
                            {static_cast<int64_t>(a.floats_size())});
  }
  if (k == "value_int") {
    RETURN_IF_ERROR(expect(AttributeProto::INT));
    return Tensor::scalar_i64(a.i());
  }
  if (k == "value_ints") {
    RETURN_IF_ERROR(expect(AttributeProto::INTS));
    return Tensor::from_i64(std::vector<int64_t>(a.ints().begin(), a.ints().end()),
                            {static_cast<int64_t>(a.ints_size())});
  }
  if (k == "value_string" || k == "value_strings")
    return unsupported("string constants are not supported (attribute '{}')", k);
  return invalid_model("Constant has unknown attribute '{}'", k);
}

struct ValueTypeInfo {
  DType dtype = DType::kUndefined;
  ir::Shape shape;
  std::vector<std::string> dim_names;
  bool has_shape = false;
};

Expected<ValueTypeInfo> convert_value_info(const onnx::ValueInfoProto& vi) {
  ValueTypeInfo out;
  if (!vi.type().has_tensor_type())
    return unsupported("'{}' is not a tensor (sequences, maps and optionals are not supported)",
                       vi.name());
  const auto& tt = vi.type().tensor_type();
  auto dt = ir::dtype_from_onnx(tt.elem_type());
  if (!dt)
    return unsupported("'{}' has element type {}, which graphc does not support", vi.name(),
                       onnx::TensorProto_DataType_IsValid(tt.elem_type())
                           ? onnx::TensorProto_DataType_Name(
                                 static_cast<onnx::TensorProto_DataType>(tt.elem_type()))
                           : std::to_string(tt.elem_type()));
  out.dtype = *dt;
  if (tt.has_shape()) {
    out.has_shape = true;
    int64_t fixed_numel = 1;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          return invalid_model("'{}' has a negative dim {}", vi.name(), d.dim_value());
        auto n = checked_mul(fixed_numel, d.dim_value());
        if (!n)
          return invalid_model("'{}': the element count of its dims overflows int64", vi.name());
        fixed_numel = *n;
        out.shape.push_back(d.dim_value());
        out.dim_names.emplace_back();
      } else {
        out.shape.push_back(-1);
        out.dim_names.push_back(d.dim_param().empty() ? std::string("?") : d.dim_param());
      }
    }
  }
  return out;
}

// Node names for messages and the IR: the ONNX name, or "<Op>_<index>" when
// unnamed; made unique in file order.
std::vector<std::string> node_labels(const onnx::GraphProto& graph) {
  std::vector<std::string> labels;
  std::set<std::string> taken;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    std::string name = n.name().empty() ? fmt::format("{}_{}", n.op_type(), i) : n.name();
    if (!taken.insert(name).second) {
      // Node names need not be unique in ONNX; reports need them to be.
      std::string base = name;
      for (int k = 1; !taken.insert(name = fmt::format("{}_{}", base, k)).second; ++k) {
      }
    }
    labels.push_back(std::move(name));
  }
  return labels;
}

// Orders the nodes so each comes after the producers of its inputs (ONNX
// requires sorted graphs, but exporters do not always comply), checking that
// every input is defined, no value is defined twice, and there is no cycle.
Expected<std::vector<int>> sorted_node_order(const onnx::GraphProto& graph,
                                             const std::unordered_set<std::string>& graph_values,
                                             const std::vector<std::string>& labels) {
  const int count = graph.node_size();
  auto where = [&](int i) {
    return fmt::format("node '{}' ({})", labels[static_cast<size_t>(i)], graph.node(i).op_type());
  };
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < count; ++i) {
    for (const auto& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (graph_values.count(out))
        return invalid_model(
            "duplicate name '{}': {} writes it, but it is already a graph input "
            "or initializer",
            out, where(i));
      auto [it, fresh] = producer.emplace(out, i);
      if (!fresh)
        return invalid_model("duplicate name '{}': both {} and {} produce it", out,
                             where(it->second), where(i));
    }
  }
  std::vector<int> pending(static_cast<size_t>(count), 0);
  std::vector<std::vector<int>> users(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    for (const auto& in : graph.node(i).input()) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        if (graph_values.count(in)) continue;
        return invalid_model(
            "{} reads '{}', which is not a graph input, an initializer or the "
            "output of any node",
            where(i), in);
      }
      ++pending[static_cast<size_t>(i)];
      users[static_cast<size_t>(it->second)].push_back(i);
    }
  }
  // Kahn's algorithm; among ready nodes the earliest in the file goes first, so
  // an already sorted graph keeps its order.
  std::vector<int> ready, order;
  for (int i = 0; i < count; ++i)
    if (pending[static_cast<size_t>(i)] == 0) ready.push_back(i);
  std::make_heap(ready.begin(), ready.end(), std::greater<>());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    int cur = ready.back();
    ready.pop_back();
    order.push_back(cur);
    for (int u : users[static_cast<size_t>(cur)])
      if (--pending[static_cast<size_t>(u)] == 0) {
        ready.push_back(u);
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
  }
  if (static_cast<int>(order.size()) == count) return order;
  // Name the cycle: walk back through unfinished producers until a node repeats.
  int cur = 0;
  while (pending[static_cast<size_t>(cur)] == 0) ++cur;
  std::vector<int> path;
  std::vector<int> seen_at(static_cast<size_t>(count), -1);
  while (seen_at[static_cast<size_t>(cur)] < 0) {
    seen_at[static_cast<size_t>(cur)] = static_cast<int>(path.size());
    path.push_back(cur);
    int next = -1;
    for (const auto& in : graph.node(cur).input()) {
      auto it = in.empty() ? producer.end() : producer.find(in);
      if (it != producer.end() && pending[static_cast<size_t>(it->second)] > 0) {
        next = it->second;
        break;
      }
    }
    if (next < 0) break;  // cannot happen: an unfinished node has an unfinished producer
    cur = next;
  }
  std::string cycle;
  for (size_t k = static_cast<size_t>(std::max(seen_at[static_cast<size_t>(cur)], 0));
       k < path.size(); ++k)
    cycle = fmt::format("'{}' -> ", labels[static_cast<size_t>(path[k])]) + cycle;
  cycle += fmt::format("'{}'", labels[static_cast<size_t>(cur)]);
  return invalid_model("the graph has a cycle: {}", cycle);
}

}  // namespace

// `partial` == nullptr: the strict import (an unsupported operator is an error).
// Otherwise unsupported nodes and everything downstream of them are left out
// and recorded there (see PartialImport; the main graph only).
Expected<Graph> import_graph(const onnx::ModelProto& model, const onnx::GraphProto& graph,
                             const std::string& model_dir, const ImportOptions& options,
                             bool is_subgraph, PartialImport* partial,
                             onnx::GraphProto* consumable) {
  Graph g;
  g.name = graph.name();
  g.producer = model.producer_name() +
               (model.producer_version().empty() ? "" : " " + model.producer_version());
  std::unordered_map<std::string, int64_t> opsets;
  for (const auto& os : model.opset_import()) {
    std::string dom = is_default_domain(os.domain()) ? "" : os.domain();
    if (opsets.count(dom))
      return invalid_model("opset_import lists domain {} twice", domain_label(dom));
    opsets[dom] = os.version();
  }
  // IR version < 3 predates opset_import and means opset 1. Otherwise a model
  // may import no default-domain opset (g.opset stays 0); any ai.onnx node is
  // then reported below.
  if (!opsets.count("") && model.ir_version() < 3) opsets[""] = 1;
  const bool has_default_opset = opsets.count("") != 0;
  g.opset = has_default_opset ? opsets[""] : 0;
  if (has_default_opset && (g.opset < kLegacyMinOpset || g.opset > kMaxOpset))
    return unsupported("the model uses opset {} of ai.onnx; graphc reads opsets {} to {}", g.opset,
                       kMinOpset, kMaxOpset);

  TensorLoadContext tctx{model_dir, options.max_tensor_bytes,
                         std::make_shared<ExternalDataFiles>()};
  std::unordered_map<std::string, ValueId> by_name;
  auto define = [&](const std::string& name, ir::Value v) -> Expected<ValueId> {
    if (name.empty()) return invalid_model("a graph value has an empty name");
    if (by_name.count(name))
      return invalid_model("duplicate name '{}': it is defined more than once", name);
    v.name = name;
    ValueId id = g.add_value(std::move(v));
    by_name[name] = id;
    return id;
  };
  auto define_constant = [&](const std::string& name, Tensor t) -> Status {
    ir::Value v;
    v.dtype = t.dtype();
    v.shape = t.shape();
    v.has_shape = true;
    v.constant = std::move(t);
    v.is_initializer = true;
    ASSIGN_OR_RETURN(ValueId id, define(name, std::move(v)));
    (void)id;
    return Status::ok_status();
  };

  // Initializers (weights).
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const auto& init = graph.initializer(i);
    std::string where = fmt::format("initializer '{}'", init.name());
    auto t = tensor_from_proto(init, tctx);
    if (!t.ok()) return t.status().with_context(where);
    // The tensor holds its own copy now: free the proto's, so a model with
    // weights inside the .onnx file is never held twice.
    if (consumable) std::string().swap(*consumable->mutable_initializer(i)->mutable_raw_data());
    Status st = define_constant(init.name(), std::move(*t));
    if (!st.ok()) return st.with_context(where);
  }
  for (const auto& sp : graph.sparse_initializer()) {
    std::string where = fmt::format("sparse initializer '{}'", sp.values().name());
    auto t = tensor_from_sparse_proto(sp, tctx);
    if (!t.ok()) return t.status().with_context(where);
    Status st = define_constant(sp.values().name(), std::move(*t));
    if (!st.ok()) return st.with_context(where);
  }
  // Graph inputs; an input that is also an initializer (IR < 4 style) stays a constant.
  std::unordered_set<std::string> input_names;
  for (const auto& in : graph.input()) {
    if (!input_names.insert(in.name()).second)
      return invalid_model("duplicate graph input '{}'", in.name());
    auto it = by_name.find(in.name());
    if (it != by_name.end()) continue;  // initializer listed as an input
    // A sub-graph's inputs may leave their type to the node (Loop bodies do).
    const bool untyped = is_subgraph && (in.type().value_case() == onnx::TypeProto::VALUE_NOT_SET ||
                                         (in.type().has_tensor_type() &&
                                          in.type().tensor_type().elem_type() == 0));
    auto info = untyped ? Expected<ValueTypeInfo>(ValueTypeInfo{}) : convert_value_info(in);
    if (!info.ok()) return info.status().with_context("graph input");
    ir::Value v;
    v.dtype = info->dtype;
    v.shape = info->shape;
    v.dim_names = info->dim_names;
    v.has_shape = info->has_shape;
    auto id = define(in.name(), std::move(v));
    if (!id.ok()) return id.status().with_context("graph input");
    g.inputs.push_back(*id);
  }

  // Every unsupported op, all at once, before anything else about the nodes.
  const auto labels = node_labels(graph);
  const auto& table = importer_table();
  auto resolve_kind =
      [&](const onnx::NodeProto& n) -> std::pair<std::optional<ir::OpKind>, OpImporter> {
    if (!is_default_domain(n.domain())) return {std::nullopt, nullptr};
    for (const auto& alias : op_aliases())
      if (n.op_type() == alias.onnx_name) return {alias.kind, alias.importer};
    auto kind = ir::op_from_name(n.op_type());
    if (!kind) return {std::nullopt, nullptr};
    return {kind, table[static_cast<size_t>(*kind)]};
  };
  auto is_alias = [](const onnx::NodeProto& n) {
    for (const auto& alias : op_aliases())
      if (n.op_type() == alias.onnx_name) return true;
    return false;
  };
  auto is_constant_node = [](const onnx::NodeProto& n) {
    return n.op_type() == "Constant" && is_default_domain(n.domain());
  };
  std::vector<std::string> unsupported_nodes;
  std::unordered_set<int> unsupported_index;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    if (is_constant_node(n)) continue;
    auto [kind, imp] = resolve_kind(n);
    std::string dom = is_default_domain(n.domain()) ? "" : n.domain();
    const std::string& label = labels[static_cast<size_t>(i)];
    const size_t before = unsupported_nodes.size();
    if (dom.empty() && !has_default_opset) {
      unsupported_nodes.push_back(
          fmt::format("operator {} at node '{}' is in domain ai.onnx, which the model does not "
                      "import (no opset_import entry)",
                      n.op_type(), label));
    } else if (!kind && dom.empty() && data_dependent_shape(n.op_type())) {
      unsupported_nodes.push_back(fmt::format(
          "operator {} at node '{}': its output shape depends on the input values, and graphc "
          "compiles static shapes only (data-dependent shapes are not supported yet)",
          n.op_type(), label));
    } else if (!kind) {
      auto os = opsets.find(dom);
      unsupported_nodes.push_back(fmt::format(
          "unsupported operator {} ({}, opset {}) at node '{}'", n.op_type(), domain_label(dom),
          os == opsets.end() ? std::string("not imported") : std::to_string(os->second), label));
    } else if (g.opset < kMinOpset && (is_alias(n) || !legacy_opset_safe(*kind))) {
      unsupported_nodes.push_back(fmt::format(
          "operator {} at node '{}': its opset-{} form differs from opset 7's; graphc reads "
          "opsets {} to {} (and opsets 1-6 only for ops whose meaning did not change)",
          n.op_type(), label, g.opset, kMinOpset, kMaxOpset));
    } else if (ir::op_info(*kind).introduced_opset > g.opset && !is_alias(n)) {
      // (An alias such as Upsample -> Resize exists in opsets older than the
      // graphc op it maps to; its importer checks its own opset range.)
      unsupported_nodes.push_back(fmt::format(
          "operator {} at node '{}' does not exist in opset {} (introduced in opset {})",
          n.op_type(), label, g.opset, ir::op_info(*kind).introduced_opset));
    }
    if (unsupported_nodes.size() > before) {
      unsupported_index.insert(i);
      if (partial)
        partial->unsupported.push_back(
            {label, n.op_type(), domain_label(dom), unsupported_nodes.back()});
    }
  }
  if (!partial) RETURN_IF_ERROR(unsupported_nodes_error(unsupported_nodes));

  std::unordered_set<std::string> graph_values;
  for (const auto& [name, id] : by_name) graph_values.insert(name);
  ASSIGN_OR_RETURN(auto order, sorted_node_order(graph, graph_values, labels));

  // Partial import: the values an unsupported node makes, directly or through
  // other nodes, each mapped to that unsupported node's label.
  std::unordered_map<std::string, std::string> blocked_by;
  std::vector<std::string> cut_values;
  std::unordered_set<std::string> produced, cut_seen;
  auto leave_out = [&](int i, const std::string& origin) {
    const auto& n = graph.node(i);
    for (const auto& in : n.input())  // what the left-out node reads from the kept part
      if (!in.empty() && produced.count(in) && !blocked_by.count(in) && cut_seen.insert(in).second)
        cut_values.push_back(in);
    for (const auto& out : n.output())
      if (!out.empty()) blocked_by.emplace(out, origin);
  };
  for (int i : order) {
    const auto& n = graph.node(i);
    const std::string& name = labels[static_cast<size_t>(i)];
    if (partial) {
      if (unsupported_index.count(i)) {
        leave_out(i, name);
        continue;
      }
      const std::string* origin = nullptr;
      for (const auto& in : n.input()) {
        auto it = in.empty() ? blocked_by.end() : blocked_by.find(in);
        if (it != blocked_by.end()) {
          origin = &it->second;
          break;
        }
      }
      if (origin) {
        partial->skipped.push_back({name, n.op_type(), *origin});
        leave_out(i, *origin);
        continue;
      }
      // A Constant's value stays a constant: it is not a cut value to output.
      if (!is_constant_node(n))
        for (const auto& out : n.output())
          if (!out.empty()) produced.insert(out);
    }
    std::string where = fmt::format("node '{}' ({})", name, n.op_type());
    if (is_constant_node(n)) {
      if (n.output_size() != 1 || n.output(0).empty())
        return invalid_model("{}: Constant must have one output", where);
      auto t = constant_node_value(n, tctx);
      if (!t.ok()) return t.status().with_context(where);
      ir::Value v;
      v.dtype = t->dtype();
      v.shape = t->shape();
      v.has_shape = true;
      v.constant = std::move(*t);
      auto id = define(n.output(0), std::move(v));
      if (!id.ok()) return id.status().with_context(where);
      continue;
    }
    auto [kind, imp] = resolve_kind(n);
    NodeImportContext ctx{g, n, g.opset, {}};
    ctx.node.op = *kind;
    ctx.node.name = name;
    for (const auto& in : n.input()) {
      if (in.empty()) {
        ctx.node.inputs.push_back(ir::kNoValue);
        continue;
      }
      auto it = by_name.find(in);
      if (it == by_name.end())  // sorted_node_order checked this already
        return internal_error("{} reads '{}', which is not defined yet", where, in);
      ctx.node.inputs.push_back(it->second);
    }
    std::set<std::string> attr_names;
    std::vector<const onnx::AttributeProto*> graph_attrs;
    for (const auto& a : n.attribute()) {
      if (!attr_names.insert(a.name()).second)
        return invalid_model("{}: attribute '{}' appears more than once", where, a.name());
      if (a.type() == onnx::AttributeProto::GRAPH) {
        graph_attrs.push_back(&a);
        continue;
      }
      if (!a.ref_attr_name().empty())
        return unsupported("{}: attribute '{}' refers to a function attribute", where, a.name());
      // '_'-prefixed attributes are graphc's own IR annotations (_trans_a,
      // _legacy_coerce_2d ...); no ONNX operator has one, and a model must
      // not be able to set them.
      if (!a.name().empty() && a.name()[0] == '_')
        return invalid_model(
            "{}: attribute '{}' is not an ONNX attribute (names starting with '_' "
            "are reserved for graphc)",
            where, a.name());
      auto attr = convert_attribute(a, tctx);
      if (!attr.ok()) return attr.status().with_context(where);
      ctx.node.attrs.set(a.name(), std::move(*attr));
    }
    // Outputs: trailing empty names are dropped, inner ones are omitted outputs.
    int nout = n.output_size();
    while (nout > 0 && n.output(nout - 1).empty()) --nout;
    for (int o = 0; o < nout; ++o) {
      if (n.output(o).empty()) {
        ctx.node.outputs.push_back(ir::kNoValue);
        continue;
      }
      auto id = define(n.output(o), ir::Value{});
      if (!id.ok()) return id.status().with_context(where);
      ctx.node.outputs.push_back(*id);
    }
    if (!graph_attrs.empty() || ir::op_info(ctx.node.op).category == ir::OpCategory::kControlFlow) {
      Status st = attach_subgraphs(model, model_dir, options, by_name, graph_attrs, ctx.node);
      if (!st.ok()) return st.with_context(where);
    }
    if (imp) {
      Status st = imp(ctx);
      if (!st.ok()) return st.with_context(where);
    }
    const auto& info = ir::op_info(ctx.node.op);
    auto nin = static_cast<int>(ctx.node.inputs.size());
    while (nin > info.min_inputs && ctx.node.inputs[static_cast<size_t>(nin) - 1] == ir::kNoValue)
      --nin;
    ctx.node.inputs.resize(static_cast<size_t>(nin));
    if (nin < info.min_inputs || (info.max_inputs >= 0 && nin > info.max_inputs))
      return invalid_model(
          "{} has {} inputs; {} takes {} to {}", where, nin, info.name, info.min_inputs,
          info.max_inputs < 0 ? std::string("any") : std::to_string(info.max_inputs));
    for (int k = 0; k < info.min_inputs; ++k)
      if (ctx.node.inputs[static_cast<size_t>(k)] == ir::kNoValue)
        return invalid_model("{}: required input {} is empty", where, k);
    auto nouts = static_cast<int>(ctx.node.outputs.size());
    if (nouts < info.min_outputs || (info.max_outputs >= 0 && nouts > info.max_outputs))
      return invalid_model(
          "{} has {} outputs; {} produces {} to {}", where, nouts, info.name, info.min_outputs,
          info.max_outputs < 0 ? std::string("any") : std::to_string(info.max_outputs));
    g.add_node(std::move(ctx.node));
  }

  std::unordered_set<std::string> output_names;
  for (const auto& out : graph.output()) {
    if (!output_names.insert(out.name()).second)
      return invalid_model("graph output '{}' is listed twice", out.name());
    if (partial && blocked_by.count(out.name())) {
      partial->skipped_outputs.emplace_back(out.name(), blocked_by.at(out.name()));
      continue;
    }
    auto it = by_name.find(out.name());
    if (it == by_name.end())
      return invalid_model(
          "graph output '{}' is not produced by any node and is not an input or initializer",
          out.name());
    g.outputs.push_back(it->second);
  }
  if (partial) {
    partial->model_outputs = g.outputs.size();
    for (const auto& name : cut_values)
      if (!output_names.count(name)) g.outputs.push_back(by_name.at(name));
    partial->cut_values = std::move(cut_values);
    if (!partial->unsupported.empty()) return g;  // what remains may output nothing
  }
  if (g.outputs.empty()) return invalid_model("the model declares no graph outputs");
  return g;
}

namespace {

std::string model_folder(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

}  // namespace

// Imports a parsed model, freeing its initializers' bytes as it goes.
Expected<Graph> import_parsed_model(onnx::ModelProto& model, const std::string& model_dir,
                                    const std::string& display_name, const ImportOptions& options) {
  auto g = import_graph(model, model.graph(), model_dir, options, false, nullptr,
                        model.mutable_graph());
  if (!g.ok()) return display_name.empty() ? g.status() : g.status().with_context(display_name);
  return g;
}

Expected<Graph> import_model_bytes(std::string_view bytes, const std::string& model_dir,
                                   const std::string& display_name, const ImportOptions& options) {
  auto fail = [&](const Status& st) -> Expected<Graph> {
    return display_name.empty() ? st : st.with_context(display_name);
  };
  onnx::ModelProto model;
  if (Status st = parse_model(bytes, options, model); !st.ok()) return fail(st);
  return import_parsed_model(model, model_dir, display_name, options);
}

Status unsupported_nodes_error(const std::vector<std::string>& messages) {
  if (messages.empty()) return Status::ok_status();
  if (messages.size() == 1) return unsupported("{}", messages[0]);
  return unsupported("{} nodes use operators graphc cannot compile:\n  {}", messages.size(),
                     fmt::join(messages, "\n  "));
}

Expected<PartialImport> import_model_file_partial(const std::string& path,
                                                  const ImportOptions& options) {
  onnx::ModelProto model;
  RETURN_IF_ERROR(parse_model_file(path, options, model));
  PartialImport result;
  auto g = import_graph(model, model.graph(), model_folder(path), options, false, &result,
                        model.mutable_graph());
  if (!g.ok()) return g.status().with_context(path);
  result.graph = std::move(*g);
  return result;
}

bool legacy_opset_safe(ir::OpKind kind) {
  using ir::OpKind;
  switch (ir::op_info(kind).category) {
    case ir::OpCategory::kUnary:
    case ir::OpCategory::kPooling:
    case ir::OpCategory::kReduction: return true;
    default: break;
  }
  switch (kind) {
    case OpKind::InstanceNormalization:
    case OpKind::LRN:
    case OpKind::Identity:
    case OpKind::Transpose:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Shape:
    case OpKind::Size:
    case OpKind::MatMul:
    case OpKind::Conv:
    case OpKind::Clip: return true;
    default: return false;
  }
}

Expected<Graph> import_model_file(const std::string& path, const ImportOptions& options) {
  onnx::ModelProto model;
  RETURN_IF_ERROR(parse_model_file(path, options, model));
  return import_parsed_model(model, model_folder(path), path, options);
}

Expected<Tensor> read_tensor_proto_file(const std::string& path) {
  onnx::TensorProto proto;
  RETURN_IF_ERROR(parse_tensor_file(path, proto));
  std::string dir = std::filesystem::path(path).parent_path().string();
  TensorLoadContext tctx{dir.empty() ? std::string(".") : dir, int64_t{16} << 30, nullptr};
  auto t = tensor_from_proto(proto, tctx);
  if (!t.ok()) return t.status().with_context(path);
  return t;
}

}  // namespace graphc::importer
