#include "cmd/unknown_flags.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>

namespace graphc::cli {

namespace {

// Every spelling of every option of `app` ("--output", "-o", "--saveEngine").
std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

bool is_number(const std::string& s) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool known(const std::vector<std::string>& names, const std::string& flag) {
  return std::find(names.begin(), names.end(), flag) != names.end();
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      const size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& names) {
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const auto& name : names) {
    const size_t d = edit_distance(word, name);
    if (d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

std::string unknown_flag_message(const CLI::App& app, const std::vector<std::string>& args) {
  const std::vector<std::string> global = flag_names(app);
  const CLI::App* command = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!command && !arg.empty() && arg[0] != '-' && !(i > 0 && args[i - 1] == "--log-level")) {
      for (const CLI::App* sub : app.get_subcommands({}))
        if (sub->check_name(arg)) command = sub;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-' || arg == "--" || is_number(arg)) continue;
    const std::string flag = arg.substr(0, arg.find('='));
    const std::vector<std::string> own =
        command ? flag_names(*command) : std::vector<std::string>{};
    if (known(own, flag) || known(global, flag)) continue;
    if (!command) {
      // trtexec's command line has no command: graphc build / run it is.
      if (flag == "--onnx" || flag == "--saveEngine" || flag == "--fp16" || flag == "--shapes")
        return fmt::format(
            "'{}' needs a command: graphc build --onnx MODEL.onnx --saveEngine MODEL.engine "
            "builds an engine (trtexec's build), graphc run --loadEngine MODEL.engine times it "
            "(docs/cli.md, \"Coming from trtexec\")",
            flag);
      if (flag == "--loadEngine")
        return "'--loadEngine' needs a command: graphc run --loadEngine MODEL.engine times an "
               "engine, graphc inspect MODEL.engine shows what it holds";
      return fmt::format("unknown flag '{}' before the command (see graphc --help)", flag);
    }
    const std::string where = "graphc " + command->get_name();
    std::vector<std::string> names = own;
    names.insert(names.end(), global.begin(), global.end());
    if (std::string near = nearest_name(flag, names); !near.empty())
      return fmt::format("unknown flag '{}' for '{}'; did you mean '{}'? (see {} --help)", flag,
                         where, near, where);
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub != command && known(flag_names(*sub), flag))
        return fmt::format("'{}' is a flag of 'graphc {}', not of '{}' (see {} --help)", flag,
                           sub->get_name(), where, where);
    return fmt::format("unknown flag '{}' for '{}' (see {} --help)", flag, where, where);
  }
  return "";
}

}  // namespace graphc::cli
