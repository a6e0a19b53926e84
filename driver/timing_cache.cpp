#include "driver/timing_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "engine_format/engine_file.h"
#include "engine_format/le_bytes.h"
#include "engine_format/validate.h"

namespace graphc::driver {

namespace {

constexpr std::string_view kMagic = "GRAPHCTC";
// magic, version, entry count, payload bytes, CRC-32.
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 4;
constexpr size_t kCrcOffset = kHeaderBytes - 4;
constexpr size_t kMaxNameBytes = 256;
constexpr size_t kMaxConfigBytes = 4096;

// CRC-32 of the file with its CRC field left out.
uint32_t file_crc(std::string_view bytes) {
  std::string covered(bytes.substr(0, kCrcOffset));
  covered.append(bytes.substr(kHeaderBytes));
  return engine::detail::crc32_of(covered);
}

}  // namespace

Expected<TimingCache> TimingCache::parse(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes || bytes.substr(0, kMagic.size()) != kMagic)
    return invalid_argument("not a graphc timing cache (no GRAPHCTC header)");
  if (bytes.size() > kMaxFileBytes)
    return invalid_argument("{} bytes exceed the {}-byte limit", bytes.size(), kMaxFileBytes);
  engine::LeReader r(bytes.substr(kMagic.size()));
  const auto version = r.get<uint32_t>();
  if (version != kVersion)
    return invalid_argument("timing cache version {}, this graphc reads {}", version, kVersion);
  const auto count = r.get<uint32_t>();
  const auto payload = r.get<uint64_t>();
  const auto crc = r.get<uint32_t>();
  if (payload != bytes.size() - kHeaderBytes)
    return invalid_argument(
        "truncated or padded: the header says {} payload bytes, the file has {}", payload,
        bytes.size() - kHeaderBytes);
  if (crc != file_crc(bytes)) return invalid_argument("checksum mismatch (the file is damaged)");
  if (count > kMaxEntries)
    return invalid_argument("{} entries exceed the limit of {}", count, kMaxEntries);
  TimingCache cache;
  engine::LeReader e(bytes.substr(kHeaderBytes));
  for (uint32_t i = 0; i < count; ++i) {
    TimingKey key;
    TimingValue value;
    key.device = e.get_bytes(kMaxNameBytes);
    key.compute_capability = e.get<uint32_t>();
    key.library = e.get_bytes(kMaxNameBytes);
    key.library_version = e.get<uint32_t>();
    key.op = e.get_bytes(kMaxNameBytes);
    key.params = e.get_bytes(engine::kMaxLibraryParamsBytes);
    key.workspace_limit = e.get<uint64_t>();
    value.algorithm = e.get<int64_t>();
    value.config = e.get_bytes(kMaxConfigBytes);
    value.ms = e.get<double>();
    if (e.failed()) return invalid_argument("entry {} is truncated or a field is too long", i);
    if (!std::isfinite(value.ms) || value.ms <= 0)
      return invalid_argument("entry {}: time {} ms", i, value.ms);
    if (!cache.entries_.emplace(std::move(key), std::move(value)).second)
      return invalid_argument("entry {} repeats a key", i);
  }
  if (e.remaining() != 0) return invalid_argument("{} bytes after the last entry", e.remaining());
  return cache;
}

std::string TimingCache::serialize() const {
  engine::LeWriter payload;
  for (const auto& [key, value] : entries_) {
    payload.put_bytes(key.device);
    payload.put<uint32_t>(key.compute_capability);
    payload.put_bytes(key.library);
    payload.put<uint32_t>(key.library_version);
    payload.put_bytes(key.op);
    payload.put_bytes(key.params);
    payload.put<uint64_t>(key.workspace_limit);
    payload.put<int64_t>(value.algorithm);
    payload.put_bytes(value.config);
    payload.put<double>(value.ms);
  }
  engine::LeWriter w;
  w.out = std::string(kMagic);
  w.put<uint32_t>(kVersion);
  w.put<uint32_t>(static_cast<uint32_t>(entries_.size()));
  w.put<uint64_t>(payload.out.size());
  w.put<uint32_t>(0);  // the CRC, filled in below
  w.out += payload.out;
  engine::LeWriter crc;
  crc.put<uint32_t>(file_crc(w.out));
  w.out.replace(kCrcOffset, 4, crc.out);
  return std::move(w.out);
}

const TimingValue* TimingCache::find(const TimingKey& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

const std::pair<const TimingKey, TimingValue>* TimingCache::find_for_targets(
    std::string_view library, std::string_view op, std::string_view params,
    uint64_t workspace_limit, const std::vector<uint32_t>& ccs) const {
  const std::pair<const TimingKey, TimingValue>* best = nullptr;
  auto rank = [&](const TimingKey& k) {
    // Higher is better: capability, then library version; then the smaller name.
    return std::pair{k.compute_capability, k.library_version};
  };
  for (const auto& entry : entries_) {
    const TimingKey& k = entry.first;
    if (k.library != library || k.op != op || k.params != params ||
        k.workspace_limit != workspace_limit)
      continue;
    if (std::find(ccs.begin(), ccs.end(), k.compute_capability) == ccs.end()) continue;
    // The map is ordered by device name first, so ties keep the first name.
    if (!best || rank(k) > rank(best->first)) best = &entry;
  }
  return best;
}

void TimingCache::put(const TimingKey& key, const TimingValue& value) { entries_[key] = value; }

LoadedTimingCache load_timing_cache(const std::string& path) {
  LoadedTimingCache out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;
  out.existed = true;
  std::ifstream in(path, std::ios::binary);
  std::string bytes;
  if (in) {
    // Read at most one byte past the limit, so a huge file is refused cheaply.
    bytes.resize(TimingCache::kMaxFileBytes + 1);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<size_t>(in.gcount()));
  }
  if (!in && !in.eof()) {
    out.warning = fmt::format("timing cache '{}' could not be read; ignoring it", path);
    return out;
  }
  auto parsed = TimingCache::parse(bytes);
  if (!parsed.ok()) {
    out.warning = fmt::format("timing cache '{}' is not usable ({}); ignoring it", path,
                              parsed.status().message());
    return out;
  }
  out.cache = std::move(*parsed);
  return out;
}

}  // namespace graphc::driver
