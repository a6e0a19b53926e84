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

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>

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
Expected<std::vector<TableEntry>> read_section_table(std::string_view b, uint32_t count) {
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
    if (end > b.size()) {
      return invalid_engine("{}: bytes [{}, {}) run past the end of the {}-byte file", name,
                            e.offset, end, b.size());
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
  if (prev_end != b.size()) {
    return invalid_engine("{} bytes after the last section, which ends at {}", b.size() - prev_end,
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
std::vector<SectionInfo> planned_sections(const EngineContents& c, uint64_t manifest_length) {
  std::vector<SectionInfo> sections;
  sections.push_back({SectionKind::kManifest, "", manifest_length});
  for (const auto& blob : c.code) {
    auto kind = blob.kind == CodeBlob::Kind::kPtx ? SectionKind::kCodePtx : SectionKind::kCodeCubin;
    sections.push_back({kind, blob.arch, blob.bytes.size()});
  }
  sections.push_back({SectionKind::kWeights, "", c.weights.size()});
  return sections;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

namespace detail {
uint32_t crc32_of(std::string_view bytes) { return crc_update(0, bytes); }

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

Expected<EngineContents> parse_engine(std::string_view b) {
  ASSIGN_OR_RETURN(EngineHeader header, read_engine_header(b));
  ASSIGN_OR_RETURN(std::vector<TableEntry> table, read_section_table(b, header.section_count));
  for (size_t i = 0; i < table.size(); ++i) {
    const TableEntry& e = table[i];
    if (detail::crc32_of(b.substr(e.offset, e.length)) != e.crc) {
      return invalid_engine("section {} ({}) is corrupted: checksum mismatch", i,
                            section_kind_name(e.kind, e.arch));
    }
  }
  EngineContents contents;
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
  contents.weights = std::string(b.substr(table.back().offset, table.back().length));
  return contents;
}

Expected<std::string> serialize_engine(const EngineContents& c) {
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
  RETURN_IF_ERROR(validate_manifest(c.manifest, planned_sections(c, manifest.size()))
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
  payloads.emplace_back(SectionKind::kWeights, c.weights);

  uint64_t end = kHeaderSize + uint64_t{count} * kSectionEntrySize;
  std::vector<uint64_t> offsets;
  for (const auto& [kind, bytes] : payloads) {
    offsets.push_back(align_up(end, section_align(kind)));
    end = offsets.back() + bytes.size();
  }
  std::string out(end, '\0');  // padding stays zero
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  uint32_t version = kFormatVersionBase;
  for (const auto& k : c.manifest.kernels())
    if (!k.params().empty()) version = kFormatVersionKernelParams;
  store_u32(out, kOffFormatVersion, version);
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
  store_u32(out, kOffHeaderCrc, header_crc(out, count));
  return out;
}

Status write_engine_file(const std::string& path, const EngineContents& contents) {
  ASSIGN_OR_RETURN(std::string bytes, serialize_engine(contents));
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
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    done += static_cast<size_t>(n);
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

Expected<EngineContents> read_engine_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return not_found("engine file '{}' does not exist", path);
    return io_error("cannot open engine '{}': {}", path, errno_text());
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return io_error("engine '{}' is not a regular file", path);
  }
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(st.st_size));
  } catch (const std::bad_alloc&) {  // a hostile or huge size is an error, not a crash
    close(fd);
    return out_of_range("engine '{}' ({} bytes) does not fit in memory", path, st.st_size);
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string err = errno_text();
      close(fd);
      return io_error("cannot read engine '{}': {}", path, err);
    }
    if (n == 0) break;  // the file shrank; the parser reports the truncation
    done += static_cast<size_t>(n);
  }
  close(fd);
  bytes.resize(done);
  auto contents = parse_engine(bytes);
  if (!contents.ok()) return contents.status().with_context(fmt::format("engine '{}'", path));
  return contents;
}

}  // namespace graphc::engine
