#include "emit/cuda/batch_range.h"

#include <fmt/format.h>

#include <algorithm>

namespace graphc::emit {

Expected<std::optional<ir::DimExpr>> run_time_batch(const AnchorFrame& f,
                                                    const std::vector<size_t>& batched,
                                                    const std::string& what) {
  if (!f.sizes) return std::optional<ir::DimExpr>{};
  std::optional<ir::DimExpr> batch;
  auto refuse = [&](ir::ValueId v, const ir::SymShape& s) {
    return unsupported(
        "node '{}': {} take a run-time batch only (the leading dim), and '{}' is {} over the "
        "shape range",
        f.node_name, what, f.graph->value(v).name, f.sizes->shape_string(s));
  };
  auto check = [&](ir::ValueId v, bool leading) -> Status {
    const ir::SymShape s = f.sizes->shape(*f.graph, v);
    for (size_t d = leading ? 1 : 0; d < s.size(); ++d)
      if (!s[d].is_constant()) return refuse(v, s);
    if (!leading || s.empty()) return Status::ok_status();
    if (!batch) batch = s[0];
    if (s[0] != *batch) return refuse(v, s);
    return Status::ok_status();
  };
  for (size_t k = 0; k < f.num_inputs(); ++k)
    if (f.has_input(k))
      RETURN_IF_ERROR(check(f.anchor->inputs[k],
                            std::find(batched.begin(), batched.end(), k) != batched.end()));
  for (size_t k = 0; k < f.num_outputs(); ++k)
    if (f.has_output(k)) RETURN_IF_ERROR(check(f.anchor->outputs[k], true));
  if (batch && batch->is_constant()) batch.reset();  // nothing varies here after all
  return batch;
}

std::string batch_count_code(const AnchorFrame& f, const std::optional<ir::DimExpr>& batch,
                             int64_t per_image) {
  if (!batch) return fmt::format("{}LL", per_image);
  return f.sizes->code(*batch * ir::DimExpr(per_image));
}

Status batch_grid(const AnchorFrame& f, const std::optional<ir::DimExpr>& batch, int64_t per_image,
                  int64_t static_items, int64_t per_block, LaunchShape& launch) {
  constexpr int64_t kMaxBlocks = int64_t{1} << 20;
  if (!batch) {
    launch.grid[0] = std::clamp<int64_t>((static_items + per_block - 1) / per_block, 1, kMaxBlocks);
    return Status::ok_status();
  }
  const ir::DimExpr blocks = ir::DimExpr::max(
      ir::DimExpr(1),
      ir::DimExpr::min(ir::DimExpr::ceil_div(*batch * ir::DimExpr(per_image), ir::DimExpr(per_block)),
                       ir::DimExpr(kMaxBlocks)));
  ASSIGN_OR_RETURN(launch.grid[0], f.sizes->upper_bound(blocks));
  if (!blocks.is_constant()) launch.grid_x = blocks;
  return Status::ok_status();
}

Expected<int64_t> most_batch(const AnchorFrame& f, const std::optional<ir::DimExpr>& batch,
                             int64_t static_batch) {
  if (!batch) return static_batch;
  return f.sizes->upper_bound(*batch);
}

}  // namespace graphc::emit
