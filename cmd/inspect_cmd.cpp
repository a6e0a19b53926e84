// graphc inspect MODEL|ENGINE: what is in a model (inputs, outputs, ops, parameters),
// what the optimizer makes of it (the fusion report: one row per kernel, HBM
// traffic fused vs unfused, the memory plan), its IR (--ir) and a Graphviz
// dump (--dot: the fused graph, one cluster per kernel). Given an engine file
// (recognised by its magic), what the engine holds (driver/engine_report.h).
// --svg FILE also draws the fused graph with Graphviz (driver/fusion_dot.h):
// kernels as clusters coloured by kind, labelled with their modelled time.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cmd/cli_common.h"
#include "cmd/commands.h"
#include "cmd/graphviz.h"
#include "cmd/optimizer_flags.h"
#include "driver/engine_report.h"
#include "driver/fusion_dot.h"
#include "driver/fusion_report.h"
#include "driver/load_model.h"
#include "ir/printer.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "support/json.h"

namespace graphc::cli {

namespace {

struct InspectFlags {
  std::string model;
  ShapeFlags shapes;
  std::string svg;
  bool ir = false;
  bool dot = false;
  bool json = false;
  std::string gpu;  // the roofline's GPU; "": h100 for models, the arch's usual GPU for engines
  OptimizerFlags opt;
  LoweringFlags lowering;
};

struct ModelSummary {
  std::map<std::string, int64_t> op_counts;  // every node of the model, by operator
  std::map<std::string, int64_t> unsupported_counts, skipped_counts;  // of those: left out
  std::map<std::string, std::pair<int64_t, int64_t>> params_by_dtype;  // count, bytes
  int64_t param_count = 0, param_bytes = 0;
};

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

std::string human_bytes(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(int64_t{1} << 30));
  if (b >= (int64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

std::vector<std::string> output_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (auto id : g.outputs) names.push_back(g.value(id).name);
  return names;
}

// How many of g's outputs the partial import appended (the cut values).
size_t cut_count(const ir::Graph& g, const importer::PartialImport& partial) {
  return partial.unsupported.empty() ? 0 : g.outputs.size() - partial.model_outputs;
}

// `inspect --json` on a model (docs/inspect-json.md).
Json model_json(const std::string& path, const ir::Graph& g, bool inferred, const ModelSummary& s,
                const std::optional<driver::FusionReport>& fusion,
                const importer::PartialImport& partial) {
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
  std::vector<ir::ValueId> model_outputs(
      g.outputs.begin(), g.outputs.end() - static_cast<std::ptrdiff_t>(cut_count(g, partial)));
  doc["outputs"] = values_json(model_outputs);
  doc["shapes_inferred"] = inferred;
  doc["node_count"] =
      g.live_node_count() + static_cast<int64_t>(partial.unsupported.size() + partial.skipped.size());
  doc["ops"] = Json::object();
  for (const auto& [op, n] : s.op_counts) doc["ops"][op] = n;
  Json by_dtype = Json::object();
  for (const auto& [dt, e] : s.params_by_dtype)
    by_dtype[dt] = {{"count", e.first}, {"bytes", e.second}};
  doc["parameters"] = {{"count", s.param_count}, {"bytes", s.param_bytes}, {"by_dtype", by_dtype}};
  Json unsupported = Json::array();
  for (const auto& u : partial.unsupported)
    unsupported.push_back({{"node", u.node},
                           {"op_type", u.op_type},
                           {"domain", u.domain},
                           {"reason", u.message}});
  doc["unsupported"] = unsupported;
  Json skipped = Json::array();
  for (const auto& k : partial.skipped)
    skipped.push_back({{"node", k.node}, {"op_type", k.op_type}, {"after", k.after}});
  doc["not_compiled"] = skipped;
  Json skipped_outputs = Json::array();
  for (const auto& [name, after] : partial.skipped_outputs)
    skipped_outputs.push_back({{"name", name}, {"after", after}});
  doc["not_compiled_outputs"] = skipped_outputs;
  Json cut = Json::array();
  for (auto it = g.outputs.end() - static_cast<std::ptrdiff_t>(cut_count(g, partial));
       it != g.outputs.end(); ++it)
    cut.push_back(g.value(*it).name);
  doc["cut_values"] = cut;
  doc["fusion"] = fusion ? driver::report_json(*fusion) : Json(nullptr);
  return doc;
}


// The error a strict import gives, or ok when graphc takes every operator.
Status unsupported_error(const importer::PartialImport& partial, const std::string& model) {
  const auto& u = partial.unsupported;
  if (u.empty()) return Status::ok_status();
  if (u.size() == 1) return unsupported("{}", u[0].message).with_context(model);
  std::vector<std::string> lines;
  for (const auto& n : u) lines.push_back(n.message);
  return unsupported("{} nodes use operators graphc cannot compile:\n  {}", u.size(),
                     fmt::join(lines, "\n  "))
      .with_context(model);
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

// graphc inspect FILE.engine: the engine's header, code, bindings, memory and
// kernels. The reader validates everything first; a bad file is its error.
int inspect_engine(const InspectFlags& f) {
  if (f.ir || f.dot || !f.shapes.empty() || !f.svg.empty() || !f.gpu.empty())
    return report(invalid_argument(
        "--ir, --dot, --svg, --shape and --gpu apply to ONNX models, not engines (an engine's "
        "roofline: graphc run --profile)"));
  auto header = engine::read_engine_file_header(f.model);
  if (!header.ok()) return report(header.status());
  // Everything is validated, the weights' checksum too, streamed in chunks.
  auto file = engine::EngineFile::open(f.model);
  if (!file.ok()) return report(file.status());
  if (Status st = (*file)->for_each_weights_chunk(
          engine::kWeightsChunk, [](uint64_t, std::string_view) { return Status::ok_status(); });
      !st.ok())
    return report(st);
  const engine::EngineContents* contents = &(*file)->contents();
  std::error_code ec;
  driver::EngineReportInput in;
  in.path = f.model;
  in.file_bytes = std::filesystem::file_size(f.model, ec);
  in.header = *header;
  in.contents = contents;
  std::string out = f.json ? driver::engine_report_json(in) : driver::engine_report_text(in);
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

int run_inspect(const InspectFlags& f) {
  if (!f.model.empty() && driver::looks_like_engine(file_prefix(f.model, sizeof(engine::kMagic))))
    return inspect_engine(f);
  if (f.opt.print_passes) {
    std::fputs(optimizer::describe_pipeline().c_str(), stdout);
    return kExitOk;
  }
  if (f.model.empty()) return report(invalid_argument("inspect: a model file is required"));
  if (!f.gpu.empty())
    if (auto gpu = target::parse_gpu(f.gpu); !gpu.ok()) return report(gpu.status());
  auto pass_ctx = make_pass_context(f.opt);
  if (!pass_ctx.ok()) return report(pass_ctx.status());
  auto shapes = parse_shape_flags(f.shapes);
  if (!shapes.ok()) return report(shapes.status());
  // A model with operators graphc cannot compile is still summarised, with
  // the fusion report of the part it can compile, for triage; then exit 1.
  auto partial = driver::load_model_partial(f.model);
  if (!partial.ok()) return report(partial.status());
  const Status unsupported_status = unsupported_error(*partial, f.model);
  if (!unsupported_status.ok() && (f.ir || f.dot || !f.svg.empty()))
    return report(unsupported_status);
  // Shapes are inferred when every input dim is known (fixed or bound). The
  // summary and --dot work without them; --ir needs them (its error lists
  // every input with unbound symbolic dims).
  ir::Graph g = std::move(partial->graph);
  Status bind = driver::bind_input_shapes(g, *shapes);
  bool inferred = false;
  if (bind.ok()) {
    Status st = driver::infer_graph_shapes(g);
    if (!st.ok()) return report(st.with_context(f.model));
    inferred = true;
  } else if (!shapes->empty() || f.ir) {
    return report(bind.with_context(f.model));
  }
  if (f.ir) {
    std::fputs(ir::print_graph(g).c_str(), stdout);
    return kExitOk;
  }
  // The optimizer needs static shapes: it runs when they are inferred.
  std::optional<driver::FusionReport> fusion;
  ir::Graph optimized;
  if (inferred && !f.opt.no_optimize && !g.outputs.empty()) {
    optimized = g;
    auto lower = make_cuda_options(f.lowering);
    if (!lower.ok()) return report(lower.status());
    auto r = driver::optimize_and_report(optimized, *pass_ctx,
                                         std::make_shared<target::CudaTarget>(*lower));
    if (!r.ok()) return report(r.status().with_context(f.model));
    fusion = std::move(*r);
    if (!f.gpu.empty()) {
      auto gpu = target::parse_gpu(f.gpu);
      if (!gpu.ok()) return report(gpu.status());
      driver::apply_roofline(*fusion, *gpu);
    }
  }
  if (f.dot) {
    std::fputs(ir::graph_to_dot(fusion ? optimized : g).c_str(), stdout);
    return kExitOk;
  }
  if (!f.svg.empty()) {
    if (!fusion)
      return report(invalid_argument(
          "--svg draws the fused graph, so the optimizer must run: {}",
          f.opt.no_optimize ? "drop --no-optimize" : "bind the symbolic input dims with --shape"));
    auto svg = render_svg(driver::fusion_graph_dot(optimized, *fusion));
    if (!svg.ok()) return report(svg.status().with_context("--svg"));
    if (Status st = write_file_atomic(f.svg, *svg); !st.ok()) return report(st);
  }
  ModelSummary s = summarize(g, *partial);
  if (f.json) {
    std::fputs(dump_json(model_json(f.model, g, inferred, s, fusion, *partial)).c_str(), stdout);
    return unsupported_status.ok() ? kExitOk : report(unsupported_status);
  }
  std::string out = fmt::format("model     {}\nproducer  {}\nopset     {}\n", f.model,
                                g.producer.empty() ? "-" : g.producer, g.opset);
  out += "inputs\n";
  for (auto id : g.inputs)
    out += fmt::format("  {:<24} {}\n", g.value(id).name, ir::value_type_string(g.value(id)));
  out += "outputs\n";
  const size_t cut = cut_count(g, *partial);
  for (size_t i = 0; i + cut < g.outputs.size(); ++i) {
    const auto& v = g.value(g.outputs[i]);
    out += fmt::format("  {:<24} {}\n", v.name,
                       inferred ? ir::value_type_string(v)
                                : std::string("(bind symbolic dims with --shape to infer)"));
  }
  for (const auto& [name, after] : partial->skipped_outputs)
    out += fmt::format("  {:<24} (not compiled: after unsupported node '{}')\n", name, after);
  const auto left_out = static_cast<int64_t>(partial->unsupported.size() + partial->skipped.size());
  out += fmt::format("nodes     {}", g.live_node_count() + left_out);
  if (left_out > 0)
    out += fmt::format(" ({} unsupported, {} after them not compiled)", partial->unsupported.size(),
                       partial->skipped.size());
  out += "\n";
  for (const auto& [op, n] : s.op_counts) {
    std::string note;
    auto count_of = [&](const std::map<std::string, int64_t>& m) {
      auto it = m.find(op);
      return it == m.end() ? int64_t{0} : it->second;
    };
    if (int64_t u = count_of(s.unsupported_counts); u > 0)
      note = u == n ? "UNSUPPORTED" : fmt::format("{} UNSUPPORTED", u);
    if (int64_t k = count_of(s.skipped_counts); k > 0)
      note += fmt::format("{}{} after an unsupported node", note.empty() ? "" : ", ", k);
    out += note.empty() ? fmt::format("  {:<24} {}\n", op, n)
                        : fmt::format("  {:<24} {:<6}{}\n", op, n, note);
  }
  out += fmt::format("parameters {} ({})\n", s.param_count, human_bytes(s.param_bytes));
  for (const auto& [dt, e] : s.params_by_dtype)
    out += fmt::format("  {:<24} {} ({})\n", dt, e.first, human_bytes(e.second));
  if (!partial->unsupported.empty()) {
    out += "unsupported (graphc cannot compile these nodes)\n";
    for (const auto& u : partial->unsupported) out += fmt::format("  {}\n", u.message);
    if (!partial->skipped.empty()) {
      out += "not compiled (they read an unsupported node's result)\n";
      for (const auto& k : partial->skipped)
        out += fmt::format("  {:<24} {:<16} after '{}'\n", k.node, k.op_type, k.after);
    }
  }
  if (fusion) {
    if (!partial->unsupported.empty())
      out += fmt::format(
          "\nfusion report of the part graphc can compile (its outputs: {}):\n",
          g.outputs.empty() ? std::string("none")
                            : fmt::format("{}", fmt::join(output_names(g), ", ")));
    out += "\n" + driver::report_text(*fusion);
  } else if (!inferred) {
    out += "\nfusion report: bind the symbolic input dims with --shape to optimize\n";
  } else if (g.outputs.empty()) {
    out += "\nfusion report: no node before the unsupported ones to compile\n";
  }
  std::fputs(out.c_str(), stdout);
  return unsupported_status.ok() ? kExitOk : report(unsupported_status);
}

}  // namespace

CommandFn add_inspect_command(CLI::App& app) {
  auto flags = std::make_shared<InspectFlags>();
  auto* cmd = app.add_subcommand(
      "inspect",
      "Show a model's inputs, outputs, ops, parameters and fusion report, or what an engine "
      "file holds (code per arch, bindings, memory, kernels)");
  cmd->add_option("model,--onnx", flags->model, "ONNX model file or graphc engine file");
  add_shape_flags(cmd, flags->shapes);
  auto* ir = cmd->add_flag("--ir", flags->ir, "Print graphc's IR after shape inference");
  auto* dot =
      cmd->add_flag("--dot", flags->dot,
                    "Print the optimized graph in Graphviz dot format, one cluster per kernel");
  auto* json = cmd->add_flag("--json", flags->json,
                             "Print the summary and fusion report (or the engine report) as JSON "
                             "(docs/inspect-json.md)");
  auto* svg = cmd->add_option("--svg", flags->svg,
                              "Also draw the fused graph to this SVG file with Graphviz's dot: "
                              "kernels as clusters coloured by kind, with their modelled time");
  cmd->add_option("--gpu", flags->gpu,
                  "GPU whose datasheet peaks give each kernel's roofline: h100, h200, a100 or l4 "
                  "(default h100)");
  add_optimizer_flags(cmd, flags->opt);
  add_lowering_flags(cmd, flags->lowering);
  ir->excludes(dot)->excludes(json)->excludes(svg);
  dot->excludes(json)->excludes(svg);
  return [flags] { return run_inspect(*flags); };
}

}  // namespace graphc::cli
