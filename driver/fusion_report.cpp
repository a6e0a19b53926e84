#include "driver/fusion_report.h"

#include <nlohmann/json.hpp>

#include "ir/printer.h"

namespace graphc::driver {

namespace {
std::string gflop(int64_t flops) {
  return flops > 0 ? fmt::format("{:.3g}", static_cast<double>(flops) * 1e-9) : std::string("-");
}

std::string human(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(int64_t{1} << 30));
  if (b >= (int64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

}  // namespace

FusionReport report_from_plan(const ir::Graph& optimized, const emit::GpuPlan& plan,
                              const optimizer::PassContext& ctx, int64_t onnx_nodes) {
  FusionReport r;
  r.onnx_nodes = onnx_nodes;
  for (const emit::KernelRecord& k : plan.kernels) {
    if (k.kind == target::KernelKind::kView)
      ++r.views;
    else
      ++r.kernels;
    KernelRow row;
    row.kind = std::string(target::kernel_kind_name(k.kind));
    row.name = k.name;
    row.onnx_nodes = k.onnx_nodes;
    row.onnx_ops = k.onnx_ops;
    row.output = k.output;
    row.bytes_fused = k.bytes_fused;
    row.bytes_unfused = k.bytes_unfused;
    row.lowering = k.lowering.reason;
    row.launch = k.launch;
    row.unlowered = k.unlowered;
    row.flops = k.flops;
    row.math = k.math;
    r.bytes_fused += k.bytes_fused;
    r.bytes_unfused += k.bytes_unfused;
    r.rows.push_back(std::move(row));
  }
  r.arena_naive = plan.arena_naive_bytes;
  r.arena_planned = plan.arena_bytes;
  r.arena_lower_bound = plan.arena_lower_bound_bytes;
  for (const auto& v : optimized.values)
    if (v.constant && v.producer < 0)
      r.parameter_bytes[std::string(ir::dtype_name(v.dtype))] +=
          static_cast<int64_t>(v.constant->byte_size());
  r.pass_counters = ctx.counters;
  r.precision = ctx.precision == optimizer::Precision::kFp16   ? "fp16"
                : ctx.precision == optimizer::Precision::kBf16 ? "bf16"
                                                               : "fp32";
  r.precision_notes = ctx.precision_notes;
  r.unlowered = plan.unlowered;
  r.attention_notes = ctx.attention_notes;
  apply_roofline(r, r.gpu);
  return r;
}

void apply_roofline(FusionReport& r, target::Gpu gpu) {
  r.gpu = gpu;
  r.flops = 0;
  r.roofline_us = 0;
  for (KernelRow& row : r.rows) {
    // A view moves nothing; a kernel without a launch still has a model.
    row.roofline = target::roofline(gpu, row.math, row.flops, row.bytes_fused);
    r.flops += row.flops;
    r.roofline_us += row.roofline.us();
  }
}

Expected<FusionReport> optimize_and_report(ir::Graph& graph, optimizer::PassContext& ctx,
                                           std::shared_ptr<const target::CudaTarget> target) {
  const int64_t onnx_nodes = graph.live_node_count();
  ctx.target = target;
  RETURN_IF_ERROR(optimizer::run_passes(graph, ctx));
  ASSIGN_OR_RETURN(const emit::GpuPlan plan,
                   emit::lower_for_gpu(graph, *target, {.allow_unlowered = true}));
  return report_from_plan(graph, plan, ctx, onnx_nodes);
}

std::string report_text(const FusionReport& r) {
  std::string out = fmt::format("kernels: {} ONNX nodes -> {} kernels ({} views launch nothing)\n",
                                r.onnx_nodes, r.kernels, r.views);
  // `#` is the launch's number in the engine (`graphc inspect ENGINE`, `graphc run --profile`);
  // "-" for what launches nothing (a view, values known at build time, no GPU lowering).
  auto number = [](const KernelRow& row) {
    return row.launch >= 0 ? std::to_string(row.launch) : std::string("-");
  };
  out += fmt::format("  {:>4}  {:<18} {:<28} {:>11} {:>11} {:>8} {:>9}  {}\n", "#", "kind",
                     "output", "HBM fused", "unfused", "GFLOP", "roofl. us", "ONNX nodes");
  for (const auto& row : r.rows) {
    std::string nodes = fmt::format("{}", fmt::join(row.onnx_nodes, ", "));
    if (nodes.size() > 100) nodes = nodes.substr(0, 97) + "...";
    out += fmt::format("  {:>4}  {:<18} {:<28} {:>11} {:>11} {:>8} {:>9.3g}  {}\n", number(row),
                       row.kind, row.output, human(row.bytes_fused), human(row.bytes_unfused),
                       gflop(row.flops), row.roofline.us(), nodes);
  }
  bool lowering_header = false;
  for (const auto& row : r.rows) {
    if (row.lowering.empty()) continue;
    if (!lowering_header) out += "library lowering (gemm: cuBLASLt; conv, attention: cuDNN):\n";
    lowering_header = true;
    out += fmt::format("  {:>4}  {}: {}\n", number(row), row.name, row.lowering);
  }
  bool unlowered_header = false;
  for (const auto& row : r.rows) {
    if (row.unlowered.empty()) continue;
    if (!unlowered_header) out += "no GPU lowering yet (graphc build fails on these):\n";
    unlowered_header = true;
    out += fmt::format("     -  {} ({}): {}\n", row.name, row.kind, row.unlowered);
  }
  double saved =
      r.bytes_unfused ? 100.0 * (1.0 - double(r.bytes_fused) / double(r.bytes_unfused)) : 0;
  out += fmt::format("HBM traffic (model): {} unfused -> {} fused ({:.1f}% less)\n",
                     human(r.bytes_unfused), human(r.bytes_fused), saved);
  {
    const target::GpuPeaks& peaks = target::gpu_peaks(r.gpu);
    double compute_bound_us = 0;
    for (const auto& row : r.rows)
      if (row.roofline.bound() == "compute") compute_bound_us += row.roofline.us();
    out += fmt::format(
        "roofline ({}: {:.0f} GB/s HBM, {:.0f} TFLOP/s fp16 tensor core): {:.1f} us over {} "
        "kernels, {:.1f} us compute-bound; {:.3g} GFLOP\n",
        target::gpu_long_name(r.gpu), peaks.hbm_gb_per_s, peaks.fp16_tc, r.roofline_us, r.kernels,
        compute_bound_us, static_cast<double>(r.flops) * 1e-9);
  }
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
  // What the QDQ rewrites made int8, and the layers they left float and why.
  bool qdq_header = false;
  for (const auto& [what, count] : r.pass_counters) {
    if (what.rfind("fuse-qdq-", 0) != 0) continue;
    if (!qdq_header) out += "quantized layers (--int8-gemm):\n";
    qdq_header = true;
    out += fmt::format("  {}x {}\n", count, what);
  }
  return out;
}

Json report_json(const FusionReport& r) {
  Json out = Json::object();
  out["onnx_nodes"] = r.onnx_nodes;
  out["kernels"] = r.kernels;
  out["views"] = r.views;
  out["hbm_bytes"] = {{"unfused", r.bytes_unfused}, {"fused", r.bytes_fused}};
  out["memory_plan"] = {
      {"naive", r.arena_naive}, {"planned", r.arena_planned}, {"lower_bound", r.arena_lower_bound}};
  out["parameter_bytes"] = Json::object();
  for (const auto& [dt, b] : r.parameter_bytes) out["parameter_bytes"][dt] = b;
  out["precision"] = r.precision;
  out["precision_notes"] = r.precision_notes;
  Json kernels = Json::array();
  for (const auto& row : r.rows) {
    Json k = {{"kind", row.kind},
              {"name", row.name},
              {"output", row.output},
              {"hbm_bytes_fused", row.bytes_fused},
              {"hbm_bytes_unfused", row.bytes_unfused},
              {"onnx_nodes", row.onnx_nodes},
              {"onnx_ops", row.onnx_ops}};
    k["launch"] = row.launch >= 0 ? Json(row.launch) : Json(nullptr);
    k["flops"] = row.flops;
    k["math"] = std::string(target::math_name(row.math));
    k["roofline_us"] = row.roofline.us();
    k["roofline_bound"] = std::string(row.roofline.bound());
    if (!row.lowering.empty()) k["lowering"] = row.lowering;
    if (!row.unlowered.empty()) k["unlowered"] = row.unlowered;
    kernels.push_back(std::move(k));
  }
  out["attention_notes"] = r.attention_notes;
  const target::GpuPeaks& peaks = target::gpu_peaks(r.gpu);
  out["roofline"] = {{"gpu", std::string(target::gpu_name(r.gpu))},
                     {"gpu_name", std::string(target::gpu_long_name(r.gpu))},
                     {"hbm_gb_per_s", peaks.hbm_gb_per_s},
                     {"flops", r.flops},
                     {"roofline_us", r.roofline_us}};
  out["kernel_list"] = std::move(kernels);
  return out;
}

}  // namespace graphc::driver
