// The tiled GEMM kernel text (see cuda_gemm_tile.h). Thread (tx, ty) of the
// 16 x 16 block owns rows ty*4 + {0..3} (+64 per further group of 4) and the
// same pattern of columns, so its fragment reads from shared memory are
// 16-byte vectors that hit distinct banks across a warp.
#include "emit/cuda/cuda_gemm_tile.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "emit/cuda/cuda_ops.h"

namespace graphc::emit {

const char* const kTileFetchLambda = R"(    auto fetch = [&](int k0) {
#pragma unroll
      for (int r = 0; r < A_PER; ++r) {
        const int e = tid + r * NT;
        const int mm = A_KFAST ? e / BK : e % BM, kk = A_KFAST ? e % BK : e / BM;
        const int gm = m0 + mm, gk = k0 + kk;
        ra[r] = (gm < kM && gk < kK) ? a_at(gm, gk) : (acc_t)0;
      }
#pragma unroll
      for (int r = 0; r < B_PER; ++r) {
        const int e = tid + r * NT;
        const int nn = B_NFAST ? e % BN : e / BK, kk = B_NFAST ? e / BN : e % BK;
        const int gn = n0 + nn, gk = k0 + kk;
        rb[r] = (gn < kN && gk < kK) ? b_at(gk, gn) : (acc_t)0;
      }
    };
)";

namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kSmCount = 132;  // H100 SXM; only steers the tile-size choice

struct TileConfig {
  int64_t bm, bn, bk, tm, tn;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Few rows (or few columns): at most this many, a 64x64 tile would be mostly
// idle and give too few blocks, so each block sweeps 32 of the long dim.
constexpr int64_t kSkinny = 8;

// The skinny GEMM: S <= kSkinny "small" indices (rows when M is small, else
// columns) by L "long" ones. Each block owns 32 long indices and all small
// ones; the operand indexed by the long dim is streamed once, the small
// operand (S x K) is re-read from cache by every block. When the long
// operand is contiguous along the long dim, the 32 lanes of a warp take 32
// consecutive long indices and the 8 warps interleave K (partial sums meet
// in shared memory); when it is contiguous along K, each warp takes 4 long
// indices with its lanes interleaving K (partial sums meet by shuffles).
// Either way every load of the long operand is coalesced.
Expected<GeneratedKernel> emit_skinny_gemm(const AnchorFrame& frame, const std::string& prefix,
                                           const TiledGemmSpec& spec, const std::string& acc) {
  const bool small_m = spec.m <= spec.n;
  const int64_t small = small_m ? spec.m : spec.n, large = small_m ? spec.n : spec.m;
  const bool long_contiguous = small_m ? spec.b_contiguous_n : !spec.a_contiguous_k;
  const std::string common = fmt::format(
      R"(  typedef {acc} acc_t;
  constexpr int S_ = {s}, L_ = {l}, kK = {k};
  constexpr long long kBatches = {batches}LL;
  constexpr bool SMALL_M = {small_m};
  const int tid = threadIdx.x, lane = tid % 32, w = tid / 32;
  for (long long b = blockIdx.z; b < kBatches; b += gridDim.z) {{
{batch_setup}
    auto a_at = [&](int gm, int gk) -> acc_t {{
{a_body}
    }};
    auto b_at = [&](int gk, int gn) -> acc_t {{
{b_body}
    }};
    auto ld_long = [&](int l, int k) -> acc_t {{ return SMALL_M ? b_at(k, l) : a_at(l, k); }};
    auto ld_small = [&](int s, int k) -> acc_t {{ return SMALL_M ? a_at(s, k) : b_at(k, s); }};
    auto finish = [&](int s, int l, const acc_t v) {{
      const int gm = SMALL_M ? s : l, gn = SMALL_M ? l : s;
{epilogue}
    }};
)",
      fmt::arg("acc", acc), fmt::arg("s", std::max<int64_t>(small, 1)), fmt::arg("l", large),
      fmt::arg("k", spec.k), fmt::arg("batches", spec.batches),
      fmt::arg("small_m", small_m ? "true" : "false"), fmt::arg("batch_setup", spec.batch_setup),
      fmt::arg("a_body", spec.a_body), fmt::arg("b_body", spec.b_body),
      fmt::arg("epilogue", spec.epilogue));
  std::string body;
  if (long_contiguous) {
    body = common + R"(    __shared__ acc_t red[8][S_][32];
    const int l = blockIdx.x * 32 + lane;
    acc_t acc[S_];
#pragma unroll
    for (int s = 0; s < S_; ++s) acc[s] = (acc_t)0;
    if (l < L_ && S_REAL > 0)
      for (int k = w; k < kK; k += 8) {
        const acc_t x = ld_long(l, k);
#pragma unroll
        for (int s = 0; s < S_; ++s) acc[s] += ld_small(s, k) * x;
      }
#pragma unroll
    for (int s = 0; s < S_; ++s) red[w][s][lane] = acc[s];
    __syncthreads();
    for (int s = w; s < S_ && s < S_REAL; s += 8)
      if (l < L_) {
        acc_t v = (acc_t)0;
#pragma unroll
        for (int i = 0; i < 8; ++i) v += red[i][s][lane];
        finish(s, l, v);
      }
    __syncthreads();
  }
)";
  } else {
    body = common + R"(    const int l0 = (blockIdx.x * 8 + w) * 4;
    acc_t acc[4][S_];
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int s = 0; s < S_; ++s) acc[c][s] = (acc_t)0;
    if (S_REAL > 0)
      for (int k = lane; k < kK; k += 32) {
        acc_t sm[S_];
#pragma unroll
        for (int s = 0; s < S_; ++s) sm[s] = ld_small(s, k);
#pragma unroll
        for (int c = 0; c < 4; ++c)
          if (l0 + c < L_) {
            const acc_t x = ld_long(l0 + c, k);
#pragma unroll
            for (int s = 0; s < S_; ++s) acc[c][s] += sm[s] * x;
          }
      }
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int s = 0; s < S_; ++s) {
        acc_t v = acc[c][s];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        // Spread the epilogues over the lanes.
        if (lane == (c * S_ + s) % 32 && l0 + c < L_ && s < S_REAL)
          finish(s, l0 + c, v);
      }
  }
)";
  }
  // S_ is at least 1 so arrays are valid; the true small extent may be 0.
  body = fmt::format("  constexpr int S_REAL = {};\n", small) + body;
  LaunchShape launch;
  launch.grid = {std::max<int64_t>(1, ceil_div(large, 32)), 1,
                 std::clamp<int64_t>(spec.batches, 1, 65535)};
  launch.block = {kThreads, 1, 1};
  return finish_anchor_kernel(frame, prefix, spec.helpers, body, launch);
}

}  // namespace

std::string gemm_acc_type(ir::DType dtype) {
  if (dtype == ir::DType::kFloat16 || dtype == ir::DType::kBFloat16 || dtype == ir::DType::kFloat32)
    return "float";
  if (dtype == ir::DType::kFloat64) return "double";
  if (ir::is_integer(dtype)) return "unsigned long long";
  return "";
}

std::string decompose_into(const std::string& index, const std::vector<int64_t>& dims,
                           const std::vector<OffsetTerm>& terms, const std::string& tag) {
  std::string s = fmt::format("    {{ long long r_{} = (long long)({});\n", tag, index);
  for (size_t d = dims.size(); d-- > 0;) {
    bool used = false;
    for (const auto& t : terms) used |= t.strides[d] != 0;
    const bool last = d == 0;
    if (used) {
      // The outermost dim needs no modulo: the index is in range.
      s += last
               ? fmt::format("      const long long c_{}{} = r_{};\n", tag, d, tag)
               : fmt::format("      const long long c_{}{} = r_{} % {}LL;\n", tag, d, tag, dims[d]);
      for (const auto& t : terms)
        if (t.strides[d] != 0)
          s += fmt::format("      {} += c_{}{} * {}LL;\n", t.target, tag, d, t.strides[d]);
    }
    if (!last) s += fmt::format("      r_{} /= {}LL;\n", tag, dims[d]);
  }
  s += fmt::format("      (void)r_{}; }}\n", tag);
  return s;
}

Expected<GeneratedKernel> emit_tiled_gemm(const AnchorFrame& frame, const std::string& prefix,
                                          const TiledGemmSpec& spec) {
  const std::string acc = gemm_acc_type(spec.dtype);
  if (acc.empty())
    return unsupported("node '{}': {} has no GPU contraction for element type {}", frame.node_name,
                       ir::op_name(frame.anchor->op), ir::dtype_name(spec.dtype));
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  if (spec.m < 0 || spec.n < 0 || spec.k < 0 || spec.batches < 0 || spec.m >= kMaxInt ||
      spec.n >= kMaxInt || spec.k >= kMaxInt)
    return unsupported("node '{}': GEMM of {}x{}x{} exceeds the generated kernel's 32-bit extents",
                       frame.node_name, spec.m, spec.n, spec.k);
  const bool m_varies = spec.m_at_run_time.has_value();
  // A run-time M takes the SIMT tiles (float16 and bfloat16 too, accumulating
  // in float: the tensor-core tiles have no run-time M yet).
  if (m_varies && (spec.n <= kSkinny || spec.batches != 1 || !frame.sizes))
    return unsupported("node '{}': only the SIMT tiles of GEMMs with N above {} take a run-time M "
                       "yet",
                       frame.node_name, kSkinny);
  if (!m_varies && std::min(spec.m, spec.n) <= kSkinny)
    return emit_skinny_gemm(frame, prefix, spec, acc);
  if (!m_varies && (spec.dtype == ir::DType::kFloat16 || spec.dtype == ir::DType::kBFloat16))
    return spec.min_sm >= 80 ? emit_mma_gemm(frame, prefix, spec)
                              : emit_wmma_gemm(frame, prefix, spec);
  const bool is_float = acc == "float";
  // 128x128 tiles need enough of them to fill every SM; wide accumulators
  // (double, uint64) would spill 8x8 of them, so they stay at 64x64.
  const int64_t big_tiles =
      std::max<int64_t>(spec.batches, 1) * ceil_div(spec.m, 128) * ceil_div(spec.n, 128);
  // Over a range whose M spans the 128x128 threshold, both configurations
  // (below); the grid and the static choice use 64x64 then.
  bool variants = false;
  if (m_varies && is_float) {
    const int64_t tiles_n_big = ceil_div(spec.n, 128);
    const ir::DimExpr m_tiles = ir::DimExpr::ceil_div(*spec.m_at_run_time, ir::DimExpr(128));
    ASSIGN_OR_RETURN(const int64_t least, frame.sizes->lower_bound(m_tiles));
    ASSIGN_OR_RETURN(const int64_t most, frame.sizes->upper_bound(m_tiles));
    variants = least * tiles_n_big < kSmCount && most * tiles_n_big >= kSmCount;
  }
  const TileConfig c = is_float && big_tiles >= kSmCount && !variants
                           ? TileConfig{128, 128, 8, 8, 8}
                           : TileConfig{64, 64, 16, 4, 4};
  // Tiles are numbered along M first, so blocks running together share B's
  // column panel in L2.
  int64_t tiles_m = std::max<int64_t>(1, ceil_div(spec.m, c.bm));
  int64_t tiles = tiles_m * std::max<int64_t>(1, ceil_div(spec.n, c.bn));
  // A run-time M: kM and the tile count along M come from the size block,
  // grid.x too (its largest value recorded).
  std::string mnk = fmt::format("  constexpr int kM = {}, kN = {}, kK = {};", spec.m, spec.n, spec.k);
  std::string tiles_m_text = fmt::format("{}u", tiles_m);
  std::optional<ir::DimExpr> grid_x;
  if (m_varies) {
    const ir::DimExpr& m = *spec.m_at_run_time;
    mnk = fmt::format(
        "  const int kM = (int){};\n  constexpr int kN = {}, kK = {};\n"
        "  const unsigned tiles_m = (unsigned)((kM + {} - 1) / {});",
        frame.sizes->code(m), spec.n, spec.k, c.bm, c.bm);
    tiles_m_text = "tiles_m";
    grid_x = ir::DimExpr::max(ir::DimExpr(1), ir::DimExpr::ceil_div(m, ir::DimExpr(c.bm))) *
             ir::DimExpr(std::max<int64_t>(1, ceil_div(spec.n, c.bn)));
    ASSIGN_OR_RETURN(tiles, frame.sizes->upper_bound(*grid_x));
    ASSIGN_OR_RETURN(const int64_t most_m, frame.sizes->upper_bound(m));
    if (most_m >= kMaxInt)
      return unsupported("node '{}': M reaches {} over the range, beyond the generated kernel's "
                         "32-bit extents", frame.node_name, most_m);
  }
  const int64_t grid_z = std::clamp<int64_t>(spec.batches, 1, 65535);
  // Row padding keeps 16-byte alignment and spreads the k-major stores of A
  // over all banks.
  const int64_t pad = is_float ? 4 : 2;
  // The tiles' loop for one tile configuration (`tiles_m`: the C++ text of
  // the tile count along M).
  auto tile_loop = [&](const TileConfig& c, const std::string& tiles_m_text) {
    return fmt::format(
      R"(  constexpr int BM = {bm}, BN = {bn}, BK = {bk}, TM = {tm}, TN = {tn}, NT = {nt};
  constexpr int A_PER = BM * BK / NT, B_PER = BK * BN / NT;
  constexpr bool A_KFAST = {a_kfast}, B_NFAST = {b_nfast};
  __shared__ __align__(16) acc_t sa[BK][BM + {pad}];
  __shared__ __align__(16) acc_t sb[BK][BN + {pad}];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int m0 = (int)(blockIdx.x % {tiles_m}) * BM, n0 = (int)(blockIdx.x / {tiles_m}) * BN;
  for (long long b = blockIdx.z; b < kBatches; b += gridDim.z) {{
{batch_setup}
    auto a_at = [&](int gm, int gk) -> acc_t {{
{a_body}
    }};
    auto b_at = [&](int gk, int gn) -> acc_t {{
{b_body}
    }};
    acc_t acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = (acc_t)0;
    acc_t ra[A_PER], rb[B_PER];
    // Element e of a tile: k-major or m/n-major, whichever is contiguous in memory.
{fetch}    auto stash = [&]() {{
#pragma unroll
      for (int r = 0; r < A_PER; ++r) {{
        const int e = tid + r * NT;
        const int mm = A_KFAST ? e / BK : e % BM, kk = A_KFAST ? e % BK : e / BM;
        sa[kk][mm] = ra[r];
      }}
#pragma unroll
      for (int r = 0; r < B_PER; ++r) {{
        const int e = tid + r * NT;
        const int nn = B_NFAST ? e % BN : e / BK, kk = B_NFAST ? e / BN : e % BK;
        sb[kk][nn] = rb[r];
      }}
    }};
    fetch(0);
    for (int k0 = 0; k0 < kK; k0 += BK) {{
      stash();
      __syncthreads();
      if (k0 + BK < kK) fetch(k0 + BK);  // in flight while this slice is multiplied
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {{
        acc_t fa[TM], fb[TN];
{fragments}
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] += fa[i] * fb[j];
      }}
      __syncthreads();
    }}
#pragma unroll
    for (int i = 0; i < TM; ++i) {{
      const int gm = m0 + (i / 4) * 64 + ty * 4 + (i % 4);
#pragma unroll
      for (int j = 0; j < TN; ++j) {{
        const int gn = n0 + (j / 4) * 64 + tx * 4 + (j % 4);
        if (gm < kM && gn < kN) {{
          const acc_t v = acc[i][j];
{epilogue}
        }}
      }}
    }}
  }}
)",
      fmt::arg("fetch", kTileFetchLambda), fmt::arg("tiles_m", tiles_m_text), fmt::arg("bm", c.bm), fmt::arg("bn", c.bn),
      fmt::arg("bk", c.bk), fmt::arg("tm", c.tm), fmt::arg("tn", c.tn), fmt::arg("nt", kThreads),
      fmt::arg("a_kfast", spec.a_contiguous_k ? "true" : "false"),
      fmt::arg("b_nfast", spec.b_contiguous_n ? "true" : "false"), fmt::arg("pad", pad),
      fmt::arg("batch_setup", spec.batch_setup), fmt::arg("a_body", spec.a_body),
      fmt::arg("b_body", spec.b_body), fmt::arg("epilogue", spec.epilogue),
      fmt::arg("fragments", is_float ? R"(#pragma unroll
        for (int i = 0; i < TM; i += 4) {
          const float4 q = *reinterpret_cast<const float4*>(&sa[kk][(i / 4) * 64 + ty * 4]);
          fa[i] = q.x; fa[i + 1] = q.y; fa[i + 2] = q.z; fa[i + 3] = q.w;
        }
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
          const float4 q = *reinterpret_cast<const float4*>(&sb[kk][(j / 4) * 64 + tx * 4]);
          fb[j] = q.x; fb[j + 1] = q.y; fb[j + 2] = q.z; fb[j + 3] = q.w;
        })"
                                     : R"(#pragma unroll
        for (int i = 0; i < TM; ++i) fa[i] = sa[kk][(i / 4) * 64 + ty * 4 + (i % 4)];
#pragma unroll
        for (int j = 0; j < TN; ++j) fb[j] = sb[kk][(j / 4) * 64 + tx * 4 + (j % 4)];)"));
  };
  const std::string head = fmt::format("  typedef {} acc_t;\n{}\n  constexpr long long kBatches = {}LL;\n",
                                       acc, mnk, spec.batches);
  std::string body = head + tile_loop(c, tiles_m_text);
  if (variants) {
    // Over a range M spans the point where 128x128 tiles fill the GPU: both
    // configurations, chosen per launch by M as a static build chooses them
    // (a range engine otherwise keeps the opt shape's tile at every M: 31%
    // slower at the largest shape of the benchmark block on an H100). The
    // grid is the 64x64 one's (the larger); 128x128 launches leave the rest idle.
    const TileConfig big{128, 128, 8, 8, 8}, small{64, 64, 16, 4, 4};
    const int64_t tiles_n_big = std::max<int64_t>(1, ceil_div(spec.n, big.bn));
    body = fmt::format(
        "  typedef {} acc_t;\n  const int kM = (int){};\n  constexpr int kN = {}, kK = {};\n"
        "  constexpr long long kBatches = {}LL;\n"
        "  if ((long long)((kM + {} - 1) / {}) * {} >= {}LL) {{\n"
        "    const unsigned tiles_m = (unsigned)((kM + {} - 1) / {});\n"
        "    if (blockIdx.x >= tiles_m * {}u) return;\n"
        "{}"
        "  }} else {{\n"
        "    const unsigned tiles_m = (unsigned)((kM + {} - 1) / {});\n"
        "{}"
        "  }}\n",
        acc, frame.sizes->code(*spec.m_at_run_time), spec.n, spec.k, spec.batches, big.bm, big.bm,
        tiles_n_big, kSmCount, big.bm, big.bm, tiles_n_big, tile_loop(big, "tiles_m"), small.bm,
        small.bm, tile_loop(small, "tiles_m"));
  }
  LaunchShape launch;
  launch.grid = {tiles, 1, grid_z};
  launch.block = {kThreads, 1, 1};
  launch.grid_x = grid_x;
  return finish_anchor_kernel(frame, prefix, spec.helpers, body, launch);
}

}  // namespace graphc::emit
