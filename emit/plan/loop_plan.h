// A Loop on a run-time trip count or condition in the GPU plan. The body
// (typed and optimized by the optimize-loop-bodies pass, a graph of its own)
// is lowered as a plan of its own and merged into the outer one as a
// sub-plan: its slots get the outer plan's (bound inputs map to outer slots,
// its arena and outputs go to a region of the outer arena kept for the loop,
// after everything else; its weights after the outer weights), its modules
// join the outer modules (one per entry), its launches follow the loop's.
//
// The launches, in order:
//   copies of the initial loop-carried values into the state slots (the Loop
//   node's outputs: the body reads them, and after the last iteration they
//   hold the results),
//   the loop launch: the control kernel (emit/cuda/cuda_loop_control.h) with
//   loop_body = the number of launches after it that form the body,
//   the body's launches, then copies of its loop-carried outputs into the
//   state slots (through temporaries where one would overwrite a state that
//   a later copy still reads).
// The runtime runs the control kernel before the body and again after each
// iteration (runtime/loop_launch.cpp): inside one CUDA graph as a WHILE
// conditional node, or host-driven where the driver has none.
//
// Refused by name: scan outputs (their length is the run-time trip count),
// shape ranges, a body the pass did not prepare.
#pragma once

#include <string>
#include <vector>

#include "emit/plan/gpu_plan.h"
#include "emit/plan/slot_table.h"

namespace graphc::emit {

struct LoweredLoop {
  int32_t launch = -1;                     // the loop launch's index in GpuPlan::launches
  std::vector<KernelRecord> body_records;  // the body's kernels, launch indices into the outer plan
};

// Appends Loop node `n`'s launches to out.launches (and its slots, modules
// and weights to `out`).
Expected<LoweredLoop> lower_loop(const ir::Graph& graph, const ir::Node& n,
                                 const std::vector<std::string>& onnx_nodes,
                                 const target::CudaTarget& target, const PlanOptions& options,
                                 SlotTable& slots, GpuPlan& out);

}  // namespace graphc::emit
