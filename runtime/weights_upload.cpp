#include "runtime/weights_upload.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>

#include "runtime/cuda_driver.h"

namespace graphc::runtime {

namespace {

// The stream, events and staging buffers, released in the right order on
// every path: the stream is drained before a pinned buffer it reads is freed.
struct Staging {
  const DriverApi& a;
  CUstream stream = nullptr;
  std::array<CUevent, 2> copied{};
  std::array<char*, 2> buffers{};
  explicit Staging(const DriverApi& api) : a(api) {}
  ~Staging() {
    if (stream) a.cuStreamSynchronize(stream);
    for (char* b : buffers)
      if (b) a.cuMemFreeHost(b);
    for (CUevent e : copied)
      if (e) a.cuEventDestroy(e);
    if (stream) a.cuStreamDestroy(stream);
  }
};

}  // namespace

Status upload_streamed(const DriverApi& a, CUdeviceptr dst, uint64_t bytes,
                       const ChunkReader& read, size_t chunk_bytes, UploadWaits* waits) {
  using Clock = std::chrono::steady_clock;
  const auto ms_between = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  if (bytes == 0) return Status::ok_status();
  const size_t chunk =
      static_cast<size_t>(std::min<uint64_t>(bytes, std::max<size_t>(chunk_bytes, 1)));
  Staging s(a);
  GRAPHC_CU(a, cuStreamCreate(&s.stream, CU_STREAM_NON_BLOCKING), "creating the upload stream");
  const int buffers = bytes > chunk ? 2 : 1;
  for (int i = 0; i < buffers; ++i) {
    void* p = nullptr;
    GRAPHC_CU(a, cuMemHostAlloc(&p, chunk, 0), "allocating pinned staging memory for the weights");
    s.buffers[static_cast<size_t>(i)] = static_cast<char*>(p);
    GRAPHC_CU(a, cuEventCreate(&s.copied[static_cast<size_t>(i)], CU_EVENT_DISABLE_TIMING),
              "creating an upload event");
  }
  uint64_t index = 0;
  for (uint64_t at = 0; at < bytes; at += chunk, ++index) {
    const size_t b = static_cast<size_t>(index % static_cast<uint64_t>(buffers));
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, bytes - at));
    // The buffer's previous copy must be done before it is refilled.
    const auto wait_start = Clock::now();
    if (index >= static_cast<uint64_t>(buffers))
      GRAPHC_CU(a, cuEventSynchronize(s.copied[b]), "waiting for a weights copy");
    const auto read_start = Clock::now();
    RETURN_IF_ERROR(read(at, s.buffers[b], n));
    if (waits) {
      waits->copy_ms += ms_between(wait_start, read_start);
      waits->read_ms += ms_between(read_start, Clock::now());
    }
    GRAPHC_CU(a, cuMemcpyHtoDAsync(dst + at, s.buffers[b], n, s.stream), "uploading the weights");
    GRAPHC_CU(a, cuEventRecord(s.copied[b], s.stream), "recording a weights copy");
  }
  GRAPHC_CU(a, cuStreamSynchronize(s.stream), "finishing the weights upload");
  return Status::ok_status();
}

PageCacheWarmer::PageCacheWarmer(uint64_t bytes, uint64_t max_ahead, ChunkReader read)
    : bytes_(bytes), max_ahead_(max_ahead), read_(std::move(read)) {
  thread_ = std::thread([this] { run(); });
}

PageCacheWarmer::~PageCacheWarmer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void PageCacheWarmer::run() {
  constexpr size_t kStep = size_t{8} << 20;
  std::unique_ptr<char[]> scratch(new char[kStep]);
  for (uint64_t at = 0; at < bytes_ && !stop_;) {
    if (at >= uploaded_.load(std::memory_order_relaxed) + max_ahead_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kStep, bytes_ - at));
    // A failed read is the upload's to report when it reads the same bytes.
    if (!read_(at, scratch.get(), n).ok()) return;
    at += n;
    if (at == bytes_)
      finished_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                         std::memory_order_release);
  }
}

std::optional<std::chrono::steady_clock::time_point> PageCacheWarmer::finished_at() const {
  const int64_t ns = finished_ns_.load(std::memory_order_acquire);
  if (ns == 0) return std::nullopt;
  return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(ns));
}

}  // namespace graphc::runtime
