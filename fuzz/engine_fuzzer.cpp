// Engine file bytes -> parse_engine (header, section table, checksums,
// manifest, validate_manifest) -> executable_from_engine for sm_90 and sm_80:
// what `graphc run` does before touching the driver. Checksums stop almost
// every mutation at the first check, so each input is tried twice: as is, and
// with every section checksum and the header checksum recomputed, which lets
// mutations of the manifest and of the section table reach the validator.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "driver/engine_build.h"
#include "engine_format/engine_file.h"
#include "runtime/engine_loader.h"

using namespace graphc;

namespace {

// Layout from engine_format/engine_file.cpp (docs/engine-format.md).
constexpr size_t kOffSectionCount = 68;
constexpr size_t kEntCrc = 4, kEntOffset = 24, kEntLength = 32;

uint64_t load_le(const std::string& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

void store_u32(std::string& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>(v >> (8 * i));
}

// Recomputes every in-range section checksum, then the header's.
std::string reseal(std::string b) {
  if (b.size() < engine::kHeaderSize) return b;
  uint64_t count = load_le(b, kOffSectionCount, 4);
  if (count > engine::kMaxSections ||
      b.size() < engine::kHeaderSize + count * engine::kSectionEntrySize)
    return b;
  for (uint64_t i = 0; i < count; ++i) {
    size_t at = engine::kHeaderSize + i * engine::kSectionEntrySize;
    uint64_t offset = load_le(b, at + kEntOffset, 8), length = load_le(b, at + kEntLength, 8);
    if (offset > b.size() || length > b.size() - offset) continue;
    store_u32(b, at + kEntCrc,
              engine::detail::crc32_of(std::string_view(b).substr(offset, length)));
  }
  engine::detail::reseal_header(b);
  return b;
}

void check(std::string_view bytes) {
  auto contents = engine::parse_engine(bytes);
  if (!contents.ok()) return;
  for (int sm : {90, 80}) (void)runtime::executable_from_engine(*contents, sm);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  check(bytes);
  std::string sealed = reseal(bytes);
  if (sealed != bytes) check(sealed);
  return 0;
}
