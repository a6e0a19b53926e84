// graphc conformance DIR: run ONNX backend node tests through graphc. Exit
// status 3 when a case fails (docs/cli.md#exit-codes).
#include <cstdio>

#include "cmd/cli_common.h"
#include "cmd/commands.h"
#include "conformance/conformance.h"
#include "optimizer/pass.h"

namespace graphc::cli {

namespace {
struct ConformanceFlags {
  std::string dir;
  std::string backend = "reference";
  std::string json;
  std::string filter;
  bool verbose = false;
  bool op_table = false;
  bool optimize = false;
  double rtol = 1e-3, atol = 1e-5;
};

int run_conformance_cmd(const ConformanceFlags& f) {
  conformance::Options opts;
  opts.backend =
      f.backend == "cuda" ? conformance::Backend::kCuda : conformance::Backend::kReference;
  opts.tolerance = {f.rtol, f.atol};
  // See Tolerance::half_ulps: fused GPU kernels round half-precision results once.
  if (opts.backend == conformance::Backend::kCuda) opts.tolerance.half_ulps = 2;
  opts.filter = f.filter;
  if (f.optimize)
    opts.transform = [](ir::Graph& g) {
      optimizer::PassContext ctx;
      ctx.verify_after_all = true;
      return optimizer::run_passes(g, ctx);
    };
  auto result = conformance::run_suite(f.dir, opts, [&](const conformance::CaseResult& r) {
    if (f.verbose || r.outcome == conformance::Outcome::kFail)
      std::printf("%-4s %-60s %s\n", conformance::outcome_name(r.outcome), r.name.c_str(),
                  r.reason.c_str());
    std::fflush(stdout);
  });
  if (!result.ok()) return report(result.status());
  if (f.op_table) std::fputs(result->op_table().c_str(), stdout);
  if (!f.json.empty()) {
    Status st = write_file_atomic(f.json, result->to_json());
    if (!st.ok()) return report(st);
  }
  std::printf("%s\n", result->summary_line().c_str());
  return accuracy_exit_code(result->failed);
}
}  // namespace

CommandFn add_conformance_command(CLI::App& app) {
  auto flags = std::make_shared<ConformanceFlags>();
  auto* cmd = app.add_subcommand("conformance", "Run ONNX backend node tests through graphc");
  cmd->add_option("dir", flags->dir,
                  "Folder of test cases (each with model.onnx and test_data_set_*)")
      ->required();
  cmd->add_option("--backend", flags->backend, "reference (CPU) or cuda")
      ->check(CLI::IsMember({"reference", "cuda"}));
  cmd->add_option("--json", flags->json, "Write per-case results as JSON to this file");
  cmd->add_option("--filter", flags->filter, "Only cases whose name contains this text");
  cmd->add_flag("--verbose", flags->verbose, "Print every case, not only failures");
  cmd->add_flag("--optimize", flags->optimize,
                "Run the optimizer pipeline (verifying the IR after each pass) before executing");
  cmd->add_flag("--op-table", flags->op_table, "Print pass/fail/skip counts per operator");
  cmd->add_option("--rtol", flags->rtol, "Relative tolerance for floats (default 1e-3)");
  cmd->add_option("--atol", flags->atol, "Absolute tolerance for floats (default 1e-5)");
  return [flags] { return run_conformance_cmd(*flags); };
}

}  // namespace graphc::cli
