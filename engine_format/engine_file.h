// The engine file: a fixed header, a section table and section payloads
// (manifest, PTX/CUBIN per architecture, weights). The layout is in
// docs/engine-format.md. Engine files are untrusted input: parse_engine
// checks every byte it relies on and returns a Status, never crashes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine_format/manifest.pb.h"
#include "support/status.h"

namespace graphc::engine {

// This reader/writer's format version. Readers refuse files whose
// min_reader_version is above it. Version 2 added per-kernel code modules
// (Kernel.module, CodeModule.module) and copy kernels; version 3 kernel
// parameter blocks (Kernel.params: run-time sizes passed by value, which a
// version-2 reader would not pass). The writer stamps a file with the oldest
// version that can run it (2 unless a kernel has parameters), so engines that
// need nothing new stay readable by older graphc and byte-identical; this
// reader still reads version 1 files (one module per architecture). Version 4
// added shape ranges (Manifest.shape_range and the size fields that index
// it), stamped only on engines that serve a range. Version 5 added the refit
// record (Manifest.refit), which older readers skip: it raises
// format_version only, never min_reader_version. Version 6 added loops
// (Kernel.loop: a control kernel and the body after it), stamped only on
// engines that have one, and a kernel's preferred library call
// (Kernel.preferred_call: cuDNN SDPA planned per shape over a range), which
// older readers skip, running the kernel: it raises format_version only.
inline constexpr uint32_t kFormatVersion = 6;
inline constexpr uint32_t kFormatVersionLoop = 6;
inline constexpr uint32_t kFormatVersionPreferredCall = 6;
inline constexpr uint32_t kFormatVersionRefit = 5;
inline constexpr uint32_t kFormatVersionShapeRange = 4;
inline constexpr uint32_t kFormatVersionKernelParams = 3;
inline constexpr uint32_t kFormatVersionBase = 2;

inline constexpr char kMagic[8] = {'G', 'R', 'A', 'P', 'H', 'C', 'E', 'N'};
inline constexpr size_t kHeaderSize = 80;
inline constexpr size_t kProducerFieldSize = 48;  // NUL-padded, at least one NUL
inline constexpr size_t kSectionEntrySize = 40;
inline constexpr size_t kArchFieldSize = 16;  // NUL-padded, at least one NUL
inline constexpr size_t kSectionAlign = 8;
inline constexpr size_t kWeightsAlign = 256;
inline constexpr uint32_t kMaxSections = 65536;  // per-kernel modules x archs x (PTX, CUBIN)
inline constexpr uint64_t kMaxManifestBytes = 256ull << 20;

enum class SectionKind : uint32_t {
  kManifest = 1,
  kCodePtx = 2,
  kCodeCubin = 3,
  kWeights = 4,
};

struct CodeBlob {
  enum class Kind { kPtx, kCubin };
  std::string arch;  // "sm_90"
  Kind kind = Kind::kPtx;
  std::string bytes;
  // The code module it belongs to. The reader fills it from the manifest's
  // CodeModule entries; the writer refuses contents where the two disagree.
  int32_t module = 0;
};

// What an engine file holds. Sections are laid out in a fixed order:
// section 0 is the manifest, sections 1..N are `code` in order, and the last
// section is the weights; CodeModule section indices refer to that order
// (see code_section_index).
struct EngineContents {
  Manifest manifest;
  std::vector<CodeBlob> code;
  std::string weights;
};

// Section table index that code[i] gets in the file.
inline int32_t code_section_index(size_t code_index) {
  return static_cast<int32_t>(code_index) + 1;
}

// The fixed header fields, readable even from files this reader refuses
// (for `graphc inspect`).
struct EngineHeader {
  uint32_t format_version = 0;
  uint32_t min_reader_version = 0;
  std::string producer;
  uint32_t flags = 0;
  uint32_t section_count = 0;
};

// Checks magic, versions and the header checksum (which covers the section
// table); a newer file is an error here.
Expected<EngineHeader> read_engine_header(std::string_view bytes);
// The same from a file, reading only the header and section table.
Expected<EngineHeader> read_engine_file_header(const std::string& path);

// Validates the contents (the same checks the reader makes) and lays them out.
// Deterministic: the same contents give byte-identical output.
Expected<std::string> serialize_engine(const EngineContents& contents);

// serialize_engine, then a temporary file in the same folder renamed over
// `path`: readers see the old file or the new one, never half of one, and
// nothing is left behind on failure.
Status write_engine_file(const std::string& path, const EngineContents& contents);

// Parses and validates everything: header, checksums, section layout, the
// manifest and its cross-references to sections, arena and weights.
Expected<EngineContents> parse_engine(std::string_view bytes);
// EngineFile::open, then the weights read into memory and checksummed.
Expected<EngineContents> read_engine_file(const std::string& path);

// Weights streamed into an engine file instead of held in EngineContents:
// `fill` writes bytes [offset, offset + n) of the section to `dst`; it is
// called in order, in chunks of at most kWeightsChunk bytes.
inline constexpr size_t kWeightsChunk = size_t{16} << 20;
struct WeightsSource {
  uint64_t bytes = 0;
  std::function<Status(uint64_t offset, char* dst, size_t n)> fill;
};

// write_engine_file with the weights from `weights` (contents.weights must be
// empty): one chunk in memory at a time, all-zero chunks left as holes of a
// sparse file. The bytes are those serialize_engine gives for the same weights.
Status write_engine_file(const std::string& path, const EngineContents& contents,
                         const WeightsSource& weights);

// An engine file opened for streaming: the header, section table, manifest and
// code are read and validated as parse_engine does (their checksums
// included), the weights stay in the file. Readers of the weights compute
// their CRC as they go (crc32_update, in order from 0) and check it with
// check_weights_crc before trusting them.
class EngineFile {
 public:
  static Expected<std::unique_ptr<EngineFile>> open(const std::string& path);
  ~EngineFile();
  EngineFile(const EngineFile&) = delete;
  EngineFile& operator=(const EngineFile&) = delete;

  const std::string& path() const { return path_; }
  EngineContents& contents() { return contents_; }  // weights empty
  const EngineContents& contents() const { return contents_; }
  uint64_t weights_bytes() const { return weights_bytes_; }
  uint64_t weights_offset() const { return weights_offset_; }  // in the file
  // Weights bytes [offset, offset + n), read with pread (thread-safe).
  Status read_weights(uint64_t offset, char* dst, size_t n) const;
  // The weights section's checksum mismatch error unless `crc` matches.
  Status check_weights_crc(uint32_t crc) const;
  // Reads the weights in order in chunks of `chunk_bytes`, hands each to
  // `sink` and checks the CRC at the end (so a sink must not act on the bytes
  // irrevocably before this returns OK).
  Status for_each_weights_chunk(
      size_t chunk_bytes, const std::function<Status(uint64_t, std::string_view)>& sink) const;

 private:
  EngineFile() = default;
  std::string path_;
  int fd_ = -1;
  EngineContents contents_;
  uint64_t weights_offset_ = 0, weights_bytes_ = 0;
  uint32_t weights_crc_ = 0;
};

// zlib's CRC-32 continued over `bytes` (crc 0 to start).
uint32_t crc32_update(uint32_t crc, std::string_view bytes);

// The code of `module` to load on a device of compute capability `device_sm`
// (90 for sm_90): CUBIN built for exactly that SM, else the newest PTX not
// newer than the device (the driver JIT-compiles it), else an error naming
// the archs.
Expected<const CodeBlob*> select_code(const EngineContents& contents, int device_sm,
                                      int32_t module = 0);

// Number of code modules (1 + the largest CodeModule.module; 0 without code).
// In a validated manifest the modules are exactly 0..N-1.
int32_t module_count(const Manifest& manifest);

// "sm_90" -> 90; nullopt-like -1 for anything else.
int parse_sm_arch(std::string_view arch);

// Bytes per element of an ONNX/ir dtype number; 0 for unknown ones.
size_t manifest_dtype_size(int32_t dtype);

namespace detail {
// Recomputes the header CRC in place. For tests that craft hostile files with
// valid checksums; a no-op on buffers shorter than the header and table.
void reseal_header(std::string& bytes);
uint32_t crc32_of(std::string_view bytes);
}  // namespace detail

}  // namespace graphc::engine
