// What `graphc inspect` shows about compilation: one row per kernel (kind,
// ONNX nodes covered, output shape/dtype, modelled HBM bytes fused vs
// unfused), totals, the memory plan and parameter bytes per dtype.
// The JSON form is a stable schema (docs/inspect-json.md) for CI pipelines.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "emit/plan/gpu_plan.h"
#include "ir/graph.h"
#include "optimizer/pass.h"
#include "support/json.h"
#include "target/cuda/cuda_target.h"
#include "target/roofline.h"

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
  int32_t launch = -1;    // its launch in the engine's kernel list; -1: launches nothing
  std::string unlowered;  // set: no GPU lowering yet, and why
  // The roofline (target/roofline.h) on FusionReport::gpu: modelled
  // contraction FLOPs, what they run on, and the least time flops and
  // bytes_fused take at that GPU's peaks. Views: 0.
  int64_t flops = 0;
  target::Math math = target::Math::kNone;
  target::Roofline roofline;
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
  std::vector<std::string> unlowered;        // kernels without a GPU lowering (build would fail)
  std::vector<std::string> attention_notes;  // softmaxes left unfused by fuse-attention, and why
  target::Gpu gpu = target::Gpu::kH100;      // the roofline's GPU (inspect --gpu)
  int64_t flops = 0;                         // summed over rows
  double roofline_us = 0;                    // summed over rows
};

// Sets the report's GPU and every row's roofline (and the sum) for it.
void apply_roofline(FusionReport& r, target::Gpu gpu);

// The report of an optimized graph, read off its GPU plan (the plan graphc
// build compiles: nothing is re-planned for the report). `onnx_nodes`: the
// node count before optimization.
FusionReport report_from_plan(const ir::Graph& optimized, const emit::GpuPlan& plan,
                              const optimizer::PassContext& ctx, int64_t onnx_nodes);

// Optimizes `graph` in place (shape-inferred) for `target` (set as ctx.target,
// so the passes ask it) and reports on its GPU plan. Kernels without a GPU
// lowering are listed, not an error.
Expected<FusionReport> optimize_and_report(
    ir::Graph& graph, optimizer::PassContext& ctx,
    std::shared_ptr<const target::CudaTarget> target = std::make_shared<target::CudaTarget>());

std::string report_text(const FusionReport& r);
// The report as one JSON object (the "fusion" key of `inspect --json`).
Json report_json(const FusionReport& r);

}  // namespace graphc::driver
