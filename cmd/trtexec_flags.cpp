#include "cmd/trtexec_flags.h"

#include <CLI/CLI.hpp>

namespace graphc::cli {

namespace {

struct Known {
  const char* command;
  const char* name;
  bool takes_value;
  bool refuse;
  const char* why;
};

// Kept short: the trtexec flags people pass out of habit. Unknown flags get
// a "did you mean" from the parser instead.
constexpr Known kFlags[] = {
    {"build", "--int8", false, true,
     "graphc has no INT8 path: it builds fp32, fp16 (--fp16) and bf16 (--bf16) engines"},
    {"build", "--best", false, true,
     "graphc does not pick a precision per layer: choose --fp16 or --bf16 (or fp32, the "
     "default)"},
    {"build", "--workspace", true, false,
     "ignored: library workspaces are sized per call (graphc inspect ENGINE lists them)"},
    {"build", "--memPoolSize", true, false,
     "ignored: library workspaces are sized per call (graphc inspect ENGINE lists them)"},
    {"build", "--explicitBatch", false, false,
     "ignored: every graphc engine has an explicit batch dimension"},
    {"build", "--noTF32", false, false,
     "ignored: graphc never uses TF32 unless --allow-tf32 is given"},
    {"build", "--skipInference", false, false,
     "ignored: graphc build never runs the engine (graphc run does)"},
    {"build", "--builderOptimizationLevel", true, false,
     "ignored: graphc's optimizer has one level (use --tune to time library algorithms)"},
    {"run", "--avgRuns", true, false,
     "ignored: graphc reports min, mean, median, p90, p95 and p99 over all timed iterations"},
    {"run", "--percentile", true, false, "ignored: graphc reports p90, p95 and p99"},
    {"run", "--useSpinWait", false, false, "ignored: graphc waits on CUDA events"},
    {"run", "--separateProfileRun", false, false,
     "ignored: --profile always times launches after the timed loop, separately"},
    {"run", "--threads", false, false, "ignored: graphc run uses one host thread"},
    {"run", "--streams", true, true,
     "graphc run times one stream; for concurrent inference run one ExecutionContext per "
     "stream through the runtime API (docs/runtime-api.md)"},
    {"run", "--fp16", false, false,
     "ignored: the precision is fixed when the engine is built (graphc build --fp16)"},
    {"run", "--bf16", false, false,
     "ignored: the precision is fixed when the engine is built (graphc build --bf16)"},
};

}  // namespace

void add_trtexec_flags(CLI::App* cmd, const std::string& command, TrtexecFlags& flags) {
  size_t count = 0;
  for (const Known& k : kFlags) count += command == k.command;
  flags.values.resize(count);  // never resized again: the options keep pointers into it
  size_t slot = 0;
  for (const Known& k : kFlags) {
    if (command != k.command) continue;
    TrtexecFlags::Entry e{k.name, k.refuse, k.why, nullptr};
    e.option = k.takes_value ? cmd->add_option(k.name, flags.values[slot++], k.why)
                             : cmd->add_flag(k.name, k.why);
    e.option->group("trtexec flags graphc does not use");
    flags.entries.push_back(std::move(e));
  }
}

Expected<std::vector<std::string>> check_trtexec_flags(const TrtexecFlags& flags) {
  std::vector<std::string> warnings;
  for (const auto& e : flags.entries) {
    if (!e.option || e.option->count() == 0) continue;
    if (e.refuse) return invalid_argument("{}: {}", e.name, e.why);
    warnings.push_back(e.name + " " + e.why);
  }
  return warnings;
}

}  // namespace graphc::cli
