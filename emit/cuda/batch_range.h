// Kernels that take the batch at run time: pooling and the direct
// convolutions over a shape range (docs/dynamic-shapes.md). Their loops run
// over a flat index whose outermost coordinate is the image, so the batch
// enters only the loop bound and the grid; every other size stays the opt
// shape's literal and the kernel body is the static one. Over a range where
// anything but the batch varies (spatial dims, channels) they are refused,
// naming the tensor.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "emit/cuda/anchor_frame.h"
#include "ir/dim_expr.h"

namespace graphc::emit {

// The run-time batch of frame `f` (f.sizes set by use_run_time_sizes): the
// leading dim of anchor inputs `batched` and of every output, one expression
// for all, with every other dim of those and every other input fixed over the
// range. nullopt for a static kernel (no f.sizes). `what` names the family.
Expected<std::optional<ir::DimExpr>> run_time_batch(const AnchorFrame& f,
                                                    const std::vector<size_t>& batched,
                                                    const std::string& what);

// A count of `per_image` items per image: its literal ("4096LL") for a
// static kernel, else the size-block local of batch x per_image.
std::string batch_count_code(const AnchorFrame& f, const std::optional<ir::DimExpr>& batch,
                             int64_t per_image);

// Grid-stride launch of `per_image` items an image over `threads`-thread
// blocks, at most 2^20 blocks: grid.x at the most the range reaches (or the
// static count), and its expression over the range.
Status batch_grid(const AnchorFrame& f, const std::optional<ir::DimExpr>& batch, int64_t per_image,
                  int64_t static_items, int64_t per_block, LaunchShape& launch);

// The most the batch reaches over the range (the static count without one).
Expected<int64_t> most_batch(const AnchorFrame& f, const std::optional<ir::DimExpr>& batch,
                             int64_t static_batch);

}  // namespace graphc::emit
