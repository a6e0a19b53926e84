// Library vs generated for gemm kernels (DESIGN principle 6): a MatMul/Gemm,
// alone or as a fused "gemm" group with its epilogue, becomes one cuBLASLt
// matmul when
//   - the mode allows it (--gemm auto|cublaslt|generated),
//   - in auto mode the problem is large enough for the library to win:
//     M*N*K*batch >= 2^20 (kCublasLtMinVolume); smaller ones stay generated,
//     where the fused tiled kernel avoids the library's launch overhead,
//   - A, B and Y are float32/float16/bfloat16 (fp16/bf16 accumulate in fp32;
//     fp32 computes in fp32, TF32 only with --allow-tf32),
//   - the batch dims broadcast to one stride per operand (0 for a shared one),
//   - and the epilogue is what cuBLASLt computes exactly as the reference:
//     any of a bias Add (N elements along the last axis), a residual Add of
//     the output's shape (cuBLASLt's C with beta = 1), then at most one of
//     Relu or Gelu(approximate="tanh"). cuBLASLt's GELU epilogue is the tanh
//     approximation, so the erf Gelu stays generated (correctness first).
// When cuBLASLt takes only the leading ops of the epilogue (bias yes, erf Gelu
// no), the group is split (library_split.h): cuBLASLt with those ops, then a
// generated elementwise kernel with the rest. In auto mode the split needs
// K >= kSplitMinDepth as well: the generated epilogue reads and writes M*N
// once more, which costs less than cuBLASLt saves over the generated GEMM only
// when each output takes enough work (H100 model: cuBLASLt ~4x the generated
// tensor-core tiles; the extra pass is 4 fp16 bytes per output at ~3 TB/s,
// the GEMM 2K flops per output: break-even near K ~ 120).
// The int8 GEMM (MatMulInteger int8 x int8 -> int32, what fuse-qdq-matmul
// writes) goes to cuBLASLt's IMMA kernels with --int8-gemm (GemmOptions::int8)
// when B is stored N x K (_trans_b: cuBLASLt's "TN" form) and N and K are
// multiples of 4; the dequantize after it is always a generated epilogue
// (split, whatever K: the generated WMMA int8 GEMM it replaces is slower than
// the extra pass). Else the generated WMMA GEMM takes it, fused epilogue and all.
// The float8 GEMM (MatMulInteger of float8 e4m3fn A and B -> float32, what
// fuse-qdq-matmul writes with --int8-gemm) has no generated kernel: the pass
// writes it only where cublaslt_fp8_takes says cuBLASLt's FP8 kernels take it,
// and the epilogue after it is a generated kernel (split, as for int8).
// Anything else keeps the generated kernel, and the choice says why.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine_format/matmul_params.h"
#include "ir/graph.h"
#include "target/epilogue_split.h"

namespace graphc::target {

enum class GemmMode { kAuto, kCublasLt, kGenerated };
Expected<GemmMode> parse_gemm_mode(std::string_view flag);  // "auto", "cublaslt", "generated"
std::string_view gemm_mode_name(GemmMode mode);

inline constexpr int64_t kCublasLtMinVolume = int64_t{1} << 20;   // M*N*K*batch
inline constexpr int64_t kSplitMinDepth = 128;                    // K, auto mode
inline constexpr uint64_t kCublasLtWorkspaceBytes = 32ull << 20;  // NVIDIA's advice for Hopper

struct GemmOptions {
  GemmMode mode = GemmMode::kAuto;
  bool allow_tf32 = false;  // fp32 matmuls may use TF32 tensor cores
  bool int8 = false;        // --int8-gemm: int8 GEMMs may run on cuBLASLt (IMMA)
};

// Why cuBLASLt's IMMA kernels cannot take an int8 GEMM of these sizes
// (graphc's B stored N x K when `b_transposed`), or OK.
Status cublaslt_int8_takes(int64_t n, int64_t k, bool b_transposed, bool a_transposed);

// Why cuBLASLt's FP8 GEMM (e4m3 x e4m3 -> float32, "TN") cannot take an
// M x N x K product under these options, or OK: not --gemm generated, N and K
// multiples of 16 (its leading dims, 16-byte aligned), and in auto mode
// M*N*K >= 2^20 (smaller ones stay float GEMMs). The GPU generation is the
// caller's (cublaslt_fp8_arch_ok).
Status cublaslt_fp8_takes(int64_t m, int64_t n, int64_t k, const GemmOptions& options);
// cuBLASLt's FP8 kernels need sm_89 (Ada) or newer on every GPU the engine is built for.
inline constexpr int kFp8MinSm = 89;
Status cublaslt_fp8_arch_ok(int min_sm);

struct CublasLtCall {
  engine::MatmulParams params;
  std::vector<ir::ValueId> args;  // outer value ids: A, B, [C], [bias], D
};

struct GemmChoice {
  std::optional<CublasLtCall> call;  // set: run through cuBLASLt
  // Set: cuBLASLt takes the anchor and this many leading epilogue ops once the
  // group is split (split_library_epilogues); `call` is then unset, and the
  // split graph's part (a) gets the call.
  std::optional<size_t> split_after;
  std::string reason;  // why generated, or what cuBLASLt computes, for reports
  // With split_after on a float8 GEMM: why cuBLASLt's epilogue stops there.
  std::string split_stop;
};

// Requires a shape-inferred graph; `node` is a scheduled gemm kernel.
GemmChoice choose_gemm_lowering(const ir::Graph& graph, ir::NodeId node,
                                const GemmOptions& options);

}  // namespace graphc::target
