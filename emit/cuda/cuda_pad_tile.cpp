// Expand, Tile, Pad, DepthToSpace and SpaceToDepth: one thread per output
// element computes the input element it copies (or, for Pad's constant
// mode, the pad value), with every dim, stride and pad baked in.
#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/codegen_util.h"
#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/data_movement_params.h"

namespace graphc::emit::dm {

Expected<GeneratedKernel> expand_kernel(const AnchorFrame& f) {
  const ir::Shape& os = f.output(0).shape;
  ASSIGN_OR_RETURN(auto strides, broadcast_strides(f.input(0).shape, os));
  std::string src;
  for (size_t d = 0; d < os.size(); ++d)
    if (strides[d] != 0 && os[d] > 1) src += fmt::format(" + c{} * (IX){}", d, strides[d]);
  // Whole vectors when the innermost dim is copied, not broadcast.
  const ir::Shape& is = f.input(0).shape;
  const bool vec = !os.empty() && !is.empty() && is.back() == os.back() &&
                   os.back() % Mover::lanes(f.input(0).dtype) == 0;
  const Mover m = Mover::for_copy(f, vec);
  std::string per = decompose(os, "i", "c", "IX");
  per += fmt::format("    {}\n", m.store(0, "i", m.load(0, "(IX)0" + src)));
  return finish_copy_kernel(f, m, "expand", ir::shape_numel(os), per);
}

Expected<GeneratedKernel> tile_kernel(const AnchorFrame& f) {
  const ir::Shape &is = f.input(0).shape, &os = f.output(0).shape;
  if (is.size() != os.size())
    return invalid_model("node '{}': Tile input rank {} differs from output rank {}", f.node_name,
                         is.size(), os.size());
  for (size_t d = 0; d < is.size(); ++d)
    if ((is[d] == 0) != (os[d] == 0) || (is[d] > 0 && os[d] % is[d] != 0))
      return invalid_model("node '{}': Tile output dim {} ({}) is not a multiple of {}",
                           f.node_name, d, os[d], is[d]);
  const auto in_strides = row_strides(is);
  std::string src;
  for (size_t d = 0; d < is.size(); ++d) {
    if (is[d] <= 1) continue;
    const std::string c =
        os[d] == is[d] ? fmt::format("c{}", d) : fmt::format("(c{} % (IX){})", d, is[d]);
    src += fmt::format(" + {} * (IX){}", c, in_strides[d]);
  }
  // Whole vectors when the input's innermost dim is (runs repeat it whole).
  const Mover m =
      Mover::for_copy(f, !is.empty() && is.back() % Mover::lanes(f.input(0).dtype) == 0);
  std::string per = decompose(os, "i", "c", "IX");
  per += fmt::format("    {}\n", m.store(0, "i", m.load(0, "(IX)0" + src)));
  return finish_copy_kernel(f, m, "tile", ir::shape_numel(os), per);
}

Expected<GeneratedKernel> pad_kernel(const AnchorFrame& f) {
  const ir::Shape &is = f.input(0).shape, &os = f.output(0).shape;
  const ir::DType dt = f.input(0).dtype;
  ASSIGN_OR_RETURN(auto mode, ir::dm::pad_mode(f.anchor->attrs.get_string("mode", "constant")));
  ASSIGN_OR_RETURN(auto pads, constant_ints(f, 1, "pads"));
  std::optional<std::vector<int64_t>> axes;
  if (f.has_input(3)) {
    ASSIGN_OR_RETURN(axes, constant_ints(f, 3, "axes"));
  }
  ASSIGN_OR_RETURN(auto p, ir::dm::pad_params(is, pads, axes, mode));
  if (p.out != os)
    return invalid_model("node '{}': Pad output shape {} does not match the computed {}",
                         f.node_name, ir::shape_to_string(os), ir::shape_to_string(p.out));
  // The pad value: input 2 (read on the device: it may be runtime data), else
  // the IR attribute `_value`, else 0.
  std::string value;
  if (f.has_input(2)) {
    if (f.input(2).dtype != dt || ir::shape_numel(f.input(2).shape) != 1)
      return invalid_model("node '{}': constant_value must be one {} value", f.node_name,
                           ir::dtype_name(dt));
    value = f.load(2, "0");
  } else {
    ir::Tensor t(dt, {});
    t.set_f64(0, f.anchor->attrs.get_float("_value", 0.0));
    value = scalar_literal(t);
  }
  const auto in_strides = row_strides(is);
  const size_t rank = is.size();
  std::string per = decompose(os, "i", "c", "IX");
  per += "    IX off = 0;\n    bool inside = true;\n";
  for (size_t d = 0; d < rank; ++d) {
    const int64_t lo = std::max<int64_t>(-p.begin[d], 0);
    const int64_t w = is[d] - lo - std::max<int64_t>(-p.end[d], 0);
    const int64_t shift = std::max<int64_t>(p.begin[d], 0);
    per += fmt::format("    {{\n      IX q = c{} - (IX){};\n", d, shift);
    per += fmt::format("      if (q < 0 || q >= (IX){}) {{\n", w);
    switch (mode) {
      case ir::dm::PadMode::kConstant: per += "        inside = false;\n"; break;
      case ir::dm::PadMode::kEdge:
        per += fmt::format("        q = q < 0 ? 0 : (IX){};\n", w - 1);
        break;
      case ir::dm::PadMode::kWrap:
        per += fmt::format("        q = ((q % (IX){0}) + (IX){0}) % (IX){0};\n", w);
        break;
      case ir::dm::PadMode::kReflect:
        if (w == 1) {
          per += "        q = 0;\n";
        } else {
          per += fmt::format("        const IX m = ((q % (IX){0}) + (IX){0}) % (IX){0};\n",
                             2 * (w - 1));
          per += fmt::format("        q = m >= (IX){} ? (IX){} - m : m;\n", w, 2 * (w - 1));
        }
        break;
    }
    per += "      }\n";
    per += fmt::format("      off += ((IX){} + q) * (IX){};\n    }}\n", lo, in_strides[d]);
  }
  const std::string ct = cuda::compute_type(dt);
  per += fmt::format("    const {} v = inside ? {} : ({}){};\n", ct, f.load(0, "off"), ct, value);
  per += fmt::format("    {}\n", f.store(0, "i", "v"));
  return finish_flat_kernel(f, "pad", ir::shape_numel(os), per);
}

// DepthToSpace: output (N, C, H*b, W*b) from input (N, C*b*b, H, W);
// SpaceToDepth the reverse. DCR: depth channel (bi*b + bj)*C + c; CRD:
// c*b*b + bi*b + bj (reference/kernels_generators.cpp block_copy).
Expected<GeneratedKernel> depth_space_kernel(const AnchorFrame& f) {
  const bool to_space = f.anchor->op == ir::OpKind::DepthToSpace;
  const int64_t b = f.anchor->attrs.get_int("blocksize", 1);
  const bool crd = f.anchor->attrs.get_string("mode", "DCR") == "CRD";
  const ir::Shape &is = f.input(0).shape, &os = f.output(0).shape;
  if (is.size() != 4 || os.size() != 4 || b < 1)
    return invalid_model("node '{}': {} needs 4-D tensors and blocksize >= 1", f.node_name,
                         ir::op_name(f.anchor->op));
  const ir::Shape& space = to_space ? os : is;
  const ir::Shape& depth = to_space ? is : os;
  const int64_t C = space[1], H = depth[2], W = depth[3], DC = depth[1], SH = space[2],
                SW = space[3];
  std::string per = decompose(os, "i", "c", "IX");
  std::string ch;
  if (to_space) {
    // Output coords (n, c, y, x) in space layout.
    per += fmt::format("    const IX h = c2 / (IX){0}, bi = c2 % (IX){0};\n", b);
    per += fmt::format("    const IX w = c3 / (IX){0}, bj = c3 % (IX){0};\n", b);
    ch = crd ? fmt::format("(c1 * (IX){0} + bi) * (IX){0} + bj", b)
             : fmt::format("(bi * (IX){} + bj) * (IX){} + c1", b, C);
    per += fmt::format("    const IX src = ((c0 * (IX){} + ({})) * (IX){} + h) * (IX){} + w;\n", DC,
                       ch, H, W);
  } else {
    // Output coords (n, ch, h, w) in depth layout.
    if (crd)
      per += fmt::format(
          "    const IX cc = c1 / (IX){0}, bi = (c1 / (IX){1}) % (IX){1}, bj = c1 % (IX){1};\n",
          b * b, b);
    else
      per += fmt::format(
          "    const IX cc = c1 % (IX){0}, bi = (c1 / (IX){0}) / (IX){1}, bj = (c1 / (IX){0}) % "
          "(IX){1};\n",
          C, b);
    per += fmt::format(
        "    const IX src = ((c0 * (IX){} + cc) * (IX){} + c2 * (IX){} + bi) * (IX){} + c3 * "
        "(IX){} + bj;\n",
        C, SH, b, SW, b);
  }
  per += fmt::format("    {}\n", f.store(0, "i", f.load(0, "src")));
  return finish_flat_kernel(f, to_space ? "depth_to_space" : "space_to_depth", ir::shape_numel(os),
                            per);
}

}  // namespace graphc::emit::dm
