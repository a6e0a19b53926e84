// The shared-memory tiled GEMM every generated contraction is built on
// (MatMul, Gemm, Einsum, Conv and ConvTranspose as implicit GEMMs).
//
// A family generator describes its problem as a batch of logical products
//   C[b][m][n] = sum_k A(b, m, k) * B(b, k, n)
// by three pieces of CUDA code that see the frame's load/store lambdas:
//   a_body: statements ending in `return <value>;` for A at (gm, gk),
//   b_body: the same for B at (gk, gn),
//   epilogue: statements storing the accumulator `v` (type acc_t) at (gm, gn),
// plus `batch_setup`, run once per batch index `b` before the tile loop
// (per-batch base offsets). The bodies are only called for in-range
// coordinates, so they may index without bounds checks of their own.
//
// Three kernels take such a spec (emit_tiled_gemm picks):
//  - SIMT tiles: 256 threads as 16 x 16, a block computes a BM x BN tile of C
//    (128x128 with 8x8 per thread when there are enough tiles to fill the
//    GPU, else 64x64 with 4x4) stepping K by BK; the next K slice is fetched
//    into registers while the current one is multiplied from shared memory;
//  - skinny (M or N <= 8): 32-wide sweeps of the long dim (cuda_gemm_tile.cpp);
//  - tensor cores for float16/bfloat16 operands: mma.sync with a cp.async
//    pipeline from sm_80 on (cuda_gemm_mma.cpp), WMMA before (cuda_gemm_wmma.cpp).
// Edge tiles are bounds-checked (any M, N, K). Tiles run over grid.x, batches
// over grid.z (a grid-stride loop past 65535). Accumulation is float for
// float16/bfloat16/float32 operands, double for float64, and wrapping uint64
// for integers (exact modulo 2^bits, as the reference).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "emit/cuda/anchor_frame.h"
#include "ir/dtype.h"

namespace graphc::emit {

// An operand the kernel may copy straight from global memory: element
// (row, col) of its stored matrix (rows along its non-contiguous dim) is at
// pointer[offset + row * ld + col]. `offset` is an expression valid after
// batch_setup (a per-batch base, or "0").
struct DirectOperand {
  std::string pointer;  // a kernel parameter (AnchorFrame::input_params)
  std::string offset = "0";
  int64_t ld = 0;
};

struct TiledGemmSpec {
  ir::DType dtype = ir::DType::kFloat32;  // operand element type (picks acc_t)
  int64_t batches = 1, m = 0, n = 0, k = 0;
  std::string batch_setup;  // statements; `b` (long long) in scope
  std::string a_body;       // statements; `gm`, `gk` (int) in scope; returns A(b, gm, gk)
  std::string b_body;       // statements; `gk`, `gn` (int) in scope; returns B(b, gk, gn)
  std::string epilogue;     // statements; `gm`, `gn` (int) and `v` (acc_t) in scope
  // Coalescing hints: A is contiguous along k (else along m), B along n (else k).
  bool a_contiguous_k = true;
  bool b_contiguous_n = true;
  // Set where A (B) is read unchanged from a parameter, laid out as the
  // a_body (b_body) reads it: the mma.sync kernel then copies whole chunks.
  std::optional<DirectOperand> a_direct, b_direct;
  // The oldest target SM: float16/bfloat16 use mma.sync from sm_80 on, WMMA before.
  int min_sm = 90;
  std::string helpers;  // file-scope device code the bodies call
  // Over a shape range: M at run time (the frame's sizes hold it; `m` is then
  // the count to plan with). Only the SIMT tiles take it yet.
  std::optional<ir::DimExpr> m_at_run_time;
};

// The accumulator type of the tiled GEMM for operands of `dtype`, or "" when
// the dtype cannot be contracted (bool, strings ...).
std::string gemm_acc_type(ir::DType dtype);

// Validates the sizes (each of m, n, k below 2^31) and assembles the kernel:
// the skinny kernel when M or N is at most 8, tensor cores (WMMA) for
// float16/bfloat16, else the SIMT tiles.
Expected<GeneratedKernel> emit_tiled_gemm(const AnchorFrame& frame, const std::string& prefix,
                                          const TiledGemmSpec& spec);

// One offset a decomposition feeds: `target` (a declared long long) gets
// coordinate * strides[d] added for every dim d.
struct OffsetTerm {
  std::vector<int64_t> strides;
  std::string target;
};

// The float16/bfloat16 tensor-core kernels; called by emit_tiled_gemm for
// those dtypes: mma.sync + cp.async where spec.min_sm is 80 or newer
// (cuda_gemm_mma.cpp), WMMA otherwise (cuda_gemm_wmma.cpp).
Expected<GeneratedKernel> emit_mma_gemm(const AnchorFrame& frame, const std::string& prefix,
                                        const TiledGemmSpec& spec);
Expected<GeneratedKernel> emit_wmma_gemm(const AnchorFrame& frame, const std::string& prefix,
                                         const TiledGemmSpec& spec);

// Statements decomposing the flat index `index` (row-major over `dims`) into
// coordinates and adding each to the offsets of `terms`. `tag` keeps the
// locals unique within one scope.
std::string decompose_into(const std::string& index, const std::vector<int64_t>& dims,
                           const std::vector<OffsetTerm>& terms, const std::string& tag);

// The mma.sync kernels' PTX helpers at file scope (cp.async, ldmatrix, the
// m16n8k16 MMAs, the shared-memory swizzle), shared with the int8 conv.
extern const char* const kMmaPtxHelpers;

// The generated tiles' global-memory fetch of one K slice into registers
// (ra/rb), shared by the SIMT and tensor-core kernels: element e of a tile is
// read k-major or m/n-major, whichever is contiguous in memory, bounds-checked.
extern const char* const kTileFetchLambda;

}  // namespace graphc::emit
