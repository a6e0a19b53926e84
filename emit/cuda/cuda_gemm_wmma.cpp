// The tensor-core variant of the tiled GEMM for float16/bfloat16 operands
// (cuda_gemm_tile.h describes the problem and the bodies). WMMA 16x16x16
// fragments with float accumulation: a 64x64 block tile in eight warps of
// 32x16 (2x1 fragments), K stepped by 32 (eight elements of each operand
// per thread and slice, which keeps the prefetch registers in budget). Operands are staged in
// shared memory in their own 16-bit type (a float16/bfloat16 value read through the frame converts
// back exactly), the next K slice is fetched into registers while the current one is multiplied,
// and the accumulators go through shared memory so the epilogue sees one element per thread with
// the same (gm, gn, v) as the SIMT kernel. Products of 16-bit values are exact in float, so results
// match the SIMT path up to summation order.
#include <algorithm>
#include <fmt/format.h>

#include "emit/cuda/cuda_gemm_tile.h"

namespace graphc::emit {

Expected<GeneratedKernel> emit_wmma_gemm(const AnchorFrame& frame, const std::string& prefix,
                                         const TiledGemmSpec& spec) {
  const bool bf16 = spec.dtype == ir::DType::kBFloat16;
  if (!bf16 && spec.dtype != ir::DType::kFloat16)
    return internal_error("node '{}': the WMMA GEMM is for float16/bfloat16 only", frame.node_name);
  constexpr int64_t kBm = 64, kBn = 64, kThreads = 256;
  const int64_t tiles_m = std::max<int64_t>(1, (spec.m + kBm - 1) / kBm);
  const int64_t tiles = tiles_m * std::max<int64_t>(1, (spec.n + kBn - 1) / kBn);
  const std::string elem = bf16 ? "__nv_bfloat16" : "__half";
  const std::string to_elem = bf16 ? "__float2bfloat16_rn" : "__float2half_rn";
  std::string body = fmt::format(
      R"(  typedef float acc_t;
  typedef {elem} elem_t;
  namespace wmma = nvcuda::wmma;
  constexpr int kM = {m}, kN = {n}, kK = {k};
  constexpr long long kBatches = {batches}LL;
  constexpr int BM = 64, BN = 64, BK = {bk}, NT = 256;
  constexpr int LDA = BK + 8, LDB = BN + 8, LDC = BN + 4;
  constexpr int A_PER = BM * BK / NT, B_PER = BK * BN / NT;
  constexpr bool A_KFAST = {a_kfast}, B_NFAST = {b_nfast};
  __shared__ __align__(32) elem_t sa[BM * LDA];
  __shared__ __align__(32) elem_t sb[BK * LDB];
  __shared__ __align__(32) float sc[BM * LDC];
  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = (warp / 4) * 32, wn = (warp % 4) * 16;
  const int m0 = (int)(blockIdx.x % {tiles_m}u) * BM, n0 = (int)(blockIdx.x / {tiles_m}u) * BN;
  for (long long b = blockIdx.z; b < kBatches; b += gridDim.z) {{
{batch_setup}
    auto a_at = [&](int gm, int gk) -> acc_t {{
{a_body}
    }};
    auto b_at = [&](int gk, int gn) -> acc_t {{
{b_body}
    }};
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][1];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 1; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    acc_t ra[A_PER], rb[B_PER];
{fetch}    auto stash = [&]() {{
#pragma unroll
      for (int r = 0; r < A_PER; ++r) {{
        const int e = tid + r * NT;
        const int mm = A_KFAST ? e / BK : e % BM, kk = A_KFAST ? e % BK : e / BM;
        sa[mm * LDA + kk] = {to_elem}(ra[r]);
      }}
#pragma unroll
      for (int r = 0; r < B_PER; ++r) {{
        const int e = tid + r * NT;
        const int nn = B_NFAST ? e % BN : e / BK, kk = B_NFAST ? e / BN : e % BK;
        sb[kk * LDB + nn] = {to_elem}(rb[r]);
      }}
    }};
    fetch(0);
    for (int k0 = 0; k0 < kK; k0 += BK) {{
      stash();
      __syncthreads();
      if (k0 + BK < kK) fetch(k0 + BK);  // in flight while this slice is multiplied
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {{
        wmma::fragment<wmma::matrix_a, 16, 16, 16, elem_t, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, elem_t, wmma::row_major> fb[1];
#pragma unroll
        for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], sa + (wm + i * 16) * LDA + kk, LDA);
#pragma unroll
        for (int j = 0; j < 1; ++j) wmma::load_matrix_sync(fb[j], sb + kk * LDB + wn + j * 16, LDB);
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 1; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }}
      __syncthreads();
    }}
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 1; ++j)
        wmma::store_matrix_sync(sc + (wm + i * 16) * LDC + wn + j * 16, acc[i][j], LDC,
                                wmma::mem_row_major);
    __syncthreads();
    for (int e = tid; e < BM * BN; e += NT) {{
      const int gm = m0 + e / BN, gn = n0 + e % BN;
      if (gm < kM && gn < kN) {{
        const acc_t v = sc[(e / BN) * LDC + e % BN];
{epilogue}
      }}
    }}
    __syncthreads();
  }}
)",
      fmt::arg("fetch", kTileFetchLambda), fmt::arg("bk", 32), fmt::arg("elem", elem),
      fmt::arg("to_elem", to_elem), fmt::arg("tiles_m", tiles_m), fmt::arg("m", spec.m),
      fmt::arg("n", spec.n), fmt::arg("k", spec.k), fmt::arg("batches", spec.batches),
      fmt::arg("a_kfast", spec.a_contiguous_k ? "true" : "false"),
      fmt::arg("b_nfast", spec.b_contiguous_n ? "true" : "false"),
      fmt::arg("batch_setup", spec.batch_setup), fmt::arg("a_body", spec.a_body),
      fmt::arg("b_body", spec.b_body), fmt::arg("epilogue", spec.epilogue));
  LaunchShape launch;
  launch.grid = {tiles, 1, std::clamp<int64_t>(spec.batches, 1, 65535)};
  launch.block = {kThreads, 1, 1};
  ASSIGN_OR_RETURN(GeneratedKernel k,
                   finish_anchor_kernel(frame, prefix, spec.helpers, body, launch));
  k.source = "#include <mma.h>\n" + k.source;  // includes stay at the top
  return k;
}

}  // namespace graphc::emit
