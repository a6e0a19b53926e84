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
#include "cmd/inspect_model.h"
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

std::string human_bytes(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(int64_t{1} << 30));
  if (b >= (int64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

// graphc inspect FILE.engine: the engine's header, code, bindings, memory and
// kernels.
int run_inspect_engine(const InspectFlags& f) {
  if (f.ir || f.dot || !f.shapes.empty() || !f.svg.empty() || !f.gpu.empty())
    return report(invalid_argument(
        "--ir, --dot, --svg, --shape and --gpu apply to ONNX models, not engines (an engine's "
        "roofline: graphc run --profile)"));
  auto out = inspect_engine(f, f.json);
  if (!out.ok()) return report(out.status());
  std::fputs(out->c_str(), stdout);
  return kExitOk;
}

int run_inspect(const InspectFlags& f) {
  if (is_engine_input(f)) return run_inspect_engine(f);
  if (f.opt.print_passes) {
    std::fputs(optimizer::describe_pipeline().c_str(), stdout);
    return kExitOk;
  }
  if (f.model.empty()) return report(invalid_argument("inspect: a model file is required"));
  auto inspected = inspect_model(f, f.ir);
  if (!inspected.ok()) return report(inspected.status());
  const ir::Graph& g = inspected->graph;
  const bool inferred = inspected->inferred;
  const auto& fusion = inspected->fusion;
  const ir::Graph& optimized = inspected->optimized;
  const importer::PartialImport& partial = inspected->partial;
  // A model with unsupported nodes: --ir, --dot and --svg need the whole model.
  const Status unsupported_status = unsupported_error(*inspected, f.model);
  if (!unsupported_status.ok() && (f.ir || f.dot || !f.svg.empty()))
    return report(unsupported_status);
  if (f.ir) {
    std::fputs(ir::print_graph(g).c_str(), stdout);
    return kExitOk;
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
  const ModelSummary& s = inspected->summary;
  if (f.json) {
    std::fputs(dump_json(model_json(f.model, *inspected)).c_str(), stdout);
    return unsupported_status.ok() ? kExitOk : report(unsupported_status);
  }
  std::string out = fmt::format("model     {}\nproducer  {}\nopset     {}\n", f.model,
                                g.producer.empty() ? "-" : g.producer, g.opset);
  out += "inputs\n";
  for (auto id : g.inputs)
    out += fmt::format("  {:<24} {}\n", g.value(id).name, ir::value_type_string(g.value(id)));
  if (!inspected->profiles.empty()) {
    out += fmt::format(
        "shapes    over {} (min / opt / max; kernels and roofline at the opt shapes)\n",
        inspected->profiles.size() == 1 ? std::string("1 profile")
                                        : fmt::format("{} profiles", inspected->profiles.size()));
    for (size_t p = 0; p < inspected->profiles.size(); ++p) {
      std::string ranges;
      for (const auto& [name, r] : inspected->profiles[p].inputs)
        if (!r.is_static())  // as inspect ENGINE: the inputs that vary
          ranges +=
              fmt::format("{}{}: {}", ranges.empty() ? "" : ", ", name, driver::range_to_string(r));
      out += fmt::format("  profile {}: {}\n", p, ranges);
    }
  }
  out += "outputs\n";
  const size_t cut = cut_count(*inspected);
  for (size_t i = 0; i + cut < g.outputs.size(); ++i) {
    const auto& v = g.value(g.outputs[i]);
    out += fmt::format("  {:<24} {}\n", v.name,
                       inferred ? ir::value_type_string(v)
                       : !inspected->profiles.empty()
                           ? std::string("(follows the inputs over the range)")
                           : std::string("(bind symbolic dims with --shape to infer)"));
  }
  for (const auto& [name, after] : partial.skipped_outputs)
    out += fmt::format("  {:<24} (not compiled: after unsupported node '{}')\n", name, after);
  const auto left_out = static_cast<int64_t>(partial.unsupported.size() + partial.skipped.size());
  out += fmt::format("nodes     {}", g.live_node_count() + left_out);
  if (left_out > 0)
    out += fmt::format(" ({} unsupported, {} after them not compiled)", partial.unsupported.size(),
                       partial.skipped.size());
  out += "\n";
  for (const auto& [op_name, n] : s.op_counts) {
    // A named copy: lambdas may not capture structured bindings before C++20 (clang refuses).
    const std::string& op = op_name;
    auto count_of = [&](const std::map<std::string, int64_t>& m) {
      auto it = m.find(op);
      return it == m.end() ? int64_t{0} : it->second;
    };
    std::string note;
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
  if (!partial.unsupported.empty()) {
    out += "unsupported (graphc cannot compile these nodes)\n";
    for (const auto& u : partial.unsupported) out += fmt::format("  {}\n", u.message);
    if (!partial.skipped.empty()) {
      out += "not compiled (they read an unsupported node's result)\n";
      for (const auto& k : partial.skipped)
        out += fmt::format("  {:<24} {:<16} after '{}'\n", k.node, k.op_type, k.after);
    }
  }
  if (fusion) {
    if (!partial.unsupported.empty()) {
      std::vector<std::string> names;
      for (auto id : g.outputs) names.push_back(g.value(id).name);
      out += fmt::format("\nfusion report of the part graphc can compile (its outputs: {}):\n",
                         fmt::join(names, ", "));
    }
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
