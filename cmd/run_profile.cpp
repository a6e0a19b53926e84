#include "cmd/run_profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cmd/run_support.h"

namespace graphc::cli {

namespace {

constexpr size_t kNameWidth = 48;
constexpr size_t kNodesWidth = 72;

std::vector<size_t> by_time(const runtime::LaunchProfile& p) {
  std::vector<size_t> order(p.launches.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return p.launches[a].median_us > p.launches[b].median_us;
  });
  return order;
}

double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

std::string shorten(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 3) + "...";
}

// One launch against its roofline; `modelled` false when the engine records
// no model for it (built before the roofline fields).
struct StepRoofline {
  bool modelled = false;
  double roofline_us = 0, tflops = 0, gb_per_s = 0, fraction = 0;
  std::string_view bound;
};

StepRoofline step_roofline(const runtime::LaunchTiming& t, target::Gpu gpu) {
  StepRoofline r;
  if (t.flops == 0 && t.hbm_bytes == 0) return r;
  r.modelled = true;
  const target::Roofline roof =
      target::roofline(gpu, target::math_from_name(t.math), static_cast<int64_t>(t.flops),
                       static_cast<int64_t>(t.hbm_bytes));
  r.roofline_us = roof.us();
  r.bound = roof.bound();
  if (t.median_us > 0) {
    // FLOP/µs = 1e-6 TFLOP/s; bytes/µs = 1e-3 GB/s.
    r.tflops = static_cast<double>(t.flops) / t.median_us * 1e-6;
    r.gb_per_s = static_cast<double>(t.hbm_bytes) / t.median_us * 1e-3;
    r.fraction = r.roofline_us / t.median_us;
  }
  return r;
}

// Where the modelled launches lose time against their roofline.
struct RooflineSummary {
  int modelled = 0;
  double roofline_us = 0, measured_us = 0, unmodelled_us = 0;
  std::vector<std::pair<std::string, double>> lost_by_kind;  // most lost first
  std::vector<size_t> most_lost;                             // launch indices, most lost first
  double lost_us() const { return measured_us - roofline_us; }
};

constexpr size_t kMostLost = 5;

RooflineSummary summarize(const runtime::LaunchProfile& p, target::Gpu gpu) {
  RooflineSummary s;
  std::map<std::string, double> by_kind;
  std::vector<std::pair<double, size_t>> lost;
  for (size_t i = 0; i < p.launches.size(); ++i) {
    const runtime::LaunchTiming& t = p.launches[i];
    const StepRoofline r = step_roofline(t, gpu);
    if (!r.modelled) {
      s.unmodelled_us += t.median_us;
      continue;
    }
    ++s.modelled;
    s.roofline_us += r.roofline_us;
    s.measured_us += t.median_us;
    by_kind[t.kind] += t.median_us - r.roofline_us;
    lost.push_back({t.median_us - r.roofline_us, i});
  }
  s.lost_by_kind.assign(by_kind.begin(), by_kind.end());
  std::stable_sort(s.lost_by_kind.begin(), s.lost_by_kind.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::stable_sort(lost.begin(), lost.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < lost.size() && i < kMostLost; ++i) s.most_lost.push_back(lost[i].second);
  return s;
}

std::string optional_number(bool set, double v, const char* format) {
  return set ? fmt::format(fmt::runtime(format), v) : std::string("-");
}

Json nullable(bool set, double v) { return set ? Json(v) : Json(nullptr); }

}  // namespace

std::string truncated_node_list(const std::vector<std::string>& nodes, size_t width) {
  std::string out;
  size_t shown = 0;
  for (; shown < nodes.size(); ++shown) {
    const std::string more =
        shown + 1 < nodes.size() ? fmt::format(" ... (+{} more)", nodes.size() - shown - 1) : "";
    const std::string next = (shown ? ", " : "") + nodes[shown];
    if (shown > 0 && out.size() + next.size() + more.size() > width) break;
    out += shown ? next : shorten(nodes[0], width);
  }
  if (shown < nodes.size()) out += fmt::format(" ... (+{} more)", nodes.size() - shown);
  return out;
}

std::string profile_table(const runtime::LaunchProfile& p, std::optional<double> graph_median_us,
                          const ProfileRooflineGpu& gpu) {
  const double sum = p.sum_median_us();
  std::string out = fmt::format(
      "profile      {} launches, each timed alone without the CUDA graph; median of {} runs\n",
      p.launches.size(), p.iterations);
  if (p.host_gaps)
    out +=
        "             warning: the stream could not be held back while launches were enqueued; "
        "some times include host launch latency\n";
  struct Row {
    std::string rank, name, kind, median, share, tflops, gbps, roofline, fraction, nodes;
  };
  std::vector<Row> rows{{"rank", "kernel", "kind", "median us", "%", "TFLOP/s", "GB/s",
                         "roofline us", "% roofline", "ONNX nodes"}};
  int rank = 0;
  for (size_t i : by_time(p)) {
    const runtime::LaunchTiming& t = p.launches[i];
    const StepRoofline r = step_roofline(t, gpu.gpu);
    rows.push_back({std::to_string(++rank), shorten(t.name, kNameWidth), t.kind,
                    fmt::format("{:.2f}", t.median_us),
                    fmt::format("{:.1f}%", percent(t.median_us, sum)),
                    optional_number(r.modelled && t.flops > 0, r.tflops, "{:.1f}"),
                    optional_number(r.modelled, r.gb_per_s, "{:.0f}"),
                    optional_number(r.modelled, r.roofline_us, "{:.2f}"),
                    optional_number(r.modelled && t.median_us > 0, 100 * r.fraction, "{:.0f}%"),
                    t.onnx_nodes.empty() ? "-" : truncated_node_list(t.onnx_nodes, kNodesWidth)});
  }
  size_t w[9] = {};
  for (const Row& r : rows) {
    const std::string* cols[] = {&r.rank,   &r.name, &r.kind,     &r.median,  &r.share,
                                 &r.tflops, &r.gbps, &r.roofline, &r.fraction};
    for (size_t c = 0; c < 9; ++c) w[c] = std::max(w[c], cols[c]->size());
  }
  for (const Row& r : rows)
    out += fmt::format(
        "  {:>{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {}\n", r.rank,
        w[0], r.name, w[1], r.kind, w[2], r.median, w[3], r.share, w[4], r.tflops, w[5], r.gbps,
        w[6], r.roofline, w[7], r.fraction, w[8], r.nodes);
  auto line = [&](const char* label, double us, const char* note) {
    out += fmt::format("  {:<34}{:10.2f} us  {}\n", label, us, note);
  };
  line("sum of the launch medians", sum, "(GPU time of the work alone)");
  line("launched one by one, end to end", p.one_by_one_median_us,
       "(median; host launch latency included)");
  if (graph_median_us) {
    line("one CUDA graph, end to end", *graph_median_us, "(median of the timed loop)");
    line("launch overhead the graph removes", p.one_by_one_median_us - *graph_median_us,
         "(one by one - graph)");
    line("left between kernels in the graph", *graph_median_us - sum, "(graph - sum)");
  } else {
    out += fmt::format("  {:<34}not measured (--no-cuda-graph)\n", "one CUDA graph, end to end");
  }
  const RooflineSummary roof = summarize(p, gpu.gpu);
  if (roof.modelled == 0) {
    if (!p.launches.empty())
      out += "  roofline: the engine records no roofline model (built before graphc recorded one)\n";
    return out;
  }
  const target::GpuPeaks& peaks = target::gpu_peaks(gpu.gpu);
  out += fmt::format("roofline     {} ({}): {:.0f} GB/s HBM, {:.0f} TFLOP/s fp16 tensor core\n",
                     target::gpu_long_name(gpu.gpu), gpu.source, peaks.hbm_gb_per_s,
                     peaks.fp16_tc);
  line("roofline sum", roof.roofline_us,
       fmt::format("({} modelled launches; {:.2f} us measured: {:.1f}% of the roofline)",
                   roof.modelled, roof.measured_us, percent(roof.roofline_us, roof.measured_us))
           .c_str());
  line("lost against the roofline", roof.lost_us(), "(measured - roofline)");
  if (roof.unmodelled_us > 0) line("launches without a model", roof.unmodelled_us, "");
  for (const auto& [kind, lost] : roof.lost_by_kind)
    out += fmt::format("    {:<32}{:10.2f} us  ({:.1f}% of the loss)\n", kind, lost,
                       percent(lost, roof.lost_us()));
  out += "  launches losing the most:\n";
  for (size_t i : roof.most_lost) {
    const runtime::LaunchTiming& t = p.launches[i];
    const StepRoofline r = step_roofline(t, gpu.gpu);
    out += fmt::format("    #{:<4} {:<48} {:9.2f} us lost  (median {:.2f} us, roofline {:.2f} us, "
                       "{}-bound, {:.0f}%)\n",
                       t.launch, shorten(t.name, kNameWidth), t.median_us - r.roofline_us,
                       t.median_us, r.roofline_us, r.bound, 100 * r.fraction);
  }
  return out;
}

Json profile_json(const runtime::LaunchProfile& p, std::optional<double> graph_median_us,
                  const ProfileRooflineGpu& gpu) {
  const double sum = p.sum_median_us();
  Json launches = Json::array();
  int rank = 0;
  for (size_t i : by_time(p)) {
    const runtime::LaunchTiming& t = p.launches[i];
    const StepRoofline r = step_roofline(t, gpu.gpu);
    const bool timed = r.modelled && t.median_us > 0;
    launches.push_back({{"rank", ++rank},
                        {"launch", t.launch},
                        {"name", t.name},
                        {"kind", t.kind},
                        {"median_us", t.median_us},
                        {"min_us", t.min_us},
                        {"max_us", t.max_us},
                        {"percent", percent(t.median_us, sum)},
                        {"onnx_nodes", t.onnx_nodes},
                        {"flops", t.flops},
                        {"hbm_bytes", t.hbm_bytes},
                        {"math", t.math},
                        {"roofline_us", nullable(r.modelled, r.roofline_us)},
                        {"roofline_bound", r.modelled ? Json(r.bound) : Json(nullptr)},
                        {"achieved_tflops", nullable(timed, r.tflops)},
                        {"achieved_gb_per_s", nullable(timed, r.gb_per_s)},
                        {"roofline_fraction", nullable(timed, r.fraction)}});
  }
  Json out = Json::object();
  out["profile"] = std::move(launches);
  out["profile_summary"] = {
      {"iterations", p.iterations},
      {"launches", p.launches.size()},
      {"sum_median_us", sum},
      {"one_by_one_median_us", p.one_by_one_median_us},
      {"cuda_graph_median_us", graph_median_us ? Json(*graph_median_us) : Json(nullptr)},
      {"host_gaps", p.host_gaps}};
  const RooflineSummary roof = summarize(p, gpu.gpu);
  Json by_kind = Json::array();
  for (const auto& [kind, lost] : roof.lost_by_kind)
    by_kind.push_back({{"kind", kind}, {"lost_us", lost}});
  Json most = Json::array();
  for (size_t i : roof.most_lost) {
    const runtime::LaunchTiming& t = p.launches[i];
    most.push_back({{"launch", t.launch},
                    {"name", t.name},
                    {"lost_us", t.median_us - step_roofline(t, gpu.gpu).roofline_us}});
  }
  out["profile_summary"]["roofline"] = {
      {"gpu", std::string(target::gpu_name(gpu.gpu))},
      {"gpu_name", std::string(target::gpu_long_name(gpu.gpu))},
      {"gpu_source", gpu.source},
      {"modelled_launches", roof.modelled},
      {"roofline_us", roof.roofline_us},
      {"measured_us", roof.measured_us},
      {"lost_us", roof.lost_us()},
      {"unmodelled_us", roof.unmodelled_us},
      {"lost_by_kind", std::move(by_kind)},
      {"most_lost", std::move(most)}};
  return out;
}

}  // namespace graphc::cli
