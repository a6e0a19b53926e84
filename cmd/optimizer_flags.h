// The optimizer flags shared by `graphc inspect` and `graphc build`:
// --precision (or trtexec's --fp16/--bf16), --convert-io, --disable-pass, --dump-after,
// --verify-after-all,
// --print-passes, --no-optimize; and the lowering flags that make the CUDA
// target (--gemm, --conv, --attention, --allow-tf32), so inspect reports the
// kernels build compiles.
#pragma once

#include <string>
#include <vector>

#include "optimizer/pass.h"
#include "support/status.h"
#include "target/cuda/cuda_target.h"

namespace CLI {
class App;
}

namespace graphc::cli {

struct OptimizerFlags {
  std::string precision = "fp32";
  bool fp16 = false, bf16 = false;  // trtexec's spellings of --precision fp16/bf16
  bool convert_io = false;
  std::vector<std::string> disable_pass;
  std::vector<std::string> dump_after;
  bool verify_after_all = false;
  bool print_passes = false;
  bool no_optimize = false;
  // The int8 (QDQ) path (docs/int8.md): --int8-gemm turns fuse-qdq-matmul's
  // int8 GEMMs on (cuBLASLt's IMMA kernels where they take the GEMM, else the
  // generated WMMA one); --int8-precision fp32 quantizes activations from fp32.
  bool int8_gemm = false;
  std::string int8_precision = "same";
};

void add_optimizer_flags(CLI::App* cmd, OptimizerFlags& flags);

struct LoweringFlags {
  std::string gemm = "auto";
  std::string conv = "auto";
  std::string attention = "auto";
  bool allow_tf32 = false;
};

void add_lowering_flags(CLI::App* cmd, LoweringFlags& flags);

// The CUDA target's options from the lowering flags (min_sm: the oldest target SM).
Expected<target::CudaOptions> make_cuda_options(const LoweringFlags& flags, int min_sm = 90);

// "fp32", "fp16" or "bf16", from --precision or --fp16/--bf16.
std::string precision_name(const OptimizerFlags& flags);

// Checks pass names and the precision (--fp16/--bf16 agree with --precision);
// the context the pass manager runs with.
Expected<optimizer::PassContext> make_pass_context(const OptimizerFlags& flags);

}  // namespace graphc::cli
