// graphc: compile ONNX models into engines for NVIDIA GPUs, and run them.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <new>

#include "cmd/cli_common.h"
#include "cmd/commands.h"
#include "cmd/unknown_flags.h"
#include "cmd/version.h"
#include "runtime/warnings.h"

int main(int argc, char** argv) {
  CLI::App app{"graphc: an ahead-of-time ONNX compiler for NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    std::string text = graphc::cli::version_text();
    if (!text.empty() && text.back() == '\n') text.pop_back();  // CLI11 adds one
    return text;
  });
  std::string log_level = "warn";
  bool verbose = false;
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_flag("-v,--verbose", verbose, "same as --log-level info");
  // The global flags work after the command too: graphc build ... -v.
  app.fallthrough();

  std::map<CLI::App*, graphc::cli::CommandFn> commands;
  auto add = [&](graphc::cli::CommandFn fn) {
    commands[app.get_subcommands({}).back()] = std::move(fn);
  };
  add(graphc::cli::add_inspect_command(app));
  add(graphc::cli::add_conformance_command(app));
  add(graphc::cli::add_operators_command(app));
  add(graphc::cli::add_build_command(app));
  add(graphc::cli::add_run_command(app));
  add(graphc::cli::add_refit_command(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    // An unknown flag anywhere: name it and what was probably meant, before
    // any other complaint (a misspelt -o would otherwise read "--output is
    // required").
    if (std::string msg = graphc::cli::unknown_flag_message(app, {argv + 1, argv + argc});
        !msg.empty()) {
      std::fprintf(stderr, "graphc: error: %s\n", msg.c_str());
      return graphc::cli::kExitUsage;
    }
    // "graphc frobnicate": name the unknown command rather than only saying
    // that one is required.
    for (int i = 1; i < argc && dynamic_cast<const CLI::RequiredError*>(&e); ++i) {
      std::string arg = argv[i];
      if (arg.empty() || arg[0] == '-') continue;
      if (i > 1 && std::string(argv[i - 1]) == "--log-level") continue;
      bool known = false;
      for (const auto* sub : app.get_subcommands({})) known = known || sub->check_name(arg);
      if (!known) {
        std::fprintf(stderr, "graphc: error: unknown command '%s' (see graphc --help)\n",
                     arg.c_str());
        return graphc::cli::kExitUsage;
      }
      break;
    }
    int code = app.exit(e);
    return code == 0 ? 0 : graphc::cli::kExitUsage;
  }
  // Logs go to stderr: stdout carries reports and JSON that scripts parse.
  spdlog::set_default_logger(spdlog::stderr_color_mt("graphc"));
  auto level = spdlog::level::from_str(log_level);
  if (verbose && level > spdlog::level::info) level = spdlog::level::info;  // -v never lowers it
  spdlog::set_level(level);
  spdlog::set_pattern("[graphc %l] %v");
  graphc::runtime::set_warning_sink([](const std::string& m) { spdlog::warn("{}", m); });
  // The library reports errors as Status; this is the last line of defence
  // (e.g. std::bad_alloc) so no input ends in an abort.
  try {
    for (auto& [sub, fn] : commands)
      if (sub->parsed()) return fn();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "graphc: error: out of memory\n");
    return graphc::cli::kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graphc: internal error: %s\n", e.what());
    return graphc::cli::kExitError;
  }
  return graphc::cli::kExitUsage;
}
