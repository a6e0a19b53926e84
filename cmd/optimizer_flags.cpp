#include "cmd/optimizer_flags.h"

#include <CLI/CLI.hpp>
#include <set>

#include "target/cuda/cuda_target.h"

namespace graphc::cli {

void add_optimizer_flags(CLI::App* cmd, OptimizerFlags& f) {
  auto* precision = cmd->add_option("--precision", f.precision,
                                    "fp32 (default), fp16 or bf16: weights and compute; "
                                    "reductions and GEMM accumulation stay fp32")
                        ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  auto* fp16 = cmd->add_flag("--fp16", f.fp16, "As trtexec: --precision fp16")
                   ->group("trtexec flags")
                   ->excludes(precision);
  cmd->add_flag("--bf16", f.bf16, "As trtexec: --precision bf16")
      ->group("trtexec flags")
      ->excludes(precision)
      ->excludes(fp16);
  cmd->add_flag("--convert-io", f.convert_io,
                "With --precision fp16/bf16, model inputs and outputs change dtype too "
                "(default: they keep their ONNX dtype)");
  cmd->add_option("--disable-pass", f.disable_pass, "Skip an optimizer pass (repeatable)");
  cmd->add_option("--dump-after", f.dump_after,
                  "Print the IR to stderr after PASS, or after every pass with 'all' (repeatable)");
  cmd->add_flag("--verify-after-all", f.verify_after_all, "Verify the IR after every pass");
  cmd->add_flag("--print-passes", f.print_passes, "Print the default pass pipeline and exit");
  cmd->add_flag("--no-optimize", f.no_optimize, "Skip the optimizer (no fusion report)");
  cmd->add_flag("--int8-gemm", f.int8_gemm,
                "QDQ MatMul/Gemm layers (onnxruntime quantize_static's form) become int8 GEMMs: "
                "cuBLASLt's int8 tensor cores (N, K multiples of 4) with the dequantize, bias, "
                "activation and requantize in a generated epilogue, else the generated WMMA int8 "
                "GEMM; float8 e4m3fn QDQ layers become cuBLASLt's FP8 GEMM on sm_89+ (N, K "
                "multiples of 16) with the same generated epilogue (default: off, dequantize + "
                "float GEMM; docs/int8.md)");
  cmd->add_option("--int8-precision", f.int8_precision,
                  "same (default): activations are quantized in --precision's dtype; fp32: each "
                  "QuantizeLinear and the ops computing its input stay fp32 (docs/int8.md)")
      ->check(CLI::IsMember({"same", "fp32"}));
}

std::string precision_name(const OptimizerFlags& f) {
  return f.fp16 ? "fp16" : f.bf16 ? "bf16" : f.precision;
}

void add_lowering_flags(CLI::App* cmd, LoweringFlags& f) {
  cmd->add_option("--gemm", f.gemm,
                  "MatMul/Gemm lowering: auto (cuBLASLt when M*N*K*batch >= 2^20 and the epilogue "
                  "is bias/ReLU/tanh-GELU/residual), cublaslt (whenever expressible), generated")
      ->check(CLI::IsMember({"auto", "cublaslt", "generated"}));
  cmd->add_option("--conv", f.conv,
                  "Conv/ConvTranspose lowering: auto (cuDNN whenever expressible: symmetric pads, "
                  "epilogue of bias/residual/ReLU), cudnn (the same), generated")
      ->check(CLI::IsMember({"auto", "cudnn", "generated"}));
  cmd->add_option("--attention", f.attention,
                  "Fused attention lowering: auto (cuDNN's fused SDPA whenever it takes the call: "
                  "fp16/bf16, an additive mask or none; else a generated kernel), cudnn (the "
                  "same), generated")
      ->check(CLI::IsMember({"auto", "cudnn", "generated"}));
  cmd->add_flag("--allow-tf32", f.allow_tf32,
                "Let fp32 cuBLASLt matmuls and cuDNN convolutions use TF32 tensor cores (recorded "
                "in the engine)");
}

Expected<target::CudaOptions> make_cuda_options(const LoweringFlags& f, int min_sm) {
  target::CudaOptions o;
  ASSIGN_OR_RETURN(o.gemm.mode, target::parse_gemm_mode(f.gemm));
  ASSIGN_OR_RETURN(o.conv.mode, target::parse_conv_mode(f.conv));
  ASSIGN_OR_RETURN(o.attention.mode, target::parse_attention_mode(f.attention));
  o.gemm.allow_tf32 = f.allow_tf32;
  o.conv.allow_tf32 = f.allow_tf32;
  o.min_sm = min_sm;
  return o;
}

Expected<optimizer::PassContext> make_pass_context(const OptimizerFlags& f) {
  optimizer::PassContext ctx;
  std::set<std::string> disabled(f.disable_pass.begin(), f.disable_pass.end());
  std::set<std::string> dump(f.dump_after.begin(), f.dump_after.end());
  Status st = optimizer::validate_pass_names(disabled, false);
  if (!st.ok()) return st.with_context("--disable-pass");
  st = optimizer::validate_pass_names(dump, true);
  if (!st.ok()) return st.with_context("--dump-after");
  ctx.disabled = std::move(disabled);
  ctx.dump_after = std::move(dump);
  ctx.verify_after_all = f.verify_after_all;
  const std::string precision = precision_name(f);
  if (precision != "fp32" && precision != "fp16" && precision != "bf16")
    return invalid_argument("--precision '{}': expected fp32, fp16 or bf16", precision);
  ctx.precision = precision == "fp16"   ? optimizer::Precision::kFp16
                  : precision == "bf16" ? optimizer::Precision::kBf16
                                        : optimizer::Precision::kFp32;
  ctx.keep_io_dtype = !f.convert_io;
  if (f.int8_precision != "same" && f.int8_precision != "fp32")
    return invalid_argument("--int8-precision '{}': expected same or fp32", f.int8_precision);
  ctx.int8_gemm = f.int8_gemm;
  ctx.int8_precision = f.int8_precision == "fp32" ? optimizer::Int8Precision::kFp32
                                                  : optimizer::Int8Precision::kSame;
  // The CUDA target with graphc build's defaults (--gemm auto, --conv auto);
  // build replaces it with one made from its flags.
  ctx.target = std::make_shared<target::CudaTarget>();
  return ctx;
}

}  // namespace graphc::cli
