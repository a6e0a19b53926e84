#include "cmd/graphviz.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace graphc::cli {

namespace {

namespace fs = std::filesystem;

// A private temporary folder, removed with everything in it at scope exit.
struct TempFolder {
  fs::path path;
  ~TempFolder() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Expected<std::string> render_svg(const std::string& dot_source) {
  std::string tmpl = (fs::temp_directory_path() / "graphc-dot.XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    return io_error("cannot create a temporary folder for Graphviz: {}", std::strerror(errno));
  TempFolder tmp{tmpl};
  const std::string in = (tmp.path / "graph.dot").string();
  const std::string out = (tmp.path / "graph.svg").string();
  const std::string log = (tmp.path / "dot.log").string();
  {
    std::ofstream f(in, std::ios::binary);
    f << dot_source;
    if (!f.flush()) return io_error("cannot write '{}'", in);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::string a0 = "dot", a1 = "-Tsvg", a2 = "-o" + out;
  std::string a3 = in;
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, "dot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == ENOENT)
    return not_found(
        "Graphviz's 'dot' is not on the PATH; install Graphviz (Debian: apt-get install "
        "graphviz; scripts/setup.sh does) or write the graph with --dot and render it elsewhere");
  if (rc != 0) return io_error("cannot run Graphviz's 'dot': {}", std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return io_error("waiting for 'dot': {}", std::strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string messages = read_all(log);
    while (!messages.empty() && messages.back() == '\n') messages.pop_back();
    return io_error("Graphviz's 'dot' failed ({}){}",
                    WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                      : std::string("killed by a signal"),
                    messages.empty() ? "" : ": " + messages);
  }
  std::string svg = read_all(out);
  if (svg.find("<svg") == std::string::npos) return io_error("Graphviz's 'dot' wrote no SVG");
  return svg;
}

}  // namespace graphc::cli
