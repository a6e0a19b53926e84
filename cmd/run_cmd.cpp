// graphc run MODEL.engine, as trtexec users expect: inputs from .npy files or
// seeded random data, warm-up, timed iterations (at least --iterations and at
// least --duration seconds), each timed with CUDA events: H2D copies, the
// launch sequence (one CUDA graph unless --no-cuda-graph) and D2H copies
// separately, plus the host time of each enqueue. Outputs to .npy, a JSON
// report, and --check against the reference executor on the ONNX model.
// --profile then times every launch on its own (ExecutionContext::profile)
// and prints them by time with their ONNX nodes (cmd/run_profile.h).
// trtexec's spellings work too (--loadEngine, --loadInputs, --warmUp,
// --dumpProfile, --noDataTransfers, --exportTimes, --exportProfile,
// --exportLayerInfo; docs/cli.md). Everything that can be checked without a
// GPU (flags, engine, .npy files, the ONNX model) is checked before the
// driver is loaded.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cmd/cli_common.h"
#include "cmd/commands.h"
#include "cmd/run_report.h"
#include "cmd/run_support.h"
#include "cmd/trtexec_flags.h"
#include "driver/engine_report.h"
#include "runtime/engine_loader.h"

namespace graphc::cli {

namespace {

struct RunFlags {
  std::string engine;
  std::vector<std::string> inputs;
  std::vector<std::string> load_inputs;  // trtexec: NAME:FILE[,NAME:FILE...]
  int iterations = 100;
  double warmup_ms = 200;
  double duration_s = 0;
  bool no_cuda_graph = false;
  bool use_cuda_graph = false;  // trtexec's --useCudaGraph: graphc's default
  bool no_data_transfers = false;
  uint32_t seed = 1;
  std::string output_dir;
  std::string json;
  std::string export_times, export_profile, export_layer_info;
  bool check = false;
  std::string onnx;
  double check_rtol = 1e-3;
  int device = 0;
  int shape_profile = 0;  // --shape-profile-index: the engine profile --shape is in
  bool profile = false;
  std::string gpu;  // the profile's roofline GPU; "": from the device name
  ShapeFlags shapes;
  TrtexecFlags trtexec;
};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A file graphc will write: its folder must exist (checked before the GPU work).
Status check_output_file(const std::string& flag, const std::string& path) {
  if (path.empty()) return Status::ok_status();
  std::error_code ec;
  const std::filesystem::path p(path);
  const auto dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(dir, ec))
    return io_error("{} '{}': folder '{}' does not exist", flag, path, dir.string());
  if (std::filesystem::is_directory(p, ec))
    return invalid_argument("{} '{}' is a folder", flag, path);
  return Status::ok_status();
}

Status validate_flags(const RunFlags& f) {
  if (f.iterations < 1) return invalid_argument("--iterations must be at least 1");
  if (!(f.warmup_ms >= 0 && f.warmup_ms <= 3.6e6))
    return invalid_argument("--warmup-ms must be between 0 and 3600000");
  if (!(f.duration_s >= 0 && f.duration_s <= 86400))
    return invalid_argument("--duration must be between 0 and 86400 seconds");
  if (f.device < 0) return invalid_argument("--device must be a CUDA device ordinal (0, 1, ...)");
  if (!(f.check_rtol > 0)) return invalid_argument("--check-rtol must be positive");
  if (!f.gpu.empty()) RETURN_IF_ERROR(target::parse_gpu(f.gpu).status());
  if (f.check && f.onnx.empty())
    return invalid_argument(
        "--check needs --onnx MODEL.onnx: an engine holds kernels and weights, not the graph, "
        "so the reference executor runs the ONNX model the engine was built from");
  if (!f.onnx.empty() && !f.check) return invalid_argument("--onnx is only used with --check");
  std::error_code ec;
  if (!f.output_dir.empty() && std::filesystem::exists(f.output_dir, ec) &&
      !std::filesystem::is_directory(f.output_dir, ec))
    return invalid_argument("--output-dir '{}' exists and is not a folder", f.output_dir);
  RETURN_IF_ERROR(check_output_file("--json", f.json));
  RETURN_IF_ERROR(check_output_file("--exportTimes", f.export_times));
  RETURN_IF_ERROR(check_output_file("--exportProfile", f.export_profile));
  RETURN_IF_ERROR(check_output_file("--exportLayerInfo", f.export_layer_info));
  return Status::ok_status();
}

// --loadInputs NAME:FILE[,NAME:FILE...] (trtexec) as --input NAME=FILE specs.
// trtexec reads raw binary files; graphc reads .npy, so a file that is not
// one is refused here with the way out.
Expected<std::vector<std::string>> load_inputs_specs(const std::vector<std::string>& flags) {
  std::vector<std::string> specs;
  for (const auto& flag : flags) {
    size_t pos = 0;
    while (pos <= flag.size()) {
      size_t comma = flag.find(',', pos);
      if (comma == std::string::npos) comma = flag.size();
      const std::string item = flag.substr(pos, comma - pos);
      pos = comma + 1;
      const size_t colon = item.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
        return invalid_argument("--loadInputs '{}' must look like NAME:FILE.npy[,NAME:FILE.npy]",
                                item);
      const std::string file = item.substr(colon + 1);
      std::ifstream in(file, std::ios::binary);
      char magic[6] = {};
      if (in && in.read(magic, sizeof magic) && std::memcmp(magic, "\x93NUMPY", 6) != 0)
        return invalid_argument(
            "--loadInputs {}: '{}' is not a .npy file: graphc reads .npy files (dtype and shape "
            "in the header), not trtexec's raw binary; write the input with numpy.save",
            item.substr(0, colon), file);
      specs.push_back(item.substr(0, colon) + "=" + file);
    }
  }
  return specs;
}

// The per-iteration work: inputs to the device, the engine, outputs back,
// each between its own pair of CUDA events. Host buffers are page-locked so
// the copies are asynchronous and timed as transfers (as trtexec does). With
// copies off (--noDataTransfers) a timed iteration is the engine alone: the
// inputs stay on the device from the first run.
struct Runner {
  runtime::ExecutionContext& ctx;
  std::vector<std::unique_ptr<runtime::PinnedBuffer>> inputs, outputs;
  runtime::GpuTimer &h2d, &compute, &d2h;

  Status iteration(IterationTimes* t, bool copies) {
    CUstream s = ctx.stream();
    const int n_in = ctx.engine().num_inputs();
    if (copies) {
      RETURN_IF_ERROR(h2d.start(s));
      for (int i = 0; i < n_in; ++i) {
        auto& x = *inputs[static_cast<size_t>(i)];
        RETURN_IF_ERROR(ctx.copy_input_from_host(i, x.data(), x.size(), s));
      }
      RETURN_IF_ERROR(h2d.stop(s));
    }
    RETURN_IF_ERROR(compute.start(s));
    const auto host_start = Clock::now();
    RETURN_IF_ERROR(ctx.enqueue(s));
    const double enqueue_ms = ms_since(host_start);
    RETURN_IF_ERROR(compute.stop(s));
    if (copies) {
      RETURN_IF_ERROR(d2h.start(s));
      for (size_t i = 0; i < outputs.size(); ++i)
        RETURN_IF_ERROR(ctx.copy_output_to_host(n_in + static_cast<int>(i), outputs[i]->data(),
                                                outputs[i]->size(), s));
      RETURN_IF_ERROR(d2h.stop(s));
    }
    RETURN_IF_ERROR(ctx.synchronize());
    if (!t) return Status::ok_status();
    ASSIGN_OR_RETURN(float compute_ms, compute.elapsed_ms());
    if (copies) {
      ASSIGN_OR_RETURN(float h2d_ms, h2d.elapsed_ms());
      ASSIGN_OR_RETURN(float d2h_ms, d2h.elapsed_ms());
      t->h2d_ms.push_back(h2d_ms);
      t->d2h_ms.push_back(d2h_ms);
    }
    t->compute_ms.push_back(compute_ms);
    t->enqueue_ms.push_back(enqueue_ms);
    return Status::ok_status();
  }
};

int run_engine(RunFlags f) {
  const auto command_start = Clock::now();
  auto warnings = check_trtexec_flags(f.trtexec);
  if (!warnings.ok()) return report(warnings.status());
  for (const auto& w : *warnings) spdlog::warn("run: {}", w);
  if (Status st = validate_flags(f); !st.ok()) return report(st);
  auto loaded = load_inputs_specs(f.load_inputs);
  if (!loaded.ok()) return report(loaded.status());
  f.inputs.insert(f.inputs.end(), loaded->begin(), loaded->end());
  if (!f.export_profile.empty()) f.profile = true;
  // 1. Everything checkable without a GPU.
  auto header = engine::read_engine_file_header(f.engine);
  if (!header.ok()) return report(header.status());
  // The manifest and code; the weights stay in the file until they are
  // streamed to the device (checksummed then, or before a no-device error).
  const auto open_start = Clock::now();
  auto opened = engine::EngineFile::open(f.engine);
  if (!opened.ok()) return report(opened.status());
  const double open_ms = ms_since(open_start);
  std::shared_ptr<const engine::EngineFile> file = std::move(*opened);
  auto shape_flags = parse_shape_flags(f.shapes);
  if (!shape_flags.ok()) return report(shape_flags.status());
  std::vector<std::vector<int64_t>> input_shapes;
  auto at_shapes =
      bindings_at_shapes(file->contents(), *shape_flags, f.shape_profile, &input_shapes);
  if (!at_shapes.ok()) return report(at_shapes.status().with_context(f.engine));
  const std::vector<runtime::BindingInfo> bindings = std::move(*at_shapes);
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
  const auto load_start = Clock::now();
  auto engine = runtime::load_engine(file, eo);
  if (!engine.ok()) return report(engine.status().with_context(f.engine));
  const double device_load_ms = ms_since(load_start);
  runtime::ContextOptions co;
  co.cuda_graph = !f.no_cuda_graph;
  const auto context_start = Clock::now();
  auto ctx = (*engine)->create_context(co);
  if (!ctx.ok()) return report(ctx.status().with_context(f.engine));
  const double context_ms = ms_since(context_start);
  if ((*engine)->has_shape_ranges()) {
    if (Status st = (*ctx)->set_optimization_profile(f.shape_profile); !st.ok())
      return report(st.with_context(f.engine));
  }
  if ((*engine)->has_shape_ranges())
    for (int i = 0; i < (*engine)->num_inputs(); ++i)
      if (Status st = (*ctx)->set_input_shape(bindings[static_cast<size_t>(i)].name,
                                              input_shapes[static_cast<size_t>(i)]);
          !st.ok())
        return report(st.with_context(f.engine));
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

  // 3. First run (with copies: its outputs are saved and checked), warm-up, timed loop.
  const bool copies = !f.no_data_transfers;
  const auto first_run_start = Clock::now();
  if (Status st = runner.iteration(nullptr, true); !st.ok())
    return report(st.with_context(f.engine));
  const double first_run_ms = ms_since(first_run_start);
  const double first_result_ms = ms_since(command_start);
  const double first_result_unix_ms =
      std::chrono::duration<double, std::milli>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  const auto warm_start = Clock::now();
  while (ms_since(warm_start) < f.warmup_ms)
    if (Status st = runner.iteration(nullptr, copies); !st.ok()) return report(st);
  RunReport r;
  const auto loop_start = Clock::now();
  while (static_cast<int>(r.times.compute_ms.size()) < f.iterations ||
         ms_since(loop_start) < f.duration_s * 1000) {
    if (Status st = runner.iteration(&r.times, copies); !st.ok()) return report(st);
  }
  r.times.wall_s = ms_since(loop_start) / 1000;
  // Per-launch times, after the loop so they do not disturb its timings.
  if (f.profile) {
    runtime::ProfileOptions po;
    po.iterations = f.iterations;
    auto p = (*ctx)->profile(po, (*ctx)->stream());
    if (!p.ok()) return report(p.status().with_context(f.engine + ": --profile"));
    r.profile = std::move(*p);
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
  r.engine = f.engine;
  r.device = f.device;
  r.device_name = (*engine)->device_name();
  if (!f.gpu.empty()) {
    r.roofline_gpu = {*target::parse_gpu(f.gpu), "--gpu"};  // checked in validate_flags
  } else if (auto gpu = target::gpu_from_device_name(r.device_name)) {
    r.roofline_gpu = {*gpu, "from the device name"};
  } else {
    r.roofline_gpu = {target::Gpu::kH100,
                      "this device is not in the table: H100's peaks; pick one with --gpu"};
  }
  size_t in_index = 0;
  for (const auto& b : bindings) {
    if (!b.is_input) continue;
    const HostInput& in = (*inputs)[in_index++];
    r.inputs.push_back(
        {b.name, std::string(ir::dtype_name(in.tensor.dtype())),
         ir::shape_to_string(in.tensor.shape()),
         in.source == "random" ? fmt::format("random data (seed {})", f.seed) : in.source});
  }
  // Over a shape range the output shapes follow the inputs': say which ran.
  for (size_t i = 0; i < out_names.size(); ++i)
    r.outputs.push_back({out_names[i], std::string(ir::dtype_name(out_tensors[i].dtype())),
                         ir::shape_to_string(out_tensors[i].shape()), ""});
  r.kernels = file->contents().manifest.kernels_size();
  r.cuda_graph = !f.no_cuda_graph;
  r.data_transfers = copies;
  r.seed = f.seed;
  r.warmup_ms = f.warmup_ms;
  r.open_ms = open_ms;
  r.device_load_ms = device_load_ms;
  r.context_ms = context_ms;
  r.load_timeline = (*engine)->load_timeline();
  r.first_run_ms = first_run_ms;
  r.first_result_ms = first_result_ms;
  r.first_result_unix_ms = first_result_unix_ms;
  r.weights_bytes = (*engine)->weights_bytes();
  r.arena_bytes = (*engine)->arena_bytes();
  r.workspace_bytes = (*ctx)->workspace_bytes();
  r.context_bytes = (*ctx)->device_bytes();
  r.check_rtol = f.check_rtol;
  if (check_graph) {
    auto ref = reference_outputs(*check_graph, bindings, *inputs);
    if (!ref.ok()) return report(ref.status());
    for (size_t i = 0; i < out_tensors.size(); ++i) {
      auto c = compare_output(out_names[i], out_tensors[i], (*ref)[i], f.check_rtol);
      if (!c.ok()) return report(c.status());
      r.checks.push_back(*c);
    }
  }
  if (!f.output_dir.empty()) {
    auto written = write_outputs(f.output_dir, out_names, out_tensors);
    if (!written.ok()) return report(written.status());
    r.written = *written;
  }
  std::fputs(run_report_text(r).c_str(), stdout);
  const std::pair<const std::string*, std::string> files[] = {
      {&f.json, f.json.empty() ? "" : run_report_json(r)},
      {&f.export_times, f.export_times.empty() ? "" : run_times_json(r)},
      {&f.export_profile, f.export_profile.empty() ? "" : run_profile_json(r)},
  };
  for (const auto& [path, text] : files)
    if (!path->empty())
      if (Status w = write_file_atomic(*path, text); !w.ok()) return report(w);
  if (!f.export_layer_info.empty()) {
    std::error_code ec;
    driver::EngineReportInput in;
    in.path = f.engine;
    in.file_bytes = std::filesystem::file_size(f.engine, ec);
    in.header = *header;
    in.contents = &file->contents();
    if (Status w = write_file_atomic(f.export_layer_info, driver::engine_report_json(in)); !w.ok())
      return report(w);
  }
  int failed = 0;
  for (const auto& c : r.checks) failed += c.ok ? 0 : 1;
  if (failed)
    std::fprintf(stderr,
                 "graphc: check failed: %d of %zu outputs differ from the reference by more than "
                 "--check-rtol %g (relative L2)\n",
                 failed, r.checks.size(), f.check_rtol);
  return accuracy_exit_code(failed);
}

}  // namespace

CommandFn add_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand(
      "run", "Run an engine on this GPU: .npy or random inputs, latency and throughput report");
  cmd->add_option("engine,--loadEngine", flags->engine, "Engine file (graphc build)")->required();
  cmd->add_option("--input", flags->inputs,
                  "NAME=FILE.npy: an input's data (repeatable; dtype and shape must match the "
                  "engine's); other inputs get seeded random data")
      ->allow_extra_args(false);
  cmd->add_option("--loadInputs", flags->load_inputs,
                  "As trtexec: NAME:FILE.npy[,NAME:FILE.npy] (.npy files, not raw binary)")
      ->allow_extra_args(false)
      ->group("trtexec flags");
  add_shape_flags(cmd, flags->shapes,
                  "The input shapes, NAME:DxDx...[,NAME:DxDx...]: any in the engine's shape "
                  "profile (--shape-profile-index) for an engine built with shape ranges "
                  "(default: the profile's opt shapes); otherwise the engine's own");
  cmd->add_option("--shape-profile-index", flags->shape_profile,
                  "Which shape profile of the engine the run uses (default 0; trtexec's "
                  "--profile=N)");
  cmd->add_option("--seed", flags->seed, "Seed of the random inputs (default 1)");
  cmd->add_option("--iterations", flags->iterations, "Timed iterations, at least (default 100)");
  cmd->add_option("--duration", flags->duration_s,
                  "Keep timing for at least this many seconds (default 0)");
  cmd->add_option("--warmup-ms,--warmUp", flags->warmup_ms,
                  "Warm-up time in ms before timing (default 200)");
  cmd->add_option("--device", flags->device, "CUDA device ordinal (default 0)");
  cmd->add_flag("--profile,--dumpProfile", flags->profile,
                "Also time every launch on its own (no CUDA graph) and print them by time with "
                "their ONNX nodes");
  auto* no_graph = cmd->add_flag("--no-cuda-graph", flags->no_cuda_graph,
                                 "Launch kernels one by one instead of one CUDA graph");
  cmd->add_flag("--useCudaGraph", flags->use_cuda_graph,
                "As trtexec: replay one CUDA graph (graphc's default)")
      ->group("trtexec flags")
      ->excludes(no_graph);
  cmd->add_flag("--noDataTransfers", flags->no_data_transfers,
                "Time the engine alone: no input/output copies in the timed loop (the first run "
                "still copies, for --output-dir and --check)");
  cmd->add_option("--output-dir", flags->output_dir,
                  "Write each output as DIR/NAME.npy (created if missing)");
  cmd->add_option("--json", flags->json, "Also write the report as JSON to this file");
  cmd->add_option("--exportTimes", flags->export_times,
                  "Write every timed iteration's times as JSON to this file");
  cmd->add_option("--gpu", flags->gpu,
                  "--profile: the GPU whose datasheet peaks give each launch's roofline: h100, "
                  "h200, a100 or l4 (default: this device's, when it is one of them)");
  cmd->add_option("--exportProfile", flags->export_profile,
                  "Write the per-launch profile as JSON to this file (implies --profile)");
  cmd->add_option("--exportLayerInfo", flags->export_layer_info,
                  "Write what the engine holds (graphc inspect ENGINE --json) to this file");
  cmd->add_flag("--check", flags->check,
                "Compare the outputs with the CPU reference executor (needs --onnx); exit "
                "status 3 when an output differs");
  cmd->add_option("--onnx", flags->onnx, "The ONNX model the engine was built from (--check)");
  cmd->add_option("--check-rtol", flags->check_rtol,
                  "Largest relative L2 error --check accepts (default 1e-3)");
  add_trtexec_flags(cmd, "run", flags->trtexec);
  return [flags] { return run_engine(*flags); };
}

}  // namespace graphc::cli
