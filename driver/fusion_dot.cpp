#include "driver/fusion_dot.h"

#include <deque>
#include <map>
#include <set>

#include "ir/printer.h"
#include "support/json.h"

namespace graphc::driver {

namespace {

// Graphviz wants UTF-8 in a double-quoted string: invalid bytes become
// U+FFFD, quotes and backslashes are escaped, control characters shown as '?'.
std::string label_text(const std::string& s) {
  std::string out;
  for (char c : valid_utf8(s)) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  }
  return out;
}

struct KindStyle {
  const char* kind;
  const char* fill;
};
// Fill colours per kernel kind (emit::kernel_kind_name); anything else is grey.
constexpr KindStyle kStyles[] = {
    {"fused elementwise", "#9ecae1"},
    {"elementwise", "#deebf7"},
    {"reduction", "#a1d99b"},
    {"gemm", "#fdae6b"},
    {"conv", "#fdd0a2"},
    {"pool", "#bcbddc"},
    {"data movement", "#d9d9d9"},
    {"view (no kernel)", "#ffffff"},
};

const char* fill_of(const std::string& kind) {
  for (const auto& s : kStyles)
    if (kind == s.kind) return s.fill;
  return "#f0f0f0";
}

std::string human(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(int64_t{1} << 30));
  if (b >= (int64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

std::string cluster_label(size_t index, const KernelRow& row, target::Gpu gpu) {
  std::string head = fmt::format("#{} {}", index, row.kind);
  if (!row.lowering.empty()) head += " (" + row.lowering + ")";
  std::string label = label_text(head) + "\\n" + label_text(row.name);
  if (row.kind.rfind("view", 0) != 0)
    label += fmt::format("\\nroofline {:.3g} us on {} ({}-bound): {} HBM{}", row.roofline.us(),
                         target::gpu_long_name(gpu), row.roofline.bound(), human(row.bytes_fused),
                         row.flops > 0 ? fmt::format(", {:.3g} GFLOP", row.flops * 1e-9) : "");
  return label;
}

}  // namespace

std::string fusion_graph_dot(const ir::Graph& g, const FusionReport& report) {
  // IR node name -> the report rows covering it, in row order (a group the
  // library takes in part is two rows; names are unique, so usually one).
  std::map<std::string, std::deque<size_t>> rows_of;
  for (size_t r = 0; r < report.rows.size(); ++r)
    for (const auto& n : report.rows[r].onnx_nodes) rows_of[n].push_back(r);
  auto row_of = [&](const std::string& name) -> long {
    auto it = rows_of.find(name);
    if (it == rows_of.end() || it->second.empty()) return -1;
    const size_t r = it->second.front();
    if (it->second.size() > 1) it->second.pop_front();  // the next node of that name
    return static_cast<long>(r);
  };

  // Leaves: plain nodes and the nodes inside fused groups, each with its row.
  struct Leaf {
    std::string id, label;
  };
  std::map<long, std::vector<Leaf>> by_row;  // -1: not in any row
  std::string edges;
  auto source_of = [&](ir::ValueId v) -> std::string {
    const ir::Value& value = g.value(v);
    if (value.producer < 0) return g.is_graph_input(v) ? fmt::format("v{}", v) : "";
    const ir::Node& n = g.node(value.producer);
    if (n.body)
      for (size_t k = 0; k < n.outputs.size() && k < n.body->outputs.size(); ++k)
        if (n.outputs[k] == v) {
          const ir::NodeId bp = n.body->value(n.body->outputs[k]).producer;
          if (bp >= 0) return fmt::format("n{}_{}", value.producer, bp);
        }
    return fmt::format("n{}", value.producer);
  };
  auto edge = [&](ir::ValueId from, const std::string& to) {
    const std::string src = source_of(from);
    if (src.empty()) return;  // a constant
    edges += fmt::format("  {} -> {} [label=\"{}\"];\n", src, to,
                         label_text(ir::value_type_string(g.value(from))));
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (n.dead) continue;
    if (!n.body) {
      const std::string id = fmt::format("n{}", i);
      by_row[row_of(n.name)].push_back(
          {id, fmt::format("{}\\n{}", ir::op_name(n.op), label_text(n.name))});
      for (ir::ValueId in : n.inputs)
        if (in != ir::kNoValue) edge(in, id);
      continue;
    }
    const ir::Graph& body = *n.body;
    for (size_t j = 0; j < body.nodes.size(); ++j) {
      const ir::Node& b = body.nodes[j];
      if (b.dead) continue;
      const std::string id = fmt::format("n{}_{}", i, j);
      by_row[row_of(b.name)].push_back(
          {id, fmt::format("{}\\n{}", ir::op_name(b.op), label_text(b.name))});
      for (ir::ValueId bin : b.inputs) {
        if (bin == ir::kNoValue) continue;
        const ir::NodeId bp = body.value(bin).producer;
        if (bp >= 0) {
          edges += fmt::format("  n{}_{} -> {};\n", i, bp, id);
          continue;
        }
        for (size_t k = 0; k < body.inputs.size() && k < n.inputs.size(); ++k)
          if (body.inputs[k] == bin && n.inputs[k] != ir::kNoValue) edge(n.inputs[k], id);
      }
    }
  }

  std::string out =
      "digraph graphc {\n  rankdir=TB;\n  compound=true;\n"
      "  node [fontname=\"monospace\", shape=box, style=filled, fillcolor=white];\n"
      "  edge [fontname=\"monospace\", fontsize=9];\n";
  for (ir::ValueId in : g.inputs)
    out +=
        fmt::format("  v{} [shape=ellipse, label=\"{}\\n{}\"];\n", in, label_text(g.value(in).name),
                    label_text(ir::value_type_string(g.value(in))));
  std::set<std::string> kinds;
  for (const auto& [row, leaves] : by_row) {
    const bool cluster = row >= 0;
    std::string indent = cluster ? "    " : "  ";
    if (cluster) {
      const KernelRow& r = report.rows[static_cast<size_t>(row)];
      kinds.insert(r.kind);
      out += fmt::format(
          "  subgraph cluster_k{} {{\n    label=\"{}\";\n    style=\"rounded,filled{}\";\n"
          "    fillcolor=\"{}\";\n    fontname=\"monospace\";\n",
          row, cluster_label(static_cast<size_t>(row), r, report.gpu),
          r.kind.rfind("view", 0) == 0 ? ",dashed" : "", fill_of(r.kind));
    }
    for (const Leaf& l : leaves)
      out += fmt::format("{}{} [label=\"{}\"];\n", indent, l.id, l.label);
    if (cluster) out += "  }\n";
  }
  out += edges;
  for (ir::ValueId o : g.outputs) {
    out += fmt::format("  o{} [shape=ellipse, label=\"{}\"];\n", o, label_text(g.value(o).name));
    if (std::string src = source_of(o); !src.empty()) out += fmt::format("  {} -> o{};\n", src, o);
  }
  // Legend: the kinds drawn, in their colours.
  out += "  subgraph cluster_legend {\n    label=\"kernel kinds\";\n    fontname=\"monospace\";\n";
  int k = 0;
  for (const auto& kind : kinds)
    out += fmt::format("    legend{} [label=\"{}\", fillcolor=\"{}\"];\n", k++, label_text(kind),
                       fill_of(kind));
  out += "  }\n}\n";
  return out;
}

}  // namespace graphc::driver
