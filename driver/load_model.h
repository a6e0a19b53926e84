// The front half of the compiler as one call: import an ONNX file, bind
// symbolic input dims, run graphc's shape inference with constant
// propagation, verify. Shared by cmd/ and tests so both see the same graph.
// (driver/ is not in DESIGN.md's table: it composes importer + reference, which
// neither may depend on, without putting logic in cmd/.)
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "importer/importer.h"
#include "ir/graph.h"

namespace graphc::driver {

struct LoadOptions {
  std::map<std::string, ir::Shape> input_shapes;  // --shape name:dims
  importer::ImportOptions import;
  bool infer = true;  // false: import only (shapes may stay symbolic)
};

Expected<ir::Graph> load_model(const std::string& path, const LoadOptions& options = {});
// As load_model, from a serialized model in memory (the Python package's
// bytes and ModelProto inputs). `name` stands for the path in errors; external
// data is refused (it would have no folder to live in).
Expected<ir::Graph> load_model_bytes(std::string_view bytes, const std::string& name,
                                     const LoadOptions& options = {});

// For triage: imports and verifies (no shape binding) what graphc can compile
// of a model whose operators it does not all take; `unsupported` lists the rest.
Expected<importer::PartialImport> load_model_partial(const std::string& path,
                                                     const importer::ImportOptions& options = {});

// Binds symbolic input dims (ir::bind_input_shapes: an unbound dim is an error
// listing every input and its symbolic dims), then checks that every input's
// element count is sane (no int64 overflow, within graphc's tensor limit).
Status bind_input_shapes(ir::Graph& graph, const std::map<std::string, ir::Shape>& shapes);

// Runs shape inference with reference-executor constant propagation.
Status infer_graph_shapes(ir::Graph& graph);

// Parses "name:1x3x224x224" (also "name:1,3,224,224"; "name:scalar" for rank 0).
Expected<std::pair<std::string, ir::Shape>> parse_shape_flag(const std::string& text);

}  // namespace graphc::driver
