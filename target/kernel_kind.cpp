#include "target/kernel_kind.h"

namespace graphc::target {

using ir::OpKind;

std::string_view kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::kFusedElementwise: return "fused elementwise";
    case KernelKind::kElementwise: return "elementwise";
    case KernelKind::kReduction: return "reduction";
    case KernelKind::kGemm: return "gemm";
    case KernelKind::kConv: return "conv";
    case KernelKind::kPool: return "pool";
    case KernelKind::kAttention: return "attention";
    case KernelKind::kDataMovement: return "data movement";
    case KernelKind::kView: return "view (no kernel)";
    case KernelKind::kCopy: return "copy";
    case KernelKind::kLoop: return "loop";
  }
  return "?";
}

KernelKind kernel_kind_of(const ir::Node& n) {
  if (n.op == OpKind::FusedGroup) {
    switch (n.fusion) {
      case ir::FusionKind::kGemm: return KernelKind::kGemm;
      case ir::FusionKind::kConv: return KernelKind::kConv;
      case ir::FusionKind::kReduction: return KernelKind::kReduction;
      case ir::FusionKind::kPool: return KernelKind::kPool;
      case ir::FusionKind::kElementwise:
      case ir::FusionKind::kNone: return KernelKind::kFusedElementwise;
    }
  }
  // The int8 GEMM the quantized rewrites leave (target/int8_gemm_rules.h).
  if (n.op == OpKind::MatMulInteger) return KernelKind::kGemm;
  if (n.op == OpKind::Loop) return KernelKind::kLoop;
  // The int8 conv they leave (target/int8_conv_rules.h).
  if (n.op == OpKind::ConvInteger) return KernelKind::kConv;
  if (ir::op_info(n.op).traits.view) return KernelKind::kView;
  if (ir::is_elementwise(n.op)) return KernelKind::kElementwise;
  // Its min/max over the tensor comes first: a reduction with the quantize fused.
  if (n.op == OpKind::DynamicQuantizeLinear) return KernelKind::kReduction;
  switch (ir::op_info(n.op).category) {
    case ir::OpCategory::kReduction:
    case ir::OpCategory::kNormalization: return KernelKind::kReduction;
    case ir::OpCategory::kContraction: return KernelKind::kGemm;
    case ir::OpCategory::kConvolution: return KernelKind::kConv;
    case ir::OpCategory::kPooling: return KernelKind::kPool;
    case ir::OpCategory::kAttention: return KernelKind::kAttention;
    default: return KernelKind::kDataMovement;
  }
}

KernelKind kernel_kind_for_op(ir::OpKind op) {
  ir::Node n;
  n.op = op;
  return kernel_kind_of(n);
}

}  // namespace graphc::target
