// PageCacheWarmer: reads what is uploaded ahead of the upload, in order from
// the start, never more than its limit ahead, and stops when destroyed.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/weights_upload.h"

using namespace graphc;
using graphc::runtime::PageCacheWarmer;

namespace {

// Records the spans read; reads take a little time, as a disk's do.
struct Recorder {
  std::mutex mu;
  std::vector<std::pair<uint64_t, size_t>> reads;
  uint64_t end() {
    std::lock_guard<std::mutex> lock(mu);
    return reads.empty() ? 0 : reads.back().first + reads.back().second;
  }
};

// Waits until `pred` holds or two seconds pass.
template <typename Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 2000 && !pred(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return pred();
}

}  // namespace

TEST_CASE("the page cache warmer reads ahead of the upload, within its limit", "[runtime]") {
  constexpr uint64_t MiB = uint64_t{1} << 20;
  const uint64_t bytes = 100 * MiB + 12345, ahead = 24 * MiB;
  Recorder rec;
  auto read = [&](uint64_t offset, char* dst, size_t n) -> Status {
    dst[0] = 1;
    dst[n - 1] = 1;  // the buffer holds n bytes
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::lock_guard<std::mutex> lock(rec.mu);
    rec.reads.emplace_back(offset, n);
    return Status::ok_status();
  };
  {
    PageCacheWarmer warmer(bytes, ahead, read);
    // With nothing uploaded it reads up to its limit, then waits.
    REQUIRE(eventually([&] { return rec.end() >= ahead; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(rec.end() >= ahead);
    CHECK(rec.end() < ahead + 8 * MiB);
    // The upload moves on: so does the warmer, to the end and no further.
    warmer.advance(90 * MiB);
    REQUIRE(eventually([&] { return rec.end() == bytes; }));
  }
  // In order, contiguous, from 0.
  uint64_t at = 0;
  for (const auto& [offset, n] : rec.reads) {
    CHECK(offset == at);
    at = offset + n;
  }
  CHECK(at == bytes);
}

TEST_CASE("the page cache warmer stops when destroyed and on a failed read", "[runtime]") {
  constexpr uint64_t MiB = uint64_t{1} << 20;
  Recorder rec;
  auto slow = [&](uint64_t offset, char*, size_t n) -> Status {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> lock(rec.mu);
    rec.reads.emplace_back(offset, n);
    return Status::ok_status();
  };
  const auto start = std::chrono::steady_clock::now();
  { PageCacheWarmer warmer(uint64_t{1} << 40, uint64_t{1} << 40, slow); }  // 1 TiB: never done
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  CHECK(rec.end() < 64 * MiB);

  int calls = 0;
  auto failing = [&](uint64_t, char*, size_t) -> Status {
    ++calls;
    return io_error("the disk is gone");
  };
  {
    PageCacheWarmer warmer(64 * MiB, 64 * MiB, failing);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(calls == 1);  // the upload reports the error when it reads the same bytes
}
