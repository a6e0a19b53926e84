// ELF64 little-endian, as ptxas writes it: section headers, .symtab/.strtab
// for names, and .nv.info's attribute records (u8 format, u8 attribute, then
// for EIFMT_SVAL a u16 size and that many bytes, else a u16 value). The
// per-function records REGCOUNT (0x2f) and FRAME_SIZE (0x11) hold a u32 symbol
// index and a u32 value. Every read is bounds-checked: the bytes come from
// NVRTC but may come from a cache file.
#include "emit/cubin_resources.h"

#include <cstring>
#include <map>

namespace graphc::emit {

namespace {

template <class T>
bool read(const std::vector<uint8_t>& b, uint64_t off, T& out) {
  if (off > b.size() || b.size() - off < sizeof(T)) return false;
  std::memcpy(&out, b.data() + off, sizeof(T));
  return true;
}

struct Section {
  uint32_t name = 0, type = 0, link = 0;
  uint64_t offset = 0, size = 0, entsize = 0;
};

std::string c_string(const std::vector<uint8_t>& b, uint64_t off) {
  std::string s;
  while (off < b.size() && b[off] != 0) s.push_back(static_cast<char>(b[off++]));
  return s;
}

constexpr uint8_t kEifmtSval = 0x04;
constexpr uint8_t kRegCount = 0x2f;
constexpr uint8_t kFrameSize = 0x11;

}  // namespace

Expected<std::vector<CubinKernelResources>> cubin_kernel_resources(const std::vector<uint8_t>& b) {
  if (b.size() < 64 || std::memcmp(b.data(), "\x7f" "ELF", 4) != 0 || b[4] != 2 || b[5] != 1)
    return invalid_argument("not a 64-bit little-endian ELF cubin");
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (!read(b, 0x28, shoff) || !read(b, 0x3a, shentsize) || !read(b, 0x3c, shnum) || !read(b, 0x3e, shstrndx) ||
      shentsize < 64 || shstrndx >= shnum)
    return invalid_argument("cubin: bad ELF header");
  std::vector<Section> secs(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t o = shoff + uint64_t{i} * shentsize;
    Section& s = secs[i];
    if (!read(b, o, s.name) || !read(b, o + 4, s.type) || !read(b, o + 24, s.offset) || !read(b, o + 32, s.size) ||
        !read(b, o + 40, s.link) || !read(b, o + 56, s.entsize))
      return invalid_argument("cubin: bad section header {}", i);
    if (s.offset > b.size() || b.size() - s.offset < s.size) return invalid_argument("cubin: section {} out of file", i);
  }
  auto section_name = [&](const Section& s) { return c_string(b, secs[shstrndx].offset + s.name); };
  // Symbol index -> name.
  std::map<uint32_t, std::string> sym_names;
  for (const Section& s : secs) {
    if (s.type != 2 /* SHT_SYMTAB */ || s.entsize < 24 || s.link >= secs.size()) continue;
    const Section& str = secs[s.link];
    for (uint64_t i = 0; i < s.size / s.entsize; ++i) {
      uint32_t name = 0;
      if (!read(b, s.offset + i * s.entsize, name)) break;
      sym_names[static_cast<uint32_t>(i)] = c_string(b, str.offset + name);
    }
  }
  std::map<uint32_t, CubinKernelResources> by_sym;
  for (const Section& s : secs) {
    if (section_name(s).rfind(".nv.info", 0) != 0) continue;
    uint64_t p = s.offset;
    const uint64_t end = s.offset + s.size;
    while (p + 4 <= end) {
      const uint8_t fmt = b[p], attr = b[p + 1];
      uint16_t size = 0;
      if (fmt != kEifmtSval) {
        p += 4;
        continue;
      }
      if (!read(b, p + 2, size) || p + 4 + size > end) return invalid_argument("cubin: truncated .nv.info record");
      if ((attr == kRegCount || attr == kFrameSize) && size == 8) {
        uint32_t sym = 0, value = 0;
        read(b, p + 4, sym);
        read(b, p + 8, value);
        CubinKernelResources& r = by_sym[sym];
        r.name = sym_names.count(sym) ? sym_names[sym] : "symbol " + std::to_string(sym);
        if (attr == kRegCount) r.registers = static_cast<int>(value);
        else r.frame_bytes = value;
      }
      p += 4 + size;
    }
  }
  std::vector<CubinKernelResources> out;
  for (auto& [sym, r] : by_sym) out.push_back(r);
  return out;
}

}  // namespace graphc::emit
