// The timing cache (`graphc build --timing-cache FILE`, as trtexec's
// --timingCacheFile): measured library algorithms keyed by what they were
// measured on and for, so a rebuild skips the timing — and a machine without a
// GPU can build tuned engines from a cache made on the GPU machine.
//
// File (little-endian): "GRAPHCTC", u32 version, u32 entry count, u64 payload
// bytes, u32 CRC-32 of everything else (header and payload), then the entries,
// sorted by key: str device, u32 compute capability, str library, u32 library
// version, str op, str params, u64 workspace limit, i64 algorithm, str config,
// f64 median ms (str: u32 length + bytes). See docs/engine-format.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace graphc::driver {

struct TimingKey {
  std::string device;           // "NVIDIA H100 80GB HBM3"
  uint32_t compute_capability;  // 90
  std::string library;          // "cublasLt"
  uint32_t library_version;     // 130100
  std::string op;               // "matmul"
  std::string params;           // the LibraryCall's descriptor bytes
  uint64_t workspace_limit;     // the LibraryCall's workspace
  auto operator<=>(const TimingKey&) const = default;
};

struct TimingValue {
  int64_t algorithm = -1;  // LibraryCall.algorithm
  std::string config;      // LibraryCall.algorithm_config
  double ms = 0;           // median time measured
  bool operator==(const TimingValue&) const = default;
};

class TimingCache {
 public:
  static constexpr uint32_t kVersion = 1;
  static constexpr size_t kMaxFileBytes = 64u << 20;
  static constexpr size_t kMaxEntries = 1u << 20;

  // Any damage (foreign magic, other version, checksum, truncation, a field
  // out of its limits) is an error saying what.
  static Expected<TimingCache> parse(std::string_view bytes);
  // Deterministic: the same entries give the same bytes.
  std::string serialize() const;

  const TimingValue* find(const TimingKey& key) const;
  // For a build without a GPU: the entry for this call measured on a device
  // whose compute capability is in `ccs`, whatever the device name and library
  // version; the newest capability in `ccs` first, then the newest library,
  // then the device name. Null when none.
  const std::pair<const TimingKey, TimingValue>* find_for_targets(
      std::string_view library, std::string_view op, std::string_view params,
      uint64_t workspace_limit, const std::vector<uint32_t>& ccs) const;
  void put(const TimingKey& key, const TimingValue& value);  // replaces
  size_t size() const { return entries_.size(); }

 private:
  std::map<TimingKey, TimingValue> entries_;
};

// Reads the cache at `path`. A missing file is an empty cache; an unreadable,
// damaged or foreign one is an empty cache plus `warning` (the build goes on
// and, when it has new timings, rewrites the file).
struct LoadedTimingCache {
  TimingCache cache;
  std::string warning;  // empty: loaded or absent
  bool existed = false;
};
LoadedTimingCache load_timing_cache(const std::string& path);

}  // namespace graphc::driver
