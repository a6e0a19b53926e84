// Parameter resolution shared by the shape rules (ir/shape_rules_*.cpp) and
// the reference kernels (reference/kernels_*.cpp) of the shape and
// data-movement ops: one place decides what Reshape's 0/-1 mean, how Slice
// clamps, how Split divides and what Pad's pads/axes become, so the shape a
// rule declares and the data a kernel writes cannot disagree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::ir::dm {

// Normalizes axes against `rank` ([-rank, rank) -> [0, rank)); rejects
// out-of-range and repeated axes, naming `what` ("axes", "perm" ...).
Expected<std::vector<int64_t>> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                              const char* what);

// Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred.
Expected<Shape> reshape_shape(const Shape& in, const std::vector<int64_t>& target, bool allowzero);

// Squeeze: axes to remove (all 1-dims when `axes` is empty/absent).
Expected<Shape> squeeze_shape(const Shape& in, const std::optional<std::vector<int64_t>>& axes);

// Unsqueeze: axes index the output (rank + axes.size()).
Expected<Shape> unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes);

// Transpose: the permutation (default: reversed dims), validated.
Expected<std::vector<int64_t>> transpose_perm(const std::vector<int64_t>& perm_attr, bool has_perm,
                                              int64_t rank);

// Split: the size of each of `num_outputs` chunks along a dim of size `dim`.
// `split` is the split input when present; `num_outputs_attr` the opset-18
// attribute (uneven last chunk) when present (-1 when absent).
Expected<std::vector<int64_t>> split_sizes(int64_t dim,
                                           const std::optional<std::vector<int64_t>>& split,
                                           int64_t num_outputs_attr, int64_t num_outputs);

// Slice: per input dim, the first element, the step and the output length.
struct SliceParams {
  std::vector<int64_t> start;  // per dim
  std::vector<int64_t> step;   // per dim (1 for dims not sliced)
  Shape out;
};
Expected<SliceParams> slice_params(const Shape& in, const std::vector<int64_t>& starts,
                                   const std::vector<int64_t>& ends,
                                   const std::optional<std::vector<int64_t>>& axes,
                                   const std::optional<std::vector<int64_t>>& steps);

// Pad: per dim, the elements added before/after (negative: cropped).
enum class PadMode { kConstant, kReflect, kEdge, kWrap };
struct PadParams {
  PadMode mode = PadMode::kConstant;
  std::vector<int64_t> begin, end;  // per dim
  Shape out;
};
Expected<PadMode> pad_mode(const std::string& mode);
Expected<PadParams> pad_params(const Shape& in, const std::vector<int64_t>& pads,
                               const std::optional<std::vector<int64_t>>& axes, PadMode mode);

// Shape (opset 15 start/end): the [start, end) range of dims to report.
std::pair<int64_t, int64_t> shape_range(int64_t rank, int64_t start, std::optional<int64_t> end);

}  // namespace graphc::ir::dm
