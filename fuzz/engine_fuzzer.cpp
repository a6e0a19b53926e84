// Engine file bytes -> parse_engine (header, section table, checksums,
// manifest, validate_manifest) -> executable_from_engine for sm_90 and sm_80:
// what `graphc run` does before touching the driver. Checksums stop almost
// every mutation at the first check, so each input is tried twice: as is, and
// with every section checksum and the header checksum recomputed, which lets
// mutations of the manifest and of the section table reach the validator.
// Each input that parses is also read back through EngineFile (the streaming
// reader `graphc run` uses: everything before the weights in memory, the
// weights in chunks from a memfd) and validated once more with its weights
// moved above 4 GiB (section length, weights_bytes and WEIGHTS tensor offsets
// + 2^32), so the validator's 64-bit arithmetic sees fuzzed manifests too.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "driver/engine_build.h"
#include "engine_format/engine_file.h"
#include "engine_format/validate.h"
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

// The streaming reader on the same bytes: it must agree with parse_engine.
void check_file(std::string_view bytes, bool parsed) {
  int fd = memfd_create("engine", MFD_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size())) {
    auto file = engine::EngineFile::open("/proc/self/fd/" + std::to_string(fd));
    bool ok = file.ok() && (*file)->for_each_weights_chunk(4096, [](uint64_t, std::string_view) {
                             return Status::ok_status();
                           }).ok();
    if (ok != parsed) __builtin_trap();  // the two readers disagree
  }
  close(fd);
}

// validate_manifest with the weights section 2^32 bytes longer and every
// weight moved up by 2^32: accepted exactly when the original was.
void check_above_4gib(const engine::EngineContents& c) {
  constexpr uint64_t kShift = uint64_t{1} << 32;
  engine::Manifest m = c.manifest;
  m.set_weights_bytes(m.weights_bytes() + kShift);
  for (auto& t : *m.mutable_tensors())
    if (t.location() == engine::Tensor::WEIGHTS) t.set_offset(t.offset() + kShift);
  std::vector<engine::SectionInfo> sections;
  sections.push_back({engine::SectionKind::kManifest, "", 1});
  for (const auto& blob : c.code)
    sections.push_back({blob.kind == engine::CodeBlob::Kind::kPtx ? engine::SectionKind::kCodePtx
                                                                  : engine::SectionKind::kCodeCubin,
                        blob.arch, blob.bytes.size()});
  sections.push_back({engine::SectionKind::kWeights, "", c.weights.size() + kShift});
  if (!engine::validate_manifest(m, sections).ok()) __builtin_trap();
}

void check(std::string_view bytes) {
  auto contents = engine::parse_engine(bytes);
  check_file(bytes, contents.ok());
  if (!contents.ok()) return;
  check_above_4gib(*contents);
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
