// The int8 tensor-core convolution: ConvInteger(int8 x NCHW, int8 W [OC, C,
// KH, KW]) -> int32, 2-D, groups = 1 (target/int8_conv_rules.h), the conv
// that fuse-qdq-conv and lower-integer-contractions leave. An implicit GEMM
//   acc[oc][p] = sum_k W[oc][k] * X(k, p),  k = (c, kh, kw), p = (n, oh, ow)
// on mma.sync.m16n8k32 s8 with int32 accumulators (exact), the tile
// structure of the float16 mma.sync GEMM (cuda_gemm_mma.cpp: its cp.async,
// ldmatrix, swizzle, fragment-load and accumulator-store helpers, which work
// in bytes for either operand width): STAGES K slices of 64 bytes in flight,
// the accumulators through shared memory so the epilogue's stores coalesce.
//
// Why generated and not cuDNN: the QDQ layer's dequantize is per output
// channel (sa * sw[oc], minus za * wsum[oc]) and usually followed by a
// requantize to int8; cuDNN's int8 convolutions scale by one float per
// tensor, so the accumulator would make an int32 round trip through HBM,
// and they need NHWC with channels in multiples of 4. Here the whole
// epilogue (bias, Relu/Clip, QuantizeLinear) runs on the accumulator in
// registers, and the kernel runs in the emulator (tests/emu/).
//
// 8-bit mma operands: A (row) a0..a3 = rows g, g+8 x k 4t..4t+3 and
// 16+4t..; B (col) b0, b1 = k 4t.., 16+4t.. x column g (lane = 4g + t).
// ldmatrix (b16) over rows of 16 bytes gives lane l row l/4, bytes
// 4(l%4)..+3: exactly these fragments when both operands sit in shared
// memory k-contiguous (A as [BM][BK], B as [BN][BK]); 8-bit data has no
// .trans form, so the patches are gathered into that layout.
//  - A (the weights, [OC][K] k-contiguous) is copied with cp.async when it
//    is a plain parameter, 16-byte aligned (checked at run time) and K is a
//    multiple of 16; else read 4 bytes at a time through the frame.
//  - B (the patches): each thread owns one pixel of the tile for the whole
//    K loop (NT is a multiple of BN), so its image, row and column are
//    decomposed once; it reads 4 consecutive k (taps of that pixel) per
//    32-bit shared-memory store, neighbouring lanes reading neighbouring
//    pixels (coalesced along a row). Outside the image the border holds
//    _pad_value (the activation's zero point in the shifted int8 domain).
// Rows of 64 bytes are 4 chunks of 16, XOR-swizzled by (row >> 1) & 3 as
// the float16 kernel's 32-wide slices: the 8 rows an ldmatrix phase reads
// fall in distinct banks.
#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/cuda_contraction.h"
#include "emit/cuda/cuda_gemm_tile.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/conv_geometry.h"
#include "target/int8_conv_rules.h"

namespace graphc::emit {

namespace {

constexpr int64_t kSmCount = 132;  // H100 SXM; only steers the tile-size choice

const char* const kInt8Helpers = R"(#ifndef GRAPHC_HOST_EMU
// D = A B + D, m16n8k32, s8 x s8 -> s32 (exact).
GM_DEV void gm_mma_s8(int (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
)";

// The kernel body after its constants (see the file comment).
const char* const kInt8ConvBody = R"(
  constexpr int WARPS_M = NT / 32 / WARPS_N, WM = BM / WARPS_M, WN = BN / WARPS_N;
  constexpr int MI = WM / 16, NI = WN / 8, CH = BK / 16;
  constexpr int A_STAGE = BM * BK, B_STAGE = BN * BK, KT = (kK + BK - 1) / BK;
  constexpr int C_ROWS = BM < 64 ? BM : 64, LDC = BN + 4;
  constexpr int SLOT_BYTES = STAGES * (A_STAGE + B_STAGE), C_BYTES = C_ROWS * LDC * 4;
  __shared__ __align__(128) unsigned char smem[SLOT_BYTES > C_BYTES ? SLOT_BYTES : C_BYTES];
  signed char* const sA = reinterpret_cast<signed char*>(smem);
  signed char* const sB = sA + STAGES * A_STAGE;
  int* const sC = reinterpret_cast<int*>(smem);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const int m0 = (int)(blockIdx.x % TILES_M) * BM, n0 = (int)(blockIdx.x / TILES_M) * BN;
  const bool a_vec = A_DIRECT && (unsigned long long)(A_PTR) % 16 == 0;
  // This thread's pixel of the B tile, the same for every K slice.
  const int b_row = tid % BN, b_pix = n0 + b_row;
  const bool pix_ok = b_pix < kN;
  const int b_img = pix_ok ? b_pix / OPLANE : 0, b_j = pix_ok ? b_pix % OPLANE : 0;
  const int ih0 = (b_j / OW) * SH - PH, iw0 = (b_j % OW) * SW - PW;
  const long long xbase = (long long)b_img * (IC * IH * IW);
  auto x_at = [&](int gk) -> int {
    if (!pix_ok || gk >= kK) return 0;
    const int c = gk / KS, t = gk % KS;
    const int ih = ih0 + (t / KW) * DH, iw = iw0 + (t % KW) * DW;
    if (ih < 0 || ih >= IH || iw < 0 || iw >= IW) return PAD;
    return (int)(@LOAD_X@);
  };
  auto w_at = [&](int gm, int gk) -> int {
    return gm < kM && gk < kK ? (int)(@LOAD_W@) : 0;
  };
  auto load_a = [&](int stage, int k0) {
    signed char* s = sA + stage * A_STAGE;
    if (a_vec) {
#pragma unroll
      for (int r = 0; r < BM * CH / NT; ++r) {
        const int e = tid + r * NT, row = e / CH, col = (e % CH) * 16;
        const int gm = m0 + row, gk = k0 + col;
        const bool ok = gm < kM && gk < kK;
        gm_cp_async16(s + gm_swz8<CH>(row, col), ok ? A_PTR + ((long long)gm * kK + gk) : A_PTR,
                      ok ? 16 : 0);
      }
    } else {
#pragma unroll 4
      for (int r = 0; r < BM * (BK / 4) / NT; ++r) {
        const int e = tid + r * NT, row = e / (BK / 4), col = (e % (BK / 4)) * 4;
        const int gm = m0 + row, gk = k0 + col;
        unsigned word = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) word |= ((unsigned)w_at(gm, gk + i) & 0xffu) << (8 * i);
        *reinterpret_cast<unsigned*>(s + gm_swz8<CH>(row, col)) = word;
      }
    }
  };
  auto load_b = [&](int stage, int k0) {
    signed char* s = sB + stage * B_STAGE;
#pragma unroll 4
    for (int r = 0; r < (BK / 4) / (NT / BN); ++r) {
      const int col = (tid / BN + r * (NT / BN)) * 4;
      unsigned word = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) word |= ((unsigned)x_at(k0 + col + i) & 0xffu) << (8 * i);
      *reinterpret_cast<unsigned*>(s + gm_swz8<CH>(b_row, col)) = word;
    }
  };
  int acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) {
      load_a(s, s * BK);
      load_b(s, s * BK);
    }
    gm_cp_commit();
  }
  for (int kt = 0; kt < KT; ++kt) {
    gm_cp_wait<STAGES - 2>();  // slice kt has landed (this thread's copies)
    __syncthreads();           // ... everyone's, and slot kt - 1 is free
    {
      const int nk = kt + STAGES - 1;
      if (nk < KT) {
        load_a(nk % STAGES, nk * BK);
        load_b(nk % STAGES, nk * BK);
      }
      gm_cp_commit();
    }
    const signed char* sa = sA + (kt % STAGES) * A_STAGE;
    const signed char* sb = sB + (kt % STAGES) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 32) {
      unsigned af[MI][4], bfr[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) gm_frag_a<CH>(sa, wm + i * 16, kk, lane, af[i]);
#pragma unroll
      for (int p = 0; p < NI / 2; ++p) gm_frag_b2<CH>(sb, wn + p * 16, kk, lane, bfr[2 * p], bfr[2 * p + 1]);
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) gm_mma_s8(acc[i][j], af[i], bfr[j]);
    }
  }
  gm_cp_wait<0>();
  __syncthreads();  // the slots are free: the accumulators go through them
#pragma unroll
  for (int h = 0; h < BM / C_ROWS; ++h) {
    if (wm / C_ROWS == h) {
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) gm_store_acc(sC, LDC, wm - h * C_ROWS + i * 16, wn + j * 8, lane, acc[i][j]);
    }
    __syncthreads();
    // Consecutive threads take consecutive pixels of one channel: NCHW
    // stores of a warp are contiguous within a plane.
    for (int e = tid; e < C_ROWS * BN; e += NT) {
      const int gm = m0 + h * C_ROWS + e / BN, gn = n0 + e % BN;
      if (gm < kM && gn < kN) {
        const int v = sC[(e / BN) * LDC + e % BN];
        const int img = gn / OPLANE, jo = gn % OPLANE;
        @STORE@
      }
    }
    __syncthreads();  // before the next rows reuse it
  }
)";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Expected<GeneratedKernel> generate_conv_integer_kernel(const AnchorFrame& f, int min_sm) {
  const ir::Node& n = *f.anchor;
  if (min_sm < 80)
    return unsupported("node '{}': the int8 conv needs mma.sync s8 and cp.async (sm_80 or newer); "
                       "the oldest --arch is sm_{} (--disable-pass=fuse-qdq-conv keeps convs float)",
                       f.node_name, min_sm);
  if (f.sizes)
    return unsupported("node '{}': the int8 conv takes static shapes only yet", f.node_name);
  if (!f.has_input(0) || !f.has_input(1) || !f.has_output(0) || f.has_input(2) || f.has_input(3))
    return unsupported("ConvInteger '{}': the int8 conv takes x and w without zero points "
                       "(lower-integer-contractions rewrites the others)",
                       n.name);
  if (f.input(0).dtype != ir::DType::kInt8 || f.input(1).dtype != ir::DType::kInt8 ||
      f.output(0).dtype != ir::DType::kInt32)
    return unsupported("ConvInteger '{}': the int8 conv takes int8 x and w -> int32", n.name);
  RETURN_IF_ERROR(target::int8_conv_geometry_ok(n.attrs, f.input(0).shape, f.input(1).shape)
                      .with_context(fmt::format("ConvInteger '{}'", n.name)));
  ASSIGN_OR_RETURN(ir::ConvGeometry g, ir::resolve_conv_geometry(n.attrs, f.input(0).shape,
                                                                 f.input(1).shape, nullptr, false));
  if (g.output_shape() != f.output(0).shape)
    return invalid_model("ConvInteger '{}': output shape {} differs from the geometry's {}", n.name,
                         ir::shape_to_string(f.output(0).shape),
                         ir::shape_to_string(g.output_shape()));
  const int64_t pad = n.attrs.get_int(ir::kPadValueAttr, 0);
  if (pad < -128 || pad > 127)
    return invalid_model("ConvInteger '{}': {} {} is not an int8", n.name, ir::kPadValueAttr, pad);
  const int64_t ks = ir::shape_numel(g.kernel);
  const int64_t m = g.out_channels, k = g.in_channels * ks;
  const int64_t oplane = ir::shape_numel(g.out_spatial);
  const int64_t nn = g.batch * oplane;
  // 128x128 tiles (8 warps of 64x32, 3 stages: 48 KiB) when there are enough
  // of them to fill the GPU, else 64x64 (4 warps of 32x32, 4 stages: 32 KiB).
  struct Config {
    int64_t bm, bn, threads, warps_n, stages;
  };
  const Config c = ceil_div(m, 128) * ceil_div(nn, 128) >= kSmCount ? Config{128, 128, 256, 4, 3}
                                                                     : Config{64, 64, 128, 2, 4};
  const int64_t tiles_m = std::max<int64_t>(1, ceil_div(m, c.bm));
  const int64_t tiles = tiles_m * std::max<int64_t>(1, ceil_div(nn, c.bn));
  // cp.async of whole 16-byte chunks of weight rows: K a multiple of 16.
  const std::string w_param = f.input_params.size() > 1 ? f.input_params[1] : "";
  const bool a_direct = !w_param.empty() && k % 16 == 0;
  std::string body = fmt::format(
      "  constexpr int kM = {m}, kN = {n}, kK = {k};\n"
      "  constexpr int BM = {bm}, BN = {bn}, BK = 64, NT = {nt}, WARPS_N = {wn}, STAGES = {st};\n"
      "  constexpr unsigned TILES_M = {tiles_m}u;\n"
      "  constexpr bool A_DIRECT = {ad};\n"
      "  constexpr int IC = {ic}, IH = {ih}, IW = {iw}, OW = {ow}, OPLANE = {op}, KS = {ks}, KW = {kw};\n"
      "  constexpr int SH = {sh}, SW = {sw}, PH = {ph}, PW = {pw}, DH = {dh}, DW = {dw}, PAD = {pad};\n",
      fmt::arg("m", m), fmt::arg("n", nn), fmt::arg("k", k), fmt::arg("bm", c.bm),
      fmt::arg("bn", c.bn), fmt::arg("nt", c.threads), fmt::arg("wn", c.warps_n),
      fmt::arg("st", c.stages), fmt::arg("tiles_m", tiles_m),
      fmt::arg("ad", a_direct ? "true" : "false"), fmt::arg("ic", g.in_channels),
      fmt::arg("ih", g.in_spatial[0]), fmt::arg("iw", g.in_spatial[1]),
      fmt::arg("ow", g.out_spatial[1]), fmt::arg("op", oplane), fmt::arg("ks", ks),
      fmt::arg("kw", g.kernel[1]), fmt::arg("sh", g.strides[0]), fmt::arg("sw", g.strides[1]),
      fmt::arg("ph", g.pads_begin[0]), fmt::arg("pw", g.pads_begin[1]),
      fmt::arg("dh", g.dilations[0]), fmt::arg("dw", g.dilations[1]), fmt::arg("pad", pad));
  body += kInt8ConvBody;
  replace_all(body, "A_PTR", a_direct ? w_param : "(const signed char*)nullptr");
  replace_all(body, "@LOAD_X@", f.load(0, "xbase + ((long long)c * IH + ih) * IW + iw"));
  replace_all(body, "@LOAD_W@", f.load(1, "(long long)gm * kK + gk"));
  replace_all(body, "@STORE@",
              f.store(0, "((long long)img * kM + gm) * OPLANE + jo", "(int)(v)"));
  LaunchShape launch;
  launch.grid = {tiles, 1, 1};
  launch.block = {c.threads, 1, 1};
  ASSIGN_OR_RETURN(GeneratedKernel kern,
                   finish_anchor_kernel(f, "conv_int8", std::string(kMmaPtxHelpers) + kInt8Helpers,
                                        body, launch));
  // Two blocks per SM, as the float16 mma.sync GEMM.
  const std::string entry = "extern \"C\" __global__ void ";
  const size_t at = kern.source.find(entry);
  if (at == std::string::npos)
    return internal_error("node '{}': no kernel entry in the conv source", f.node_name);
  kern.source.insert(at + entry.size(), fmt::format("__launch_bounds__({}, 2) ", c.threads));
  return kern;
}

}  // namespace graphc::emit
