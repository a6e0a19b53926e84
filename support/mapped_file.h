// A read-only, private memory mapping of a whole file. Weights of large
// models are read through it so a build never holds every weight's bytes in
// its own memory at once: pages come from the page cache when read, and
// release_resident() drops a range again (it is read back from the file if it
// is touched later). Nothing ever writes through the mapping.
//
// The file must not shrink while it is mapped (reads past its new end fault);
// the importer maps only regular files it opened itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "support/status.h"

namespace graphc {

class MappedFile {
 public:
  // Maps the regular file open on `fd` (not taken over: the caller closes it).
  static Expected<std::shared_ptr<const MappedFile>> map(int fd, const std::string& what);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return static_cast<const uint8_t*>(base_); }
  size_t size() const { return size_; }
  // Drops the resident pages covering [p, p + n) (a hint; never fails).
  void release_resident(const uint8_t* p, size_t n) const;

 private:
  MappedFile(void* base, size_t size) : base_(base), size_(size) {}
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace graphc
