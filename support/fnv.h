// FNV-1a, 64 bits, fed piece by piece: a stable hash for identities that are
// compared, not defended against a forger (a model's structure and the
// kernel sources in an engine's refit record). Stable across machines and
// versions: integers are fed little-endian, text with its length first, so
// ("ab", "c") and ("a", "bc") differ.
#pragma once

#include <cstdint>
#include <string_view>

namespace graphc {

class Fnv1a64 {
 public:
  Fnv1a64& bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 1099511628211ull;
    }
    return *this;
  }
  Fnv1a64& u64(uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    return bytes(b, 8);
  }
  Fnv1a64& i64(int64_t v) { return u64(static_cast<uint64_t>(v)); }
  Fnv1a64& text(std::string_view s) {
    u64(s.size());
    return bytes(s.data(), s.size());
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 14695981039346656037ull;
};

}  // namespace graphc
