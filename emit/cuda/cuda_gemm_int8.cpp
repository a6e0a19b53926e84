// MatMulInteger(int8 A [..., M, K], int8 B [K, N], or [N, K] with graphc's
// _trans_b as fuse-qdq-matmul stores weights) -> int32, the GEMM the
// quantized rewrites leave for int8 tensor cores (target/int8_gemm_rules.h):
// WMMA 16x16x16 int8 fragments with int32 accumulation, exact as the
// reference. The block tile is 64x64 in eight warps of 32x16, K stepped by
// 32; A's leading dims are flattened into M (B is 2-D). The dequantize (and a
// following quantize) of the QDQ form are the fused epilogue: the frame's
// store sees the int32 accumulator `v` per element.
//
// WMMA's 8-bit loads want 256-bit aligned fragment pointers and a leading
// dimension that is a multiple of 16 elements, so each operand sits in shared
// memory as 16-wide K planes: A plane [BM][16] row-major, B plane [BN][16]
// (k fastest, read as a col-major matrix_b), every fragment 256 bytes apart.
// Skinny problems (M or N <= 8) take the tiled GEMM's skinny kernel instead.
#include <fmt/format.h>

#include "emit/cuda/cuda_contraction.h"
#include "emit/cuda/cuda_gemm_tile.h"
#include "emit/cuda/cuda_ops.h"

namespace graphc::emit {

namespace {

Expected<GeneratedKernel> emit_int8_wmma_gemm(const AnchorFrame& frame, const std::string& prefix,
                                              const TiledGemmSpec& spec) {
  constexpr int64_t kBm = 64, kBn = 64, kThreads = 256;
  const int64_t tiles_m = std::max<int64_t>(1, (spec.m + kBm - 1) / kBm);
  const int64_t tiles = tiles_m * std::max<int64_t>(1, (spec.n + kBn - 1) / kBn);
  std::string body = fmt::format(
      R"(  typedef int acc_t;
  namespace wmma = nvcuda::wmma;
  constexpr int kM = {m}, kN = {n}, kK = {k};
  constexpr int BM = 64, BN = 64, BK = 32, NT = 256, LDC = BN + 4;
  constexpr int A_PER = BM * BK / NT, B_PER = BK * BN / NT;
  constexpr bool A_KFAST = {a_kfast}, B_NFAST = {b_nfast};
  __shared__ __align__(32) signed char sa[(BK / 16) * BM * 16];
  __shared__ __align__(32) signed char sb[(BK / 16) * BN * 16];
  __shared__ __align__(32) int sc[BM * LDC];
  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = (warp / 4) * 32, wn = (warp % 4) * 16;
  const int m0 = (int)(blockIdx.x % {tiles_m}u) * BM, n0 = (int)(blockIdx.x / {tiles_m}u) * BN;
  auto a_at = [&](int gm, int gk) -> acc_t {{
{a_body}
  }};
  auto b_at = [&](int gk, int gn) -> acc_t {{
{b_body}
  }};
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) wmma::fill_fragment(acc[i], 0);
  acc_t ra[A_PER], rb[B_PER];
{fetch}  auto stash = [&]() {{
#pragma unroll
    for (int r = 0; r < A_PER; ++r) {{
      const int e = tid + r * NT;
      const int mm = A_KFAST ? e / BK : e % BM, kk = A_KFAST ? e % BK : e / BM;
      sa[(kk >> 4) * (BM * 16) + mm * 16 + (kk & 15)] = (signed char)ra[r];
    }}
#pragma unroll
    for (int r = 0; r < B_PER; ++r) {{
      const int e = tid + r * NT;
      const int nn = B_NFAST ? e % BN : e / BK, kk = B_NFAST ? e / BN : e % BK;
      sb[(kk >> 4) * (BN * 16) + nn * 16 + (kk & 15)] = (signed char)rb[r];
    }}
  }};
  fetch(0);
  for (int k0 = 0; k0 < kK; k0 += BK) {{
    stash();
    __syncthreads();
    if (k0 + BK < kK) fetch(k0 + BK);  // in flight while this slice is multiplied
#pragma unroll
    for (int kp = 0; kp < BK / 16; ++kp) {{
      wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
#pragma unroll
      for (int i = 0; i < 2; ++i)
        wmma::load_matrix_sync(fa[i], sa + kp * (BM * 16) + (wm + i * 16) * 16, 16);
      wmma::load_matrix_sync(fb, sb + kp * (BN * 16) + wn * 16, 16);
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::mma_sync(acc[i], fa[i], fb, acc[i]);
    }}
    __syncthreads();
  }}
#pragma unroll
  for (int i = 0; i < 2; ++i)
    wmma::store_matrix_sync(sc + (wm + i * 16) * LDC + wn, acc[i], LDC, wmma::mem_row_major);
  __syncthreads();
  for (int e = tid; e < BM * BN; e += NT) {{
    const int gm = m0 + e / BN, gn = n0 + e % BN;
    if (gm < kM && gn < kN) {{
      const acc_t v = sc[(e / BN) * LDC + e % BN];
{epilogue}
    }}
  }}
)",
      fmt::arg("fetch", kTileFetchLambda), fmt::arg("tiles_m", tiles_m), fmt::arg("m", spec.m),
      fmt::arg("n", spec.n), fmt::arg("k", spec.k),
      fmt::arg("a_kfast", spec.a_contiguous_k ? "true" : "false"),
      fmt::arg("b_nfast", spec.b_contiguous_n ? "true" : "false"), fmt::arg("a_body", spec.a_body),
      fmt::arg("b_body", spec.b_body), fmt::arg("epilogue", spec.epilogue));
  LaunchShape launch;
  launch.grid = {tiles, 1, 1};
  launch.block = {kThreads, 1, 1};
  ASSIGN_OR_RETURN(GeneratedKernel k,
                   finish_anchor_kernel(frame, prefix, spec.helpers, body, launch));
  k.source = "#include <mma.h>\n" + k.source;  // includes stay at the top
  return k;
}

}  // namespace

Expected<GeneratedKernel> generate_matmul_integer_kernel(const AnchorFrame& f) {
  const ir::Node& n = *f.anchor;
  if (f.sizes)
    return unsupported("node '{}': the int8 GEMM takes static shapes only yet", f.node_name);
  if (!f.has_input(0) || !f.has_input(1) || !f.has_output(0) || f.has_input(2) || f.has_input(3))
    return unsupported("MatMulInteger '{}': the int8 GEMM takes A and B without zero points "
                       "(lower-integer-contractions rewrites the others)",
                       n.name);
  const ir::Shape& a = f.input(0).shape;
  const ir::Shape& b = f.input(1).shape;
  if (f.input(0).dtype != ir::DType::kInt8 || f.input(1).dtype != ir::DType::kInt8 ||
      f.output(0).dtype != ir::DType::kInt32 || a.size() < 2 || b.size() != 2)
    return unsupported("MatMulInteger '{}': the int8 GEMM takes int8 A [..., M, K] x int8 B [K, N] "
                       "-> int32",
                       n.name);
  const bool trans_b = n.attrs.get_int("_trans_b", 0) != 0;
  const int64_t k = a.back(), nn = trans_b ? b[0] : b[1];
  if (b[trans_b ? 1 : 0] != k)
    return invalid_model("MatMulInteger '{}': contracted dims differ ({} vs {})", n.name, k,
                         b[trans_b ? 1 : 0]);
  const int64_t m = ir::shape_numel(a) / std::max<int64_t>(k, 1);
  if (k == 0 || m * nn != ir::shape_numel(f.output(0).shape))
    return invalid_model("MatMulInteger '{}': output shape {} does not match the operands", n.name,
                         ir::shape_to_string(f.output(0).shape));
  TiledGemmSpec s;
  s.dtype = ir::DType::kInt8;
  s.m = m;
  s.n = nn;
  s.k = k;
  s.a_body = fmt::format("    return (acc_t)({});", f.load(0, fmt::format("(long long)gm * {} + gk", k)));
  s.b_body = fmt::format("    return (acc_t)({});",
                         f.load(1, trans_b ? fmt::format("(long long)gn * {} + gk", k)
                                           : fmt::format("(long long)gk * {} + gn", nn)));
  s.b_contiguous_n = !trans_b;
  s.epilogue = fmt::format("      {}", f.store(0, fmt::format("(long long)gm * {} + gn", nn), "(int)(v)"));
  if (std::min(m, nn) <= 8) {
    s.batch_setup = "    (void)b;\n";
    return emit_tiled_gemm(f, "matmul_int8", s);  // the skinny kernel, exact in its integer accumulator
  }
  return emit_int8_wmma_gemm(f, "matmul_int8", s);
}

}  // namespace graphc::emit
