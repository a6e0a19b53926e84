// graphc: compile ONNX models into engines for NVIDIA GPUs, and run them.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <map>

#include "cmd/cli_common.h"
#include "cmd/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"graphc: an ahead-of-time ONNX compiler for NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "graphc 0.1.0");
  std::string log_level = "warn";
  bool verbose = false;
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_flag("-v,--verbose", verbose, "same as --log-level info");

  std::map<CLI::App*, graphc::cli::CommandFn> commands;
  auto add = [&](graphc::cli::CommandFn fn) { commands[app.get_subcommands({}).back()] = std::move(fn); };
  add(graphc::cli::add_inspect_command(app));
  add(graphc::cli::add_conformance_command(app));
  add(graphc::cli::add_operators_command(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : graphc::cli::kExitUsage;
  }
  spdlog::set_level(spdlog::level::from_str(verbose ? "info" : log_level));
  spdlog::set_pattern("[graphc %l] %v");
  for (auto& [sub, fn] : commands)
    if (sub->parsed()) return fn();
  return graphc::cli::kExitUsage;
}
