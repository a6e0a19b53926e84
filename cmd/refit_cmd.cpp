// graphc refit ENGINE MODEL.onnx -o NEW.engine: the engine with the weights
// of another model of the same graph, shapes and dtypes, without compiling
// (cmd/refit_pipeline.h). The new file is written atomically, as build
// writes: a refused refit leaves no file. -o may name ENGINE itself: the
// engine's manifest and code are read before the new file replaces it.
#include <unistd.h>

#include <filesystem>

#include "cmd/build_progress.h"
#include "cmd/cli_common.h"
#include "cmd/commands.h"
#include "cmd/refit_pipeline.h"

namespace graphc::cli {

namespace {

int run_refit(const RefitFlags& f) {
  BuildProgress progress(::isatty(STDERR_FILENO) == 1);
  auto fail = [&](const Status& st) {
    progress.stop();
    return report(st);
  };
  BuildHooks hooks;
  hooks.on_phase = [&](std::string_view phase) { progress.phase(std::string(phase)); };
  auto refit = refit_engine_from_files(f, hooks);
  if (!refit.ok()) return fail(refit.status());
  progress.phase("write");
  Status st = engine::write_engine_file(f.output, refit->contents, refit->weights);
  if (!st.ok()) return fail(st);
  progress.finish();
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(f.output, ec);
  std::printf(
      "wrote %s (%s): %s's %d kernels with the weights of %s (%s), structure %s; refit in "
      "%.2f s, nothing compiled\n",
      f.output.c_str(), ec ? "?" : human_bytes(size).c_str(), f.engine.c_str(),
      refit->contents.manifest.kernels_size(), f.model.c_str(),
      human_bytes(refit->weights.bytes).c_str(), refit->structure_hash.c_str(), progress.elapsed());
  return kExitOk;
}

}  // namespace

CommandFn add_refit_command(CLI::App& app) {
  auto flags = std::make_shared<RefitFlags>();
  auto* cmd = app.add_subcommand(
      "refit",
      "Give an engine the weights of another model of the same graph, shapes and dtypes, without "
      "compiling (no GPU needed)");
  cmd->add_option("engine", flags->engine, "Engine file built by graphc build")->required();
  cmd->add_option("model", flags->model, "ONNX model with the new weights")->required();
  cmd->add_option("-o,--output", flags->output, "Engine file to write (may be ENGINE itself)")
      ->required();
  return [flags] { return run_refit(*flags); };
}

}  // namespace graphc::cli
