#include "ir/printer.h"

#include <fmt/format.h>

#include <map>

namespace graphc::ir {

std::string value_type_string(const Value& v) {
  std::string dims;
  if (!v.has_shape) {
    dims = "?";
  } else {
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (d) dims += 'x';
      bool sym = d < v.dim_names.size() && !v.dim_names[d].empty();
      dims += sym ? v.dim_names[d] : (v.shape[d] < 0 ? "?" : std::to_string(v.shape[d]));
    }
  }
  return fmt::format("{}[{}]", dtype_name(v.dtype), dims);
}

namespace {
std::string indent_lines(const std::string& text, const std::string& pad) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += pad + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}
}  // namespace

std::string print_graph(const Graph& g) {
  std::string out =
      fmt::format("graph {} (opset {}) {{\n", g.name.empty() ? "main" : g.name, g.opset);
  for (ValueId in : g.inputs)
    out += fmt::format("  input  %{} : {}\n", g.value(in).name, value_type_string(g.value(in)));
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.constant && v.producer < 0 && v.is_initializer)
      out += fmt::format("  const  %{} : {}\n", v.name, value_type_string(v));
  }
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    std::string outs, ins, attrs;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (i) outs += ", ";
      outs += n.outputs[i] == kNoValue ? "_"
                                       : fmt::format("%{}: {}", g.value(n.outputs[i]).name,
                                                     value_type_string(g.value(n.outputs[i])));
    }
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (i) ins += ", ";
      if (n.inputs[i] == kNoValue) {
        ins += "_";
        continue;
      }
      const Value& v = g.value(n.inputs[i]);
      ins += "%" + v.name;
      if (v.constant && v.producer < 0 && !v.is_initializer) {
        const Tensor& t = *v.constant;
        if (t.numel() <= 8 && !is_float(t.dtype()))
          ins += fmt::format("={{{}}}", fmt::join(t.to_i64_vector(), ","));
      }
    }
    // A FusedGroup's kind prints as the attribute it reads like, in key order.
    std::map<std::string, std::string> shown;
    for (const auto& [k, a] : n.attrs.items()) shown[k] = a.to_string();
    if (n.fusion != FusionKind::kNone)
      shown["kind"] = Attribute::of_string(std::string(fusion_kind_name(n.fusion))).to_string();
    for (const auto& [k, text] : shown) attrs += fmt::format(" {}={}", k, text);
    out += fmt::format("  {} = {}({}){}  # {}\n", outs, op_name(n.op), ins, attrs, n.name);
    if (n.body) out += indent_lines(print_graph(*n.body), "    | ");
    for (const auto& sub : n.subgraphs)
      if (sub) out += indent_lines(print_graph(*sub), "    | ");
  }
  std::string outs;
  for (size_t i = 0; i < g.outputs.size(); ++i)
    outs += fmt::format("{}%{}", i ? ", " : "", g.value(g.outputs[i]).name);
  out += fmt::format("  return {}\n}}\n", outs);
  return out;
}

namespace {
std::string dot_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}
}  // namespace

std::string graph_to_dot(const Graph& g) {
  // A FusedGroup is drawn as a cluster (one kernel) holding its body's nodes;
  // an edge into the cluster goes to the body node that reads the value.
  std::string out =
      "digraph graphc {\n  rankdir=TB;\n  compound=true;\n  node [fontname=\"monospace\"];\n";
  // The dot id of the node that produces `v` (inside a cluster when fused).
  auto source_of = [&](ValueId v) -> std::string {
    NodeId p = g.value(v).producer;
    const Node& n = g.nodes[static_cast<size_t>(p)];
    if (!n.body) return fmt::format("n{}", p);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] != v || k >= n.body->outputs.size()) continue;
      NodeId bp = n.body->value(n.body->outputs[k]).producer;
      if (bp >= 0) return fmt::format("n{}_{}", p, bp);
    }
    return fmt::format("n{}", p);
  };
  auto edge_from = [&](ValueId in, const std::string& to) {
    const Value& v = g.value(in);
    if (v.producer >= 0)
      out += fmt::format("  {} -> {} [label=\"{}\"];\n", source_of(in), to, value_type_string(v));
    else if (g.is_graph_input(in))
      out += fmt::format("  v{} -> {};\n", in, to);
  };
  for (ValueId in : g.inputs)
    out += fmt::format("  v{} [shape=ellipse,label=\"{}\\n{}\"];\n", in,
                       dot_escape(g.value(in).name), value_type_string(g.value(in)));
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead) continue;
    if (!n.body) {
      out += fmt::format("  n{} [shape=box,label=\"{}\\n{}\"];\n", i, op_name(n.op),
                         dot_escape(n.name));
      for (ValueId in : n.inputs)
        if (in != kNoValue) edge_from(in, fmt::format("n{}", i));
      continue;
    }
    const Graph& body = *n.body;
    out += fmt::format(
        "  subgraph cluster_{} {{\n    label=\"{} kernel: {}\";\n    style=rounded;\n", i,
        dot_escape(n.fusion == FusionKind::kNone ? std::string("fused")
                                                 : std::string(fusion_kind_name(n.fusion))),
        dot_escape(n.name));
    for (size_t j = 0; j < body.nodes.size(); ++j) {
      const Node& b = body.nodes[j];
      if (b.dead) continue;
      out += fmt::format("    n{}_{} [shape=box,label=\"{}\\n{}\"];\n", i, j, op_name(b.op),
                         dot_escape(b.name));
    }
    out += "  }\n";
    for (size_t j = 0; j < body.nodes.size(); ++j) {
      const Node& b = body.nodes[j];
      if (b.dead) continue;
      std::string to = fmt::format("n{}_{}", i, j);
      for (ValueId bin : b.inputs) {
        if (bin == kNoValue) continue;
        NodeId bp = body.value(bin).producer;
        if (bp >= 0) {
          out += fmt::format("  n{}_{} -> {};\n", i, bp, to);
          continue;
        }
        for (size_t k = 0; k < body.inputs.size() && k < n.inputs.size(); ++k)
          if (body.inputs[k] == bin && n.inputs[k] != kNoValue) edge_from(n.inputs[k], to);
      }
    }
  }
  for (ValueId o : g.outputs) {
    out += fmt::format("  o{} [shape=ellipse,label=\"{}\"];\n", o, dot_escape(g.value(o).name));
    if (g.value(o).producer >= 0) out += fmt::format("  {} -> o{};\n", source_of(o), o);
  }
  return out + "}\n";
}

}  // namespace graphc::ir
