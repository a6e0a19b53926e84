#include "ir/data_movement_params.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "support/checked_math.h"

namespace graphc::ir::dm {

Expected<std::vector<int64_t>> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                              const char* what) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return invalid_model("{} value {} is out of range for rank {} (valid: [{}, {}])", what, a,
                           rank, -rank, rank - 1);
    int64_t n = a < 0 ? a + rank : a;
    if (seen[static_cast<size_t>(n)])
      return invalid_model("{} names dim {} more than once ({})", what, n, fmt::join(axes, ", "));
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

Expected<Shape> reshape_shape(const Shape& in, const std::vector<int64_t>& target, bool allowzero) {
  ASSIGN_OR_RETURN(int64_t numel, checked_shape_numel(in));
  Shape out(target.size());
  int64_t infer = -1;
  bool has_zero = false;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == -1) {
      if (infer >= 0)
        return invalid_model("shape [{}] has more than one -1", fmt::join(target, ", "));
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (t < -1)
      return invalid_model("shape [{}] has the invalid dim {} at index {}", fmt::join(target, ", "),
                           t, i);
    if (t == 0 && !allowzero) {
      if (i >= in.size())
        return invalid_model(
            "shape [{}] has 0 (copy the input dim) at index {}, but the input {} has rank {}",
            fmt::join(target, ", "), i, shape_to_string(in), in.size());
      t = in[i];
    }
    if (t == 0) has_zero = true;
    out[i] = t;
    auto k = checked_mul(known, t);
    if (!k) return invalid_model("shape [{}] overflows int64", fmt::join(target, ", "));
    known = *k;
  }
  if (allowzero && has_zero && infer >= 0)
    return invalid_model("shape [{}] has both 0 and -1, which allowzero=1 forbids",
                         fmt::join(target, ", "));
  if (infer >= 0) {
    if (known == 0)
      return invalid_model("shape [{}]: the -1 dim cannot be inferred next to a zero-size dim",
                           fmt::join(target, ", "));
    if (numel % known != 0)
      return invalid_model("cannot reshape {} ({} elements) to [{}]: {} is not a multiple of {}",
                           shape_to_string(in), numel, fmt::join(target, ", "), numel, known);
    out[static_cast<size_t>(infer)] = numel / known;
  } else if (known != numel) {
    return invalid_model("cannot reshape {} ({} elements) to {} ({} elements)", shape_to_string(in),
                         numel, shape_to_string(out), known);
  }
  return out;
}

Expected<Shape> squeeze_shape(const Shape& in, const std::optional<std::vector<int64_t>>& axes) {
  auto rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (axes) {
    ASSIGN_OR_RETURN(auto norm, normalize_axes(*axes, rank, "axes"));
    for (int64_t a : norm) {
      if (in[static_cast<size_t>(a)] != 1)
        return invalid_model("cannot squeeze dim {} of {}: its size is {}, not 1", a,
                             shape_to_string(in), in[static_cast<size_t>(a)]);
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t d = 0; d < in.size(); ++d) drop[d] = in[d] == 1;
  }
  Shape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!drop[d]) out.push_back(in[d]);
  return out;
}

Expected<Shape> unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes) {
  auto out_rank = static_cast<int64_t>(in.size() + axes.size());
  ASSIGN_OR_RETURN(auto norm, normalize_axes(axes, out_rank, "axes"));
  Shape out(static_cast<size_t>(out_rank), 1);
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : norm) inserted[static_cast<size_t>(a)] = true;
  size_t k = 0;
  for (size_t d = 0; d < out.size(); ++d)
    if (!inserted[d]) out[d] = in[k++];
  return out;
}

Expected<std::vector<int64_t>> transpose_perm(const std::vector<int64_t>& perm_attr, bool has_perm,
                                              int64_t rank) {
  std::vector<int64_t> perm;
  if (!has_perm) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
    return perm;
  }
  if (static_cast<int64_t>(perm_attr.size()) != rank)
    return invalid_model("perm [{}] has {} entries, the input has rank {}",
                         fmt::join(perm_attr, ", "), perm_attr.size(), rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm_attr) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)])
      return invalid_model("perm [{}] is not a permutation of 0..{}", fmt::join(perm_attr, ", "),
                           rank - 1);
    seen[static_cast<size_t>(p)] = true;
  }
  return perm_attr;
}

Expected<std::vector<int64_t>> split_sizes(int64_t dim,
                                           const std::optional<std::vector<int64_t>>& split,
                                           int64_t num_outputs_attr, int64_t num_outputs) {
  if (split) {
    if (num_outputs_attr >= 0)
      return invalid_model("Split has both the 'split' input and the 'num_outputs' attribute");
    if (static_cast<int64_t>(split->size()) != num_outputs)
      return invalid_model("split [{}] has {} entries, the node has {} outputs",
                           fmt::join(*split, ", "), split->size(), num_outputs);
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) return invalid_model("split [{}] has a negative size", fmt::join(*split, ", "));
      auto next = checked_add(sum, s);
      if (!next) return invalid_model("split [{}] overflows int64", fmt::join(*split, ", "));
      sum = *next;
    }
    if (sum != dim)
      return invalid_model("split [{}] sums to {}, the split dim has size {}",
                           fmt::join(*split, ", "), sum, dim);
    return *split;
  }
  if (num_outputs <= 0) return invalid_model("Split has no outputs");
  std::vector<int64_t> sizes(static_cast<size_t>(num_outputs));
  if (num_outputs_attr >= 0) {
    // Opset 18: ceil-sized chunks, the last one smaller.
    if (num_outputs_attr != num_outputs)
      return invalid_model("num_outputs = {}, but the node has {} outputs", num_outputs_attr,
                           num_outputs);
    int64_t chunk = (dim + num_outputs - 1) / num_outputs;
    int64_t last = dim - chunk * (num_outputs - 1);
    if (last < 0)
      return invalid_model("cannot split a dim of size {} into {} outputs of size {}", dim,
                           num_outputs, chunk);
    std::fill(sizes.begin(), sizes.end(), chunk);
    sizes.back() = last;
    return sizes;
  }
  if (dim % num_outputs != 0)
    return invalid_model(
        "cannot split a dim of size {} into {} equal parts (give 'split' or 'num_outputs')", dim,
        num_outputs);
  std::fill(sizes.begin(), sizes.end(), dim / num_outputs);
  return sizes;
}

Expected<SliceParams> slice_params(const Shape& in, const std::vector<int64_t>& starts,
                                   const std::vector<int64_t>& ends,
                                   const std::optional<std::vector<int64_t>>& axes,
                                   const std::optional<std::vector<int64_t>>& steps) {
  auto rank = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size())
    return invalid_model("starts has {} entries, ends has {}", starts.size(), ends.size());
  std::vector<int64_t> ax;
  if (axes) {
    if (axes->size() != starts.size())
      return invalid_model("axes has {} entries, starts has {}", axes->size(), starts.size());
    ASSIGN_OR_RETURN(ax, normalize_axes(*axes, rank, "axes"));
  } else {
    if (static_cast<int64_t>(starts.size()) > rank)
      return invalid_model("starts has {} entries, the input has rank {}", starts.size(), rank);
    for (size_t i = 0; i < starts.size(); ++i) ax.push_back(static_cast<int64_t>(i));
  }
  if (steps && steps->size() != starts.size())
    return invalid_model("steps has {} entries, starts has {}", steps->size(), starts.size());
  SliceParams p;
  p.start.assign(in.size(), 0);
  p.step.assign(in.size(), 1);
  p.out = in;
  for (size_t i = 0; i < ax.size(); ++i) {
    auto d = static_cast<size_t>(ax[i]);
    int64_t dim = in[d];
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) return invalid_model("steps[{}] is 0", i);
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;  // no overflow: dim >= 0
    if (end < 0) end += dim;
    __int128 len = 0;
    if (dim == 0) {
      start = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start) len = (static_cast<__int128>(end) - start - 1) / step + 1;
    } else {
      // As the spec text and onnxruntime: a start before the dim clamps to 0
      // (numpy, and onnx's Python reference, would select nothing).
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      if (start > end)
        len = (static_cast<__int128>(start) - end - 1) / -static_cast<__int128>(step) + 1;
    }
    p.start[d] = start;
    p.step[d] = step;
    p.out[d] = static_cast<int64_t>(len);
  }
  return p;
}

Expected<PadMode> pad_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  return invalid_model("mode '{}' is not one of constant, reflect, edge, wrap", mode);
}

Expected<PadParams> pad_params(const Shape& in, const std::vector<int64_t>& pads,
                               const std::optional<std::vector<int64_t>>& axes, PadMode mode) {
  auto rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> ax;
  if (axes) {
    ASSIGN_OR_RETURN(ax, normalize_axes(*axes, rank, "axes"));
  } else {
    for (int64_t d = 0; d < rank; ++d) ax.push_back(d);
  }
  if (pads.size() != 2 * ax.size())
    return invalid_model("pads has {} entries; {} axes need {}", pads.size(), ax.size(),
                         2 * ax.size());
  PadParams p;
  p.mode = mode;
  p.begin.assign(in.size(), 0);
  p.end.assign(in.size(), 0);
  p.out = in;
  for (size_t i = 0; i < ax.size(); ++i) {
    auto d = static_cast<size_t>(ax[i]);
    int64_t b = pads[i], e = pads[ax.size() + i];
    auto sum = checked_add(in[d], b);
    if (sum) sum = checked_add(*sum, e);
    if (!sum || *sum < 0)
      return invalid_model("pads {} and {} on dim {} of size {} give an invalid size", b, e, d,
                           in[d]);
    // Non-constant modes read the cropped input: it must not be empty.
    int64_t window = in[d] + std::min<int64_t>(b, 0) + std::min<int64_t>(e, 0);
    if (mode != PadMode::kConstant && window <= 0 && (b > 0 || e > 0))
      return invalid_model("cannot pad dim {} in a non-constant mode: it has no elements", d);
    p.begin[d] = b;
    p.end[d] = e;
    p.out[d] = *sum;
  }
  return p;
}

std::pair<int64_t, int64_t> shape_range(int64_t rank, int64_t start, std::optional<int64_t> end) {
  auto fix = [rank](int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t s = fix(start);
  int64_t e = end ? fix(*end) : rank;
  return {s, std::max(s, e)};
}

}  // namespace graphc::ir::dm
