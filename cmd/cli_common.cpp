#include "cmd/cli_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "driver/load_model.h"

namespace graphc::cli {

int report(const Status& status) {
  if (status.ok()) return kExitOk;
  std::fprintf(stderr, "graphc: error: %s\n", status.message().c_str());
  return status.code() == ErrorCode::kInvalidArgument ? kExitUsage : kExitError;
}

Expected<std::map<std::string, ir::Shape>> parse_shape_flags(
    const std::vector<std::string>& flags) {
  std::map<std::string, ir::Shape> shapes;
  for (const auto& f : flags) {
    ASSIGN_OR_RETURN(auto parsed, driver::parse_shape_flag(f));
    if (shapes.count(parsed.first))
      return invalid_argument("--shape given twice for input '{}'", parsed.first);
    shapes[parsed.first] = parsed.second;
  }
  return shapes;
}

Status write_file_atomic(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return io_error("cannot write '{}': folder '{}' does not exist", path, dir.string());
  // Built piecewise: GCC 12 gives a false -Wrestrict on "." + string + "...".
  std::string tmp_name = ".";
  tmp_name += target.filename().string();
  tmp_name += ".tmp.XXXXXX";
  std::string tmpl = (dir / tmp_name).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0)
    return io_error("cannot create a temporary file in '{}': {}", dir.string(),
                    std::strerror(errno));
  // mkstemp makes the file 0600; give it the mode a plain open() would have.
  mode_t mask = ::umask(0);
  ::umask(mask);
  (void)::fchmod(fd, 0666 & ~mask);
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w <= 0) {
      ::close(fd);
      ::unlink(name.data());
      return io_error("writing '{}' failed: {}", path, std::strerror(errno));
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(name.data());
    return io_error("writing '{}' failed: {}", path, std::strerror(errno));
  }
  if (std::rename(name.data(), path.c_str()) != 0) {
    ::unlink(name.data());
    return io_error("cannot rename the temporary file to '{}': {}", path, std::strerror(errno));
  }
  return Status::ok_status();
}

}  // namespace graphc::cli
