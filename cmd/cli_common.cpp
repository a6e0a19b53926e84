#include "cmd/cli_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
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

int accuracy_exit_code(int failed) { return failed == 0 ? kExitOk : kExitAccuracy; }

void add_shape_flags(CLI::App* cmd, ShapeFlags& f, const std::string& help) {
  cmd->add_option("--shape,--shapes", f.shapes,
                  help.empty() ? "Bind input shapes: NAME:DxDx...[,NAME:DxDx...] (repeatable), "
                                 "e.g. input:1x3x224x224"
                               : help)
      ->allow_extra_args(false);
  const char* range =
      "As trtexec; accepted when min = opt = max for every input (a static shape): shape "
      "ranges are not supported yet";
  cmd->add_option("--minShapes", f.min, range)->allow_extra_args(false)->group("trtexec flags");
  cmd->add_option("--optShapes", f.opt, range)->allow_extra_args(false)->group("trtexec flags");
  cmd->add_option("--maxShapes", f.max, range)->allow_extra_args(false)->group("trtexec flags");
}

std::vector<std::string> split_shape_list(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t comma = text.find(',', pos);
    std::string part =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (out.empty() || part.find(':') != std::string::npos)
      out.push_back(part);
    else
      out.back() += "," + part;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

namespace {

// One flag's shapes (each value may be a comma list); a name twice is an error.
Expected<std::map<std::string, ir::Shape>> shapes_of(const std::vector<std::string>& flags,
                                                     const std::string& flag) {
  std::map<std::string, ir::Shape> shapes;
  for (const auto& value : flags) {
    for (const auto& item : split_shape_list(value)) {
      auto parsed = driver::parse_shape_flag(item);
      if (!parsed.ok())
        return flag == "--shape" ? parsed.status() : parsed.status().with_context(flag);
      if (shapes.count(parsed->first))
        return invalid_argument("{} given twice for input '{}'", flag, parsed->first);
      shapes[parsed->first] = parsed->second;
    }
  }
  return shapes;
}

std::string dims(const ir::Shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

}  // namespace

Expected<std::map<std::string, ir::Shape>> parse_shape_flags(
    const std::vector<std::string>& flags) {
  return shapes_of(flags, "--shape");
}

Expected<std::map<std::string, ir::Shape>> parse_shape_flags(const ShapeFlags& f) {
  ASSIGN_OR_RETURN(auto shapes, shapes_of(f.shapes, "--shape"));
  // trtexec's optimization profile: graphc builds for one static shape, so
  // every input's min, opt and max (those given) must be one shape.
  const std::pair<const char*, const std::vector<std::string>*> range_flags[] = {
      {"--minShapes", &f.min}, {"--optShapes", &f.opt}, {"--maxShapes", &f.max}};
  std::map<std::string, std::vector<std::pair<std::string, ir::Shape>>> ranges;
  for (const auto& [flag, values] : range_flags) {
    ASSIGN_OR_RETURN(auto parsed, shapes_of(*values, flag));
    for (auto& [name, shape] : parsed) ranges[name].emplace_back(flag, shape);
  }
  const size_t given = size_t{!f.min.empty()} + !f.opt.empty() + !f.max.empty();
  for (const auto& [name, entries] : ranges) {
    std::string listed;
    bool same = entries.size() == given;
    for (const auto& [flag, shape] : entries) {
      listed += fmt::format("{}{} {}", listed.empty() ? "" : ", ", flag, dims(shape));
      same = same && shape == entries.front().second;
    }
    if (!same)
      return invalid_argument(
          "input '{}' has a shape range ({}{}): shape ranges (dynamic shapes) are not supported "
          "yet; graphc builds an engine for one static shape per input: give it with --shape "
          "{}:DxDx... or with equal --minShapes, --optShapes and --maxShapes",
          name, listed, entries.size() == given ? "" : ", missing from the others", name);
    const ir::Shape& shape = entries.front().second;
    auto it = shapes.find(name);
    if (it != shapes.end() && it->second != shape)
      return invalid_argument("input '{}': --shape {} and {} {} disagree", name, dims(it->second),
                              entries.front().first, dims(shape));
    shapes[name] = shape;
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
