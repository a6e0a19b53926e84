#include "target/cuda/cuda_target.h"

namespace graphc::target {

std::string_view library_name(Library library) {
  switch (library) {
    case Library::kNone: return "";
    case Library::kCublasLt: return "cuBLASLt";
    case Library::kCudnn: return "cuDNN";
  }
  return "";
}

bool CudaTarget::library_takes_conv(const ir::Graph& g, const ir::Node& n) const {
  // The generated convolution is channels-first: with --conv generated no
  // conv may become channels-last.
  return options_.conv.mode != ConvMode::kGenerated && cudnn_takes_conv(g, n);
}

std::optional<size_t> CudaTarget::library_epilogue_ops(const ir::Graph& g, ir::NodeId group) const {
  const ir::Node& n = g.node(group);
  if (n.op != ir::OpKind::FusedGroup) return std::nullopt;
  if (n.fusion == ir::FusionKind::kGemm) return choose_gemm(g, group).split_after;
  if (n.fusion == ir::FusionKind::kConv) return choose_conv(g, group).split_after;
  return std::nullopt;
}

Lowering CudaTarget::lowering(const ir::Graph& g, ir::NodeId node) const {
  switch (kernel_kind(g.node(node))) {
    case KernelKind::kGemm: {
      GemmChoice c = choose_gemm(g, node);
      return {c.call ? Library::kCublasLt : Library::kNone, std::move(c.reason)};
    }
    case KernelKind::kConv: {
      ConvChoice c = choose_conv(g, node);
      return {c.call ? Library::kCudnn : Library::kNone, std::move(c.reason)};
    }
    case KernelKind::kAttention: {
      AttentionChoice c = choose_attention(g, node);
      return {c.call ? Library::kCudnn : Library::kNone, std::move(c.reason)};
    }
    default: return {};
  }
}

}  // namespace graphc::target
