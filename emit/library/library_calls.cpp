#include "emit/library/library_calls.h"

namespace graphc::emit {

std::string_view library_call_library(LibraryOp op) {
  return op == LibraryOp::kCublasLtMatmul ? "cublasLt" : "cudnn";
}
std::string_view library_call_op(LibraryOp op) {
  switch (op) {
    case LibraryOp::kCublasLtMatmul: return "matmul";
    case LibraryOp::kCudnnConv: return "conv";
    case LibraryOp::kCudnnSdpa: return "sdpa";
  }
  return "";
}

namespace {

LaunchPlan call_launch(const ir::Node& n, const ScheduledKernel& k) {
  LaunchPlan launch;
  launch.name = (k.kind == KernelKind::kGemm   ? "cublaslt_matmul/"
                 : k.kind == KernelKind::kConv ? "cudnn_conv/"
                                               : "cudnn_sdpa/") +
                n.name;
  launch.kind = k.kind;
  launch.onnx_nodes = k.onnx_nodes;
  return launch;
}

// The call's operands, in order, as slots of the launch.
Status add_value_args(const std::vector<ir::ValueId>& values, SlotTable& slots, LaunchPlan& launch) {
  for (ir::ValueId v : values) {
    ASSIGN_OR_RETURN(int32_t s, slots.slot_of(v));
    launch.args.push_back(s);
  }
  return Status::ok_status();
}

}  // namespace

Expected<LibraryLowering> lower_library_call(const ir::Graph& graph, const ScheduledKernel& k,
                                             const target::CudaTarget& target, SlotTable& slots,
                                             bool make_launch) {
  LibraryLowering out;
  const ir::Node& n = graph.node(k.node);
  if (k.kind == KernelKind::kGemm) {
    target::GemmChoice choice = target.choose_gemm(graph, k.node);
    out.lowering = {choice.call ? target::Library::kCublasLt : target::Library::kNone,
                    std::move(choice.reason)};
    if (!choice.call || !make_launch) return out;
    LaunchPlan launch = call_launch(n, k);
    RETURN_IF_ERROR(add_value_args(choice.call->args, slots, launch));
    launch.library = LibraryCallPlan{LibraryOp::kCublasLtMatmul,
                                     engine::encode_matmul_params(choice.call->params), -1,
                                     target::kCublasLtWorkspaceBytes};
    out.launch = std::move(launch);
  } else if (k.kind == KernelKind::kConv) {
    target::ConvChoice choice = target.choose_conv(graph, k.node);
    out.lowering = {choice.call ? target::Library::kCudnn : target::Library::kNone,
                    std::move(choice.reason)};
    if (!choice.call || !make_launch) return out;
    LaunchPlan launch = call_launch(n, k);
    for (const target::CallOperand& a : choice.call->args) {
      if (a.embedded) {
        launch.args.push_back(slots.embedded_slot(*a.embedded));
        continue;
      }
      ASSIGN_OR_RETURN(int32_t s, slots.slot_of(a.value));
      launch.args.push_back(s);
    }
    launch.library =
        LibraryCallPlan{LibraryOp::kCudnnConv, engine::encode_conv_params(choice.call->params),
                        choice.call->params.algorithm, target::kCudnnWorkspaceLimitBytes};
    out.launch = std::move(launch);
  } else if (k.kind == KernelKind::kAttention) {
    target::AttentionChoice choice = target.choose_attention(graph, k.node);
    out.lowering = {choice.call ? target::Library::kCudnn : target::Library::kNone,
                    std::move(choice.reason)};
    if (!choice.call || !make_launch) return out;
    LaunchPlan launch = call_launch(n, k);
    RETURN_IF_ERROR(add_value_args(choice.call->args, slots, launch));
    launch.library = LibraryCallPlan{LibraryOp::kCudnnSdpa,
                                     engine::encode_sdpa_params(choice.call->params),
                                     choice.call->params.engine,
                                     target::kCudnnSdpaWorkspaceLimitBytes};
    out.launch = std::move(launch);
  }
  return out;
}

}  // namespace graphc::emit
