// graphc run MODEL.engine, as trtexec users expect: inputs from .npy files or
// seeded random data, warm-up, timed iterations (at least --iterations and at
// least --duration seconds), each timed with CUDA events: H2D copies, the
// launch sequence (one CUDA graph unless --no-cuda-graph) and D2H copies
// separately, plus the host time of each enqueue. Outputs to .npy, a JSON
// report, and --check against the reference executor on the ONNX model.
// --profile then times every launch on its own (ExecutionContext::profile)
// and prints them by time with their ONNX nodes (cmd/run_profile.h).
// Everything that can be checked without a GPU (flags, engine, .npy files,
// the ONNX model) is checked before the driver is loaded.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "cmd/cli_common.h"
#include "cmd/commands.h"
#include "cmd/run_profile.h"
#include "cmd/run_support.h"
#include "runtime/engine_loader.h"

namespace graphc::cli {

namespace {

struct RunFlags {
  std::string engine;
  std::vector<std::string> inputs;
  int iterations = 100;
  double warmup_ms = 200;
  double duration_s = 0;
  bool no_cuda_graph = false;
  uint32_t seed = 1;
  std::string output_dir;
  std::string json;
  bool check = false;
  std::string onnx;
  double check_rtol = 1e-3;
  int device = 0;
  bool profile = false;
};

struct Timings {
  std::vector<double> compute_ms, h2d_ms, d2h_ms, enqueue_ms;
  double wall_s = 0;
};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

Status validate_flags(const RunFlags& f) {
  if (f.iterations < 1) return invalid_argument("--iterations must be at least 1");
  if (!(f.warmup_ms >= 0 && f.warmup_ms <= 3.6e6))
    return invalid_argument("--warmup-ms must be between 0 and 3600000");
  if (!(f.duration_s >= 0 && f.duration_s <= 86400))
    return invalid_argument("--duration must be between 0 and 86400 seconds");
  if (f.device < 0) return invalid_argument("--device must be a CUDA device ordinal (0, 1, ...)");
  if (!(f.check_rtol > 0)) return invalid_argument("--check-rtol must be positive");
  if (f.check && f.onnx.empty())
    return invalid_argument(
        "--check needs --onnx MODEL.onnx: an engine holds kernels and weights, not the graph, "
        "so the reference executor runs the ONNX model the engine was built from");
  if (!f.onnx.empty() && !f.check) return invalid_argument("--onnx is only used with --check");
  std::error_code ec;
  if (!f.output_dir.empty() && std::filesystem::exists(f.output_dir, ec) &&
      !std::filesystem::is_directory(f.output_dir, ec))
    return invalid_argument("--output-dir '{}' exists and is not a folder", f.output_dir);
  return Status::ok_status();
}

// The per-iteration work: inputs to the device, the engine, outputs back,
// each between its own pair of CUDA events. Host buffers are page-locked so
// the copies are asynchronous and timed as transfers (as trtexec does).
struct Runner {
  runtime::ExecutionContext& ctx;
  std::vector<std::unique_ptr<runtime::PinnedBuffer>> inputs, outputs;
  runtime::GpuTimer &h2d, &compute, &d2h;

  Status iteration(Timings* t) {
    CUstream s = ctx.stream();
    const int n_in = ctx.engine().num_inputs();
    RETURN_IF_ERROR(h2d.start(s));
    for (int i = 0; i < n_in; ++i) {
      auto& x = *inputs[static_cast<size_t>(i)];
      RETURN_IF_ERROR(ctx.copy_input_from_host(i, x.data(), x.size(), s));
    }
    RETURN_IF_ERROR(h2d.stop(s));
    RETURN_IF_ERROR(compute.start(s));
    const auto host_start = Clock::now();
    RETURN_IF_ERROR(ctx.enqueue(s));
    const double enqueue_ms = ms_since(host_start);
    RETURN_IF_ERROR(compute.stop(s));
    RETURN_IF_ERROR(d2h.start(s));
    for (size_t i = 0; i < outputs.size(); ++i)
      RETURN_IF_ERROR(ctx.copy_output_to_host(n_in + static_cast<int>(i), outputs[i]->data(),
                                              outputs[i]->size(), s));
    RETURN_IF_ERROR(d2h.stop(s));
    RETURN_IF_ERROR(ctx.synchronize());
    if (!t) return Status::ok_status();
    ASSIGN_OR_RETURN(float h2d_ms, h2d.elapsed_ms());
    ASSIGN_OR_RETURN(float compute_ms, compute.elapsed_ms());
    ASSIGN_OR_RETURN(float d2h_ms, d2h.elapsed_ms());
    t->h2d_ms.push_back(h2d_ms);
    t->compute_ms.push_back(compute_ms);
    t->d2h_ms.push_back(d2h_ms);
    t->enqueue_ms.push_back(enqueue_ms);
    return Status::ok_status();
  }
};

// JSON has no inf/NaN: those become null.
std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

std::string summary_json(const Summary& s) {
  return fmt::format(
      "{{\"min\": {}, \"mean\": {}, \"median\": {}, \"p90\": {}, \"p95\": {}, \"p99\": {}}}", s.min,
      s.mean, s.median, s.p90, s.p95, s.p99);
}

int run_engine(const RunFlags& f) {
  if (Status st = validate_flags(f); !st.ok()) return report(st);
  // 1. Everything checkable without a GPU.
  auto contents = engine::read_engine_file(f.engine);
  if (!contents.ok()) return report(contents.status());
  const std::vector<runtime::BindingInfo> bindings = runtime::engine_bindings(*contents);
  auto inputs = prepare_inputs(bindings, f.inputs, f.seed);
  if (!inputs.ok()) return report(inputs.status());
  std::optional<ir::Graph> check_graph;
  if (f.check) {
    auto g = load_check_model(f.onnx, bindings);
    if (!g.ok()) return report(g.status());
    check_graph = std::move(*g);
  }
  // 2. The device.
  runtime::EngineOptions eo;
  eo.device = f.device;
  auto engine = runtime::load_engine(*contents, eo);
  if (!engine.ok()) return report(engine.status().with_context(f.engine));
  runtime::ContextOptions co;
  co.cuda_graph = !f.no_cuda_graph;
  auto ctx = (*engine)->create_context(co);
  if (!ctx.ok()) return report(ctx.status().with_context(f.engine));
  auto h2d = runtime::GpuTimer::create(**engine);
  auto compute = runtime::GpuTimer::create(**engine);
  auto d2h = runtime::GpuTimer::create(**engine);
  for (const auto* t : {&h2d, &compute, &d2h})
    if (!t->ok()) return report(t->status());
  Runner runner{**ctx, {}, {}, **h2d, **compute, **d2h};
  size_t next_input = 0;
  for (const auto& b : bindings) {
    auto buffer = runtime::PinnedBuffer::create(**engine, static_cast<size_t>(b.bytes));
    if (!buffer.ok()) return report(buffer.status());
    if (b.is_input) {
      const ir::Tensor& x = (*inputs)[next_input++].tensor;
      if (x.byte_size()) std::memcpy((*buffer)->data(), x.data(), x.byte_size());
      runner.inputs.push_back(std::move(*buffer));
    } else {
      runner.outputs.push_back(std::move(*buffer));
    }
  }

  // 3. First run (its outputs are saved and checked), warm-up, timed loop.
  if (Status st = runner.iteration(nullptr); !st.ok()) return report(st.with_context(f.engine));
  const auto warm_start = Clock::now();
  while (ms_since(warm_start) < f.warmup_ms)
    if (Status st = runner.iteration(nullptr); !st.ok()) return report(st);
  Timings t;
  const auto loop_start = Clock::now();
  while (static_cast<int>(t.compute_ms.size()) < f.iterations ||
         ms_since(loop_start) < f.duration_s * 1000) {
    if (Status st = runner.iteration(&t); !st.ok()) return report(st);
  }
  t.wall_s = ms_since(loop_start) / 1000;
  // Per-launch times, after the loop so they do not disturb its timings.
  std::optional<runtime::LaunchProfile> profile;
  if (f.profile) {
    runtime::ProfileOptions po;
    po.iterations = f.iterations;
    auto p = (*ctx)->profile(po, (*ctx)->stream());
    if (!p.ok()) return report(p.status().with_context(f.engine + ": --profile"));
    profile = std::move(*p);
  }

  // 4. Outputs, report, check.
  std::vector<std::string> out_names;
  std::vector<ir::Tensor> out_tensors;
  size_t k = 0;
  for (const auto& b : bindings) {
    if (b.is_input) continue;
    auto& pinned = *runner.outputs[k++];
    auto tensor =
        output_tensor(b, std::string(static_cast<const char*>(pinned.data()), pinned.size()));
    if (!tensor.ok()) return report(tensor.status());
    out_names.push_back(b.name);
    out_tensors.push_back(std::move(*tensor));
  }
  const Summary compute_s = summarize(t.compute_ms), h2d_s = summarize(t.h2d_ms),
                d2h_s = summarize(t.d2h_ms), enqueue_s = summarize(t.enqueue_ms);
  const auto iters = t.compute_ms.size();
  const double throughput = t.wall_s > 0 ? static_cast<double>(iters) / t.wall_s : 0.0;
  const int64_t weights = (*engine)->weights_bytes(), ctx_bytes = (*ctx)->device_bytes();
  std::string text = fmt::format("engine       {}\ndevice       {}: {}\n", f.engine, f.device,
                                 (*engine)->device_name());
  size_t in_index = 0;
  for (const auto& b : bindings) {
    if (!b.is_input) continue;
    const HostInput& in = (*inputs)[in_index++];
    text += fmt::format(
        "input        {} {} {} from {}\n", b.name, ir::dtype_name(in.tensor.dtype()),
        ir::shape_to_string(in.tensor.shape()),
        in.source == "random" ? fmt::format("random data (seed {})", f.seed) : in.source);
  }
  text += fmt::format(
      "kernels      {} ({})\n"
      "iterations   {} in {:.3f} s after {:.0f} ms warm-up\n"
      "GPU compute  min {:.4f}  mean {:.4f}  median {:.4f}  p90 {:.4f}  p95 {:.4f}  p99 {:.4f} ms\n"
      "H2D copies   mean {:.4f}  median {:.4f} ms\n"
      "D2H copies   mean {:.4f}  median {:.4f} ms\n"
      "enqueue      mean {:.4f} ms host time per iteration\n"
      "throughput   {:.1f} inferences/s (copies included); {:.1f}/s from the mean compute time\n"
      "device mem   {} bytes: weights {} + arena {} + input/output buffers {}\n",
      contents->manifest.kernels_size(), f.no_cuda_graph ? "launched one by one" : "one CUDA graph",
      iters, t.wall_s, f.warmup_ms, compute_s.min, compute_s.mean, compute_s.median, compute_s.p90,
      compute_s.p95, compute_s.p99, h2d_s.mean, h2d_s.median, d2h_s.mean, d2h_s.median,
      enqueue_s.mean, throughput, compute_s.mean > 0 ? 1000.0 / compute_s.mean : 0.0,
      weights + ctx_bytes, weights, (*engine)->arena_bytes(), ctx_bytes - (*engine)->arena_bytes());
  const std::optional<double> graph_median_us =
      f.no_cuda_graph ? std::nullopt : std::optional<double>(compute_s.median * 1000);
  if (profile) text += profile_table(*profile, graph_median_us);
  std::vector<CheckResult> checks;
  if (check_graph) {
    auto ref = reference_outputs(*check_graph, bindings, *inputs);
    if (!ref.ok()) return report(ref.status());
    for (size_t i = 0; i < out_tensors.size(); ++i) {
      auto c = compare_output(out_names[i], out_tensors[i], (*ref)[i], f.check_rtol);
      if (!c.ok()) return report(c.status());
      text += fmt::format("check        {}: max abs error {:.3e}, relative L2 error {:.3e} ({})\n",
                          c->name, c->max_abs, c->rel_l2,
                          c->ok ? "ok" : fmt::format("above --check-rtol {}", f.check_rtol));
      checks.push_back(*c);
    }
  }
  if (!f.output_dir.empty()) {
    auto written = write_outputs(f.output_dir, out_names, out_tensors);
    if (!written.ok()) return report(written.status());
    for (const auto& p : *written) text += fmt::format("wrote        {}\n", p);
  }
  std::fputs(text.c_str(), stdout);
  if (!f.json.empty()) {
    std::string checks_json;
    for (const auto& c : checks)
      checks_json += fmt::format(
          "{}{{\"output\": \"{}\", \"max_abs_error\": {}, \"relative_l2_error\": {}, \"ok\": {}}}",
          checks_json.empty() ? "" : ", ", json_escape(c.name), json_number(c.max_abs),
          json_number(c.rel_l2), c.ok);
    std::string j = fmt::format(
        "{{\"engine\": \"{}\", \"device\": \"{}\", \"iterations\": {}, \"wall_s\": {}, "
        "\"warmup_ms\": {}, "
        "\"cuda_graph\": {}, \"seed\": {},\n"
        " \"gpu_compute_ms\": {},\n \"h2d_ms\": {},\n \"d2h_ms\": {},\n"
        " \"enqueue_host_ms\": {},\n"
        " \"throughput_per_s\": {}, \"compute_throughput_per_s\": {},\n"
        " \"device_memory_bytes\": {{\"total\": {}, \"weights\": {}, \"arena\": {}, \"io\": {}}},\n"
        " \"check\": [{}]{}}}\n",
        json_escape(f.engine), json_escape((*engine)->device_name()), iters, t.wall_s, f.warmup_ms,
        !f.no_cuda_graph, f.seed, summary_json(compute_s), summary_json(h2d_s), summary_json(d2h_s),
        summary_json(enqueue_s), throughput, compute_s.mean > 0 ? 1000.0 / compute_s.mean : 0.0,
        weights + ctx_bytes, weights, (*engine)->arena_bytes(),
        ctx_bytes - (*engine)->arena_bytes(), checks_json,
        profile ? ",\n " + profile_json(*profile, graph_median_us) : "");
    if (Status w = write_file_atomic(f.json, j); !w.ok()) return report(w);
  }
  int failed = 0;
  for (const auto& c : checks) failed += c.ok ? 0 : 1;
  if (failed) {
    std::fprintf(stderr,
                 "graphc: check failed: %d of %zu outputs differ from the reference by more than "
                 "--check-rtol %g (relative L2)\n",
                 failed, checks.size(), f.check_rtol);
    return kExitError;
  }
  return kExitOk;
}

}  // namespace

CommandFn add_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand(
      "run", "Run an engine on this GPU: .npy or random inputs, latency and throughput report");
  cmd->add_option("engine", flags->engine, "Engine file (graphc build)")->required();
  cmd->add_option("--input", flags->inputs,
                  "NAME=FILE.npy: an input's data (repeatable; dtype and shape must match the "
                  "engine's); other inputs get seeded random data");
  cmd->add_option("--seed", flags->seed, "Seed of the random inputs (default 1)");
  cmd->add_option("--iterations", flags->iterations, "Timed iterations, at least (default 100)");
  cmd->add_option("--duration", flags->duration_s,
                  "Keep timing for at least this many seconds (default 0)");
  cmd->add_option("--warmup-ms", flags->warmup_ms, "Warm-up time before timing (default 200)");
  cmd->add_option("--device", flags->device, "CUDA device ordinal (default 0)");
  cmd->add_flag("--profile", flags->profile,
                "Also time every launch on its own (no CUDA graph) and print them by time with "
                "their ONNX nodes");
  cmd->add_flag("--no-cuda-graph", flags->no_cuda_graph,
                "Launch kernels one by one instead of one CUDA graph");
  cmd->add_option("--output-dir", flags->output_dir,
                  "Write each output as DIR/NAME.npy (created if missing)");
  cmd->add_option("--json", flags->json, "Also write the report as JSON to this file");
  cmd->add_flag("--check", flags->check,
                "Compare the outputs with the CPU reference executor (needs --onnx)");
  cmd->add_option("--onnx", flags->onnx, "The ONNX model the engine was built from (--check)");
  cmd->add_option("--check-rtol", flags->check_rtol,
                  "Largest relative L2 error --check accepts (default 1e-3)");
  return [flags] { return run_engine(*flags); };
}

}  // namespace graphc::cli
