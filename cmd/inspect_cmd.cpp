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
  OptimizerFlags opt;
  LoweringFlags lowering;
};

struct ModelSummary {
  std::map<std::string, int64_t> op_counts;
  std::map<std::string, std::pair<int64_t, int64_t>> params_by_dtype;  // count, bytes
  int64_t param_count = 0, param_bytes = 0;
};

ModelSummary summarize(const ir::Graph& g) {
  ModelSummary s;
  for (const auto& n : g.nodes)
    if (!n.dead) ++s.op_counts[std::string(ir::op_name(n.op))];
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

// `inspect --json` on a model (docs/inspect-json.md).
Json model_json(const std::string& path, const ir::Graph& g, bool inferred, const ModelSummary& s,
                const std::optional<driver::FusionReport>& fusion) {
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
  doc["outputs"] = values_json(g.outputs);
  doc["shapes_inferred"] = inferred;
  doc["node_count"] = g.live_node_count();
  doc["ops"] = Json::object();
  for (const auto& [op, n] : s.op_counts) doc["ops"][op] = n;
  Json by_dtype = Json::object();
  for (const auto& [dt, e] : s.params_by_dtype)
    by_dtype[dt] = {{"count", e.first}, {"bytes", e.second}};
  doc["parameters"] = {{"count", s.param_count}, {"bytes", s.param_bytes}, {"by_dtype", by_dtype}};
  doc["fusion"] = fusion ? driver::report_json(*fusion) : Json(nullptr);
  return doc;
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
  if (f.ir || f.dot || !f.shapes.empty() || !f.svg.empty())
    return report(
        invalid_argument("--ir, --dot, --svg and --shape apply to ONNX models, not engines"));
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
  auto pass_ctx = make_pass_context(f.opt);
  if (!pass_ctx.ok()) return report(pass_ctx.status());
  auto shapes = parse_shape_flags(f.shapes);
  if (!shapes.ok()) return report(shapes.status());
  driver::LoadOptions opts;
  opts.input_shapes = *shapes;
  opts.infer = false;
  auto graph = driver::load_model(f.model, opts);
  if (!graph.ok()) return report(graph.status());
  // Shapes are inferred when every input dim is known (fixed or bound). The
  // summary and --dot work without them; --ir needs them (its error lists
  // every input with unbound symbolic dims).
  ir::Graph g = *graph;
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
  if (inferred && !f.opt.no_optimize) {
    optimized = g;
    auto lower = make_cuda_options(f.lowering);
    if (!lower.ok()) return report(lower.status());
    auto r = driver::optimize_and_report(optimized, *pass_ctx,
                                         std::make_shared<target::CudaTarget>(*lower));
    if (!r.ok()) return report(r.status().with_context(f.model));
    fusion = std::move(*r);
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
  ModelSummary s = summarize(g);
  if (f.json) {
    std::fputs(dump_json(model_json(f.model, g, inferred, s, fusion)).c_str(), stdout);
    return kExitOk;
  }
  std::string out = fmt::format("model     {}\nproducer  {}\nopset     {}\n", f.model,
                                g.producer.empty() ? "-" : g.producer, g.opset);
  out += "inputs\n";
  for (auto id : g.inputs)
    out += fmt::format("  {:<24} {}\n", g.value(id).name, ir::value_type_string(g.value(id)));
  out += "outputs\n";
  for (auto id : g.outputs)
    out += fmt::format("  {:<24} {}\n", g.value(id).name,
                       inferred ? ir::value_type_string(g.value(id))
                                : std::string("(bind symbolic dims with --shape to infer)"));
  out += fmt::format("nodes     {}\n", g.live_node_count());
  for (const auto& [op, n] : s.op_counts) out += fmt::format("  {:<24} {}\n", op, n);
  out += fmt::format("parameters {} ({})\n", s.param_count, human_bytes(s.param_bytes));
  for (const auto& [dt, e] : s.params_by_dtype)
    out += fmt::format("  {:<24} {} ({})\n", dt, e.first, human_bytes(e.second));
  if (fusion)
    out += "\n" + driver::report_text(*fusion);
  else if (!inferred)
    out += "\nfusion report: bind the symbolic input dims with --shape to optimize\n";
  std::fputs(out.c_str(), stdout);
  return kExitOk;
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
  add_optimizer_flags(cmd, flags->opt);
  add_lowering_flags(cmd, flags->lowering);
  ir->excludes(dot)->excludes(json)->excludes(svg);
  dot->excludes(json)->excludes(svg);
  return [flags] { return run_inspect(*flags); };
}

}  // namespace graphc::cli
