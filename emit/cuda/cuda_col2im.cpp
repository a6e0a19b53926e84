// Col2Im (opset 18), mirroring reference/kernels_norm_rotary.cpp: input
// [N, C * prod(block), L] of sliding-block columns summed back into the
// image [N, C, image...]. A gather, not a scatter: one thread per image
// element finds, for each block offset k, the one block l (if any) that
// covers it, and adds the column values in increasing k - the order the
// reference adds them - so the kernel needs no atomics and is deterministic.
// image_shape and block_shape are build-time constants (the output shape
// depends on them); sums in double, rounded once on store.
#include <fmt/format.h>

#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"

namespace graphc::emit::dm {

Expected<GeneratedKernel> col2im_kernel(const AnchorFrame& f) {
  const ir::Value& x = f.input(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> image, constant_ints(f, 1, "image_shape"));
  ASSIGN_OR_RETURN(std::vector<int64_t> block, constant_ints(f, 2, "block_shape"));
  const size_t nd = image.size();
  const ir::AttributeMap& a = f.anchor->attrs;
  const auto dil = a.get_ints("dilations", std::vector<int64_t>(nd, 1));
  const auto strides = a.get_ints("strides", std::vector<int64_t>(nd, 1));
  const auto pads = a.get_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (nd == 0 || block.size() != nd || dil.size() != nd || strides.size() != nd ||
      pads.size() != 2 * nd || x.shape.size() != 3 || !ir::is_float(x.dtype))
    return invalid_model("node '{}': Col2Im needs a float [N, C*prod(block), L] input and "
                         "image_shape, block_shape, dilations, strides of one rank (pads twice)",
                         f.node_name);
  std::vector<int64_t> nblocks(nd);
  int64_t kprod = 1, lprod = 1;
  for (size_t d = 0; d < nd; ++d) {
    if (block[d] < 1 || dil[d] < 1 || strides[d] < 1 || image[d] < 1)
      return invalid_model("node '{}': Col2Im sizes, dilations and strides must be positive",
                           f.node_name);
    nblocks[d] =
        (image[d] + pads[d] + pads[d + nd] - dil[d] * (block[d] - 1) - 1) / strides[d] + 1;
    kprod *= block[d];
    lprod *= nblocks[d];
  }
  if (x.shape[1] % kprod != 0 || x.shape[2] != lprod)
    return invalid_model("node '{}': Col2Im input {} does not hold {} blocks of {} elements",
                         f.node_name, ir::shape_to_string(x.shape), lprod, kprod);
  const ir::Shape& ys = f.output(0).shape;
  const std::string ct = cuda::compute_type(f.output(0).dtype);
  const std::string ix = index_type(max_numel(f));
  // Image coordinates p<d> and the channel row of x.
  ir::Shape img_shape(image.begin(), image.end());
  std::string per = decompose(img_shape, "(i % (IX)" + std::to_string(ir::shape_numel(img_shape)) + ")",
                              "p", "IX");
  per += fmt::format("    const long long nc = (long long)(i / (IX){});\n",
                     ir::shape_numel(img_shape));
  per += "    double acc = 0.0;\n";
  per += fmt::format("    for (long long k = 0; k < {}LL; ++k) {{\n", kprod);
  per += "      long long krem = k, l = 0;\n      bool hit = true;\n";
  // Innermost axis first for k's digits; l is rebuilt outermost first below.
  std::string l_code = "      l = 0;\n";
  for (size_t d = nd; d-- > 0;) {
    per += fmt::format(
        "      const long long k{0} = krem % {1}LL;\n"
        "      krem /= {1}LL;\n"
        "      const long long t{0} = (long long)p{0} + {2}LL - k{0} * {3}LL;\n"
        "      const long long l{0} = t{0} / {4}LL;\n"
        "      hit = hit && t{0} >= 0 && t{0} % {4}LL == 0 && l{0} < {5}LL;\n",
        d, block[d], pads[d], dil[d], strides[d], nblocks[d]);
  }
  for (size_t d = 0; d < nd; ++d) l_code += fmt::format("      l = l * {}LL + l{};\n", nblocks[d], d);
  per += "      if (!hit) continue;\n" + l_code;
  // x[n, c * kprod + k, l]: row nc * kprod + k of length L.
  per += fmt::format("      acc += (double){};\n    }}\n",
                     f.load(0, fmt::format("(nc * {}LL + k) * {}LL + l", kprod, lprod)));
  per += fmt::format("    {}\n", f.store(0, "(long long)i", fmt::format("({})acc", ct)));
  (void)ix;
  return finish_flat_kernel(f, "col2im", ir::shape_numel(ys), per);
}

}  // namespace graphc::emit::dm
