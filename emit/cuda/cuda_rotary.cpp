// RotaryEmbedding (opset 23), mirroring reference/kernels_norm_rotary.cpp: X
// is [batch, heads, seq, head_size] or [batch, seq, heads * head_size]
// (num_heads); the first rotary_embedding_dim features of each head rotate
// as halves (i, i + d/2) or interleaved pairs (2i, 2i + 1) by the cos/sin
// cache row of position_ids[b, s] (or of (b, s) for a [batch, seq, d/2]
// cache). One thread per output element: it reads its own value and its
// pair's (the same head, so the second read hits L1) and the cache entry,
// so the whole op is one pass over X. A position id outside the cache is
// clamped to the cache (the reference refuses it; a kernel cannot, and must
// not read past the buffer).
#include <fmt/format.h>

#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"

namespace graphc::emit::dm {

Expected<GeneratedKernel> rotary_embedding_kernel(const AnchorFrame& f) {
  const ir::Value& x = f.input(0);
  const ir::AttributeMap& a = f.anchor->attrs;
  if (!ir::is_float(x.dtype) || x.shape.size() < 3 || x.shape.size() > 4)
    return invalid_model("node '{}': RotaryEmbedding needs a float input of rank 3 or 4, got {} {}",
                         f.node_name, ir::dtype_name(x.dtype), ir::shape_to_string(x.shape));
  const bool four_d = x.shape.size() == 4;
  const int64_t batch = x.shape[0];
  const int64_t seq = four_d ? x.shape[2] : x.shape[1];
  const int64_t heads = four_d ? x.shape[1] : a.get_int("num_heads", 0);
  if (heads <= 0 || (!four_d && x.shape[2] % heads != 0))
    return invalid_model("node '{}': RotaryEmbedding of a 3-D input needs num_heads dividing its "
                         "last dim, got {}", f.node_name, heads);
  const int64_t head = four_d ? x.shape[3] : x.shape[2] / heads;
  int64_t rot = a.get_int("rotary_embedding_dim", 0);
  if (rot == 0) rot = head;
  if (rot < 2 || rot > head || rot % 2 != 0)
    return invalid_model("node '{}': rotary_embedding_dim {} must be even and within the head "
                         "size {}", f.node_name, rot, head);
  const int64_t half = rot / 2;
  const int64_t cache_rows = ir::shape_numel(f.input(1).shape) / half;
  if (cache_rows < 1 || ir::shape_numel(f.input(2).shape) != cache_rows * half)
    return invalid_model("node '{}': RotaryEmbedding cos and sin caches must hold rows of {} "
                         "values, got {} and {}", f.node_name, half,
                         ir::shape_to_string(f.input(1).shape), ir::shape_to_string(f.input(2).shape));
  const bool pos = f.has_input(3);
  if (!pos && cache_rows < batch * seq)
    return invalid_model("node '{}': RotaryEmbedding without position_ids needs a [batch, seq, "
                         "{}] cache, got {}", f.node_name, half, ir::shape_to_string(f.input(1).shape));
  const bool interleaved = a.get_int("interleaved", 0) != 0;
  const std::string ct = cuda::compute_type(x.dtype);
  const std::string wt = ct == "double" ? "double" : "float";
  std::string per;
  // d: feature within the head; bs: the (batch, seq) row of the cache.
  if (four_d)
    per += fmt::format(
        "    const IX d = i % (IX){0};\n"
        "    const IX s = (i / (IX){0}) % (IX){1};\n"
        "    const IX b = i / ((IX){0} * (IX){1} * (IX){2});\n",
        head, seq, heads);
  else
    per += fmt::format(
        "    const IX d = i % (IX){0};\n"
        "    const IX s = (i / ((IX){0} * (IX){1})) % (IX){2};\n"
        "    const IX b = i / ((IX){0} * (IX){1} * (IX){2});\n",
        head, heads, seq);
  per += fmt::format("    const {} self = ({}){};\n", wt, wt, f.load(0, "(long long)i"));
  per += fmt::format("    if (d >= (IX){}) {{\n      {}\n      continue;\n    }}\n", rot,
                     f.store(0, "(long long)i", fmt::format("({})self", ct)));
  if (interleaved)
    per += "    const IX k = d / 2;\n    const bool first = (d % 2) == 0;\n"
           "    const IX mate = first ? i + 1 : i - 1;\n";
  else
    per += fmt::format(
        "    const bool first = d < (IX){0};\n"
        "    const IX k = first ? d : d - (IX){0};\n"
        "    const IX mate = first ? i + (IX){0} : i - (IX){0};\n",
        half);
  const std::string row = fmt::format("(long long)b * {}LL + (long long)s", seq);
  if (pos)
    per += fmt::format(
        "    long long r = (long long){};\n"
        "    r = r < 0 ? 0 : (r > {}LL ? {}LL : r);\n",
        f.load(3, row), cache_rows - 1, cache_rows - 1);
  else
    per += fmt::format("    const long long r = {};\n", row);
  const std::string at = fmt::format("r * {}LL + (long long)k", half);
  per += fmt::format(
      "    const {0} c = ({0}){1};\n"
      "    const {0} sn = ({0}){2};\n"
      "    const {0} other = ({0}){3};\n"
      "    const {0} y = first ? c * self - sn * other : sn * other + c * self;\n"
      "    {4}\n",
      wt, f.load(1, at), f.load(2, at), f.load(0, "(long long)mate"),
      f.store(0, "(long long)i", fmt::format("({})y", ct)));
  (void)batch;
  return finish_flat_kernel(f, "rotary", ir::shape_numel(x.shape), per);
}

}  // namespace graphc::emit::dm
