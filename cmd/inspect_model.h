// The work of `graphc inspect` without its printing: a model imported (shapes
// inferred when every input dim is known) and optimized into the fusion
// report, or an engine read and validated; and the `--json` documents
// (docs/inspect-json.md). The CLI (cmd/inspect_cmd.cpp) and the Python
// package (graphc.inspect) both call it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "cmd/cli_common.h"
#include "cmd/optimizer_flags.h"
#include "driver/fusion_report.h"
#include "driver/shape_profiles.h"
#include "importer/importer.h"
#include "ir/graph.h"
#include "support/json.h"

namespace graphc::cli {

struct InspectFlags {
  std::string model;        // model or engine file (with model_bytes: its display name)
  std::string model_bytes;  // non-empty: the file's bytes, held in memory
  ShapeFlags shapes;
  std::string svg;
  bool ir = false;
  bool dot = false;
  bool json = false;
  std::string gpu;  // the roofline's GPU; "": h100
  OptimizerFlags opt;
  LoweringFlags lowering;
};

struct ModelSummary {
  std::map<std::string, int64_t> op_counts;  // every node of the model, by operator
  std::map<std::string, int64_t> unsupported_counts, skipped_counts;  // of those: left out
  std::map<std::string, std::pair<int64_t, int64_t>> params_by_dtype;  // count, bytes
  int64_t param_count = 0, param_bytes = 0;
};

struct InspectedModel {
  // As imported, shape-inferred when `inferred`. For a model with operators
  // graphc cannot compile: the part it can compile (`partial` says what was
  // left out; its graph member is moved here).
  ir::Graph graph;
  importer::PartialImport partial;
  bool inferred = false;
  std::optional<driver::FusionReport> fusion;  // set when the optimizer ran
  ir::Graph optimized;                         // valid when `fusion` is set
  ModelSummary summary;
  // Set when inspected over shape ranges (--min/--opt/--max-shape, --shape-
  // profile): the kernels are the range engine's, typed and their roofline
  // modelled at the first profile's opt shapes.
  std::vector<driver::ShapeProfile> profiles;
};

// True when the file (or f.model_bytes) starts with the engine magic.
bool is_engine_input(const InspectFlags& f);

// Imports the model and, when its input shapes are known (fixed or bound by
// --shape) and the optimizer is on, optimizes it for the CUDA target and
// reports on the plan; over shape ranges, the plan graphc build would make
// for them (each profile checked over its whole range first). `for_ir`: stop after shape inference
// (which is then required).
Expected<InspectedModel> inspect_model(const InspectFlags& f, bool for_ir = false);

// `inspect --json` on a model.
Json model_json(const std::string& path, const InspectedModel& m);

// The error a whole-model build would give when `m` has unsupported nodes
// (the CLI prints the triage report, then exits 1 with it); ok otherwise.
Status unsupported_error(const InspectedModel& m, const std::string& model);

// How many of m.graph's outputs the partial import appended (the cut values).
size_t cut_count(const InspectedModel& m);

// `inspect --json` (or the text report) on an engine file or engine bytes;
// the reader validates everything first and a bad engine is its error.
Expected<std::string> inspect_engine(const InspectFlags& f, bool json);

// The `inspect --json` document of a model or an engine, as the CLI prints it.
Expected<std::string> inspect_json(const InspectFlags& f);

}  // namespace graphc::cli
