#include "emit/library/library_calls.h"

#include "emit/cuda/fused_range.h"

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

// A cuBLASLt matmul over a shape range: what varies must be M alone (the
// rows of A, C and D, as when activations [..., K] of a varying batch and
// sequence meet fixed weights [K, N]); M's expression, or why not.
Expected<ir::DimExpr> matmul_rows_over_range(const ir::Graph& graph, const target::CublasLtCall& call,
                                             const ir::SymbolicShapes& range) {
  const engine::MatmulParams& p = call.params;
  auto shape = [&](ir::ValueId v) -> const ir::SymShape& {
    return range.values[static_cast<size_t>(v)].shape;
  };
  auto refuse = [&](const std::string& why) {
    return unsupported(
        "cuBLASLt matmuls take a varying M alone over a shape range (activations [..., K] times "
        "fixed weights [K, N]); here {}",
        why);
  };
  if (p.batch != 1) return refuse(fmt::format("the call is a batch of {} matrices", p.batch));
  if (p.trans_a) return refuse("A is transposed");
  const ir::ValueId a = call.args[0], b = call.args[1], d = call.args.back();
  if (!fixed_over_range(shape(b)))
    return refuse(fmt::format("B '{}' is {}", graph.value(b).name, range.shape_string(b)));
  if (p.has_bias && !fixed_over_range(shape(call.args[static_cast<size_t>(p.bias_arg())])))
    return refuse("the bias varies");
  const ir::SymShape& sa = shape(a);
  const ir::SymShape& sd = shape(d);
  if (sa.empty() || sd.empty() || sa.back() != ir::DimExpr(p.k) || sd.back() != ir::DimExpr(p.n))
    return refuse(fmt::format("A '{}' is {} and D '{}' {}: their last dims must be K = {} and "
                              "N = {} at every shape",
                              graph.value(a).name, range.shape_string(a), graph.value(d).name,
                              range.shape_string(d), p.k, p.n));
  const ir::DimExpr m = dims_product(sa, 0, sa.size() - 1);
  if (dims_product(sd, 0, sd.size() - 1) != m)
    return refuse(fmt::format("D '{}' ({}) does not have A's rows ({})", graph.value(d).name,
                              range.shape_string(d), range.shape_string(a)));
  if (p.has_c && shape(call.args[static_cast<size_t>(p.c_arg())]) != sd)
    return refuse("C's shape differs from D's");
  return m;
}

// A cuDNN convolution over a shape range: the batch and spatial dims of x and
// y may vary (the runtime sets the descriptors up per shape), channels,
// weights, bias and the window may not, and a residual has y's shape. The
// sizes in LibraryCall order (engine::conv_range_sizes), or why not.
Expected<std::vector<ir::DimExpr>> conv_sizes_over_range(const ir::Graph& graph,
                                                         const target::CudnnConvCall& call,
                                                         const ir::SymbolicShapes& range) {
  const engine::ConvParams& p = call.params;
  auto refuse = [&](const std::string& why) {
    return unsupported(
        "cuDNN convolutions take a varying batch and spatial size over a shape range, with fixed "
        "channels and weights; here {}",
        why);
  };
  auto shape = [&](const target::CallOperand& o) -> const ir::SymShape* {
    return o.value == ir::kNoValue ? nullptr : &range.values[static_cast<size_t>(o.value)].shape;
  };
  for (size_t i = 0; i < call.args.size(); ++i) {
    const bool data = i == 0 || static_cast<int>(i) == p.residual_arg() ||
                      static_cast<int>(i) == p.y_arg();
    const ir::SymShape* s = shape(call.args[i]);
    if (!data && s && !fixed_over_range(*s))
      return refuse(fmt::format("'{}' is {}", graph.value(call.args[i].value).name,
                                range.shape_string(call.args[i].value)));
  }
  const ir::SymShape* x = shape(call.args[0]);
  const ir::SymShape* y = shape(call.args[static_cast<size_t>(p.y_arg())]);
  const auto rank = static_cast<size_t>(p.spatial_rank);
  if (!x || !y || x->size() != rank + 2 || y->size() != rank + 2)
    return refuse("x or y is not N x C x spatial");
  if (p.has_residual && *shape(call.args[static_cast<size_t>(p.residual_arg())]) != *y)
    return refuse("the residual's shape differs from the output's");
  const bool nhwc = p.layout == engine::ConvLayout::kNhwc;
  const size_t channel = nhwc ? rank + 1 : 1, first = nhwc ? 1 : 2;
  if ((*x)[channel] != ir::DimExpr(p.c) || (*y)[channel] != ir::DimExpr(p.k))
    return refuse(fmt::format("the channels of x ({}) or y ({}) vary",
                              range.shape_string(call.args[0].value),
                              range.shape_string(call.args[static_cast<size_t>(p.y_arg())].value)));
  if ((*x)[0] != (*y)[0]) return refuse("x and y differ in the batch");
  std::vector<ir::DimExpr> sizes{(*x)[0]};
  for (size_t i = 0; i < rank; ++i) sizes.push_back((*x)[first + i]);
  for (size_t i = 0; i < rank; ++i) sizes.push_back((*y)[first + i]);
  return sizes;
}

}  // namespace

Expected<LibraryLowering> lower_library_call(const ir::Graph& graph, const ScheduledKernel& k,
                                             const target::CudaTarget& target, SlotTable& slots,
                                             bool make_launch, const ir::SymbolicShapes* range) {
  LibraryLowering out;
  const ir::Node& n = graph.node(k.node);
  if (k.kind == KernelKind::kGemm) {
    target::GemmChoice choice = target.choose_gemm(graph, k.node);
    out.lowering = {choice.call ? target::Library::kCublasLt : target::Library::kNone,
                    std::move(choice.reason)};
    if (!choice.call || !make_launch) return out;
    if (range && first_varying_value(n, *range) != ir::kNoValue) {
      auto m = matmul_rows_over_range(graph, *choice.call, *range);
      if (!m.ok()) return m.status().with_context(fmt::format("kernel '{}'", n.name));
      out.sizes.push_back(std::move(*m));
    }
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
    if (range && first_varying_value(n, *range) != ir::kNoValue) {
      auto sizes = conv_sizes_over_range(graph, *choice.call, *range);
      if (!sizes.ok()) return sizes.status().with_context(fmt::format("kernel '{}'", n.name));
      out.sizes = std::move(*sizes);
    }
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
    // Over a range the generated kernel (sizes at run time) runs the
    // attention, and cuDNN's SDPA, planned per shape by the runtime, is its
    // preferred call where cuDNN takes every shape of the range.
    if (range && first_varying_value(n, *range) != ir::kNoValue) {
      auto fields = sdpa_over_range(graph, n, *choice.call, *range);
      if (!fields.ok()) {
        if (fields.status().code() != ErrorCode::kUnsupported) return fields.status();
        out.lowering = {target::Library::kNone,
                        "generated: cuDNN SDPA cannot take every shape of the range (" +
                            fields.status().message() + ")"};
        return out;
      }
      out.lowering.reason +=
          ", planned per shape at run time (the generated kernel where cuDNN refuses a shape)";
      out.preferred = LibraryLowering::Preferred{
          LibraryCallPlan{LibraryOp::kCudnnSdpa, engine::encode_sdpa_params(choice.call->params),
                          choice.call->params.engine, target::kCudnnSdpaWorkspaceLimitBytes},
          choice.call->args, std::move(*fields)};
      return out;
    }
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
