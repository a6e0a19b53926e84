// Per-op import functions: each turns one ONNX node of a given opset into
// graphc's canonical node (newest-opset form). Most ops need none: the generic
// path copies inputs, outputs and attributes. Ops whose signature changed
// across opsets (axes attribute -> input, Clip min/max, Pad, Split, Slice,
// Softmax axis semantics, Upsample -> Resize ...) register a function here.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx/onnx.pb.h"

namespace graphc::importer {

struct NodeImportContext {
  ir::Graph& graph;
  const onnx::NodeProto& proto;
  int64_t opset;
  ir::Node node;  // prefilled by the generic path; edit in place

  // Adds a build-time constant value and returns its id (for attributes that
  // became inputs in newer opsets).
  ir::ValueId add_constant(const std::string& hint, ir::Tensor t) {
    return graph.add_constant(graph.unique_name(node.name + "/" + hint), std::move(t));
  }
  // Sets input `i`, padding with omitted inputs as needed.
  void set_input(size_t i, ir::ValueId id) {
    if (node.inputs.size() <= i) node.inputs.resize(i + 1, ir::kNoValue);
    node.inputs[i] = id;
  }
  // Moves an ints attribute into input `i` as an int64 tensor, if present.
  void move_ints_attr_to_input(const std::string& attr, size_t i) {
    if (const auto* a = node.attrs.find(attr)) {
      auto values = a->ints;
      set_input(i, add_constant(attr, ir::Tensor::from_i64(values, {static_cast<int64_t>(values.size())})));
      node.attrs.erase(attr);
    }
  }
};

using OpImporter = Status (*)(NodeImportContext&);
using ImporterTable = std::array<OpImporter, ir::kOpCount>;

// Each op group registers the importers it needs (nullptr = generic only).
void register_elementwise_importers(ImporterTable& table);
void register_data_movement_importers(ImporterTable& table);
void register_reduction_importers(ImporterTable& table);
void register_normalization_importers(ImporterTable& table);
void register_contraction_importers(ImporterTable& table);  // MatMul, Gemm, Einsum, Conv*
void register_pool_resize_importers(ImporterTable& table);  // pooling, Resize/Upsample
void register_attention_importers(ImporterTable& table);    // Attention (opsets 23-25)
void register_recurrent_importers(ImporterTable& table);    // RNN, GRU, LSTM
void register_control_flow_importers(ImporterTable& table); // Scan's opset-8 form
void register_signal_importers(ImporterTable& table);       // DFT's axis, RoiAlign's mode

const ImporterTable& importer_table();

// ONNX op names that map onto a graphc op under another name (Upsample -> Resize).
struct OpAlias {
  const char* onnx_name;
  ir::OpKind kind;
  OpImporter importer;
};
const std::vector<OpAlias>& op_aliases();

// Scatter (opsets 9-10) is ScatterElements without `reduction` (import_data_movement.cpp).
Status import_legacy_scatter(NodeImportContext& ctx);

}  // namespace graphc::importer
