// Uploading an engine's weights from its file at disk speed: read in large
// chunks into two pinned (page-locked) staging buffers and copied to the
// device on a stream of its own, so reading chunk i+1 overlaps the DMA of
// chunk i. No host copy of the weights outlives the upload; host memory is
// the two staging buffers.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <functional>
#include <thread>

#include "support/status.h"

namespace graphc::runtime {

struct DriverApi;

inline constexpr size_t kDefaultUploadChunkBytes = size_t{64} << 20;

// Fills `dst` with bytes [offset, offset + n) of what is uploaded; called in
// order from offset 0.
using ChunkReader = std::function<Status(uint64_t offset, char* dst, size_t n)>;

// Where an upload waited: inside `read` (on the disk, when the bytes are not
// in the page cache) or for a staging buffer's previous copy (on PCIe).
struct UploadWaits {
  double read_ms = 0, copy_ms = 0;
};

// Copies `bytes` bytes from `read` to device memory at `dst` in chunks of
// `chunk_bytes` through double-buffered pinned staging; returns once every
// copy is complete (or, on error, once none is in flight).
Status upload_streamed(const DriverApi& api, CUdeviceptr dst, uint64_t bytes,
                       const ChunkReader& read, size_t chunk_bytes = kDefaultUploadChunkBytes,
                       UploadWaits* waits = nullptr);

// Reads a span of a file ahead of its upload, on a thread of its own, from
// the moment the engine starts loading: a cold engine's weights then come off
// the disk while CUDA starts and the modules load, and the upload finds them
// in the page cache instead of waiting on each chunk. What it reads goes to a
// small scratch buffer (the page cache keeps the bytes, not this process), and
// it stays at most `max_ahead` bytes ahead of the upload (advance()), so an
// engine larger than memory does not evict its own first chunks.
class PageCacheWarmer {
 public:
  // read(offset, dst, n) reads bytes [offset, offset + n) of what is uploaded.
  PageCacheWarmer(uint64_t bytes, uint64_t max_ahead, ChunkReader read);
  ~PageCacheWarmer();  // stops and joins the thread
  PageCacheWarmer(const PageCacheWarmer&) = delete;
  PageCacheWarmer& operator=(const PageCacheWarmer&) = delete;
  // The upload has consumed everything before `offset`.
  void advance(uint64_t offset) { uploaded_.store(offset, std::memory_order_relaxed); }
  // When the thread read the last byte; nullopt while reading, or if it stopped early.
  std::optional<std::chrono::steady_clock::time_point> finished_at() const;

 private:
  void run();
  uint64_t bytes_, max_ahead_;
  ChunkReader read_;
  std::atomic<uint64_t> uploaded_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> finished_ns_{0};  // steady_clock's count at the end; 0: not there
  std::thread thread_;
};

}  // namespace graphc::runtime
