// The engine container: explicit little-endian serialization of the header and
// section table, CRC-32 checksums, and a reader that checks the layout before
// it trusts a single offset. Layout: docs/engine-format.md.
#include "engine_format/engine_file.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <fstream>
#include <new>
#include <optional>
#include <thread>

#include "engine_format/validate.h"

namespace graphc::engine {
namespace {

// Header field offsets (docs/engine-format.md).
constexpr size_t kOffFormatVersion = 8;
constexpr size_t kOffMinReader = 12;
constexpr size_t kOffProducer = 16;
constexpr size_t kOffFlags = 64;
constexpr size_t kOffSectionCount = 68;
constexpr size_t kOffHeaderCrc = 72;
constexpr size_t kOffReserved = 76;
// Section table entry field offsets.
constexpr size_t kEntKind = 0;
constexpr size_t kEntCrc = 4;
constexpr size_t kEntArch = 8;
constexpr size_t kEntOffset = 24;
constexpr size_t kEntLength = 32;
constexpr int kManifestRecursionLimit = 32;

uint32_t load_u32(std::string_view b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}
uint64_t load_u64(std::string_view b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}
void store_u32(std::string& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void store_u64(std::string& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t crc_update(uint32_t crc, std::string_view bytes) {
  // zlib takes 32-bit lengths; weights can be larger.
  while (!bytes.empty()) {
    size_t n = std::min<size_t>(bytes.size(), 1u << 30);
    crc = static_cast<uint32_t>(
        crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n)));
    bytes.remove_prefix(n);
  }
  return crc;
}

// The header CRC covers the header (less the CRC field) and the section table.
uint32_t header_crc(std::string_view b, uint32_t section_count) {
  uint32_t crc = crc_update(0, b.substr(0, kOffHeaderCrc));
  return crc_update(
      crc, b.substr(kOffReserved, kHeaderSize - kOffReserved + section_count * kSectionEntrySize));
}

// A NUL-padded fixed field: text up to the first NUL, at least one NUL, and
// only NULs after it (so every byte of the field is meaningful).
Expected<std::string> read_fixed_string(std::string_view field, const std::string& what) {
  size_t nul = field.find('\0');
  if (nul == std::string_view::npos) return invalid_engine("{} is not NUL-terminated", what);
  if (field.find_first_not_of('\0', nul) != std::string_view::npos) {
    return invalid_engine("{} has bytes after its terminating NUL", what);
  }
  for (char c : field.substr(0, nul)) {
    if (c < 0x20 || c > 0x7e) return invalid_engine("{} holds a non-printable byte", what);
  }
  return std::string(field.substr(0, nul));
}

Status write_fixed_string(std::string& b, size_t at, size_t field_size, std::string_view text,
                          const char* what) {
  if (text.size() >= field_size) {
    return invalid_argument("{} '{}' is longer than the {} bytes the file has room for", what, text,
                            field_size - 1);
  }
  for (char c : text) {
    if (c < 0x20 || c > 0x7e)
      return invalid_argument("{} '{}' holds a non-printable byte", what, text);
  }
  std::memcpy(b.data() + at, text.data(), text.size());
  return Status::ok_status();
}

size_t section_align(SectionKind kind) {
  return kind == SectionKind::kWeights ? kWeightsAlign : kSectionAlign;
}

bool known_kind(uint32_t kind) { return kind >= 1 && kind <= 4; }

bool is_code(SectionKind kind) {
  return kind == SectionKind::kCodePtx || kind == SectionKind::kCodeCubin;
}

// The fixed section order: manifest, code..., weights.
Status check_kind_order(size_t index, size_t count, SectionKind kind, std::string_view arch) {
  std::string name = section_kind_name(kind, arch);
  if (index == 0 && kind != SectionKind::kManifest) {
    return invalid_engine("section 0 is {}, but the manifest must come first", name);
  }
  if (index + 1 == count && kind != SectionKind::kWeights) {
    return invalid_engine("section {} is {}, but the weights must come last", index, name);
  }
  if (index != 0 && index + 1 != count && !is_code(kind)) {
    return invalid_engine("section {} is a second {} section; only code sections may repeat", index,
                          name);
  }
  return Status::ok_status();
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct TableEntry {
  SectionKind kind;
  std::string arch;
  uint64_t offset;
  uint64_t length;
  uint32_t crc;
};

// Reads the section table and checks that the sections tile the file exactly:
// each at the next aligned offset after the one before, zero padding between,
// nothing after the last. So every byte of the file is covered by a checksum
// or must be zero.
// `b` holds the file's first bytes: all of it, or (EngineFile) everything
// before the weights, which come last; `file_size` is the whole file's.
Expected<std::vector<TableEntry>> read_section_table(std::string_view b, uint64_t file_size,
                                                     uint32_t count) {
  std::vector<TableEntry> entries;
  uint64_t table_end = kHeaderSize + uint64_t{count} * kSectionEntrySize;
  uint64_t prev_end = table_end;
  for (uint32_t i = 0; i < count; ++i) {
    size_t at = kHeaderSize + size_t{i} * kSectionEntrySize;
    uint32_t raw_kind = load_u32(b, at + kEntKind);
    if (!known_kind(raw_kind)) return invalid_engine("section {} has unknown kind {}", i, raw_kind);
    TableEntry e{static_cast<SectionKind>(raw_kind), "", load_u64(b, at + kEntOffset),
                 load_u64(b, at + kEntLength), load_u32(b, at + kEntCrc)};
    ASSIGN_OR_RETURN(e.arch, read_fixed_string(b.substr(at + kEntArch, kArchFieldSize),
                                               fmt::format("section {} arch tag", i)));
    std::string name = fmt::format("section {} ({})", i, section_kind_name(e.kind, e.arch));
    RETURN_IF_ERROR(check_kind_order(i, count, e.kind, e.arch));
    if (is_code(e.kind) && parse_sm_arch(e.arch) < 0) {
      return invalid_engine("{}: arch tag '{}' is not of the form sm_NN", name, e.arch);
    }
    if (!is_code(e.kind) && !e.arch.empty())
      return invalid_engine("{}: has an arch tag '{}'", name, e.arch);
    uint64_t end = 0;
    if (__builtin_add_overflow(e.offset, e.length, &end)) {
      return invalid_engine("{}: offset {} + length {} overflows", name, e.offset, e.length);
    }
    if (end > file_size) {
      return invalid_engine("{}: bytes [{}, {}) run past the end of the {}-byte file", name,
                            e.offset, end, file_size);
    }
    if (i + 1 < count && end > b.size()) {  // only when `b` stops at the weights
      return invalid_engine("{}: bytes [{}, {}) run into the weights section at {}", name, e.offset,
                            end, b.size());
    }
    if (e.offset < table_end) {
      return invalid_engine("{}: offset {} overlaps the header and section table (which end at {})",
                            name, e.offset, table_end);
    }
    if (e.offset < prev_end) {
      return invalid_engine("{}: offset {} overlaps section {}, which ends at {}", name, e.offset,
                            i - 1, prev_end);
    }
    uint64_t expected = align_up(prev_end, section_align(e.kind));
    if (e.offset != expected) {
      return invalid_engine("{}: offset {} leaves a gap; the section must start at {}", name,
                            e.offset, expected);
    }
    for (uint64_t p = prev_end; p < e.offset; ++p) {
      if (b[p] != 0)
        return invalid_engine("padding byte at offset {} before {} is not zero", p, name);
    }
    if (is_code(e.kind) && e.length == 0) return invalid_engine("{}: is empty", name);
    if (e.kind == SectionKind::kManifest && e.length > kMaxManifestBytes) {
      return invalid_engine("{}: {} bytes exceed the manifest limit of {}", name, e.length,
                            kMaxManifestBytes);
    }
    prev_end = end;
    entries.push_back(std::move(e));
  }
  if (prev_end != file_size) {
    return invalid_engine("{} bytes after the last section, which ends at {}", file_size - prev_end,
                          prev_end);
  }
  return entries;
}

Expected<Manifest> parse_manifest(std::string_view bytes) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(static_cast<int>(bytes.size()));
  coded.SetRecursionLimit(kManifestRecursionLimit);
  Manifest manifest;
  if (!manifest.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return invalid_engine("the manifest is not a valid protobuf message");
  }
  return manifest;
}

std::string serialize_manifest(const Manifest& manifest) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    manifest.SerializeToCodedStream(&coded);
  }
  return out;
}

// The section table the contents will get, for validate_manifest.
std::vector<SectionInfo> planned_sections(const EngineContents& c, uint64_t manifest_length,
                                          uint64_t weights_length) {
  std::vector<SectionInfo> sections;
  sections.push_back({SectionKind::kManifest, "", manifest_length});
  for (const auto& blob : c.code) {
    auto kind = blob.kind == CodeBlob::Kind::kPtx ? SectionKind::kCodePtx : SectionKind::kCodeCubin;
    sections.push_back({kind, blob.arch, blob.bytes.size()});
  }
  sections.push_back({SectionKind::kWeights, "", weights_length});
  return sections;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

namespace detail {
uint32_t crc32_of(std::string_view bytes) { return crc32_update(0, bytes); }

void reseal_header(std::string& bytes) {
  if (bytes.size() < kHeaderSize) return;
  uint32_t count = load_u32(bytes, kOffSectionCount);
  if (count > kMaxSections || bytes.size() < kHeaderSize + size_t{count} * kSectionEntrySize)
    return;
  store_u32(bytes, kOffHeaderCrc, header_crc(bytes, count));
}
}  // namespace detail

Expected<EngineHeader> read_engine_header(std::string_view b) {
  if (b.size() < sizeof(kMagic) || std::memcmp(b.data(), kMagic, sizeof(kMagic)) != 0) {
    return invalid_engine("not a graphc engine (bad magic)");
  }
  if (b.size() < kOffProducer)
    return invalid_engine("engine file is truncated: {} bytes", b.size());
  EngineHeader h;
  h.format_version = load_u32(b, kOffFormatVersion);
  h.min_reader_version = load_u32(b, kOffMinReader);
  // Checked before anything else: a newer format may lay out the rest differently.
  if (h.min_reader_version > kFormatVersion) {
    return invalid_engine(
        "engine format version {} is newer than this graphc reads ({}); rebuild the engine or "
        "update graphc",
        std::max(h.format_version, h.min_reader_version), kFormatVersion);
  }
  if (h.min_reader_version == 0 || h.format_version < h.min_reader_version) {
    return invalid_engine(
        "engine header is corrupted: format version {}, minimum reader version {}",
        h.format_version, h.min_reader_version);
  }
  if (b.size() < kHeaderSize) {
    return invalid_engine("engine file is truncated: {} bytes, the header alone needs {}", b.size(),
                          kHeaderSize);
  }
  h.flags = load_u32(b, kOffFlags);
  h.section_count = load_u32(b, kOffSectionCount);
  if (h.section_count < 2 || h.section_count > kMaxSections) {
    return invalid_engine(
        "engine header is corrupted: {} sections (a manifest and weights at least, at most {})",
        h.section_count, kMaxSections);
  }
  uint64_t table_end = kHeaderSize + uint64_t{h.section_count} * kSectionEntrySize;
  if (b.size() < table_end) {
    return invalid_engine("engine file is truncated: {} bytes, the section table ends at {}",
                          b.size(), table_end);
  }
  if (load_u32(b, kOffHeaderCrc) != header_crc(b, h.section_count)) {
    return invalid_engine("engine header is corrupted: checksum mismatch");
  }
  if (load_u32(b, kOffReserved) != 0)
    return invalid_engine("engine header: reserved field is not zero");
  // v1 defines no flags; a flag this reader does not know could change the meaning of the rest.
  if (h.flags != 0)
    return invalid_engine("engine uses flags 0x{:x} that this graphc does not know", h.flags);
  ASSIGN_OR_RETURN(h.producer,
                   read_fixed_string(b.substr(kOffProducer, kProducerFieldSize), "producer field"));
  return h;
}

namespace {

// Everything but the weights' bytes: header, table, checksums of the other
// sections (and of the weights when `b` holds them), the manifest, the code.
struct ParsedPrefix {
  EngineContents contents;  // weights empty
  TableEntry weights;
};

Expected<ParsedPrefix> parse_prefix(std::string_view b, uint64_t file_size) {
  ASSIGN_OR_RETURN(EngineHeader header, read_engine_header(b));
  ASSIGN_OR_RETURN(std::vector<TableEntry> table,
                   read_section_table(b, file_size, header.section_count));
  for (size_t i = 0; i < table.size(); ++i) {
    const TableEntry& e = table[i];
    if (e.offset + e.length > b.size()) continue;  // the weights, streamed by the caller
    if (detail::crc32_of(b.substr(e.offset, e.length)) != e.crc) {
      return invalid_engine("section {} ({}) is corrupted: checksum mismatch", i,
                            section_kind_name(e.kind, e.arch));
    }
  }
  ParsedPrefix out;
  EngineContents& contents = out.contents;
  ASSIGN_OR_RETURN(contents.manifest, parse_manifest(b.substr(table[0].offset, table[0].length)));
  if (contents.manifest.producer() != header.producer) {
    return invalid_engine("the manifest producer '{}' differs from the header's '{}'",
                          contents.manifest.producer(), header.producer);
  }
  std::vector<SectionInfo> sections;
  for (const auto& e : table) sections.push_back({e.kind, e.arch, e.length});
  RETURN_IF_ERROR(validate_manifest(contents.manifest, sections));
  for (size_t i = 1; i + 1 < table.size(); ++i) {
    auto kind =
        table[i].kind == SectionKind::kCodePtx ? CodeBlob::Kind::kPtx : CodeBlob::Kind::kCubin;
    contents.code.push_back(
        {table[i].arch, kind, std::string(b.substr(table[i].offset, table[i].length)), 0});
  }
  // validate_manifest checked every section index: each code section belongs to exactly one entry.
  for (const CodeModule& cm : contents.manifest.code_modules())
    for (int32_t section : {cm.ptx_section(), cm.cubin_section()})
      if (section > 0) contents.code[static_cast<size_t>(section) - 1].module = cm.module();
  out.weights = table.back();
  return out;
}

// The file's bytes before the weights, for contents whose weights are
// `weights_bytes` long with CRC `weights_crc`. Validates like the reader.
Expected<std::string> serialize_prefix(const EngineContents& c, uint64_t weights_bytes,
                                       uint32_t weights_crc) {
  for (size_t i = 0; i < c.code.size(); ++i) {
    const CodeBlob& blob = c.code[i];
    if (parse_sm_arch(blob.arch) < 0)
      return invalid_argument("code blob {}: arch '{}' is not sm_NN", i, blob.arch);
    if (blob.bytes.empty()) return invalid_argument("code blob {} ({}) is empty", i, blob.arch);
  }
  if (c.code.size() + 2 > kMaxSections)
    return invalid_argument("{} code blobs are too many", c.code.size());
  std::string manifest = serialize_manifest(c.manifest);
  if (manifest.size() > kMaxManifestBytes) {
    return invalid_argument("the manifest is {} bytes, over the limit of {}", manifest.size(),
                            kMaxManifestBytes);
  }
  // The writer makes the reader's checks, so it never writes an engine the reader refuses.
  RETURN_IF_ERROR(validate_manifest(c.manifest, planned_sections(c, manifest.size(), weights_bytes))
                      .with_context("refusing to write an invalid engine"));
  for (const CodeModule& cm : c.manifest.code_modules()) {
    for (int32_t section : {cm.ptx_section(), cm.cubin_section()}) {
      if (section <= 0) continue;
      const CodeBlob& blob = c.code[static_cast<size_t>(section) - 1];
      if (blob.module != cm.module())
        return invalid_argument(
            "refusing to write an invalid engine: code blob {} ({} {}) belongs to module {}, but "
            "the manifest places it in module {}",
            section - 1, blob.kind == CodeBlob::Kind::kPtx ? "ptx" : "cubin", blob.arch,
            blob.module, cm.module());
    }
  }

  auto count = static_cast<uint32_t>(c.code.size() + 2);
  std::vector<std::pair<SectionKind, std::string_view>> payloads;
  payloads.emplace_back(SectionKind::kManifest, manifest);
  for (const auto& blob : c.code) {
    payloads.emplace_back(
        blob.kind == CodeBlob::Kind::kPtx ? SectionKind::kCodePtx : SectionKind::kCodeCubin,
        blob.bytes);
  }
  uint64_t end = kHeaderSize + uint64_t{count} * kSectionEntrySize;
  std::vector<uint64_t> offsets;
  for (const auto& [kind, bytes] : payloads) {
    offsets.push_back(align_up(end, section_align(kind)));
    end = offsets.back() + bytes.size();
  }
  const uint64_t weights_offset = align_up(end, kWeightsAlign);
  std::string out(weights_offset, '\0');  // padding stays zero
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  // The oldest reader that can run the file; the refit record is skipped by
  // readers that do not know it, so it raises the writer's version alone.
  uint32_t version = kFormatVersionBase;
  for (const auto& k : c.manifest.kernels())
    if (!k.params().empty()) version = kFormatVersionKernelParams;
  if (c.manifest.has_shape_range()) version = kFormatVersionShapeRange;
  for (const auto& k : c.manifest.kernels())
    if (k.has_loop()) version = kFormatVersionLoop;
  uint32_t writer = c.manifest.has_refit() ? std::max(version, kFormatVersionRefit) : version;
  // A preferred library call (format 6) is skipped by older readers, which
  // run the kernel itself: it raises the writer's version alone.
  for (const auto& k : c.manifest.kernels())
    if (k.has_preferred_call()) writer = std::max(writer, kFormatVersionPreferredCall);
  store_u32(out, kOffFormatVersion, writer);
  store_u32(out, kOffMinReader, version);
  RETURN_IF_ERROR(
      write_fixed_string(out, kOffProducer, kProducerFieldSize, c.manifest.producer(), "producer"));
  store_u32(out, kOffSectionCount, count);
  for (size_t i = 0; i < payloads.size(); ++i) {
    size_t at = kHeaderSize + i * kSectionEntrySize;
    const auto& [kind, bytes] = payloads[i];
    store_u32(out, at + kEntKind, static_cast<uint32_t>(kind));
    store_u32(out, at + kEntCrc, detail::crc32_of(bytes));
    if (is_code(kind))
      RETURN_IF_ERROR(
          write_fixed_string(out, at + kEntArch, kArchFieldSize, c.code[i - 1].arch, "arch"));
    store_u64(out, at + kEntOffset, offsets[i]);
    store_u64(out, at + kEntLength, bytes.size());
    if (!bytes.empty()) std::memcpy(out.data() + offsets[i], bytes.data(), bytes.size());
  }
  size_t at = kHeaderSize + payloads.size() * kSectionEntrySize;
  store_u32(out, at + kEntKind, static_cast<uint32_t>(SectionKind::kWeights));
  store_u32(out, at + kEntCrc, weights_crc);
  store_u64(out, at + kEntOffset, weights_offset);
  store_u64(out, at + kEntLength, weights_bytes);
  store_u32(out, kOffHeaderCrc, header_crc(out, count));
  return out;
}

Status write_all(int fd, const char* data, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return io_error("write: {}", errno_text());
    done += static_cast<size_t>(w);
  }
  return Status::ok_status();
}

Status pread_all(int fd, char* dst, size_t n, uint64_t at) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, dst + done, n - done, static_cast<off_t>(at + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io_error("read: {}", errno_text());
    if (r == 0) return io_error("the file ends {} bytes early", n - done);
    done += static_cast<size_t>(r);
  }
  return Status::ok_status();
}

bool all_zero(const char* p, size_t n) {
  return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0);
}

// A temporary file in `path`'s folder that `body` fills, fsynced and renamed
// over `path`; removed on any failure.
Status write_atomically(const std::string& path, const std::function<Status(int fd)>& body) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string name = target.filename().string();
  name.insert(0, 1, '.');  // hidden while incomplete
  name.append(".tmp.XXXXXX");
  std::string tmp = (dir / name).string();
  int fd = mkstemp(tmp.data());
  if (fd < 0) return io_error("cannot write engine '{}': {}", path, errno_text());
  auto fail = [&](const std::string& what) {
    std::string err = errno_text();
    if (fd >= 0) close(fd);
    unlink(tmp.c_str());
    return io_error("cannot write engine '{}': {}: {}", path, what, err);
  };
  // mkstemp makes the file 0600; an engine is as readable as any build output.
  mode_t mode = 0644;
  struct stat st;
  if (stat(path.c_str(), &st) == 0) mode = st.st_mode & 07777;
  if (fchmod(fd, mode) != 0) return fail("chmod");
  if (Status s = body(fd); !s.ok()) {
    close(fd);
    unlink(tmp.c_str());
    return s.with_context(fmt::format("cannot write engine '{}'", path));
  }
  if (fsync(fd) != 0) return fail("fsync");
  if (close(fd) != 0) {
    fd = -1;
    return fail("close");
  }
  fd = -1;
  if (rename(tmp.c_str(), path.c_str()) != 0) return fail("rename");
  return Status::ok_status();
}

}  // namespace

Expected<EngineContents> parse_engine(std::string_view b) {
  ASSIGN_OR_RETURN(ParsedPrefix parsed, parse_prefix(b, b.size()));
  parsed.contents.weights = std::string(b.substr(parsed.weights.offset, parsed.weights.length));
  return std::move(parsed.contents);
}

Expected<std::string> serialize_engine(const EngineContents& c) {
  ASSIGN_OR_RETURN(std::string out,
                   serialize_prefix(c, c.weights.size(), detail::crc32_of(c.weights)));
  out.append(c.weights);
  return out;
}

Status write_engine_file(const std::string& path, const EngineContents& contents) {
  const std::string& w = contents.weights;
  WeightsSource source{w.size(), [&](uint64_t offset, char* dst, size_t n) {
                         std::memcpy(dst, w.data() + offset, n);
                         return Status::ok_status();
                       }};
  EngineContents header_only;  // the manifest and code, without a second copy of the weights
  header_only.manifest = contents.manifest;
  header_only.code = contents.code;
  return write_engine_file(path, header_only, source);
}

Status write_engine_file(const std::string& path, const EngineContents& contents,
                         const WeightsSource& weights) {
  if (!contents.weights.empty())
    return invalid_argument("write_engine_file: weights given both in the contents and a source");
  // Checked before the file is created: a bad engine leaves nothing behind.
  RETURN_IF_ERROR(serialize_prefix(contents, weights.bytes, 0).status());
  return write_atomically(path, [&](int fd) -> Status {
    // The weights' CRC is known only after streaming them: the prefix is
    // written twice, the second time with the CRC in the table.
    ASSIGN_OR_RETURN(std::string prefix, serialize_prefix(contents, weights.bytes, 0));
    RETURN_IF_ERROR(write_all(fd, prefix.data(), prefix.size()));
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(weights.bytes, kWeightsChunk));
    std::unique_ptr<char[]> buffer(new char[std::max<size_t>(chunk, 1)]);
    uint32_t crc = 0;
    bool hole_at_end = false;
    std::optional<uint32_t> zero_chunk_crc;  // the CRC of `chunk` zero bytes, once known
    for (uint64_t at = 0; at < weights.bytes; at += chunk) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, weights.bytes - at));
      RETURN_IF_ERROR(weights.fill(at, buffer.get(), n));
      hole_at_end = all_zero(buffer.get(), n);
      if (hole_at_end && n == chunk) {
        if (!zero_chunk_crc) zero_chunk_crc = crc_update(0, std::string_view(buffer.get(), n));
        crc = static_cast<uint32_t>(crc32_combine(crc, *zero_chunk_crc, static_cast<z_off_t>(n)));
      } else {
        crc = crc32_update(crc, std::string_view(buffer.get(), n));
      }
      if (hole_at_end) {  // leave a hole: a sparse file reads back as zeros
        if (lseek(fd, static_cast<off_t>(n), SEEK_CUR) < 0)
          return io_error("seek: {}", errno_text());
      } else {
        RETURN_IF_ERROR(write_all(fd, buffer.get(), n));
      }
    }
    if (hole_at_end &&
        ftruncate(fd, static_cast<off_t>(prefix.size() + weights.bytes)) != 0)
      return io_error("truncate: {}", errno_text());
    ASSIGN_OR_RETURN(prefix, serialize_prefix(contents, weights.bytes, crc));
    const size_t table_end = kHeaderSize + (contents.code.size() + 2) * kSectionEntrySize;
    if (pwrite(fd, prefix.data(), table_end, 0) != static_cast<ssize_t>(table_end))
      return io_error("write: {}", errno_text());
    return Status::ok_status();
  });
}

Expected<EngineHeader> read_engine_file_header(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return not_found("engine file '{}' does not exist", path);
  if (!std::filesystem::is_regular_file(path, ec))  // reading a FIFO would block
    return io_error("engine '{}' is not a regular file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open engine '{}'", path);
  auto read_prefix = [&](size_t n) {
    std::string bytes(n, '\0');
    in.seekg(0);
    in.read(bytes.data(), static_cast<std::streamsize>(n));
    bytes.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    in.clear();
    return bytes;
  };
  std::string bytes = read_prefix(kHeaderSize);
  if (bytes.size() == kHeaderSize) {
    // The section table follows; read_engine_header checks the count's range.
    uint32_t count = std::min(load_u32(bytes, kOffSectionCount), kMaxSections);
    bytes = read_prefix(kHeaderSize + size_t{count} * kSectionEntrySize);
  }
  auto header = read_engine_header(bytes);
  if (!header.ok()) return header.status().with_context(fmt::format("engine '{}'", path));
  return header;
}

EngineFile::~EngineFile() {
  if (fd_ >= 0) close(fd_);
}

Expected<std::unique_ptr<EngineFile>> EngineFile::open(const std::string& path) {
  std::unique_ptr<EngineFile> file(new EngineFile());
  file->path_ = path;
  file->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file->fd_ < 0) {
    if (errno == ENOENT) return not_found("engine file '{}' does not exist", path);
    return io_error("cannot open engine '{}': {}", path, errno_text());
  }
  struct stat st;
  if (fstat(file->fd_, &st) != 0 || !S_ISREG(st.st_mode))
    return io_error("engine '{}' is not a regular file", path);
  const auto file_size = static_cast<uint64_t>(st.st_size);
  auto in_file = [&](const Status& s) { return s.with_context(fmt::format("engine '{}'", path)); };
  // Read the header and table, then everything before the weights (the last
  // section); the weights stay in the file.
  auto read_prefix = [&](uint64_t n) -> Expected<std::string> {
    n = std::min(n, file_size);
    std::string bytes;
    try {
      bytes.resize(static_cast<size_t>(n));
    } catch (const std::bad_alloc&) {  // a hostile or huge size is an error, not a crash
      return out_of_range("engine '{}': {} bytes before the weights do not fit in memory", path, n);
    }
    Status read = pread_all(file->fd_, bytes.data(), bytes.size(), 0);
    if (!read.ok()) return io_error("cannot read engine '{}': {}", path, read.message());
    return bytes;
  };
  ASSIGN_OR_RETURN(std::string prefix, read_prefix(kHeaderSize));
  uint64_t weights_offset = file_size;
  if (prefix.size() == kHeaderSize) {
    uint32_t count = std::min(load_u32(prefix, kOffSectionCount), kMaxSections);
    ASSIGN_OR_RETURN(prefix, read_prefix(kHeaderSize + uint64_t{count} * kSectionEntrySize));
    auto header = read_engine_header(prefix);
    if (!header.ok()) return in_file(header.status());
    weights_offset = load_u64(prefix, kHeaderSize + (count - 1) * kSectionEntrySize + kEntOffset);
    ASSIGN_OR_RETURN(prefix, read_prefix(std::max<uint64_t>(weights_offset, prefix.size())));
  }
  auto parsed = parse_prefix(prefix, file_size);
  if (!parsed.ok()) return in_file(parsed.status());
  file->contents_ = std::move(parsed->contents);
  file->weights_offset_ = parsed->weights.offset;
  file->weights_bytes_ = parsed->weights.length;
  file->weights_crc_ = parsed->weights.crc;
  posix_fadvise(file->fd_, static_cast<off_t>(file->weights_offset_),
                static_cast<off_t>(file->weights_bytes_), POSIX_FADV_SEQUENTIAL);
  return file;
}

Status EngineFile::read_weights(uint64_t offset, char* dst, size_t n) const {
  uint64_t end = 0;
  if (__builtin_add_overflow(offset, n, &end) || end > weights_bytes_)
    return out_of_range("engine '{}': weights bytes [{}, {}) are outside the {}-byte section",
                        path_, offset, offset + n, weights_bytes_);
  Status read = pread_all(fd_, dst, n, weights_offset_ + offset);
  if (!read.ok()) return io_error("cannot read engine '{}': {}", path_, read.message());
  return Status::ok_status();
}

Status EngineFile::check_weights_crc(uint32_t crc) const {
  if (crc == weights_crc_) return Status::ok_status();
  return invalid_engine("engine '{}': section {} (weights) is corrupted: checksum mismatch", path_,
                        contents_.code.size() + 1);
}

Status EngineFile::for_each_weights_chunk(
    size_t chunk_bytes, const std::function<Status(uint64_t, std::string_view)>& sink) const {
  const size_t chunk =
      static_cast<size_t>(std::clamp<uint64_t>(weights_bytes_, 1, std::max<size_t>(chunk_bytes, 1)));
  std::unique_ptr<char[]> buffer(new char[chunk]);
  uint32_t crc = 0;
  for (uint64_t at = 0; at < weights_bytes_; at += chunk) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, weights_bytes_ - at));
    RETURN_IF_ERROR(read_weights(at, buffer.get(), n));
    crc = crc32_update(crc, std::string_view(buffer.get(), n));
    RETURN_IF_ERROR(sink(at, std::string_view(buffer.get(), n)));
  }
  return check_weights_crc(crc);
}

uint32_t crc32_update(uint32_t crc, std::string_view bytes) {
  // zlib's CRC runs at ~1 GB/s on one core, below disk and PCIe speed: large
  // spans are split over the cores and the pieces' CRCs combined.
  constexpr size_t kPiece = size_t{8} << 20;
  const size_t threads =
      std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), bytes.size() / kPiece);
  if (threads < 2) return crc_update(crc, bytes);
  const size_t piece = (bytes.size() + threads - 1) / threads;
  std::vector<uint32_t> crcs(threads, 0);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back([&, t] { crcs[t] = crc_update(0, bytes.substr(t * piece, piece)); });
  crcs[0] = crc_update(crc, bytes.substr(0, piece));
  for (auto& th : pool) th.join();
  for (size_t t = 1; t < threads; ++t) {
    const size_t len = std::min(piece, bytes.size() - t * piece);
    crcs[0] = static_cast<uint32_t>(crc32_combine(crcs[0], crcs[t], static_cast<z_off_t>(len)));
  }
  return crcs[0];
}

Expected<EngineContents> read_engine_file(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<EngineFile> file, EngineFile::open(path));
  EngineContents contents = std::move(file->contents());
  try {
    contents.weights.resize(static_cast<size_t>(file->weights_bytes()));
  } catch (const std::bad_alloc&) {
    return out_of_range("engine '{}': {} bytes of weights do not fit in memory", path,
                        file->weights_bytes());
  }
  RETURN_IF_ERROR(file->read_weights(0, contents.weights.data(), contents.weights.size()));
  RETURN_IF_ERROR(file->check_weights_crc(detail::crc32_of(contents.weights)));
  return contents;
}

}  // namespace graphc::engine
