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
  // Which convs run channels-last: those cuDNN takes and the depthwise convs
  // the generated direct kernel runs in NHWC. The other generated kernels are
  // channels-first, so with --conv generated every conv stays as it is.
  return options_.conv.mode != ConvMode::kGenerated &&
         (cudnn_takes_conv(g, n) || direct_depthwise_takes_conv(g, n));
}

std::optional<size_t> CudaTarget::library_epilogue_ops(const ir::Graph& g, ir::NodeId group) const {
  const ir::Node& n = g.node(group);
  if (n.op != ir::OpKind::FusedGroup) return std::nullopt;
  if (n.fusion == ir::FusionKind::kGemm) return choose_gemm(g, group).split_after;
  if (n.fusion == ir::FusionKind::kConv) return choose_conv(g, group).split_after;
  return std::nullopt;
}

std::string CudaTarget::library_epilogue_stop(const ir::Graph& g, ir::NodeId group) const {
  const ir::Node& n = g.node(group);
  if (n.op != ir::OpKind::FusedGroup || n.fusion != ir::FusionKind::kGemm) return "";
  return choose_gemm(g, group).split_stop;
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

Math CudaTarget::contraction_math(ir::DType dtype, Library library, bool depthwise) const {
  using ir::DType;
  const bool generated = library == Library::kNone;
  if (generated && depthwise) return dtype == DType::kFloat64 ? Math::kFp64 : Math::kFp32;
  switch (dtype) {
    case DType::kFloat16: return Math::kFp16Tc;
    case DType::kBFloat16: return Math::kBf16Tc;
    case DType::kFloat32: {
      const bool tf32 = library == Library::kCublasLt   ? options_.gemm.allow_tf32
                        : library == Library::kCudnn ? options_.conv.allow_tf32
                                                     : false;
      return tf32 ? Math::kTf32Tc : Math::kFp32;
    }
    case DType::kFloat64: return Math::kFp64;
    case DType::kInt8:
    case DType::kUInt8: return generated ? Math::kInt8 : Math::kInt8Tc;
    case DType::kFloat8E4M3FN: return Math::kFp8Tc;  // cuBLASLt's FP8 GEMM (no generated one)
    case DType::kUndefined: return Math::kNone;
    default: return Math::kFp32;  // other integer GEMMs: 32-bit CUDA-core arithmetic
  }
}

}  // namespace graphc::target
