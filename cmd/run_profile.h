// `graphc run --profile`: the per-launch table and its JSON, from an
// ExecutionContext::profile result (no GPU needed to format them).
#pragma once

#include <optional>
#include <string>

#include "runtime/engine.h"
#include "support/json.h"
#include "target/roofline.h"

namespace graphc::cli {

// Launches sorted by median time (ties in launch order): rank, kernel name,
// kind, median µs, % of the summed medians, ONNX nodes (truncated); then the
// sum against the one-by-one and the CUDA-graph end-to-end medians.
// `graph_median_us`: nullopt when the timed loop ran without the CUDA graph.
// With the engine's roofline model (target/roofline.h) on `gpu`, every launch
// also shows its achieved TFLOP/s and GB/s and its roofline time as a share
// of its median, and a summary says where time is lost against the roofline
// sum (by kind, and the launches that lose most). `gpu_source`: how the GPU
// was picked, for the text ("--gpu", "from the device name", ...).
struct ProfileRooflineGpu {
  target::Gpu gpu = target::Gpu::kH100;
  std::string source = "default";
};
std::string profile_table(const runtime::LaunchProfile& p, std::optional<double> graph_median_us,
                          const ProfileRooflineGpu& gpu = {});

// {"profile": [...], "profile_summary": {...}}: the two keys the run report
// (and --exportProfile) carries; every launch with its full name and ONNX
// node list, sorted as the table.
Json profile_json(const runtime::LaunchProfile& p, std::optional<double> graph_median_us,
                  const ProfileRooflineGpu& gpu = {});

// "a, b, c ... (+N more)" within about `width` characters; never cuts a name
// unless the first one alone is longer.
std::string truncated_node_list(const std::vector<std::string>& nodes, size_t width);

}  // namespace graphc::cli
