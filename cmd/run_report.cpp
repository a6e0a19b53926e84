#include "cmd/run_report.h"

#include <nlohmann/json.hpp>

#include "cmd/run_profile.h"

namespace graphc::cli {

namespace {

Json summary_json(const Summary& s) {
  return {{"min", s.min}, {"mean", s.mean}, {"median", s.median},
          {"p90", s.p90}, {"p95", s.p95},   {"p99", s.p99}};
}

double throughput(const RunReport& r) {
  return r.times.wall_s > 0 ? static_cast<double>(r.times.compute_ms.size()) / r.times.wall_s : 0;
}

double compute_throughput(const Summary& compute) {
  return compute.mean > 0 ? 1000.0 / compute.mean : 0.0;
}

// The CUDA graph's end-to-end median in µs, for the profile's comparison;
// none when the timed loop launched one by one.
std::optional<double> graph_median_us(const RunReport& r) {
  if (!r.cuda_graph) return std::nullopt;
  return summarize(r.times.compute_ms).median * 1000;
}

}  // namespace

std::string run_report_text(const RunReport& r) {
  std::string text =
      fmt::format("engine       {}\ndevice       {}: {}\n", r.engine, r.device, r.device_name);
  for (const RunInputLine& in : r.inputs)
    text += fmt::format("input        {} {} {} from {}\n", in.name, in.dtype, in.shape, in.source);
  for (const RunInputLine& out : r.outputs)
    text += fmt::format("output       {} {} {}\n", out.name, out.dtype, out.shape);
  const Summary compute = summarize(r.times.compute_ms), h2d = summarize(r.times.h2d_ms),
                d2h = summarize(r.times.d2h_ms), enqueue = summarize(r.times.enqueue_ms);
  text += fmt::format(
      "load         engine file {:.1f} ms, onto the device {:.1f} ms (weights {:.2f} GB), "
      "context {:.1f} ms; first result {:.1f} ms after the start\n",
      r.open_ms, r.device_load_ms, static_cast<double>(r.weights_bytes) / 1e9, r.context_ms,
      r.first_result_ms);
  text += fmt::format(
      "kernels      {} ({})\n"
      "iterations   {} in {:.3f} s after {:.0f} ms warm-up\n"
      "GPU compute  min {:.4f}  mean {:.4f}  median {:.4f}  p90 {:.4f}  p95 {:.4f}  p99 {:.4f} "
      "ms\n",
      r.kernels, r.cuda_graph ? "one CUDA graph" : "launched one by one", r.times.compute_ms.size(),
      r.times.wall_s, r.warmup_ms, compute.min, compute.mean, compute.median, compute.p90,
      compute.p95, compute.p99);
  if (r.data_transfers)
    text += fmt::format(
        "H2D copies   mean {:.4f}  median {:.4f} ms\n"
        "D2H copies   mean {:.4f}  median {:.4f} ms\n",
        h2d.mean, h2d.median, d2h.mean, d2h.median);
  else
    text += "H2D, D2H     none in the timed loop (--noDataTransfers)\n";
  text += fmt::format(
      "enqueue      mean {:.4f} ms host time per iteration\n"
      "throughput   {:.1f} inferences/s ({}); {:.1f}/s from the mean compute time\n"
      "device mem   {} bytes: weights {} + arena {} + library workspace {} + input/output "
      "buffers {}\n",
      enqueue.mean, throughput(r), r.data_transfers ? "copies included" : "no copies",
      compute_throughput(compute), r.weights_bytes + r.context_bytes, r.weights_bytes,
      r.arena_bytes, r.workspace_bytes, r.context_bytes - r.arena_bytes - r.workspace_bytes);
  if (r.profile) text += profile_table(*r.profile, graph_median_us(r), r.roofline_gpu);
  for (const CheckResult& c : r.checks)
    text += fmt::format("check        {}: max abs error {:.3e}, relative L2 error {:.3e} ({})\n",
                        c.name, c.max_abs, c.rel_l2,
                        c.ok ? "ok" : fmt::format("above --check-rtol {}", r.check_rtol));
  for (const auto& p : r.written) text += fmt::format("wrote        {}\n", p);
  return text;
}

std::string run_report_json(const RunReport& r) {
  const Summary compute = summarize(r.times.compute_ms);
  Json doc = json_document();
  doc["engine"] = r.engine;
  doc["device"] = r.device_name;
  doc["iterations"] = r.times.compute_ms.size();
  doc["wall_s"] = r.times.wall_s;
  doc["warmup_ms"] = r.warmup_ms;
  Json steps = Json::object();
  for (const auto& [name, end_ms] : r.load_timeline.steps) steps[name] = end_ms;
  doc["load_ms"] = {{"engine_file", r.open_ms},
                    {"device", r.device_load_ms},
                    {"device_steps", std::move(steps)},
                    {"upload_read_wait", r.load_timeline.upload_read_ms},
                    {"upload_copy_wait", r.load_timeline.upload_copy_wait_ms},
                    {"context", r.context_ms},
                    {"first_run", r.first_run_ms},
                    {"first_result", r.first_result_ms},
                    {"first_result_unix", r.first_result_unix_ms}};
  doc["cuda_graph"] = r.cuda_graph;
  doc["data_transfers"] = r.data_transfers;
  doc["seed"] = r.seed;
  doc["gpu_compute_ms"] = summary_json(compute);
  doc["h2d_ms"] = r.data_transfers ? summary_json(summarize(r.times.h2d_ms)) : Json(nullptr);
  doc["d2h_ms"] = r.data_transfers ? summary_json(summarize(r.times.d2h_ms)) : Json(nullptr);
  doc["enqueue_host_ms"] = summary_json(summarize(r.times.enqueue_ms));
  doc["throughput_per_s"] = throughput(r);
  doc["compute_throughput_per_s"] = compute_throughput(compute);
  doc["device_memory_bytes"] = {{"total", r.weights_bytes + r.context_bytes},
                                {"weights", r.weights_bytes},
                                {"arena", r.arena_bytes},
                                {"workspace", r.workspace_bytes},
                                {"io", r.context_bytes - r.arena_bytes - r.workspace_bytes}};
  Json checks = Json::array();
  for (const CheckResult& c : r.checks)
    checks.push_back({{"output", c.name},
                      {"max_abs_error", c.max_abs},
                      {"relative_l2_error", c.rel_l2},
                      {"ok", c.ok}});
  doc["check"] = std::move(checks);
  if (r.profile) doc.update(profile_json(*r.profile, graph_median_us(r), r.roofline_gpu));
  return dump_json(doc);
}

std::string run_times_json(const RunReport& r) {
  Json doc = json_document();
  doc["engine"] = r.engine;
  doc["device"] = r.device_name;
  doc["cuda_graph"] = r.cuda_graph;
  doc["data_transfers"] = r.data_transfers;
  Json list = Json::array();
  const IterationTimes& t = r.times;
  for (size_t i = 0; i < t.compute_ms.size(); ++i) {
    const bool copies = i < t.h2d_ms.size() && i < t.d2h_ms.size();
    Json it = {{"compute_ms", t.compute_ms[i]},
               {"h2d_ms", copies ? Json(t.h2d_ms[i]) : Json(nullptr)},
               {"d2h_ms", copies ? Json(t.d2h_ms[i]) : Json(nullptr)},
               {"enqueue_host_ms", i < t.enqueue_ms.size() ? Json(t.enqueue_ms[i]) : Json(nullptr)},
               {"latency_ms", t.compute_ms[i] + (copies ? t.h2d_ms[i] + t.d2h_ms[i] : 0.0)}};
    list.push_back(std::move(it));
  }
  doc["iterations"] = std::move(list);
  return dump_json(doc);
}

std::string run_profile_json(const RunReport& r) {
  Json doc = json_document();
  doc["engine"] = r.engine;
  doc["device"] = r.device_name;
  if (r.profile) doc.update(profile_json(*r.profile, graph_median_us(r), r.roofline_gpu));
  return dump_json(doc);
}

}  // namespace graphc::cli
