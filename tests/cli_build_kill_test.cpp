// `graphc build` killed with SIGKILL at various points never leaves a
// half-written engine: the output path holds either the file that was there
// before or a complete engine that validates (temporary file + rename).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "engine_format/engine_file.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Starts `graphc build`, SIGKILLs it after `delay` (if still running); true
// when it finished by itself.
bool build_and_kill(const std::string& model, const std::string& out, const std::string& cache,
                    std::chrono::milliseconds delay) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    if (FILE* f = freopen("/dev/null", "w", stdout)) (void)f;
    if (FILE* f = freopen("/dev/null", "w", stderr)) (void)f;
    execl(GRAPHC_BINARY, GRAPHC_BINARY, "build", model.c_str(), "-o", out.c_str(), "--arch",
          "sm_80", "--arch", "sm_90", "--no-cache", "-j", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(delay);
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("graphc build killed mid-build leaves the old output or a complete engine",
          "[cli][build][hostile]") {
  TempDir dir;
  const std::string model = source_path("models/mlp.onnx");
  const std::string out = dir.file("mlp.engine");
  const std::string old_bytes = "an engine built yesterday, which must survive a killed build";
  bool saw_old = false;
  for (int ms : {0, 5, 20, 50, 100, 200, 400, 800, 1600, 3200, 6400}) {
    std::ofstream(out, std::ios::binary) << old_bytes;
    bool finished = build_and_kill(model, out, dir.file("cache"), std::chrono::milliseconds(ms));
    INFO("killed after " << ms << " ms; finished: " << finished);
    std::string now = read_all(out);
    if (now == old_bytes) {
      saw_old = true;
      CHECK_FALSE(finished);
      continue;
    }
    // Anything else must be a whole engine: a killed build never leaves part of one.
    auto engine = engine::parse_engine(now);
    INFO(engine.status().message());
    CHECK(engine.ok());
  }
  CHECK(saw_old);  // the early kills landed before the rename
}
