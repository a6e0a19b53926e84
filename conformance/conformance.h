// Runs ONNX backend node tests (model.onnx + test_data_set_*/input_N.pb,
// output_N.pb) through graphc and compares with the expected outputs.
// Lives in its own folder (not in DESIGN.md's table) because both cmd/ and
// tests/ use it and it depends on importer/ and reference/ together.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"

namespace graphc::conformance {

enum class Backend { kReference, kCuda };
enum class Outcome { kPass, kFail, kSkip };
const char* outcome_name(Outcome o);

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
  // float16/bfloat16 outputs may also differ by this many units in the last
  // place of their storage type: the GPU's fused kernels keep intermediates
  // in float and round once, where the expected data rounds after every op.
  int half_ulps = 0;
};

// How a graph is prepared after import and shape inference (the optimizer
// pipeline plugs in here once it exists).
using GraphTransform = std::function<Status(ir::Graph&)>;

struct Options {
  Backend backend = Backend::kReference;
  Tolerance tolerance;
  std::string filter;  // substring of the case name; empty = all
  GraphTransform transform;
};

struct CaseResult {
  std::string name;
  Outcome outcome = Outcome::kFail;
  std::string reason;            // empty on pass
  std::vector<std::string> ops;  // distinct op types in the model
  double seconds = 0;
};

struct Report {
  std::vector<CaseResult> cases;
  int passed = 0, failed = 0, skipped = 0;
  int total() const { return passed + failed + skipped; }
  std::string summary_line() const;  // "conformance: P passed, F failed, S skipped of T"
  // Every case as one JSON document (support/json.h; docs/cli.md).
  std::string to_json() const;
  // Per op type: cases containing it, and how many passed/failed/skipped.
  std::string op_table() const;
};

// True when every op in the case is one graphc supports (so it must pass or
// be listed as a known exception with its reason).
bool case_in_scope(const CaseResult& result);

// Runs one case folder.
CaseResult run_case(const std::string& case_dir, const Options& options);
// Runs every case folder under `dir` (sorted), calling `on_case` after each.
Expected<Report> run_suite(const std::string& dir, const Options& options,
                           const std::function<void(const CaseResult&)>& on_case = {});

// Compares `actual` with `expected`: dtypes and shapes equal; floats within
// tolerance (NaN matches NaN, inf matches inf of the same sign); others exact.
Status compare_tensors(const ir::Tensor& expected, const ir::Tensor& actual, const Tolerance& tol);

}  // namespace graphc::conformance
