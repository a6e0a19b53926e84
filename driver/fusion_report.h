// What `graphc inspect` shows about compilation: one row per kernel (kind,
// ONNX nodes covered, output shape/dtype, modelled HBM bytes fused vs
// unfused), totals, the memory plan and parameter bytes per dtype.
// The JSON form is a stable schema (docs/inspect-json.md) for CI pipelines.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "emit/buffer_plan.h"
#include "emit/cublaslt_gemm.h"
#include "emit/cudnn_conv.h"
#include "emit/schedule.h"
#include "ir/graph.h"
#include "optimizer/pass.h"

namespace graphc::driver {

struct KernelRow {
  std::string kind;
  std::string name;
  std::vector<std::string> onnx_nodes;
  std::vector<std::string> onnx_ops;  // op type of each covered node
  std::string output;                 // "float32[1x64x56x56]" (first output)
  int64_t bytes_fused = 0, bytes_unfused = 0;
  // gemm kernels: "cuBLASLt" or "generated: <why>"; conv kernels: "cuDNN" or
  // "generated: <why>"; else empty
  std::string lowering;
};

struct FusionReport {
  int64_t onnx_nodes = 0;       // nodes in the imported graph
  int64_t kernels = 0;          // launched kernels after optimization
  int64_t views = 0;            // reshape-like nodes that launch nothing
  std::vector<KernelRow> rows;  // execution order
  int64_t bytes_unfused = 0, bytes_fused = 0;
  int64_t arena_naive = 0, arena_planned = 0, arena_lower_bound = 0;
  std::map<std::string, int64_t> parameter_bytes;  // by dtype
  std::map<std::string, int64_t> pass_counters;
  std::string precision = "fp32";
  std::vector<std::string> precision_notes;  // ops kept in fp32 or clamped, and why
  std::vector<std::string> attention_notes;  // softmaxes left unfused by fuse-attention, and why
};

// Optimizes `graph` in place (shape-inferred) and reports on the result.
// Gemm rows say whether `gemm` sends them to cuBLASLt, conv rows whether
// `conv` sends them to cuDNN.
Expected<FusionReport> optimize_and_report(ir::Graph& graph, optimizer::PassContext& ctx,
                                           const emit::GemmOptions& gemm = {},
                                           const emit::ConvOptions& conv = {});

std::string report_text(const FusionReport& r);
std::string report_json(const FusionReport& r);  // one JSON object

}  // namespace graphc::driver
