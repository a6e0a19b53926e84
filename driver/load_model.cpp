#include "driver/load_model.h"

#include <charconv>

#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "reference/executor.h"
#include "support/checked_math.h"

namespace graphc::driver {

Status infer_graph_shapes(ir::Graph& graph) {
  ir::ShapeInferenceOptions opts;
  opts.evaluator = reference::constant_evaluator();
  RETURN_IF_ERROR(ir::infer_shapes(graph, opts));
  return ir::verify(graph, {.require_shapes = true});
}

Status bind_input_shapes(ir::Graph& graph, const std::map<std::string, ir::Shape>& shapes) {
  RETURN_IF_ERROR(ir::bind_input_shapes(graph, shapes));
  const int64_t limit = ir::ShapeInferenceOptions{}.max_tensor_elements;
  for (ir::ValueId id : graph.inputs) {
    const ir::Value& v = graph.value(id);
    auto numel = checked_numel(v.shape);
    if (!numel || *numel > limit)
      return invalid_argument("input '{}' of shape {} is larger than graphc's {}-element limit",
                              v.name, ir::shape_to_string(v.shape), limit);
  }
  return Status::ok_status();
}

namespace {

// Verify, bind the input shapes and infer, as both loaders do after importing.
Expected<ir::Graph> finish_load(ir::Graph graph, const std::string& path,
                                const LoadOptions& options) {
  Status st = ir::verify(graph);
  if (!st.ok()) return st.with_context(path);
  if (!options.infer) return graph;
  st = driver::bind_input_shapes(graph, options.input_shapes);
  if (!st.ok()) return st.with_context(path);
  st = infer_graph_shapes(graph);
  if (!st.ok()) return st.with_context(path);
  return graph;
}

}  // namespace

Expected<ir::Graph> load_model(const std::string& path, const LoadOptions& options) {
  ASSIGN_OR_RETURN(ir::Graph graph, importer::import_model_file(path, options.import));
  return finish_load(std::move(graph), path, options);
}

Expected<ir::Graph> load_model_bytes(std::string_view bytes, const std::string& name,
                                     const LoadOptions& options) {
  ASSIGN_OR_RETURN(ir::Graph graph, importer::import_model_bytes(bytes, "", name, options.import));
  return finish_load(std::move(graph), name, options);
}

Expected<importer::PartialImport> load_model_partial(const std::string& path,
                                                     const importer::ImportOptions& options) {
  ASSIGN_OR_RETURN(importer::PartialImport partial,
                   importer::import_model_file_partial(path, options));
  Status st = ir::verify(partial.graph);
  if (!st.ok()) return st.with_context(path);
  return partial;
}

Expected<std::pair<std::string, ir::Shape>> parse_shape_flag(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return invalid_argument("--shape '{}' must look like NAME:DxDx... (e.g. input:1x3x224x224)",
                            text);
  std::string name = text.substr(0, colon);
  std::string dims = text.substr(colon + 1);
  ir::Shape shape;
  if (dims == "scalar") return std::make_pair(name, shape);
  if (dims.empty())
    return invalid_argument("--shape '{}' has no dims after ':' (use NAME:scalar for rank 0)",
                            text);
  size_t pos = 0;
  while (pos <= dims.size()) {
    size_t end = dims.find_first_of("x,", pos);
    if (end == std::string::npos) end = dims.size();
    std::string part = dims.substr(pos, end - pos);
    int64_t d = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || d < 0)
      return invalid_argument("--shape '{}': '{}' is not a non-negative integer dim", text, part);
    shape.push_back(d);
    pos = end + 1;
  }
  return std::make_pair(name, shape);
}

}  // namespace graphc::driver
