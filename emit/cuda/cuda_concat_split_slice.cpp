// Concat, Split and Slice: one thread per element of the larger side. Concat
// and Split view each tensor as [outer, axis, inner] and pick the input (or
// output) by the axis coordinate against offsets baked into the source; Slice
// reads start + coordinate * step per dim (steps may be negative), with the
// parameters resolved by ir/data_movement_params.h exactly as the shape rule
// and the reference kernel resolve them.
#include <fmt/format.h>

#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "ir/data_movement_params.h"
#include "ir/shape_inference.h"

namespace graphc::emit::dm {

namespace {
int64_t prod(const ir::Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= s[d];
  return n;
}
}  // namespace

Expected<GeneratedKernel> concat_kernel(const AnchorFrame& f) {
  const ir::Shape& os = f.output(0).shape;
  const auto rank = static_cast<int64_t>(os.size());
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(f.anchor->attrs.get_int("axis", 0), rank));
  const auto ax = static_cast<size_t>(axis);
  const int64_t inner = prod(os, ax + 1, os.size()), dim = os[ax];
  // Every run copied is `inner` contiguous elements at a multiple of `inner`.
  const Mover m = Mover::for_copy(f, inner % Mover::lanes(f.output(0).dtype) == 0);
  std::string per;
  per += fmt::format("    const IX a = (i / (IX){}) % (IX){};\n", inner, dim);
  per += fmt::format("    const IX o = i / (IX){};\n", inner * dim);
  per += fmt::format("    const IX r = i % (IX){};\n", inner);
  int64_t offset = 0;
  bool first = true;
  for (size_t k = 0; k < f.num_inputs(); ++k) {
    if (!f.has_input(k)) continue;
    const ir::Shape& is = f.input(k).shape;
    if (is.size() != os.size())
      return invalid_model("node '{}': Concat input {} has rank {}, output {}", f.node_name, k,
                           is.size(), os.size());
    const int64_t size = is[ax];
    if (size == 0) continue;
    const std::string src =
        fmt::format("(o * (IX){} + (a - (IX){})) * (IX){} + r", size, offset, inner);
    per += fmt::format("    {}if (a < (IX){}) {{\n      {}\n    }}", first ? "" : "else ",
                       offset + size, m.store(0, "i", m.load(k, src)));
    per += "\n";
    first = false;
    offset += size;
  }
  if (offset != dim)
    return invalid_model("node '{}': Concat inputs add up to {} along axis {}, output has {}",
                         f.node_name, offset, axis, dim);
  return finish_copy_kernel(f, m, "concat", ir::shape_numel(os), per);
}

Expected<GeneratedKernel> split_kernel(const AnchorFrame& f) {
  const ir::Shape& is = f.input(0).shape;
  const auto rank = static_cast<int64_t>(is.size());
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(f.anchor->attrs.get_int("axis", 0), rank));
  const auto ax = static_cast<size_t>(axis);
  const int64_t inner = prod(is, ax + 1, is.size()), dim = is[ax];
  // The chunk sizes as the shape rule and the reference resolve them (an
  // omitted output still takes its chunk).
  std::optional<std::vector<int64_t>> split;
  if (f.has_input(1)) {
    ASSIGN_OR_RETURN(split, constant_ints(f, 1, "split"));
  }
  ASSIGN_OR_RETURN(auto sizes,
                   ir::dm::split_sizes(dim, split, f.anchor->attrs.get_int("num_outputs", -1),
                                       static_cast<int64_t>(f.num_outputs())));
  if (sizes.size() != f.num_outputs())
    return invalid_model("node '{}': Split has {} chunks for {} outputs", f.node_name, sizes.size(),
                         f.num_outputs());
  const Mover m = Mover::for_copy(f, inner % Mover::lanes(f.input(0).dtype) == 0);
  std::string per;
  per += fmt::format("    const IX a = (i / (IX){}) % (IX){};\n", inner, dim);
  per += fmt::format("    const IX o = i / (IX){};\n", inner * dim);
  per += fmt::format("    const IX r = i % (IX){};\n", inner);
  per += fmt::format("    const auto v = {};\n", m.load(0, "i"));
  int64_t offset = 0;
  bool first = true;
  for (size_t k = 0; k < f.num_outputs(); ++k) {
    const int64_t size = sizes[k];
    if (f.has_output(k)) {
      ir::Shape want = is;
      want[ax] = size;
      if (f.output(k).shape != want)
        return invalid_model("node '{}': Split output {} has shape {}, want {}", f.node_name, k,
                             ir::shape_to_string(f.output(k).shape), ir::shape_to_string(want));
    }
    if (size > 0 && f.has_output(k)) {
      const std::string dst =
          fmt::format("(o * (IX){} + (a - (IX){})) * (IX){} + r", size, offset, inner);
      per += fmt::format("    {}if (a >= (IX){} && a < (IX){}) {{\n      {}\n    }}\n",
                         first ? "" : "else ", offset, offset + size, m.store(k, dst, "v"));
      first = false;
    }
    offset += size;
  }
  if (offset != dim)
    return invalid_model("node '{}': Split outputs add up to {} along axis {}, input has {}",
                         f.node_name, offset, axis, dim);
  per += "    (void)v; (void)o; (void)r;\n";
  return finish_copy_kernel(f, m, "split", ir::shape_numel(is), per);
}

Expected<GeneratedKernel> slice_kernel(const AnchorFrame& f) {
  const ir::Shape& is = f.input(0).shape;
  ASSIGN_OR_RETURN(auto starts, constant_ints(f, 1, "starts"));
  ASSIGN_OR_RETURN(auto ends, constant_ints(f, 2, "ends"));
  std::optional<std::vector<int64_t>> axes, steps;
  if (f.has_input(3)) {
    ASSIGN_OR_RETURN(axes, constant_ints(f, 3, "axes"));
  }
  if (f.has_input(4)) {
    ASSIGN_OR_RETURN(steps, constant_ints(f, 4, "steps"));
  }
  ASSIGN_OR_RETURN(auto p, ir::dm::slice_params(is, starts, ends, axes, steps));
  if (p.out != f.output(0).shape)
    return invalid_model("node '{}': Slice output shape {} does not match the computed {}",
                         f.node_name, ir::shape_to_string(f.output(0).shape),
                         ir::shape_to_string(p.out));
  const auto in_strides = row_strides(is);
  int64_t base = 0;
  std::string src;
  for (size_t d = 0; d < is.size(); ++d) {
    if (p.out[d] > 0) base += p.start[d] * in_strides[d];
    const int64_t stride = p.step[d] * in_strides[d];
    if (p.out[d] > 1) src += fmt::format(" + c{} * (IX)({})", d, stride);
  }
  // Whole vectors: the innermost dim is read with step 1 from a vector
  // boundary, and both innermost dims are whole vectors.
  const int64_t w = Mover::lanes(f.input(0).dtype);
  const size_t last = is.size() - 1;
  const bool vec = !is.empty() && p.step[last] == 1 && p.out[last] % w == 0 && is[last] % w == 0 &&
                   p.start[last] % w == 0;
  const Mover m = Mover::for_copy(f, vec);
  std::string per = decompose(p.out, "i", "c", "IX");
  per += fmt::format("    {}\n", m.store(0, "i", m.load(0, fmt::format("(IX){}{}", base, src))));
  return finish_copy_kernel(f, m, "slice", ir::shape_numel(p.out), per);
}

}  // namespace graphc::emit::dm
