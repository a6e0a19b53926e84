// graphc build MODEL --arch sm_90 [--arch ...] -o MODEL.engine: import, bind
// shapes, optimize, lower to GPU kernels, compile every distinct kernel for
// each architecture with NVRTC (no GPU needed; in parallel, through the
// cache) and write the engine atomically. Deterministic: the same model and
// flags give a byte-identical file. A status line on a terminal shows the
// phase; the last line on stdout summarises the engine. Without --arch it
// builds for this machine's GPU. trtexec's spellings work too (--onnx,
// --saveEngine, --fp16, --shapes, --timingCacheFile; docs/cli.md).
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cmd/build_progress.h"
#include "cmd/cli_common.h"
#include "cmd/commands.h"
#include "cmd/optimizer_flags.h"
#include "cmd/trtexec_flags.h"
#include "driver/algorithm_tuning.h"
#include "driver/engine_build.h"
#include "driver/load_model.h"
#include "optimizer/pass.h"

namespace graphc::cli {

namespace {

namespace fs = std::filesystem;

struct BuildFlags {
  std::string model;
  std::string output;
  std::vector<std::string> archs;
  ShapeFlags shapes;
  OptimizerFlags opt;
  TrtexecFlags trtexec;
  bool no_cache = false;
  int jobs = 0;
  LoweringFlags lowering;
  bool tune = false;
  std::string timing_cache;
};

// Checked before any work, so a typo in -o does not cost a whole build.
// write_engine_file checks again at the end (the folder may change meanwhile).
Status check_output_path(const std::string& model, const std::string& output) {
  if (output.empty()) return invalid_argument("-o: the engine path is empty");
  std::error_code ec;
  fs::path target(output);
  if (fs::is_directory(target, ec))
    return io_error("cannot write engine '{}': it is a folder", output);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::exists(dir, ec))
    return io_error("cannot write engine '{}': folder '{}' does not exist", output, dir.string());
  if (!fs::is_directory(dir, ec))
    return io_error("cannot write engine '{}': '{}' is not a folder", output, dir.string());
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return io_error("cannot write engine '{}': folder '{}': {}", output, dir.string(),
                    std::strerror(errno));
  if (fs::equivalent(model, target, ec))
    return invalid_argument("-o '{}' is the model itself; refusing to overwrite it", output);
  return Status::ok_status();
}

std::string human_bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(uint64_t{1} << 30));
  if (b >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

std::string cache_summary(const driver::BuildStats& s, const std::string& cache_dir, size_t archs) {
  std::string work = fmt::format("{} compilations ({} kernel modules x {} architectures)",
                                 s.compilations, s.modules, archs);
  if (cache_dir.empty()) return fmt::format("build: NVRTC cache off (--no-cache): {}", work);
  return fmt::format("build: NVRTC cache: {} hits, {} misses of {}; cache folder {}", s.cache_hits,
                     s.cache_misses, work, cache_dir);
}

// "15 kernels in 10 modules for sm_80, sm_90 (CUBIN + PTX)", with "(49 library
// calls)" after the modules when there are any; scripts parse "N kernels in M
// modules" (scripts/bench_common.py).
std::string kernel_summary(const engine::Manifest& m, const driver::BuildStats& s,
                           const std::vector<std::string>& archs) {
  size_t calls = 0;
  for (const auto& k : m.kernels()) calls += k.has_library_call() ? 1 : 0;
  std::string out = fmt::format("{} kernels in {} modules", s.kernels, s.modules);
  if (calls > 0 && s.modules == 0)
    return out +
           fmt::format(" (all library calls, no generated code) for {}", fmt::join(archs, ", "));
  if (calls > 0) out += fmt::format(" ({} library calls)", calls);
  return out + fmt::format(" for {} (CUBIN + PTX)", fmt::join(archs, ", "));
}

std::string tuning_summary(const driver::TuneStats& t, bool measured) {
  std::string out = fmt::format("; {} of {} library calls ({} distinct) tuned",
                                t.distinct - t.heuristic, t.calls, t.distinct);
  if (measured)
    out += fmt::format(" ({} timed, {} candidates", t.timed, t.candidates);
  else
    out += " (";
  out += fmt::format("{}{} from the timing cache) in {:.2f} s", measured ? ", " : "", t.cache_hits,
                     t.seconds);
  return out;
}

// --arch as given, else this machine's GPU ("native"); without a GPU the
// error says how to name one.
Expected<std::vector<std::string>> target_archs(const std::vector<std::string>& flags) {
  if (!flags.empty()) return driver::resolve_archs(flags);
  if (auto sm = driver::device_sm(); !sm.ok())
    return invalid_argument(
        "no --arch given and no GPU here to build for ({}); name the GPU architecture, e.g. "
        "--arch sm_90 (H100), --arch sm_80 (A100) or --arch sm_89 (L4, RTX 40xx); --arch is "
        "repeatable",
        sm.status().message());
  return driver::resolve_archs({"native"});
}

int run_build(const BuildFlags& f) {
  if (f.opt.print_passes) {
    std::fputs(optimizer::describe_pipeline().c_str(), stdout);
    return kExitOk;
  }
  BuildProgress progress(::isatty(STDERR_FILENO) == 1);
  auto fail = [&](const Status& st) {
    progress.stop();
    return report(st);
  };
  auto warnings = check_trtexec_flags(f.trtexec);
  if (!warnings.ok()) return fail(warnings.status());
  for (const auto& w : *warnings) spdlog::warn("build: {}", w);
  auto archs = target_archs(f.archs);
  if (!archs.ok()) return fail(archs.status());
  if (f.jobs < 0) return fail(invalid_argument("--jobs must be 0 (every core) or more"));
  auto pass_ctx = make_pass_context(f.opt);
  if (!pass_ctx.ok()) return fail(pass_ctx.status());
  auto shapes = parse_shape_flags(f.shapes);
  if (!shapes.ok()) return fail(shapes.status());
  if (Status st = check_output_path(f.model, f.output); !st.ok()) return fail(st);
  // --tune times on this machine's GPU: without one, stop before any work.
  if (f.tune) {
    if (auto gpu = driver::tuning_device(); !gpu.ok())
      return fail(
          gpu.status().with_context("--tune needs a GPU (use --timing-cache FILE alone to "
                                    "build from timings made on a GPU machine)"));
  }
  driver::LoadedTimingCache cache;
  if (!f.timing_cache.empty()) {
    cache = driver::load_timing_cache(f.timing_cache);
    if (!cache.warning.empty()) spdlog::warn("build: {}", cache.warning);
  }

  // One target for the passes (channels-last, split-library-epilogues) and
  // the emitter, so both take the same library decisions; tiles fit the
  // oldest target GPU (the architectures are sorted).
  auto lower = make_cuda_options(f.lowering, engine::parse_sm_arch(archs->front()));
  if (!lower.ok()) return fail(lower.status());
  pass_ctx->target = std::make_shared<target::CudaTarget>(*lower);

  progress.phase("import");
  driver::LoadOptions load;
  load.input_shapes = *shapes;
  auto graph = driver::load_model(f.model, load);
  if (!graph.ok()) return fail(graph.status());
  Status st;
  if (!f.opt.no_optimize) {
    progress.phase("optimize");
    st = optimizer::run_passes(*graph, *pass_ctx);
    if (!st.ok()) return fail(st.with_context(f.model));
  }

  driver::BuildOptions opts;
  opts.lower = *lower;
  opts.archs = *archs;
  opts.precision = precision_name(f.opt);
  opts.compile.cache_dir = f.no_cache ? "" : emit::default_cache_dir();
  opts.compile.jobs = f.jobs;
  opts.compile.on_cache = [](emit::CacheEvent e, const std::string& name, const std::string& arch) {
    if (e == emit::CacheEvent::kCorrupt)
      spdlog::warn("build: NVRTC cache entry of {} ({}) is damaged; recompiling", name, arch);
    else if (e != emit::CacheEvent::kStored)
      spdlog::debug("build: NVRTC cache {} {} ({})", e == emit::CacheEvent::kHit ? "hit" : "miss",
                    name, arch);
  };
  opts.tune.measure = f.tune;
  opts.tune.cache = f.timing_cache.empty() ? nullptr : &cache.cache;
  opts.tune.archs = *archs;
  opts.tune.log = [&](driver::TuneLogLevel level, const std::string& text) {
    if (level == driver::TuneLogLevel::kWarning)
      spdlog::warn("build: {}", text);
    else if (level == driver::TuneLogLevel::kInfo)
      progress.log("build: " + text);
    else
      spdlog::debug("build: {}", text);
  };
  opts.on_phase = [&](std::string_view phase) { progress.phase(std::string(phase)); };
  opts.on_compiled = [&](size_t done, size_t total) { progress.compiled(done, total); };
  driver::BuildStats stats;
  // The weights go from the graph's constants straight into the file.
  auto built = driver::build_engine_streamed(*graph, opts, &stats);
  if (!built.ok()) return fail(built.status().with_context(f.model));
  const engine::EngineContents* contents = &built->contents;
  progress.phase("write");
  progress.log(cache_summary(stats, opts.compile.cache_dir, archs->size()));
  st = engine::write_engine_file(f.output, *contents, built->weights);
  if (!st.ok()) return fail(st);
  // New timings (or a damaged file to replace) are written back atomically.
  if (opts.tune.cache && (stats.tuning.cache_added > 0 || (f.tune && !cache.warning.empty()))) {
    st = write_file_atomic(f.timing_cache, cache.cache.serialize());
    if (!st.ok()) return fail(st.with_context("writing the timing cache"));
    progress.log(fmt::format("build: timing cache '{}': {} entries ({} new)", f.timing_cache,
                             cache.cache.size(), stats.tuning.cache_added));
  }
  progress.finish();
  std::error_code ec;
  uint64_t size = fs::file_size(f.output, ec);
  std::printf("wrote %s (%s): %s, arena %s, weights %s%s; built in %.2f s\n", f.output.c_str(),
              ec ? "?" : human_bytes(size).c_str(),
              kernel_summary(contents->manifest, stats, *archs).c_str(),
              human_bytes(contents->manifest.arena_bytes()).c_str(),
              human_bytes(contents->manifest.weights_bytes()).c_str(),
              opts.tune.enabled() ? tuning_summary(stats.tuning, f.tune).c_str() : "",
              progress.elapsed());
  return kExitOk;
}

}  // namespace

CommandFn add_build_command(CLI::App& app) {
  auto flags = std::make_shared<BuildFlags>();
  auto* cmd =
      app.add_subcommand("build", "Compile an ONNX model into a GPU engine file (no GPU needed)");
  cmd->add_option("model,--onnx", flags->model, "ONNX model file")->required();
  cmd->add_option("-o,--output,--saveEngine", flags->output, "Engine file to write")->required();
  cmd->add_option("--arch", flags->archs,
                  "Target architecture, repeatable: sm_80, sm_86, sm_89, sm_90, ... (CUBIN for "
                  "that SM and PTX for newer GPUs); 'native' = this machine's GPU, the default")
      ->allow_extra_args(false);
  add_shape_flags(cmd, flags->shapes);
  cmd->add_flag("--no-cache", flags->no_cache, "Do not read or write the NVRTC cache");
  cmd->add_option("-j,--jobs", flags->jobs, "Parallel NVRTC compilations (default: every core)");
  add_lowering_flags(cmd, flags->lowering);
  cmd->add_flag("--tune", flags->tune,
                "Time cuBLASLt's candidate algorithms for each library call on this machine's GPU "
                "(needs one) and record the fastest in the engine");
  cmd->add_option("--timing-cache,--timingCacheFile", flags->timing_cache,
                  "Timing cache file: with --tune, its entries skip timing and new timings are "
                  "added; alone, its entries for the target architectures are recorded (no GPU "
                  "needed)");
  add_optimizer_flags(cmd, flags->opt);
  add_trtexec_flags(cmd, "build", flags->trtexec);
  return [flags] { return run_build(*flags); };
}

}  // namespace graphc::cli
