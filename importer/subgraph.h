// Sub-graphs of If, Loop and Scan (importer-internal). A sub-graph is imported
// as a graph of its own whose extra trailing inputs are the outer values it
// reads (captures); the node gets the same values as trailing inputs and the
// attribute `_captures`, so the IR holds no implicit references across scopes.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "importer/importer.h"
#include "ir/graph.h"
#include "onnx/onnx.pb.h"

namespace graphc::importer {

// Imports one graph of `model` (its main graph, or a sub-graph whose inputs
// may be untyped). `partial` (main graph only): leave out unsupported nodes and
// what depends on them, recording them there, instead of failing.
// `consumable`: the same graph, owned by the caller and not read again; each
// initializer's bytes are freed there once its tensor holds them.
Expected<ir::Graph> import_graph(const onnx::ModelProto& model, const onnx::GraphProto& graph,
                                 const std::string& model_dir, const ImportOptions& options,
                                 bool is_subgraph, PartialImport* partial = nullptr,
                                 onnx::GraphProto* consumable = nullptr);

// Imports the graph attributes of `node` (an If, Loop or Scan) into
// node.subgraphs, appending the captured values of `outer` to its inputs.
Status attach_subgraphs(const onnx::ModelProto& model, const std::string& model_dir,
                        const ImportOptions& options,
                        const std::unordered_map<std::string, ir::ValueId>& outer,
                        const std::vector<const onnx::AttributeProto*>& graph_attrs,
                        ir::Node& node);

}  // namespace graphc::importer
