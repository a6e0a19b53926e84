#include "cmd/inspect_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "driver/engine_report.h"
#include "driver/load_model.h"
#include "driver/range_graph.h"
#include "emit/plan/gpu_plan.h"
#include "engine_format/engine_file.h"
#include "target/roofline.h"

namespace graphc::cli {

namespace {

// `partial` adds the nodes graphc left out (unsupported, or after one) to the
// operator counts, so the table covers the whole model.
ModelSummary summarize(const ir::Graph& g, const importer::PartialImport& partial) {
  ModelSummary s;
  for (const auto& n : g.nodes)
    if (!n.dead) ++s.op_counts[std::string(ir::op_name(n.op))];
  for (const auto& u : partial.unsupported) {
    ++s.op_counts[u.op_type];
    ++s.unsupported_counts[u.op_type];
  }
  for (const auto& k : partial.skipped) {
    ++s.op_counts[k.op_type];
    ++s.skipped_counts[k.op_type];
  }
  for (const auto& v : g.values) {
    if (!v.is_initializer || !v.constant) continue;
    auto& e = s.params_by_dtype[std::string(ir::dtype_name(v.dtype))];
    e.first += v.constant->numel();
    e.second += static_cast<int64_t>(v.constant->byte_size());
    s.param_count += v.constant->numel();
    s.param_bytes += static_cast<int64_t>(v.constant->byte_size());
  }
  return s;
}

// The first bytes of `path`, or "" when it is not a regular file or cannot be
// read (the model loader then reports why).
std::string file_prefix(const std::string& path, size_t n) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "";  // a FIFO would block
  std::ifstream in(path, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return bytes;
}

}  // namespace

bool is_engine_input(const InspectFlags& f) {
  if (!f.model_bytes.empty()) return driver::looks_like_engine(f.model_bytes);
  return !f.model.empty() && driver::looks_like_engine(file_prefix(f.model, sizeof(engine::kMagic)));
}

// Over shape ranges: the model imported with its symbolic dims unbound, each
// profile checked over its whole range, then optimized and planned for the
// range that bounds them, as graphc build does (cmd/build_pipeline.cpp).
Expected<InspectedModel> inspect_over_range(const InspectFlags& f,
                                            std::vector<driver::ShapeProfile> profiles,
                                            optimizer::PassContext pass_ctx,
                                            std::optional<target::Gpu> gpu) {
  driver::LoadOptions load;
  load.infer = false;
  InspectedModel m;
  ASSIGN_OR_RETURN(m.graph, f.model_bytes.empty()
                                ? driver::load_model(f.model, load)
                                : driver::load_model_bytes(f.model_bytes, f.model, load));
  for (size_t i = 0; i < profiles.size(); ++i)
    RETURN_IF_ERROR(
        driver::check_profile_over_range(m.graph, profiles[i], i).with_context(f.model));
  m.summary = summarize(m.graph, m.partial);
  if (!f.opt.no_optimize) {
    ASSIGN_OR_RETURN(auto lower, make_cuda_options(f.lowering));
    lower.gemm.int8 = pass_ctx.int8_gemm;
    auto target = std::make_shared<target::CudaTarget>(lower);
    pass_ctx.target = target;
    auto r = driver::optimize_for_range(m.graph, driver::bounding_profile(profiles), 0, pass_ctx);
    if (!r.ok()) return r.status().with_context(f.model);
    auto plan = emit::lower_for_gpu(r->optimized, *target,
                                    {.allow_unlowered = true, .range = &r->symbolic});
    if (!plan.ok()) return plan.status().with_context(f.model);
    m.fusion = driver::report_from_plan(r->optimized, *plan, pass_ctx, m.graph.live_node_count());
    if (gpu) driver::apply_roofline(*m.fusion, *gpu);
    m.optimized = std::move(r->optimized);
  }
  m.profiles = std::move(profiles);
  return m;
}

Expected<InspectedModel> inspect_model(const InspectFlags& f, bool for_ir) {
  ASSIGN_OR_RETURN(auto pass_ctx, make_pass_context(f.opt));
  std::optional<target::Gpu> gpu;
  if (!f.gpu.empty()) {
    ASSIGN_OR_RETURN(auto parsed, target::parse_gpu(f.gpu));
    gpu = parsed;
  }
  // --ir prints one shape's IR: it keeps parse_shape_flags' error for ranges.
  ASSIGN_OR_RETURN(auto profiles, parse_shape_profiles(f.shapes));
  if (!for_ir && !driver::single_shape(profiles))
    return inspect_over_range(f, std::move(profiles), std::move(pass_ctx), gpu);
  ASSIGN_OR_RETURN(auto shapes, parse_shape_flags(f.shapes));
  driver::LoadOptions opts;
  opts.input_shapes = shapes;
  opts.infer = false;
  InspectedModel m;
  if (f.model_bytes.empty()) {
    // A model with operators graphc cannot compile is still summarised, with
    // the fusion report of the part it can compile, for triage.
    ASSIGN_OR_RETURN(m.partial, driver::load_model_partial(f.model));
    m.graph = std::move(m.partial.graph);
    m.partial.graph = ir::Graph{};
  } else {
    ASSIGN_OR_RETURN(m.graph, driver::load_model_bytes(f.model_bytes, f.model, opts));
  }
  // Shapes are inferred when every input dim is known (fixed or bound). The
  // summary and --dot work without them; --ir needs them (its error lists
  // every input with unbound symbolic dims).
  Status bind = driver::bind_input_shapes(m.graph, shapes);
  if (bind.ok()) {
    Status st = driver::infer_graph_shapes(m.graph);
    if (!st.ok()) return st.with_context(f.model);
    m.inferred = true;
  } else if (!shapes.empty() || for_ir) {
    return bind.with_context(f.model);
  }
  m.summary = summarize(m.graph, m.partial);
  if (for_ir) return m;
  // The optimizer needs static shapes: it runs when they are inferred.
  if (m.inferred && !f.opt.no_optimize && !m.graph.outputs.empty()) {
    m.optimized = m.graph;
    ASSIGN_OR_RETURN(auto lower, make_cuda_options(f.lowering));
    lower.gemm.int8 = pass_ctx.int8_gemm;
    auto r = driver::optimize_and_report(m.optimized, pass_ctx,
                                         std::make_shared<target::CudaTarget>(lower));
    if (!r.ok()) return r.status().with_context(f.model);
    m.fusion = std::move(*r);
    if (gpu) driver::apply_roofline(*m.fusion, *gpu);
  }
  return m;
}

size_t cut_count(const InspectedModel& m) {
  return m.partial.unsupported.empty() ? 0 : m.graph.outputs.size() - m.partial.model_outputs;
}

Status unsupported_error(const InspectedModel& m, const std::string& model) {
  const auto& u = m.partial.unsupported;
  std::vector<std::string> lines;
  for (const auto& n : u) lines.push_back(n.message);
  Status st = importer::unsupported_nodes_error(lines);
  return st.ok() ? st : st.with_context(model);
}

Json model_json(const std::string& path, const InspectedModel& m) {
  const ir::Graph& g = m.graph;
  const ModelSummary& s = m.summary;
  auto values_json = [&](const std::vector<ir::ValueId>& ids) {
    Json list = Json::array();
    for (ir::ValueId id : ids) {
      const auto& v = g.value(id);
      Json shape = nullptr;
      if (v.has_shape) {
        shape = Json::array();
        for (size_t d = 0; d < v.shape.size(); ++d) {
          if (d < v.dim_names.size() && !v.dim_names[d].empty())
            shape.push_back(v.dim_names[d]);
          else if (v.shape[d] < 0)
            shape.push_back(nullptr);
          else
            shape.push_back(v.shape[d]);
        }
      }
      list.push_back({{"name", v.name}, {"dtype", ir::dtype_name(v.dtype)}, {"shape", shape}});
    }
    return list;
  };
  Json doc = json_document();
  doc["model"] = path;
  doc["opset"] = g.opset;
  doc["producer"] = g.producer;
  doc["inputs"] = values_json(g.inputs);
  // With unsupported nodes, g's outputs end with the cut values (what the
  // left-out nodes read); "outputs" keeps to the model's own.
  const auto model_outputs = static_cast<std::ptrdiff_t>(g.outputs.size() - cut_count(m));
  doc["outputs"] = values_json({g.outputs.begin(), g.outputs.begin() + model_outputs});
  doc["shapes_inferred"] = m.inferred;
  doc["node_count"] = g.live_node_count() + static_cast<int64_t>(m.partial.unsupported.size() +
                                                                 m.partial.skipped.size());
  doc["ops"] = Json::object();
  for (const auto& [op, n] : s.op_counts) doc["ops"][op] = n;
  Json by_dtype = Json::object();
  for (const auto& [dt, e] : s.params_by_dtype)
    by_dtype[dt] = {{"count", e.first}, {"bytes", e.second}};
  doc["parameters"] = {{"count", s.param_count}, {"bytes", s.param_bytes}, {"by_dtype", by_dtype}};
  Json unsupported = Json::array();
  for (const auto& u : m.partial.unsupported)
    unsupported.push_back(
        {{"node", u.node}, {"op_type", u.op_type}, {"domain", u.domain}, {"reason", u.message}});
  doc["unsupported"] = unsupported;
  Json skipped = Json::array();
  for (const auto& k : m.partial.skipped)
    skipped.push_back({{"node", k.node}, {"op_type", k.op_type}, {"after", k.after}});
  doc["not_compiled"] = skipped;
  Json skipped_outputs = Json::array();
  for (const auto& [name, after] : m.partial.skipped_outputs)
    skipped_outputs.push_back({{"name", name}, {"after", after}});
  doc["not_compiled_outputs"] = skipped_outputs;
  Json cut = Json::array();
  for (auto it = g.outputs.begin() + model_outputs; it != g.outputs.end(); ++it)
    cut.push_back(g.value(*it).name);
  doc["cut_values"] = cut;
  // As `inspect ENGINE --json` writes them: per profile, each ranged input.
  Json profiles = Json::array();
  for (const auto& p : m.profiles) {
    Json inputs = Json::object();
    for (const auto& [name, r] : p.inputs)
      if (!r.is_static()) inputs[name] = {{"min", r.min}, {"opt", r.opt}, {"max", r.max}};
    profiles.push_back({{"inputs", std::move(inputs)}});
  }
  doc["profiles"] = std::move(profiles);
  doc["fusion"] = m.fusion ? driver::report_json(*m.fusion) : Json(nullptr);
  return doc;
}

Expected<std::string> inspect_engine(const InspectFlags& f, bool json) {
  driver::EngineReportInput in;
  in.path = f.model;
  engine::EngineContents contents;
  std::unique_ptr<engine::EngineFile> file;
  if (f.model_bytes.empty()) {
    ASSIGN_OR_RETURN(in.header, engine::read_engine_file_header(f.model));
    // Everything is validated, the weights' checksum too, streamed in chunks
    // (the weights are never held in memory).
    ASSIGN_OR_RETURN(file, engine::EngineFile::open(f.model));
    RETURN_IF_ERROR((file->for_each_weights_chunk(
        engine::kWeightsChunk, [](uint64_t, std::string_view) { return Status::ok_status(); })));
    std::error_code ec;
    in.file_bytes = std::filesystem::file_size(f.model, ec);
  } else {
    auto header = engine::read_engine_header(f.model_bytes);
    if (!header.ok()) return header.status().with_context(f.model);
    in.header = *header;
    auto parsed = engine::parse_engine(f.model_bytes);
    if (!parsed.ok()) return parsed.status().with_context(f.model);
    contents = std::move(*parsed);
    in.file_bytes = f.model_bytes.size();
  }
  in.contents = file ? &file->contents() : &contents;
  return json ? driver::engine_report_json(in) : driver::engine_report_text(in);
}

Expected<std::string> inspect_json(const InspectFlags& f) {
  if (is_engine_input(f)) return inspect_engine(f, /*json=*/true);
  if (f.model.empty() && f.model_bytes.empty())
    return invalid_argument("inspect: a model file is required");
  ASSIGN_OR_RETURN(auto m, inspect_model(f));
  return dump_json(model_json(f.model, m));
}

}  // namespace graphc::cli
