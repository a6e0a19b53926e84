#include "driver/fusion_report.h"

#include "emit/gpu_plan.h"
#include "ir/printer.h"

namespace graphc::driver {

namespace {
std::string human(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(int64_t{1} << 30));
  if (b >= (int64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", c);
      continue;
    }
    out += c;
  }
  return out + "\"";
}
}  // namespace

Expected<FusionReport> optimize_and_report(ir::Graph& graph, optimizer::PassContext& ctx,
                                           const emit::GemmOptions& gemm,
                                           const emit::ConvOptions& conv) {
  FusionReport r;
  r.onnx_nodes = graph.live_node_count();
  RETURN_IF_ERROR(optimizer::run_passes(graph, ctx));
  // The kernels an engine launches: gemm/conv groups a library takes only in part
  // are split as lower_for_gpu splits them (a library call, then a generated
  // epilogue kernel); `graph` itself stays the optimizer's.
  ASSIGN_OR_RETURN(const ir::Graph kernels,
                   emit::split_library_epilogues(graph, emit::library_epilogue_takes(gemm, conv)));
  auto schedule = emit::make_schedule(kernels);
  ASSIGN_OR_RETURN(auto plan, emit::plan_buffers(kernels, schedule));
  for (const auto& k : schedule.kernels) {
    const ir::Node& n = kernels.node(k.node);
    if (k.kind == emit::KernelKind::kView) {
      ++r.views;
    } else {
      ++r.kernels;
    }
    KernelRow row;
    row.kind = emit::kernel_kind_name(k.kind);
    row.name = n.name;
    row.onnx_nodes = k.onnx_nodes;
    row.onnx_ops = k.onnx_ops;
    row.output = n.outputs.empty() ? "-" : ir::value_type_string(kernels.value(n.outputs[0]));
    row.bytes_fused = k.bytes_fused;
    row.bytes_unfused = k.bytes_unfused;
    if (k.kind == emit::KernelKind::kGemm)
      row.lowering = emit::choose_gemm_lowering(kernels, k.node, gemm).reason;
    if (k.kind == emit::KernelKind::kConv)
      row.lowering = emit::choose_conv_lowering(kernels, k.node, conv).reason;
    r.bytes_fused += k.bytes_fused;
    r.bytes_unfused += k.bytes_unfused;
    r.rows.push_back(std::move(row));
  }
  r.arena_naive = plan.naive_bytes;
  r.arena_planned = plan.arena_bytes;
  r.arena_lower_bound = plan.lower_bound_bytes;
  for (const auto& v : graph.values)
    if (v.constant && v.producer < 0)
      r.parameter_bytes[std::string(ir::dtype_name(v.dtype))] +=
          static_cast<int64_t>(v.constant->byte_size());
  r.pass_counters = ctx.counters;
  r.precision = ctx.precision == optimizer::Precision::kFp16   ? "fp16"
                : ctx.precision == optimizer::Precision::kBf16 ? "bf16"
                                                               : "fp32";
  r.precision_notes = ctx.precision_notes;
  r.attention_notes = ctx.attention_notes;
  return r;
}

std::string report_text(const FusionReport& r) {
  std::string out = fmt::format("kernels: {} ONNX nodes -> {} kernels ({} views launch nothing)\n",
                                r.onnx_nodes, r.kernels, r.views);
  out += fmt::format("  {:>4}  {:<18} {:<28} {:>11} {:>11}  {}\n", "#", "kind", "output",
                     "HBM fused", "unfused", "ONNX nodes");
  int i = 0;
  for (const auto& row : r.rows) {
    std::string nodes = fmt::format("{}", fmt::join(row.onnx_nodes, ", "));
    if (nodes.size() > 100) nodes = nodes.substr(0, 97) + "...";
    out += fmt::format("  {:>4}  {:<18} {:<28} {:>11} {:>11}  {}\n", i++, row.kind, row.output,
                       human(row.bytes_fused), human(row.bytes_unfused), nodes);
  }
  bool lowering_header = false;
  for (size_t k = 0; k < r.rows.size(); ++k) {
    if (r.rows[k].lowering.empty()) continue;
    if (!lowering_header) out += "library lowering (gemm: cuBLASLt, conv: cuDNN):\n";
    lowering_header = true;
    out += fmt::format("  {:>4}  {}: {}\n", k, r.rows[k].name, r.rows[k].lowering);
  }
  double saved =
      r.bytes_unfused ? 100.0 * (1.0 - double(r.bytes_fused) / double(r.bytes_unfused)) : 0;
  out += fmt::format("HBM traffic (model): {} unfused -> {} fused ({:.1f}% less)\n",
                     human(r.bytes_unfused), human(r.bytes_fused), saved);
  double ratio = r.arena_lower_bound ? double(r.arena_planned) / double(r.arena_lower_bound) : 1.0;
  out += fmt::format(
      "memory plan: naive {}, planned arena {}, lower bound {} (planned/lower bound {:.2f})\n",
      human(r.arena_naive), human(r.arena_planned), human(r.arena_lower_bound), ratio);
  out += "parameters:";
  for (const auto& [dt, b] : r.parameter_bytes) out += fmt::format(" {} {}", dt, human(b));
  out += "\n";
  out += fmt::format("precision: {}\n", r.precision);
  for (const auto& note : r.precision_notes) out += fmt::format("  {}\n", note);
  if (!r.attention_notes.empty()) out += "attention not fused:\n";
  for (const auto& note : r.attention_notes) out += fmt::format("  {}\n", note);
  return out;
}

std::string report_json(const FusionReport& r) {
  std::string out = "{";
  out += fmt::format("\"onnx_nodes\": {}, \"kernels\": {}, \"views\": {}, ", r.onnx_nodes,
                     r.kernels, r.views);
  out += fmt::format("\"hbm_bytes\": {{\"unfused\": {}, \"fused\": {}}}, ", r.bytes_unfused,
                     r.bytes_fused);
  out += fmt::format("\"memory_plan\": {{\"naive\": {}, \"planned\": {}, \"lower_bound\": {}}}, ",
                     r.arena_naive, r.arena_planned, r.arena_lower_bound);
  out += "\"parameter_bytes\": {";
  bool first = true;
  for (const auto& [dt, b] : r.parameter_bytes) {
    out += fmt::format("{}{}: {}", first ? "" : ", ", json_string(dt), b);
    first = false;
  }
  out += fmt::format("}}, \"precision\": {}, \"precision_notes\": [", json_string(r.precision));
  for (size_t i = 0; i < r.precision_notes.size(); ++i)
    out += (i ? ", " : "") + json_string(r.precision_notes[i]);
  out += "], \"attention_notes\": [";
  for (size_t i = 0; i < r.attention_notes.size(); ++i)
    out += (i ? ", " : "") + json_string(r.attention_notes[i]);
  out += "], \"kernel_list\": [";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    std::string nodes;
    std::string ops;
    for (size_t k = 0; k < row.onnx_ops.size(); ++k)
      ops += (k ? ", " : "") + json_string(row.onnx_ops[k]);
    for (size_t k = 0; k < row.onnx_nodes.size(); ++k)
      nodes += (k ? ", " : "") + json_string(row.onnx_nodes[k]);
    out += fmt::format(
        "{}{{\"kind\": {}, \"name\": {}, \"output\": {}, \"hbm_bytes_fused\": {}, "
        "\"hbm_bytes_unfused\": {}, \"onnx_nodes\": [{}], \"onnx_ops\": [{}]{}}}",
        i ? ", " : "", json_string(row.kind), json_string(row.name), json_string(row.output),
        row.bytes_fused, row.bytes_unfused, nodes, ops,
        row.lowering.empty() ? "" : ", \"lowering\": " + json_string(row.lowering));
  }
  out += "]}";
  return out;
}

}  // namespace graphc::driver
