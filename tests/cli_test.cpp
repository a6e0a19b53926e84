// The graphc binary: inspect on the shipped models (text, --json, --ir),
// flags, --shape handling and conformance --json output files.
// Tests tagged [needs-ops] need the shape rules of the op groups.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc::testing;

namespace {

std::string model(const std::string& name) { return source_path("models/" + name + ".onnx"); }

// The count printed on inspect's "  <op>   <count>" line, or -1.
int64_t op_count(const std::string& out, const std::string& op) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string name;
    int64_t n = -1;
    if (line.rfind("  ", 0) == 0 && (ls >> name >> n) && name == op) return n;
  }
  return -1;
}

// A light JSON shape check: balanced {} and [] outside strings, valid escapes,
// one top-level object.
bool json_balanced(const std::string& s) {
  std::string stack;
  bool in_str = false;
  size_t i = s.find_first_not_of(" \n");
  if (i == std::string::npos || s[i] != '{') return false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (in_str) {
      if (c == '\\') {
        if (++i >= s.size() || std::string("\"\\/bfnrtu").find(s[i]) == std::string::npos)
          return false;
      } else if (c == '"') {
        in_str = false;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return false;
      }
      continue;
    }
    if (c == '"') in_str = true;
    if (c == '{' || c == '[') stack.push_back(c);
    if (c == '}' || c == ']') {
      if (stack.empty() || stack.back() != (c == '}' ? '{' : '[')) return false;
      stack.pop_back();
      if (stack.empty() && s.find_first_not_of(" \n", i + 1) != std::string::npos) return false;
    }
  }
  return stack.empty() && !in_str;
}

}  // namespace

TEST_CASE("graphc --version, no command and unknown flags", "[cli]") {
  // --version exits 0; no subcommand, an unknown subcommand or an unknown flag
  // is a usage error (exit 2) that names the offending word.
  auto v = run_graphc("--version");
  CHECK(v.exit_code == 0);
  CHECK(contains(v.output, "graphc"));
  auto none = run_graphc("");
  CHECK(none.exit_code == 2);
  auto sub = run_graphc("frobnicate");
  CHECK(sub.exit_code == 2);
  CHECK(contains(sub.output, "frobnicate"));
  auto flag = run_graphc("inspect --frobnicate " + model("mlp"));
  CHECK(flag.exit_code == 2);
  CHECK(contains(flag.output, "--frobnicate"));
  auto missing_arg = run_graphc("inspect");
  CHECK(missing_arg.exit_code == 2);
  auto exclusive = run_graphc("inspect --ir --json " + model("mlp"));
  CHECK(exclusive.exit_code == 2);
}

TEST_CASE("inspect transformer_block without --shape shows the symbolic batch dim", "[cli]") {
  // Unbound symbolic dims do not stop the summary: inputs show 'batch', op
  // counts and parameter counts are printed, outputs say shapes need --shape.
  auto r = run_graphc("inspect " + model("transformer_block"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "float32[batchx16x64]"));
  CHECK(contains(r.output, "bind symbolic dims with --shape"));
  CHECK(op_count(r.output, "MatMul") == 8);
  CHECK(op_count(r.output, "Add") == 9);
  CHECK(op_count(r.output, "LayerNormalization") == 2);
  CHECK(op_count(r.output, "Softmax") == 1);
  CHECK(op_count(r.output, "Erf") == 1);
  CHECK(op_count(r.output, "Reshape") == 4);
  CHECK(op_count(r.output, "Transpose") == 4);
  CHECK(op_count(r.output, "Shape") == 1);
  CHECK(op_count(r.output, "Gather") == 2);
  CHECK(op_count(r.output, "Unsqueeze") == 2);
  CHECK(op_count(r.output, "Concat") == 2);
  CHECK(op_count(r.output, "Div") == 2);
  CHECK(op_count(r.output, "Mul") == 2);
  CHECK(contains(r.output, "nodes     40"));
  // 33,476 float32 weights (130.8 KiB) and 6 int64 shape constants.
  CHECK(contains(r.output, "parameters 33482"));
  CHECK(op_count(r.output, "float32") == 33476);
  CHECK(op_count(r.output, "int64") == 6);
}

TEST_CASE("inspect --json on transformer_block without --shape", "[cli]") {
  // The JSON is well formed and has the inputs with the symbolic dim as a
  // string, op counts, parameter totals per dtype and shapes_inferred false.
  auto r = run_graphc("inspect --json " + model("transformer_block"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(json_balanced(r.output));
  const auto j = nlohmann::json::parse(r.output);  // throws (fails) unless valid JSON
  CHECK(j["schema_version"] == 1);
  CHECK(j["opset"] == 17);
  CHECK(j["inputs"][0] ==
        nlohmann::json({{"name", "x"}, {"dtype", "float32"}, {"shape", {"batch", 16, 64}}}));
  CHECK(j["shapes_inferred"] == false);
  CHECK(j["fusion"].is_null());
  CHECK(j["node_count"] == 40);
  CHECK(j["ops"]["MatMul"] == 8);
  CHECK(j["ops"]["Softmax"] == 1);
  CHECK(j["parameters"]["by_dtype"]["float32"] ==
        nlohmann::json({{"count", 33476}, {"bytes", 133904}}));
  CHECK(j["parameters"]["by_dtype"]["int64"] == nlohmann::json({{"count", 6}, {"bytes", 48}}));
}

TEST_CASE("inspect --ir without binding lists the symbolic dims", "[cli]") {
  // --ir needs every dim: the error names the input 'x', its dim 'batch' and
  // how to bind it; usage exit code 2, no crash.
  auto r = run_graphc("inspect --ir " + model("transformer_block"));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "transformer_block.onnx"));
  CHECK(contains(r.output, "x: dims batch"));
  CHECK(contains(r.output, "--shape"));
}

TEST_CASE("bad --shape flags are usage errors naming the flag", "[cli]") {
  // Malformed dims, no colon, negative dims, an unknown input, a wrong rank,
  // a conflicting fixed dim, a repeated input and a too-large shape all exit 2
  // with a message quoting the problem.
  const std::string tb = model("transformer_block");
  struct Case {
    std::string flag, expect;
  };
  for (const auto& c : std::vector<Case>{
           {"x:1xAx3", "'A' is not a non-negative integer dim"},
           {"x", "must look like NAME:DxDx"},
           {"x:-1", "'-1' is not a non-negative integer dim"},
           {"x:2x", "'' is not a non-negative integer dim"},
           {"x:", "has no dims"},
           {"y:2x16x64", "'y', which is not a model input (inputs: x)"},
           {"x:2x16", "rank 2, but the model declares rank 3"},
           {"x:2x17x64", "conflicts with the model's fixed dim 1 = 16"},
           {"x:1099511627776x16x64", "limit"},
       }) {
    auto r = run_graphc("inspect " + tb + " --shape " + c.flag);
    INFO(c.flag << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, c.expect));
  }
  auto twice = run_graphc("inspect " + tb + " --shape x:2x16x64 --shape x:3x16x64");
  CHECK(twice.exit_code == 2);
  CHECK(contains(twice.output, "--shape given twice for input 'x'"));
}

TEST_CASE("inspect and --ir on a model without nodes", "[cli]") {
  // A graph whose output is its input needs no shape rules: the summary shows
  // 0 nodes and --ir prints the input and the return.
  TempDir dir;
  OnnxModel m;
  m.input("x", onnx::TensorProto::FLOAT, {int64_t{3}, int64_t{5}});
  m.output("x");
  m.write(dir.file("pass.onnx"));
  auto r = run_graphc("inspect " + dir.file("pass.onnx"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "nodes     0"));
  CHECK(contains(r.output, "float32[3x5]"));
  auto ir = run_graphc("inspect --ir " + dir.file("pass.onnx"));
  CHECK(ir.exit_code == 0);
  CHECK(contains(ir.output, "input  %x : float32[3x5]"));
  CHECK(contains(ir.output, "return %x"));
}

TEST_CASE("conformance --json writes atomically and fails cleanly", "[cli]") {
  // --json into a missing folder fails (exit 1) naming the path and leaves no
  // file; into an existing folder it writes the report and no temporary file;
  // a missing test folder is an error.
  TempDir dir;
  std::filesystem::create_directory(dir.file("cases"));
  auto bad =
      run_graphc("conformance " + dir.file("cases") + " --json " + dir.file("out/missing/x.json"));
  INFO(bad.output);
  CHECK(bad.exit_code == 1);
  CHECK(contains(bad.output, "out/missing"));
  CHECK_FALSE(std::filesystem::exists(dir.file("out")));
  auto good = run_graphc("conformance " + dir.file("cases") + " --json " + dir.file("r.json"));
  INFO(good.output);
  CHECK(good.exit_code == 0);
  REQUIRE(std::filesystem::exists(dir.file("r.json")));
  std::ifstream in(dir.file("r.json"));
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(json_balanced(json));
  CHECK(contains(json, "\"total\": 0"));
  mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  REQUIRE(::stat(dir.file("r.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));  // not mkstemp's 0600
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  CHECK(entries == 2);  // cases/ and r.json: no temporary file left behind
  auto missing = run_graphc("conformance " + dir.file("nope"));
  CHECK(missing.exit_code == 1);
  CHECK(contains(missing.output, "does not exist"));
}

TEST_CASE("inspect mlp prints inputs, outputs, op counts and parameter bytes", "[cli][needs-ops]") {
  // mlp.onnx: x float32[4x64] -> y float32[4x10]; 3 MatMul, 3 Add, 2 Relu;
  // 17,226 float32 parameters = 68,904 bytes (67.3 KiB).
  auto r = run_graphc("inspect " + model("mlp"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "opset     13"));
  CHECK(contains(r.output, "float32[4x64]"));
  CHECK(contains(r.output, "float32[4x10]"));
  CHECK(op_count(r.output, "MatMul") == 3);
  CHECK(op_count(r.output, "Add") == 3);
  CHECK(op_count(r.output, "Relu") == 2);
  CHECK(contains(r.output, "parameters 17226 (67.3 KiB)"));
}

TEST_CASE("inspect --json mlp has inferred output shapes and parameter bytes", "[cli][needs-ops]") {
  // With fixed shapes the JSON says shapes_inferred true and gives y's shape.
  auto r = run_graphc("inspect --json " + model("mlp"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(json_balanced(r.output));
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["shapes_inferred"] == true);
  CHECK(j["outputs"][0] ==
        nlohmann::json({{"name", "y"}, {"dtype", "float32"}, {"shape", {4, 10}}}));
  CHECK(j["parameters"]["count"] == 17226);
  CHECK(j["parameters"]["bytes"] == 68904);
  CHECK(j["ops"]["Relu"] == 2);
  CHECK(j["fusion"]["kernels"] == 3);
}

TEST_CASE("inspect conv_block infers the residual block's shapes", "[cli][needs-ops]") {
  // 2 Conv, 2 BatchNormalization, 2 Relu, 1 Add; y keeps x's 1x16x32x32.
  auto r = run_graphc("inspect " + model("conv_block"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(op_count(r.output, "Conv") == 2);
  CHECK(op_count(r.output, "BatchNormalization") == 2);
  CHECK(op_count(r.output, "Relu") == 2);
  CHECK(op_count(r.output, "Add") == 1);
  CHECK(contains(r.output, "y                        float32[1x16x32x32]"));
}

TEST_CASE("inspect --shape x:2x16x64 --ir prints transformer_block's IR", "[cli][needs-ops]") {
  // Binding batch=2 lets shape arithmetic fold: the head split is 2x16x4x16,
  // attention scores 2x4x16x16, and y is 2x16x64.
  auto r = run_graphc("inspect " + model("transformer_block") + " --shape x:2x16x64 --ir");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "input  %x : float32[2x16x64]"));
  CHECK(contains(r.output, "%q_heads: float32[2x16x4x16]"));
  CHECK(contains(r.output, "%scores: float32[2x4x16x16]"));
  CHECK(contains(r.output, "%probs: float32[2x4x16x16] = Softmax("));
  CHECK(contains(r.output, "%y: float32[2x16x64]"));
  CHECK(contains(r.output, "return %y"));
  auto summary = run_graphc("inspect " + model("transformer_block") + " --shape x:3x16x64");
  CHECK(summary.exit_code == 0);
  CHECK(contains(summary.output, "float32[3x16x64]"));
}
