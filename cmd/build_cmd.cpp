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

#include "cmd/build_pipeline.h"
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
  BuildHooks hooks;
  hooks.on_phase = [&](std::string_view phase) { progress.phase(std::string(phase)); };
  hooks.on_compiled = [&](size_t done, size_t total) { progress.compiled(done, total); };
  hooks.log = [&](driver::TuneLogLevel level, const std::string& text) {
    if (level == driver::TuneLogLevel::kWarning)
      spdlog::warn("build: {}", text);
    else if (level == driver::TuneLogLevel::kInfo)
      progress.log("build: " + text);
    else
      spdlog::debug("build: {}", text);
  };
  BuildFlags streamed = f;
  streamed.stream_weights = true;  // from the graph's constants straight into the file
  auto built = build_engine_from_flags(streamed, hooks);
  if (!built.ok()) return fail(built.status());
  const auto& stats = built->stats;
  const auto& archs = built->archs;
  progress.phase("write");
  progress.log(cache_summary(stats, built->cache_dir, archs.size()));
  Status st = built->weights ? engine::write_engine_file(f.output, built->contents, *built->weights)
                             : engine::write_engine_file(f.output, built->contents);
  if (!st.ok()) return fail(st);
  bool cache_written = false;
  st = write_back_timing_cache(f, *built, &cache_written);
  if (!st.ok()) return fail(st);
  if (cache_written)
    progress.log(fmt::format("build: timing cache '{}': {} entries ({} new)", f.timing_cache,
                             built->timing_cache.cache.size(), stats.tuning.cache_added));
  progress.finish();
  std::error_code ec;
  uint64_t size = fs::file_size(f.output, ec);
  std::printf("wrote %s (%s): %s, arena %s, weights %s%s; built in %.2f s\n", f.output.c_str(),
              ec ? "?" : human_bytes(size).c_str(),
              kernel_summary(built->contents.manifest, stats, archs).c_str(),
              human_bytes(built->contents.manifest.arena_bytes()).c_str(),
              human_bytes(built->contents.manifest.weights_bytes()).c_str(),
              built->tuning ? tuning_summary(stats.tuning, f.tune).c_str() : "",
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
