// The graphc IR: values (typed, statically shaped, optionally constant) and
// nodes (an op from the op table, attributes, value ids in and out).
//
// Storage is index based: ValueId / NodeId index into the graph's vectors.
// Passes that delete nodes mark them dead and call compact() at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/op_table.h"
#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::ir {

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an omitted optional input

class Graph;

// The anchor family of a FusedGroup: it decides which kernel family renders
// the group (and what a library may take). kNone for every other node.
enum class FusionKind : uint8_t { kNone = 0, kElementwise, kReduction, kPool, kGemm, kConv };
// "elementwise", "reduction", "pool", "gemm", "conv" ("" for kNone): also the
// word in fused nodes' names ("fused_gemm/...").
std::string_view fusion_kind_name(FusionKind kind);

struct Value {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;  // static; valid when has_shape
  bool has_shape = false;
  std::vector<std::string> dim_names;  // graph inputs: symbolic dim names ("" = fixed)
  std::optional<Tensor> constant;      // initializers and build-time-known values
  bool is_initializer = false;         // came from the model's weights (vs folded)
  NodeId producer = -1;
};

struct Node {
  OpKind op = OpKind::Identity;
  std::string name;             // ONNX node name (made unique by the importer)
  std::vector<ValueId> inputs;  // kNoValue for omitted optional inputs
  std::vector<ValueId> outputs;
  AttributeMap attrs;
  bool dead = false;
  // ONNX nodes this node also stands for, after rewrites that merge nodes
  // (a BatchNorm folded into its Conv, a bias Add into a Gemm ...): reports
  // list them as covered. Never affects semantics.
  std::vector<std::string> absorbed;
  // FusedGroup only: the fused nodes as a sub-graph whose inputs/outputs map
  // 1:1 to this node's. Immutable once built (copies share it).
  std::shared_ptr<const Graph> body;
  FusionKind fusion = FusionKind::kNone;  // FusedGroup only
  // If (then_branch, else_branch), Loop and Scan (body): the ONNX graph
  // attributes as self-contained graphs. Every outer value a sub-graph reads
  // is an explicit trailing input of this node and of each sub-graph (their
  // count is the attribute `_captures`), so passes see every dependency.
  // Immutable once imported (copies share them).
  std::vector<std::shared_ptr<const Graph>> subgraphs;

  ValueId input(size_t i) const { return i < inputs.size() ? inputs[i] : kNoValue; }
  bool has_input(size_t i) const { return input(i) != kNoValue; }
};

class Graph {
 public:
  std::string name;
  int64_t opset = 0;     // default-domain opset the model was written for
  std::string producer;  // producer_name/version, for reports

  std::vector<Value> values;
  std::vector<Node> nodes;      // kept in topological order by the importer and passes
  std::vector<ValueId> inputs;  // runtime inputs (not initializers)
  std::vector<ValueId> outputs;

  ValueId add_value(Value v);
  ValueId add_constant(std::string name, Tensor t);
  NodeId add_node(Node n);  // sets producer links; appends at the end
  // Inserts a node before `position` in the node order (for passes).
  NodeId insert_node_before(NodeId position, Node n);

  Value& value(ValueId id) { return values[static_cast<size_t>(id)]; }
  const Value& value(ValueId id) const { return values[static_cast<size_t>(id)]; }
  Node& node(NodeId id) { return nodes[static_cast<size_t>(id)]; }
  const Node& node(NodeId id) const { return nodes[static_cast<size_t>(id)]; }

  std::optional<ValueId> find_value(const std::string& name) const;
  // Node ids that read `id` (live nodes only), in node order.
  std::vector<NodeId> consumers(ValueId id) const;
  bool is_graph_output(ValueId id) const;
  bool is_graph_input(ValueId id) const;

  // Replaces every use of `from` (node inputs and graph outputs) with `to`.
  void replace_all_uses(ValueId from, ValueId to);
  // Drops dead nodes and unreferenced values, renumbering ids.
  void compact();
  // Re-derives Value::producer from the node list.
  void rebuild_producers();
  // Fresh name for a value or node created by a pass ("base", "base_1", ...).
  std::string unique_name(const std::string& base);

  int64_t live_node_count() const;

 private:
  int64_t name_counter_ = 0;
};

// Orders live nodes so each comes after the producers of its inputs; fails on
// a cycle, naming a node on it.
Expected<std::vector<NodeId>> topological_order(const Graph& g);

}  // namespace graphc::ir
