// graphc inspect on engine files: a golden text and JSON report of a
// hand-made two-module engine (tests/golden/engine_inspect.{txt,json};
// GRAPHC_UPDATE_GOLDEN=1 rewrites them), escaping of hostile names, and the
// reader's errors for damaged, truncated and newer engines.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine_format/engine_file.h"
#include "tests/cli_util.h"
#include "tests/engine_test_util.h"
#include "tests/test_util.h"

using namespace graphc;
using graphc::testing::contains;
using graphc::testing::run_graphc;
using graphc::testing::source_path;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}

void check_golden(const std::string& name, const std::string& text) {
  const std::string path = source_path("tests/golden/" + name);
  if (const char* u = std::getenv("GRAPHC_UPDATE_GOLDEN"); u && std::string(u) == "1")
    std::ofstream(path, std::ios::binary) << text;
  std::ifstream in(path, std::ios::binary);
  INFO("golden file " << path << " (GRAPHC_UPDATE_GOLDEN=1 rewrites it)");
  REQUIRE(in.good());
  std::stringstream want;
  want << in.rdbuf();
  CHECK(text == want.str());
}

// True when python3 parses `text` as JSON (skipped, true, without python3).
bool python_parses_json(const engine::testing::TempDir& dir, const std::string& text) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) return true;
  std::string file = (dir.path / "report.json").string();
  std::ofstream(file, std::ios::binary) << text;
  return std::system(("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' " + file +
                      " >/dev/null 2>&1")
                         .c_str()) == 0;
}

}  // namespace

TEST_CASE("inspect on an engine matches the golden text and JSON reports", "[cli][golden]") {
  // Header, code per arch, bindings, memory and the kernel list (generated
  // kernels with launch shape and module, the copy) of a fixed engine.
  engine::testing::TempDir dir;
  std::string path = (dir.path / "modular.engine").string();
  REQUIRE(engine::write_engine_file(path, engine::testing::modular_engine()).ok());
  auto text = run_graphc("inspect " + path);
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  check_golden("engine_inspect.txt", replace_all(text.output, path, "ENGINE"));
  auto json = run_graphc("inspect --json " + path);
  INFO(json.output);
  REQUIRE(json.exit_code == 0);
  CHECK(python_parses_json(dir, json.output));
  check_golden("engine_inspect.json", replace_all(json.output, path, "ENGINE"));
}

TEST_CASE("inspect escapes control characters and invalid UTF-8 from engine names", "[cli]") {
  // Names are untrusted: a terminal escape sequence is shown as \x1b, invalid
  // UTF-8 as \xNN in text and U+FFFD in JSON (which stays valid JSON).
  engine::testing::TempDir dir;
  engine::EngineContents c = engine::testing::modular_engine();
  c.manifest.mutable_kernels(0)->set_name("evil\x1b[2J\xff\"name\\");
  c.manifest.mutable_inputs(0)->set_name("x\n\xc3\xa9");  // newline and a valid é
  std::string path = (dir.path / "evil.engine").string();
  REQUIRE(engine::write_engine_file(path, c).ok());
  auto text = run_graphc("inspect " + path);
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK(contains(text.output, "evil\\x1b[2J\\xff\"name\\x5c"));
  CHECK(contains(text.output, "x\\x0a\xc3\xa9"));
  CHECK_FALSE(contains(text.output, "\x1b"));
  auto json = run_graphc("inspect " + path + " --json");
  INFO(json.output);
  REQUIRE(json.exit_code == 0);
  CHECK(contains(json.output, "\"evil\\u001b[2J"));   // control characters escaped
  const auto j = nlohmann::json::parse(json.output);  // throws (fails) unless valid JSON
  CHECK(j["kernels"][0]["name"] == "evil\x1b[2J\xef\xbf\xbd\"name\\");  // 0xff -> U+FFFD
  CHECK(j["inputs"][0]["name"] == "x\n\xc3\xa9");
  CHECK(python_parses_json(dir, json.output));
}

TEST_CASE("inspect gives the reader's error for damaged, truncated and newer engines", "[cli]") {
  // A file with the engine magic is inspected as an engine: any fault is the
  // reader's message with the path, exit code 1; model-only flags are usage errors.
  engine::testing::TempDir dir;
  engine::EngineContents contents = engine::testing::modular_engine();
  std::string good = engine::testing::serialize_ok(contents);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::string path = (dir.path / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  };
  std::string damaged = good;
  size_t cubin = damaged.rfind(contents.code.back().bytes);  // module 1's sm_90 CUBIN
  REQUIRE(cubin != std::string::npos);
  damaged[cubin + 3] ^= 0x20;
  std::string path = write("damaged.engine", damaged);
  auto r = run_graphc("inspect " + path);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "graphc: error: engine '" + path +
                               "': section 8 (cubin sm_90) is "
                               "corrupted: checksum mismatch"));
  r = run_graphc("inspect " + write("short.engine", good.substr(0, 40)));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "engine file is truncated: 40 bytes"));
  std::string newer = good;
  engine::testing::put_u32(newer, 8, engine::kFormatVersion + 1);
  engine::testing::put_u32(newer, 12, engine::kFormatVersion + 1);
  r = run_graphc("inspect --json " + write("newer.engine", newer));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "is newer than this graphc reads"));
  r = run_graphc("inspect --ir " + write("good.engine", good));
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "apply to ONNX models, not engines"));
}

TEST_CASE("inspect shows library calls and archs with CUBIN only", "[cli]") {
  // The format sample: a cuBLASLt call (no launch shape, no module) and a
  // generated kernel; sm_80 has PTX and CUBIN, sm_90 CUBIN only.
  engine::testing::TempDir dir;
  std::string path = (dir.path / "sample.engine").string();
  REQUIRE(engine::write_engine_file(path, engine::testing::sample_engine()).ok());
  auto text = run_graphc("inspect " + path);
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK(contains(text.output, "gemm (cublasLt matmul, algorithm 7)"));
  CHECK(contains(text.output,
                 "library calls\n  0  cublasLt matmul: fp32 M=2 N=4 K=3 epilogue=none; "
                 "heuristic #7 at load, workspace sized at load to the chosen algorithm, at most "
                 "1.00 MiB"));
  CHECK(contains(text.output, "sm_90    PTX        0 B  CUBIN       64 B"));
  CHECK(contains(text.output, "weights 300 B (300 bytes)"));
  CHECK(contains(text.output,
                 "code      1 module for 2 architectures; 1 library call (cublasLt 1)\n"));
  CHECK(contains(text.output,
                 "library workspace: what the algorithms chosen at load need (cuBLASLt at most "
                 "1.00 MiB; `graphc run` reports it)"));
  CHECK(contains(text.output,
                 "per execution context: arena 64 B + library workspace at most 1.00 MiB"));
  auto json = run_graphc("inspect " + path + " --json");
  INFO(json.output);
  REQUIRE(json.exit_code == 0);
  const auto j = nlohmann::json::parse(json.output);
  const auto& call = j["kernels"][0];
  CHECK(call["type"] == "library");
  CHECK(call["library"] == "cublasLt");
  CHECK(call["op"] == "matmul");
  CHECK(call["call"] == "fp32 M=2 N=4 K=3 epilogue=none");
  CHECK(call["algorithm"] == 7);
  CHECK(call["workspace_bytes"] == 1048576);
  CHECK(j["library_calls"] == 1);
  CHECK(j["library_workspace_bytes"] ==
        nlohmann::json({{"cublasLt", 1048576}, {"cudnn_limit", 0}, {"total_limit", 1048576}}));
  CHECK(j["code"][1] ==
        nlohmann::json({{"arch", "sm_90"}, {"modules", 1}, {"ptx_bytes", 0}, {"cubin_bytes", 64}}));
  CHECK(python_parses_json(dir, json.output));
}
