// Slice offsets for kernels that work on groups of elements selected by a
// dim mask (Reduce*, MeanVarianceNormalization).
#pragma once

#include <cstdint>
#include <vector>

#include "reference/kernels.h"

namespace graphc::reference {

// Flat offsets sum(idx[d] * strides[d]) for every multi-index idx of `sub`,
// in row-major order.
inline std::vector<int64_t> offsets_of(const ir::Shape& sub, const std::vector<int64_t>& strides) {
  std::vector<int64_t> out(static_cast<size_t>(ir::shape_numel(sub)));
  for (size_t f = 0; f < out.size(); ++f) {
    auto rest = static_cast<int64_t>(f);
    int64_t off = 0;
    for (size_t d = sub.size(); d-- > 0;) {
      off += (rest % sub[d]) * strides[d];
      rest /= sub[d];
    }
    out[f] = off;
  }
  return out;
}

// Element `base[o] + slice[j]` is the j-th member of group o. Groups run in
// row-major order over the dims not in `mask` (the reduction's output order);
// a group holds the elements over the dims in `mask`.
struct Slices {
  std::vector<int64_t> base;
  std::vector<int64_t> slice;
};

inline Slices slices_for(const ir::Shape& in, const std::vector<bool>& mask) {
  auto strides = strides_of(in);
  ir::Shape kept = in, reduced = in;
  for (size_t d = 0; d < in.size(); ++d) (mask[d] ? kept : reduced)[d] = 1;
  return {offsets_of(kept, strides), offsets_of(reduced, strides)};
}

}  // namespace graphc::reference
