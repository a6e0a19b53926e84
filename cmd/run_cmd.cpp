// graphc run MODEL.engine: loads a validated engine on this GPU, feeds seeded
// random inputs, runs warm-up and timed iterations (CUDA events around the
// launch sequence, replayed as one CUDA graph unless --no-cuda-graph) and
// reports latency percentiles, as trtexec does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>

#include "cmd/cli_common.h"
#include "cmd/commands.h"
#include "driver/engine_build.h"
#include "ir/tensor.h"

namespace graphc::cli {

namespace {

struct RunFlags {
  std::string engine;
  int iterations = 100;
  int warmup_ms = 200;
  bool no_cuda_graph = false;
  uint32_t seed = 1;
  std::string json;
};

double percentile(std::vector<float> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

int run_engine(const RunFlags& f) {
  if (f.iterations < 1) return report(invalid_argument("--iterations must be at least 1"));
  auto contents = engine::read_engine_file(f.engine);
  if (!contents.ok()) return report(contents.status());
  auto sm = driver::device_sm();
  if (!sm.ok()) return report(sm.status());
  auto exe = driver::executable_from_engine(*contents, *sm);
  if (!exe.ok()) return report(exe.status().with_context(f.engine));
  runtime::RunOptions ro;
  ro.cuda_graph = !f.no_cuda_graph;
  auto session = runtime::Session::create(*exe, ro);
  if (!session.ok()) return report(session.status().with_context(f.engine));

  // Seeded random inputs: floats uniform in [-1, 1], integers in [0, 8), bools 0/1.
  std::mt19937 rng(f.seed);
  std::vector<std::string> inputs;
  for (const auto& b : contents->manifest.inputs()) {
    const auto& t = contents->manifest.tensors(b.tensor());
    ir::Shape shape(t.shape().begin(), t.shape().end());
    ir::Tensor x(static_cast<ir::DType>(t.dtype()), shape);
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (ir::is_float(x.dtype()))
        x.set_f64(i, std::uniform_real_distribution<double>(-1, 1)(rng));
      else
        x.set_i64(i, x.dtype() == ir::DType::kBool ? rng() % 2 : rng() % 8);
    }
    inputs.emplace_back(reinterpret_cast<const char*>(x.data()), x.byte_size());
  }
  std::vector<std::string> outputs;
  auto start = std::chrono::steady_clock::now();
  Status st = (*session)->run(inputs, outputs);  // includes H2D and D2H
  double first_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!st.ok()) return report(st.with_context(f.engine));
  // Warm-up for at least --warmup-ms, then the timed iterations.
  auto warm_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(f.warmup_ms);
  while (std::chrono::steady_clock::now() < warm_end) {
    auto w = (*session)->time_iterations(10);
    if (!w.ok()) return report(w.status());
  }
  auto times = (*session)->time_iterations(f.iterations);
  if (!times.ok()) return report(times.status());
  const auto& t = *times;
  double mean = std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
  double mn = *std::min_element(t.begin(), t.end());
  std::string out = fmt::format(
      "engine     {}\nkernels    {} ({})\nGPU compute latency over {} iterations (ms): min {:.4f}  "
      "mean {:.4f}  "
      "median {:.4f}  p90 {:.4f}  p95 {:.4f}  p99 {:.4f}\nthroughput {:.1f} inferences/s\nfirst "
      "run with "
      "H2D/D2H copies {:.3f} ms (host clock)\ndevice memory: arena {} bytes + weights {} bytes\n",
      f.engine, contents->manifest.kernels_size(),
      f.no_cuda_graph ? "launched one by one" : "one CUDA graph", t.size(), mn, mean,
      percentile(t, 50), percentile(t, 90), percentile(t, 95), percentile(t, 99), 1000.0 / mean,
      first_ms, contents->manifest.arena_bytes(), contents->weights.size());
  std::fputs(out.c_str(), stdout);
  if (!f.json.empty()) {
    std::string j = fmt::format(
        "{{\"engine\": \"{}\", \"iterations\": {}, \"cuda_graph\": {}, \"latency_ms\": {{\"min\": "
        "{}, \"mean\": {}, "
        "\"median\": {}, \"p90\": {}, \"p95\": {}, \"p99\": {}}}, \"throughput_per_s\": {}, "
        "\"arena_bytes\": {}, "
        "\"weights_bytes\": {}}}\n",
        f.engine, t.size(), f.no_cuda_graph ? "false" : "true", mn, mean, percentile(t, 50),
        percentile(t, 90), percentile(t, 95), percentile(t, 99), 1000.0 / mean,
        contents->manifest.arena_bytes(), contents->weights.size());
    Status w = write_file_atomic(f.json, j);
    if (!w.ok()) return report(w);
  }
  return kExitOk;
}

}  // namespace

CommandFn add_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  auto* cmd =
      app.add_subcommand("run", "Run an engine on this GPU with random inputs and report latency");
  cmd->add_option("engine", flags->engine, "Engine file (graphc build)")->required();
  cmd->add_option("--iterations", flags->iterations, "Timed iterations (default 100)");
  cmd->add_option("--warmup-ms", flags->warmup_ms, "Warm-up time before timing (default 200)");
  cmd->add_flag("--no-cuda-graph", flags->no_cuda_graph,
                "Launch kernels one by one instead of one CUDA graph");
  cmd->add_option("--seed", flags->seed, "Seed of the random inputs (default 1)");
  cmd->add_option("--json", flags->json, "Also write the report as JSON to this file");
  return [flags] { return run_engine(*flags); };
}

}  // namespace graphc::cli
