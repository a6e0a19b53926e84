#include "cmd/run_profile.h"

#include <algorithm>
#include <cmath>
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

std::string profile_table(const runtime::LaunchProfile& p, std::optional<double> graph_median_us) {
  const double sum = p.sum_median_us();
  std::string out = fmt::format(
      "profile      {} launches, each timed alone without the CUDA graph; median of {} runs\n",
      p.launches.size(), p.iterations);
  if (p.host_gaps)
    out +=
        "             warning: the stream could not be held back while launches were enqueued; "
        "some times include host launch latency\n";
  struct Row {
    std::string rank, name, kind, median, share, nodes;
  };
  std::vector<Row> rows{{"rank", "kernel", "kind", "median us", "%", "ONNX nodes"}};
  int rank = 0;
  for (size_t i : by_time(p)) {
    const runtime::LaunchTiming& t = p.launches[i];
    rows.push_back({std::to_string(++rank), shorten(t.name, kNameWidth), t.kind,
                    fmt::format("{:.2f}", t.median_us),
                    fmt::format("{:.1f}%", percent(t.median_us, sum)),
                    t.onnx_nodes.empty() ? "-" : truncated_node_list(t.onnx_nodes, kNodesWidth)});
  }
  size_t w[5] = {};
  for (const Row& r : rows) {
    const std::string* cols[] = {&r.rank, &r.name, &r.kind, &r.median, &r.share};
    for (size_t c = 0; c < 5; ++c) w[c] = std::max(w[c], cols[c]->size());
  }
  for (const Row& r : rows)
    out += fmt::format("  {:>{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {}\n", r.rank, w[0], r.name, w[1],
                       r.kind, w[2], r.median, w[3], r.share, w[4], r.nodes);
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
  return out;
}

Json profile_json(const runtime::LaunchProfile& p, std::optional<double> graph_median_us) {
  const double sum = p.sum_median_us();
  Json launches = Json::array();
  int rank = 0;
  for (size_t i : by_time(p)) {
    const runtime::LaunchTiming& t = p.launches[i];
    launches.push_back({{"rank", ++rank},
                        {"launch", t.launch},
                        {"name", t.name},
                        {"kind", t.kind},
                        {"median_us", t.median_us},
                        {"min_us", t.min_us},
                        {"max_us", t.max_us},
                        {"percent", percent(t.median_us, sum)},
                        {"onnx_nodes", t.onnx_nodes}});
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
  return out;
}

}  // namespace graphc::cli
