#include "support/mapped_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace graphc {

Expected<std::shared_ptr<const MappedFile>> MappedFile::map(int fd, const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error("cannot stat {}: {}", what, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return invalid_argument("{} is not a regular file", what);
  auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0));
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (base == MAP_FAILED) return io_error("cannot map {}: {}", what, std::strerror(errno));
  return std::shared_ptr<const MappedFile>(new MappedFile(base, size));
}

MappedFile::~MappedFile() {
  if (base_) ::munmap(base_, size_);
}

void MappedFile::release_resident(const uint8_t* p, size_t n) const {
  if (!base_ || n == 0) return;
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto begin = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  auto end = (reinterpret_cast<uintptr_t>(p) + n + page - 1) & ~(page - 1);
  auto map_end = reinterpret_cast<uintptr_t>(base_) + size_;
  end = std::min(end, (map_end + page - 1) & ~(page - 1));
  // A private mapping nobody wrote: dropping its pages loses nothing.
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace graphc
