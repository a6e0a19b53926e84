// Uploading an engine's weights from its file at disk speed: read in large
// chunks into two pinned (page-locked) staging buffers and copied to the
// device on a stream of its own, so reading chunk i+1 overlaps the DMA of
// chunk i. No host copy of the weights outlives the upload; host memory is
// the two staging buffers.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>

#include "support/status.h"

namespace graphc::runtime {

struct DriverApi;

inline constexpr size_t kDefaultUploadChunkBytes = size_t{64} << 20;

// Fills `dst` with bytes [offset, offset + n) of what is uploaded; called in
// order from offset 0.
using ChunkReader = std::function<Status(uint64_t offset, char* dst, size_t n)>;

// Copies `bytes` bytes from `read` to device memory at `dst` in chunks of
// `chunk_bytes` through double-buffered pinned staging; returns once every
// copy is complete (or, on error, once none is in flight).
Status upload_streamed(const DriverApi& api, CUdeviceptr dst, uint64_t bytes,
                       const ChunkReader& read, size_t chunk_bytes = kDefaultUploadChunkBytes);

}  // namespace graphc::runtime
