// Library lowering: a gemm or conv kernel that the CUDA target's library takes
// (target/cuda/cublaslt_rules.h, cudnn_rules.h) becomes one library-call
// launch: its operands' slots and the call's descriptor
// (engine::encode_matmul_params / encode_conv_params), which the runtime
// turns back into a cuBLASLt matmul or a cuDNN convolution.
#pragma once

#include <optional>

#include "emit/library/sdpa_range.h"
#include "emit/plan/gpu_plan.h"
#include "emit/plan/schedule.h"
#include "emit/plan/slot_table.h"
#include "target/cuda/cuda_target.h"

namespace graphc::emit {

struct LibraryLowering {
  target::Lowering lowering;         // the library, or why the kernel stays generated
  std::optional<LaunchPlan> launch;  // set: the library call (args filled)
  // Over a shape range, the call's sizes that vary, for the plan to intern
  // into LibraryCallPlan::sizes (a cuBLASLt matmul's M; a cuDNN conv's batch
  // and spatial dims, engine::conv_range_sizes).
  std::vector<ir::DimExpr> sizes;
  // Over a shape range, an attention cuDNN's SDPA takes at every shape: the
  // call (params at the opt shape) that the generated kernel prefers
  // (LaunchPlan::preferred), its operands and the fields that follow the shape.
  struct Preferred {
    LibraryCallPlan call;
    std::vector<ir::ValueId> args;
    SdpaRangeFields fields;
  };
  std::optional<Preferred> preferred;
};

// For a scheduled gemm/conv kernel `k`: what the target's library takes; when
// it takes the kernel and `make_launch`, the call's launch, its operands given
// slots in `slots`. Other kernel kinds: no library. `range` (a build for a
// shape range, else null): a call whose operands vary takes them at run time
// where the library call can (a matmul whose M alone varies, a conv whose
// batch and spatial dims vary with fixed channels and weights), an attention
// whose tensors vary is generated with cuDNN's SDPA as its preferred call
// where cuDNN takes every shape of the range (sdpa_range.h), else the build
// is refused naming the kernel.
Expected<LibraryLowering> lower_library_call(const ir::Graph& graph, const ScheduledKernel& k,
                                             const target::CudaTarget& target, SlotTable& slots,
                                             bool make_launch,
                                             const ir::SymbolicShapes* range = nullptr);

}  // namespace graphc::emit
