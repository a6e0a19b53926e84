// graphc operators: the op table (what graphc compiles), as text or markdown.
// docs/operators.md is generated from it by scripts/gen_docs.sh.
#include <cstdio>

#include "cmd/commands.h"
#include "importer/importer.h"
#include "ir/op_table.h"
#include "target/kernel_kind.h"

namespace graphc::cli {

namespace {
std::string const_inputs_text(uint32_t mask) {
  std::string s;
  for (int i = 0; i < 32; ++i)
    if ((mask >> i) & 1u) s += (s.empty() ? "" : ", ") + std::to_string(i);
  return s.empty() ? "-" : s;
}

// The GPU kernel column of `graphc operators` where the op's kernel kind alone
// does not say how it runs (lowering passes, folding, limits).
std::string gpu_kernel_text(ir::OpKind op) {
  using ir::OpKind;
  switch (op) {
    case OpKind::QuantizeLinear:
    case OpKind::DequantizeLinear:
      return "fused elementwise (pass expand-quantize: constant scales, 8/16-bit integers)";
    case OpKind::MatMulInteger:
      return "gemm (int8 x int8 without zero points: int8 tensor cores; else pass "
             "lower-integer-contractions: int32 GEMM)";
    case OpKind::QLinearMatMul:
      return "gemm (pass lower-integer-contractions: int32 GEMM, requantization fused)";
    case OpKind::ConvInteger:
    case OpKind::QLinearConv:
      return "conv (pass lower-integer-contractions: int32 implicit GEMM, requantization fused; "
             "with --int8-gemm the int8 tensor-core conv where the weights fit int8, groups = 1)";
    case OpKind::DynamicQuantizeLinear: return "reduction (min/max, quantize fused)";
    case OpKind::HannWindow:
    case OpKind::HammingWindow:
    case OpKind::BlackmanWindow:
    case OpKind::MelWeightMatrix: return "none: folded to a constant (its inputs are sizes)";
    case OpKind::DFT:
    case OpKind::STFT: return "direct DFT (one thread per bin, embedded twiddles)";
    case OpKind::Det: return "LU per matrix (one thread each, n <= 16)";
    default: return std::string(target::kernel_kind_name(target::kernel_kind_for_op(op)));
  }
}

int run_operators(bool markdown) {
  if (markdown) {
    std::printf(
        "| operator | category | ONNX opsets | build-time constant inputs | GPU kernel |\n");
    std::printf("|---|---|---|---|---|\n");
  }
  for (int k = 0; k < ir::kOpCount; ++k) {
    const auto& info = ir::op_info(static_cast<ir::OpKind>(k));
    if (ir::is_internal(info.kind)) continue;
    auto first = std::max<int64_t>(info.introduced_opset, importer::kMinOpset);
    std::string opsets = fmt::format("{}-{}", first, importer::kMaxOpset);
    std::string name(info.name);
    std::string cat(ir::category_name(info.category));
    // Recurrent layers and control flow have no kernel of their own: passes
    // rewrite them into ops that have one (lower-recurrent, inline-control-flow),
    // or a run-time Loop runs its body as a sub-plan (emit/plan/loop_plan.h).
    std::string kernel =
        info.category == ir::OpCategory::kRecurrent ? "gemm + fused elementwise per step"
        : info.category == ir::OpCategory::kControlFlow
            ? (name == "If"     ? "inlined; on a run-time condition both branches + Where"
               : name == "Loop" ? "unrolled when build-time, else a CUDA graph WHILE node"
                                : "inlined when build-time, else none")
            : gpu_kernel_text(info.kind);
    if (markdown)
      std::printf("| %s | %s | %s | %s | %s |\n", name.c_str(), cat.c_str(), opsets.c_str(),
                  const_inputs_text(info.const_inputs).c_str(), kernel.c_str());
    else
      std::printf("%-28s %-22s %s\n", name.c_str(), cat.c_str(), opsets.c_str());
  }
  return 0;
}
}  // namespace

CommandFn add_operators_command(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("operators", "List the ONNX operators graphc compiles");
  cmd->add_flag("--markdown", *markdown, "Print a markdown table (used for docs/operators.md)");
  return [markdown] { return run_operators(*markdown); };
}

}  // namespace graphc::cli
