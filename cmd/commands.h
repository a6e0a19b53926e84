// Each graphc subcommand registers its flags on the CLI11 app and returns the
// function to run when chosen.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace graphc::cli {

using CommandFn = std::function<int()>;

CommandFn add_inspect_command(CLI::App& app);
CommandFn add_conformance_command(CLI::App& app);
CommandFn add_operators_command(CLI::App& app);
CommandFn add_build_command(CLI::App& app);
CommandFn add_run_command(CLI::App& app);
CommandFn add_refit_command(CLI::App& app);

}  // namespace graphc::cli
