// Transpose. Dims of size 1 are dropped and runs of input dims that stay
// adjacent in the output are merged first, so e.g. NCHW -> NHWC becomes a
// batched 2D transpose. When the innermost dim stays innermost, reads and
// writes are both contiguous and one thread per output element gathers its
// element. Otherwise a block moves 32x32 tiles through shared memory: it
// reads rows along the input's innermost dim and writes rows along the
// output's, both coalesced; the tile row is padded to 33 so the column reads
// hit 32 different banks.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/data_movement_params.h"

namespace graphc::emit::dm {

namespace {

struct ReducedTranspose {
  ir::Shape in;               // merged input dims
  std::vector<int64_t> perm;  // output dim j reads merged input dim perm[j]
};

ReducedTranspose reduce_transpose(const ir::Shape& in, const std::vector<int64_t>& perm) {
  // Drop dims of size 1 (they do not move anything).
  std::vector<int64_t> new_index(in.size(), -1);
  ir::Shape kept;
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1) {
      new_index[d] = static_cast<int64_t>(kept.size());
      kept.push_back(in[d]);
    }
  std::vector<int64_t> p;
  for (int64_t src : perm)
    if (new_index[static_cast<size_t>(src)] >= 0) p.push_back(new_index[static_cast<size_t>(src)]);
  // Merge runs j, j+1 of output dims that read consecutive input dims.
  std::vector<std::pair<int64_t, int64_t>> groups;  // [first, last] input dims, output order
  for (int64_t src : p) {
    if (!groups.empty() && groups.back().second + 1 == src)
      groups.back().second = src;
    else
      groups.emplace_back(src, src);
  }
  std::vector<size_t> by_input(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) by_input[g] = g;
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return groups[a].first < groups[b].first; });
  ReducedTranspose r;
  r.perm.assign(groups.size(), 0);
  for (size_t pos = 0; pos < by_input.size(); ++pos) {
    const auto& [first, last] = groups[by_input[pos]];
    int64_t size = 1;
    for (int64_t d = first; d <= last; ++d) size *= kept[static_cast<size_t>(d)];
    r.in.push_back(size);
    r.perm[by_input[pos]] = static_cast<int64_t>(pos);
  }
  return r;
}

Expected<GeneratedKernel> gather_transpose(const AnchorFrame& f, const ReducedTranspose& r,
                                           int64_t n) {
  const auto in_strides = row_strides(r.in);
  ir::Shape out;
  for (int64_t p : r.perm) out.push_back(r.in[static_cast<size_t>(p)]);
  std::string src;
  for (size_t j = 0; j < out.size(); ++j)
    src += fmt::format("{}c{} * (IX){}", src.empty() ? "" : " + ", j,
                       in_strides[static_cast<size_t>(r.perm[j])]);
  if (src.empty()) src = "0";
  // The innermost dim stays innermost: whole vectors when it is.
  const Mover m = Mover::for_copy(
      f, !r.in.empty() && r.in.back() % Mover::lanes(f.input(0).dtype) == 0 &&
             (r.in.size() == 1 || r.perm.back() == static_cast<int64_t>(r.in.size()) - 1));
  std::string per = decompose(out, "i", "c", "IX");
  per += fmt::format("    {}\n", m.store(0, "i", m.load(0, src)));
  return finish_copy_kernel(f, m, "transpose", n, per);
}

// The tiled kernel's body. `tile_bound` is the code of the tile count (a
// literal, or over a shape range the run-time outer size times
// `tiles_per_outer`); `ix` the index type.
struct TiledBody {
  std::string body;
  int64_t tiles = 0;            // at `r`'s shape
  int64_t tiles_per_outer = 0;  // per index of the outermost batch dim (output dim 0)
};
TiledBody tiled_body(const AnchorFrame& f, const ReducedTranspose& r, const std::string& ix,
                     const std::function<std::string(int64_t, int64_t)>& tile_bound) {
  const size_t rank = r.in.size();
  const auto in_strides = row_strides(r.in);
  ir::Shape out;
  for (int64_t p : r.perm) out.push_back(r.in[static_cast<size_t>(p)]);
  const auto out_strides = row_strides(out);
  const size_t a_in = static_cast<size_t>(r.perm[rank - 1]);  // the output's innermost dim
  size_t b_out = 0;                                           // where the input's innermost goes
  while (static_cast<size_t>(r.perm[b_out]) != rank - 1) ++b_out;
  const int64_t na = r.in[a_in], nb = r.in[rank - 1];
  const int64_t tiles_a = (na + 31) / 32, tiles_b = (nb + 31) / 32;
  // The other dims form the batch, in output order.
  ir::Shape batch;
  std::string in_base, out_base;
  for (size_t j = 0; j + 1 < rank; ++j) {
    if (j == b_out) continue;
    const size_t k = batch.size();
    batch.push_back(out[j]);
    in_base += fmt::format(" + q{} * (IX){}", k, in_strides[static_cast<size_t>(r.perm[j])]);
    out_base += fmt::format(" + q{} * (IX){}", k, out_strides[j]);
  }
  TiledBody t;
  t.tiles = ir::shape_numel(batch) * tiles_a * tiles_b;
  t.tiles_per_outer = batch.empty() || batch[0] == 0 ? t.tiles : t.tiles / batch[0];
  // Tile elements of at least 4 bytes, so a column read hits 32 banks (bool,
  // 8- and 16-bit integers are held as int; values convert back exactly).
  const ir::DType dt = f.input(0).dtype;
  const std::string ct =
      ir::is_float(dt) || ir::dtype_size(dt) >= 4 ? cuda::compute_type(dt) : std::string("int");
  std::string& body = t.body;
  body = fmt::format("  typedef {} IX;\n", ix);
  body += fmt::format("  __shared__ {} tile[32][33];\n", ct);
  body += fmt::format("  for (IX t = (IX)blockIdx.x; t < {}; t += (IX)gridDim.x) {{\n",
                      tile_bound(t.tiles, t.tiles_per_outer));
  body += fmt::format("    const IX bt = t / (IX){};\n", tiles_a * tiles_b);
  body += fmt::format("    const IX ta = (t % (IX){}) / (IX){};\n", tiles_a * tiles_b, tiles_b);
  body += fmt::format("    const IX tb = t % (IX){};\n", tiles_b);
  body += decompose(batch, "bt", "q", "IX");
  body +=
      fmt::format("    const IX in_base = 0{};\n    const IX out_base = 0{};\n", in_base, out_base);
  body += "    const IX a0 = ta * 32, b0 = tb * 32;\n";
  body += "    for (int ty = threadIdx.y; ty < 32; ty += blockDim.y) {\n";
  body += "      const IX a = a0 + ty, b = b0 + (IX)threadIdx.x;\n";
  body += fmt::format("      if (a < (IX){} && b < (IX){}) tile[ty][threadIdx.x] = {};\n", na, nb,
                      f.load(0, fmt::format("in_base + a * (IX){} + b", in_strides[a_in])));
  body += "    }\n    __syncthreads();\n";
  body += "    for (int ty = threadIdx.y; ty < 32; ty += blockDim.y) {\n";
  body += "      const IX b = b0 + ty, a = a0 + (IX)threadIdx.x;\n";
  body += fmt::format("      if (a < (IX){} && b < (IX){}) {}\n", na, nb,
                      f.store(0, fmt::format("out_base + b * (IX){} + a", out_strides[b_out]),
                              "tile[threadIdx.x][ty]"));
  body += "    }\n    __syncthreads();\n  }\n";
  return t;
}

Expected<GeneratedKernel> tiled_transpose(const AnchorFrame& f, const ReducedTranspose& r) {
  const TiledBody t = tiled_body(f, r, index_type(max_numel(f)),
                                 [](int64_t tiles, int64_t) { return fmt::format("(IX){}", tiles); });
  LaunchShape launch;
  launch.block = {32, 8, 1};
  launch.grid = {std::clamp<int64_t>(t.tiles, 1, kTiledTransposeMaxBlocks), 1, 1};
  return finish_anchor_kernel(f, "transpose", "", t.body, launch);
}

bool tiled(const ReducedTranspose& r) {
  return r.in.size() > 1 && r.perm.back() != static_cast<int64_t>(r.in.size()) - 1;
}

}  // namespace

Expected<GeneratedKernel> transpose_kernel(const AnchorFrame& f) {
  const ir::Shape& in = f.input(0).shape;
  const auto& attrs = f.anchor->attrs;
  ASSIGN_OR_RETURN(auto perm, ir::dm::transpose_perm(attrs.get_ints("perm"), attrs.has("perm"),
                                                     static_cast<int64_t>(in.size())));
  const int64_t n = ir::shape_numel(in);
  ReducedTranspose r = reduce_transpose(in, perm);
  if (!tiled(r) || n == 0) return gather_transpose(f, r, n);
  return tiled_transpose(f, r);
}

std::optional<OuterTiledTranspose> outer_tiled_transpose(const AnchorFrame& f,
                                                         const ir::Shape& in_max,
                                                         const std::vector<int64_t>& perm,
                                                         const std::string& outer) {
  if (in_max.size() < 3 || perm.empty() || perm[0] != 0 || in_max[0] < 2)
    return std::nullopt;
  const ReducedTranspose r = reduce_transpose(in_max, perm);
  // Dim 0 must stay a dim of its own (not merged with the next), first in
  // both layouts, and the transpose tiled: then the tiles of one outer index
  // follow each other and only their count follows the run-time size.
  if (!tiled(r) || r.perm[0] != 0 || r.in[0] != in_max[0]) return std::nullopt;
  OuterTiledTranspose o;
  const TiledBody t = tiled_body(f, r, index_type(ir::shape_numel(in_max)), [&](int64_t, int64_t per) {
    return fmt::format("{} * (IX){}", outer, per);
  });
  o.body = t.body;
  o.tiles_per_outer = t.tiles_per_outer;
  return o;
}

}  // namespace graphc::emit::dm
