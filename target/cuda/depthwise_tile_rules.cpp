#include "target/cuda/depthwise_tile_rules.h"

#include <fmt/format.h>

#include <iterator>

#include "target/cuda/direct_conv_rules.h"

namespace graphc::target {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kMinTiledTaps = 25;  // 5x5

// Enough blocks to give each SM of a 132-SM H100 two.
constexpr int64_t kEnoughBlocks = 2 * 132;

struct Candidate {
  int64_t th, tw, p, cv_max;
};
// In order of decreasing work per block (more reuse of the halo and the
// taps); later ones give batch-1 layers more blocks.
constexpr Candidate kCandidates[] = {
    {8, 8, 4, 8},  // 64 px x 32 ch (v = 4), 128 threads
    {4, 8, 2, 8},  // 32 px x 32 ch, 128 threads
    {4, 4, 1, 8},  // 16 px x 32 ch, 128 threads
    {4, 4, 1, 4},  // 16 px x 16 ch, 64 threads
    {2, 4, 1, 4},  // 8 px x 16 ch, 32 threads
    {2, 2, 1, 2},  // 4 px x 8 ch, 8 threads: tiny planes of many channels
};

DepthwiseTile make_tile(const ir::ConvGeometry& g, int64_t es, const Candidate& c) {
  DepthwiseTile t;
  const int64_t ch = g.in_channels;
  t.th = c.th;
  t.tw = c.tw;
  t.p = c.p;
  t.v = ch % 4 == 0 ? 4 : ch % 2 == 0 ? 2 : 1;
  const int64_t nv = ch / t.v;
  const int64_t chunks = ceil_div(nv, c.cv_max);
  t.cv = ceil_div(nv, chunks);
  t.lv = es == 2 && ch % (2 * t.v) == 0 && t.cb() % (2 * t.v) == 0 ? 2 * t.v : t.v;
  t.in_rows = (t.th - 1) * g.strides[0] + (g.kernel[0] - 1) * g.dilations[0] + 1;
  t.in_cols = (t.tw - 1) * g.strides[1] + (g.kernel[1] - 1) * g.dilations[1] + 1;
  t.taps = g.kernel[0] * g.kernel[1];
  t.blocks = g.batch * ceil_div(g.out_spatial[0], t.th) * ceil_div(g.out_spatial[1], t.tw) * chunks;
  return t;
}

}  // namespace

DepthwiseTileChoice choose_depthwise_tile(const ir::ConvGeometry& g, ir::DType dtype,
                                          const ir::AttributeMap& attrs) {
  DepthwiseTileChoice out;
  if (!g.channels_last) {
    out.reason = "untiled: NCHW (the NCHW kernel stages its own tile)";
    return out;
  }
  if (!is_depthwise(g) || g.out_channels != g.in_channels) {
    out.reason = "untiled: not one output channel per group";
    return out;
  }
  if (dtype != ir::DType::kFloat32 && dtype != ir::DType::kFloat16 &&
      dtype != ir::DType::kBFloat16) {
    out.reason = fmt::format("untiled: {}", ir::dtype_name(dtype));
    return out;
  }
  if (const std::string why = direct_conv_refusal(g); !why.empty()) {
    out.reason = "untiled: " + why;
    return out;
  }
  if (attrs.get_int(kDepthwiseTileAttr, 1) == 0) {
    out.reason = fmt::format("untiled ({} = 0)", kDepthwiseTileAttr);
    return out;
  }
  // Staging pays where each input is read by many taps. On an H100 the tiled
  // kernel ran 0.65-0.95x of the untiled one for 3x3 and for strided convs
  // (MobileNetV3/EfficientNet shapes) and 1.2-3.2x for 5x5 and 7x7 at stride
  // 1 ("[depthwise-bench]"), so auto mode tiles only the latter (the
  // attribute overrides it: the benchmark times both).
  const int64_t taps = g.kernel[0] * g.kernel[1];
  const bool strided = g.strides[0] > 1 || g.strides[1] > 1;
  if (!attrs.has(kDepthwiseTileAttr) && (strided || taps < kMinTiledTaps)) {
    out.reason = fmt::format("untiled: {}x{} stride {}x{} (tiles pay from 5x5 at stride 1)",
                             g.kernel[0], g.kernel[1], g.strides[0], g.strides[1]);
    return out;
  }
  const int64_t es = static_cast<int64_t>(ir::dtype_size(dtype));
  std::optional<DepthwiseTile> best;
  // 2 + i: candidate i, where it fits (tests run every tile shape).
  const int64_t forced = attrs.get_int(kDepthwiseTileAttr, 1) - 2;
  if (forced >= 0 && forced < static_cast<int64_t>(std::size(kCandidates))) {
    const DepthwiseTile t = make_tile(g, es, kCandidates[forced]);
    if (t.shared_bytes() <= kDepthwiseTileSharedBytes) best = t;
  }
  for (const Candidate& c : kCandidates) {
    if (best && forced >= 0) break;
    const DepthwiseTile t = make_tile(g, es, c);
    if (t.shared_bytes() > kDepthwiseTileSharedBytes) continue;
    if (!best || t.blocks > best->blocks) best = t;
    if (t.blocks >= kEnoughBlocks) break;
  }
  if (!best) {
    const DepthwiseTile t = make_tile(g, es, kCandidates[std::size(kCandidates) - 1]);
    out.reason = fmt::format(
        "untiled: the smallest tile's input halo ({}x{}) does not fit in {} KiB of shared memory",
        t.in_rows, t.in_cols, kDepthwiseTileSharedBytes / 1024);
    return out;
  }
  out.tile = best;
  const DepthwiseTile& t = *best;
  out.reason = fmt::format(
      "tiled: {}x{} px x {} ch per block ({} threads, {} px x {} ch each), {} blocks, {:.1f} KiB "
      "shared",
      t.th, t.tw, t.cb(), t.threads(), t.p, t.v, t.blocks,
      static_cast<double>(t.shared_bytes()) / 1024);
  return out;
}

}  // namespace graphc::target
