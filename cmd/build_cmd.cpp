// graphc build MODEL --arch sm_90 [--arch ...] -o MODEL.engine: import, bind
// shapes, optimize, lower to GPU kernels, compile each architecture with NVRTC
// (no GPU needed) and write the engine atomically. Deterministic: the same
// model and flags give a byte-identical file.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>

#include "cmd/cli_common.h"
#include "cmd/commands.h"
#include "cmd/optimizer_flags.h"
#include "driver/engine_build.h"
#include "driver/load_model.h"
#include "optimizer/pass.h"

namespace graphc::cli {

namespace {

struct BuildFlags {
  std::string model;
  std::string output;
  std::vector<std::string> archs;
  std::vector<std::string> shapes;
  OptimizerFlags opt;
  bool no_cache = false;
};

// One status line per phase on a terminal; quiet when piped (CI logs).
void phase(const std::string& text) {
  if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K[graphc build] %s", text.c_str());
  spdlog::info("build: {}", text);
}

int run_build(const BuildFlags& f) {
  std::vector<std::string> archs;
  for (const auto& a : f.archs) {
    if (a == "native") {
      auto sm = driver::device_sm();
      if (!sm.ok()) return report(sm.status().with_context("--arch native"));
      archs.push_back(fmt::format("sm_{}", *sm));
    } else {
      archs.push_back(a);
    }
  }
  auto pass_ctx = make_pass_context(f.opt);
  if (!pass_ctx.ok()) return report(pass_ctx.status());
  auto shapes = parse_shape_flags(f.shapes);
  if (!shapes.ok()) return report(shapes.status());
  phase("import");
  driver::LoadOptions load;
  load.input_shapes = *shapes;
  auto graph = driver::load_model(f.model, load);
  if (!graph.ok()) return report(graph.status());
  phase("optimize");
  Status st = optimizer::run_passes(*graph, *pass_ctx);
  if (!st.ok()) return report(st.with_context(f.model));
  phase(fmt::format("emit and compile for {}", fmt::join(archs, ", ")));
  driver::BuildOptions opts;
  opts.archs = archs;
  opts.precision = f.opt.precision;
  opts.compile.cache_dir = f.no_cache ? "" : emit::default_cache_dir();
  opts.on_compiled = [](size_t done, size_t total) {
    phase(fmt::format("compiled {}/{} architectures", done, total));
  };
  auto contents = driver::build_engine(*graph, opts);
  if (!contents.ok()) return report(contents.status().with_context(f.model));
  phase("write");
  st = engine::write_engine_file(f.output, *contents);
  if (::isatty(STDERR_FILENO)) std::fputc('\n', stderr);
  if (!st.ok()) return report(st);
  std::printf("wrote %s: %d kernels, %zu code modules (%s), arena %llu bytes, weights %zu bytes\n",
              f.output.c_str(), contents->manifest.kernels_size(), contents->code.size() / 2,
              fmt::format("{}", fmt::join(archs, ", ")).c_str(),
              static_cast<unsigned long long>(contents->manifest.arena_bytes()),
              contents->weights.size());
  return kExitOk;
}

}  // namespace

CommandFn add_build_command(CLI::App& app) {
  auto flags = std::make_shared<BuildFlags>();
  auto* cmd =
      app.add_subcommand("build", "Compile an ONNX model into a GPU engine file (no GPU needed)");
  cmd->add_option("model", flags->model, "ONNX model file")->required();
  cmd->add_option("-o,--output", flags->output, "Engine file to write")->required();
  cmd->add_option("--arch", flags->archs,
                  "Target architecture, repeatable: sm_80, sm_86, sm_89, sm_90, sm_90a ...; "
                  "'native' = this GPU")
      ->required();
  cmd->add_option("--shape", flags->shapes, "Bind an input's shape, NAME:DxDx... (repeatable)");
  cmd->add_flag("--no-cache", flags->no_cache, "Do not read or write the NVRTC cache");
  add_optimizer_flags(cmd, flags->opt);
  return [flags] { return run_build(*flags); };
}

}  // namespace graphc::cli
