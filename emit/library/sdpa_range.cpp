#include "emit/library/sdpa_range.h"

#include <fmt/format.h>

#include <map>
#include <string>

#include "emit/cuda/attention_range.h"
#include "emit/cuda/kernel_sizes.h"
#include "ir/attention_params.h"

namespace graphc::emit {

Expected<SdpaRangeFields> sdpa_over_range(const ir::Graph& g, const ir::Node& n,
                                          const target::CudnnSdpaCall& call,
                                          const ir::SymbolicShapes& range) {
  ASSIGN_OR_RETURN(const ir::AttentionParams a, ir::attention_params_of(g, n));
  KernelSizes sizes(&range);
  // Fixed head dims, a fixed head ratio, a mask that broadcasts alike at every shape.
  ASSIGN_OR_RETURN(const AttentionRangeSizes s,
                   attention_range_sizes(g, n, a, sizes, /*mask_may_be_short=*/false));
  if (a.has_past || !(s.past_len == ir::DimExpr(0)))
    return unsupported("attention '{}': a KV cache", n.name);
  // cuDNN takes the mask as a bias with one value per key: at every shape.
  if (a.has_mask && (s.mask.empty() || !(s.mask.back() == s.total_len)))
    return unsupported("attention '{}': the mask is {} over the shape range, not one value per "
                       "key at every shape",
                       n.name, sizes.shape_string(s.mask));
  for (const ir::DimExpr* d : {&s.batch, &s.q_heads, &s.kv_heads, &s.q_len, &s.total_len}) {
    ASSIGN_OR_RETURN(const int64_t least, sizes.lower_bound(*d));
    if (least < 1)
      return unsupported("attention '{}': {} reaches {} over the shape range", n.name,
                         d->to_string(), least);
  }
  // The flash kernel's strides are the ones the static call has (packed BHSD
  // or BSHD, the mask contiguous over its own dims and 0 along dims of 1).
  const RangeParams rp = flash_range_params(s, a);
  std::map<std::string, ir::DimExpr> by_name(rp.int64s.begin(), rp.int64s.end());
  std::array<ir::DimExpr, engine::kSdpaRangeFields> e = {
      s.batch, s.q_heads, s.kv_heads, s.q_len, s.total_len};
  size_t at = 5;
  for (const char* t : {"q", "k", "v", "o", "m"}) {
    const bool mask = t[0] == 'm';
    for (const char* d : {"b", "h", mask ? "q" : "s"})
      e[at++] = by_name.at(fmt::format("{}_stride_{}", t, d));
    e[at++] = mask ? by_name.at("m_stride_k") : ir::DimExpr(1);
  }
  if (!call.params.has_bias)
    for (size_t i = 21; i < 25; ++i) e[i] = 0;
  // Fixed fields must be what the static call has; the rest follow the shape.
  const auto built = engine::sdpa_range_fields(call.params);
  SdpaRangeFields out;
  for (size_t i = 0; i < e.size(); ++i) {
    if (auto c = e[i].constant()) {
      if (*c != built[i])
        return internal_error("attention '{}': sdpa {} is {} over the shape range, {} as built",
                              n.name, engine::sdpa_range_field_name(static_cast<int>(i)), *c,
                              built[i]);
      continue;
    }
    ASSIGN_OR_RETURN(const int64_t most, sizes.upper_bound(e[i]));
    (void)most;  // bounded: the plan can intern it as a size program
    out[i] = e[i];
  }
  return out;
}

}  // namespace graphc::emit
