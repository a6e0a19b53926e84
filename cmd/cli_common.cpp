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
  const char* range_help =
      "Shape range of an input, NAME:DxDx...[,NAME:DxDx...] (repeatable); trtexec's "
      "--minShapes/--optShapes/--maxShapes. Give all three for every input with a range";
  cmd->add_option("--min-shape,--minShapes", f.min, range_help)->allow_extra_args(false);
  cmd->add_option("--opt-shape,--optShapes", f.opt, range_help)->allow_extra_args(false);
  cmd->add_option("--max-shape,--maxShapes", f.max, range_help)->allow_extra_args(false);
  cmd->add_option("--shape-profile", f.profiles,
                  "One more shape profile: NAME:MIN/OPT/MAX[,NAME:MIN/OPT/MAX] (repeatable; each "
                  "flag is one profile, after the one the --min/--opt/--max-shape flags make)")
      ->allow_extra_args(false);
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

Expected<std::vector<driver::ShapeProfile>> parse_shape_profiles(const ShapeFlags& f) {
  ASSIGN_OR_RETURN(auto shapes, shapes_of(f.shapes, "--shape"));
  const std::pair<const char*, const std::vector<std::string>*> range_flags[] = {
      {"--min-shape", &f.min}, {"--opt-shape", &f.opt}, {"--max-shape", &f.max}};
  std::map<std::string, ir::Shape> by_flag[3];
  for (int k = 0; k < 3; ++k) {
    ASSIGN_OR_RETURN(by_flag[k], shapes_of(*range_flags[k].second, range_flags[k].first));
  }
  std::vector<driver::ShapeProfile> profiles;
  if (!f.min.empty() || !f.opt.empty() || !f.max.empty()) {
    driver::ShapeProfile first;
    for (int k = 0; k < 3; ++k) {
      for (const auto& [name, shape] : by_flag[k]) {
        if (first.inputs.count(name)) continue;
        for (int j = 0; j < 3; ++j)
          if (!by_flag[j].count(name))
            return invalid_argument(
                "input '{}' is given {} {} but no {}: give --min-shape, --opt-shape and "
                "--max-shape for every input with a range",
                name, range_flags[k].first, dims(shape), range_flags[j].first);
        driver::ShapeRange r{by_flag[0][name], by_flag[1][name], by_flag[2][name]};
        RETURN_IF_ERROR(driver::check_range(fmt::format("input '{}'", name), r));
        first.inputs[name] = std::move(r);
      }
    }
    profiles.push_back(std::move(first));
  }
  for (const auto& text : f.profiles) {
    ASSIGN_OR_RETURN(auto p, driver::parse_profile_flag(text));
    for (const auto& [name, r] : p.inputs)
      RETURN_IF_ERROR(driver::check_range(
          fmt::format("profile {}, input '{}'", profiles.size(), name), r));
    profiles.push_back(std::move(p));
  }
  if (profiles.empty()) profiles.emplace_back();
  // --shape fixes an input in every profile: min = opt = max.
  for (size_t i = 0; i < profiles.size(); ++i) {
    for (const auto& [name, shape] : shapes) {
      auto [it, fresh] =
          profiles[i].inputs.emplace(name, driver::ShapeRange{shape, shape, shape});
      if (!fresh && !(it->second.is_static() && it->second.min == shape))
        return invalid_argument("input '{}': --shape {} and profile {}'s range {} disagree", name,
                                dims(shape), i, driver::range_to_string(it->second));
    }
  }
  return profiles;
}

Expected<std::map<std::string, ir::Shape>> parse_shape_flags(const ShapeFlags& f) {
  ASSIGN_OR_RETURN(auto profiles, parse_shape_profiles(f));
  for (size_t i = 0; i < profiles.size(); ++i) {
    for (const auto& [name, r] : profiles[i].inputs) {
      const bool same_as_first = profiles[0].inputs.count(name) && profiles[0].inputs.at(name) == r;
      if (!r.is_static() || !same_as_first)
        return invalid_argument(
            "input '{}' has a shape range ({}{}): this command takes one shape per input; give it "
            "with --shape {}:DxDx... (or equal --min-shape, --opt-shape and --max-shape)",
            name, driver::range_to_string(r), profiles.size() > 1 ? ", over several profiles" : "",
            name);
    }
  }
  return profiles[0].at_opt();
}

std::string human_bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(uint64_t{1} << 30));
  if (b >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
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
