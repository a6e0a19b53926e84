// The pieces of `graphc run` that need no GPU: input specs and .npy inputs
// checked against the engine's bindings, seeded random inputs, output files,
// latency statistics and the --check comparison with the reference executor.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "engine_format/engine_file.h"
#include "runtime/engine.h"
#include "support/status.h"

namespace graphc::cli {

struct HostInput {
  std::string source;  // the .npy path, or "random"
  ir::Tensor tensor;
};

// The bindings at the shapes a run uses. An engine of fixed shapes: its own
// (--shape may only restate them; `profile` must be 0). An engine with shape
// ranges: each input at its --shape, else at the profile's opt shape, checked
// against shape profile `profile` (the error names the input, dim and range),
// and the outputs at what those give. `input_shapes` gets each input's
// shape, for ExecutionContext::set_input_shape.
Expected<std::vector<runtime::BindingInfo>> bindings_at_shapes(
    const engine::EngineContents& contents, const std::map<std::string, ir::Shape>& shapes,
    int profile, std::vector<std::vector<int64_t>>* input_shapes);

// One tensor per input binding, in binding order: from `--input NAME=FILE.npy`
// specs (dtype and shape must equal the binding's exactly), otherwise seeded
// random data (floats in [-1, 1], integers in [0, 8), bools 0/1).
Expected<std::vector<HostInput>> prepare_inputs(const std::vector<runtime::BindingInfo>& bindings,
                                                const std::vector<std::string>& specs,
                                                uint32_t seed);

// An output's bytes as a tensor of the binding's dtype and shape.
Expected<ir::Tensor> output_tensor(const runtime::BindingInfo& binding, const std::string& bytes);

// Writes every output as DIR/NAME.npy (names made file-safe and unique, each
// file written atomically); bfloat16 (no .npy type) is written as float32.
// Returns the paths written.
Expected<std::vector<std::string>> write_outputs(const std::string& dir,
                                                 const std::vector<std::string>& names,
                                                 const std::vector<ir::Tensor>& outputs);
// "a/b:0" -> "a_b_0"; never empty, never hidden, never a path.
std::string file_safe_name(const std::string& name);

struct Summary {
  double min = 0, mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0;
};
Summary summarize(std::vector<double> values);

struct CheckResult {
  std::string name;
  double max_abs = 0;
  double rel_l2 = 0;  // ||gpu - ref|| / ||ref|| (||gpu - ref|| when ref is all zeros)
  bool ok = false;
};
// Compares one output with the reference; NaN where both are NaN counts as equal.
Expected<CheckResult> compare_output(const std::string& name, const ir::Tensor& gpu,
                                     const ir::Tensor& reference, double rtol);

// Imports `onnx_path` with the engine's input shapes and runs the reference
// executor on `inputs`; returns each engine output's reference tensor.
Expected<ir::Graph> load_check_model(const std::string& onnx_path,
                                     const std::vector<runtime::BindingInfo>& bindings);
Expected<std::vector<ir::Tensor>> reference_outputs(
    const ir::Graph& graph, const std::vector<runtime::BindingInfo>& bindings,
    const std::vector<HostInput>& inputs);

}  // namespace graphc::cli
