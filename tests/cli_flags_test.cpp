// The command line a trtexec user types: trtexec's spellings as aliases,
// comma lists of shapes, shape ranges refused, flags that do not apply
// warned about or refused, unknown flags answered with the nearest known
// one, --arch defaulting to this machine's GPU, --version, and the exit
// codes (0 ok, 1 error, 2 usage, 3 accuracy check failed).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cmd/cli_common.h"
#include "cmd/unknown_flags.h"
#include "engine_format/engine_file.h"
#include "runtime/cuda_driver.h"
#include "support/npy.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

std::string model(const std::string& name) { return source_path("models/" + name + ".onnx"); }

bool have_gpu() { return runtime::load_driver().ok(); }

const std::string kFakeDriver = std::string("LD_LIBRARY_PATH=") + GRAPHC_FAKE_CUDA_DIR + " ";

// out = input + other: input float32[batch, 8], other float32[1, width].
std::string two_input_model(const TempDir& dir) {
  OnnxModel m;
  m.input("input", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{8}});
  m.input("other", onnx::TensorProto::FLOAT, {int64_t{1}, std::string("width")});
  m.node("Add", {"input", "other"}, {"out"}, "add");
  m.output("out", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{8}});
  const std::string path = dir.file("two.onnx");
  m.write(path);
  return path;
}

std::string precision_of(const std::string& engine) {
  auto c = engine::read_engine_file(engine);
  return c.ok() ? c->manifest.precision() : "unreadable: " + c.status().message();
}

}  // namespace

TEST_CASE("graphc build takes trtexec's spellings", "[cli][trtexec]") {
  TempDir dir;
  const std::string engine = dir.file("tb.engine");
  auto r = run_graphc("build --onnx=" + model("transformer_block") + " --saveEngine=" + engine +
                      " --shapes=x:2x16x64 --fp16 --arch sm_90");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "wrote " + engine));
  CHECK(precision_of(engine) == "fp16");
  auto c = engine::read_engine_file(engine);
  REQUIRE(c.ok());
  REQUIRE(c->manifest.inputs_size() == 1);
  const auto& x = c->manifest.tensors(c->manifest.inputs(0).tensor());
  CHECK(std::vector<int64_t>(x.shape().begin(), x.shape().end()) ==
        std::vector<int64_t>{2, 16, 64});
  // --bf16, --timingCacheFile, and equal --minShapes/--optShapes/--maxShapes (a static shape).
  const std::string bf16 = dir.file("bf16.engine");
  auto b = run_graphc("build " + model("transformer_block") + " -o " + bf16 +
                      " --bf16 --arch sm_90 --timingCacheFile " + dir.file("none.cache") +
                      " --minShapes x:3x16x64 --optShapes x:3x16x64 --maxShapes x:3x16x64");
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK(precision_of(bf16) == "bf16");
  // The long-standing spellings still work and give the same engine.
  const std::string plain = dir.file("plain.engine");
  auto p = run_graphc("build " + model("transformer_block") + " -o " + plain +
                      " --shape x:2x16x64 --precision fp16 --arch sm_90");
  REQUIRE(p.exit_code == 0);
  std::ifstream a(engine, std::ios::binary), bb(plain, std::ios::binary);
  std::string ea((std::istreambuf_iterator<char>(a)), {}),
      eb((std::istreambuf_iterator<char>(bb)), {});
  CHECK(ea == eb);
}

TEST_CASE("shape flags take comma lists, and inspect takes shape ranges except with --ir",
          "[cli][trtexec]") {
  TempDir dir;
  const std::string two = two_input_model(dir);
  for (const std::string flags :
       {"--shape input:2x8,other:1x1", "--shapes=input:2x8,other:1x1",
        "--shape input:2,8,other:1,1", "--shape input:2x8 --shape other:1x1"}) {
    auto r = run_graphc("inspect " + two + " " + flags);
    INFO(flags << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, "float32[2x8]"));
  }
  struct Bad {
    std::string flags, says;
  };
  for (const Bad& c : std::vector<Bad>{
           {"--ir --minShapes input:1x8,other:1x1 --optShapes input:2x8,other:1x1 --maxShapes "
            "input:4x8,other:1x1",
            "this command takes one shape per input"},
           {"--minShapes input:2x8 --maxShapes input:2x8,other:1x1",
            "input 'input' is given --min-shape 2x8 but no --opt-shape"},
           {"--shape input:2x8,other:1x1 --min-shape input:3x8 --opt-shape input:3x8 "
            "--max-shape input:3x8",
            "input 'input': --shape 2x8 and profile 0's range 3x8 disagree"},
           {"--min-shape input:4x8 --opt-shape input:2x8 --max-shape input:8x8",
            "input 'input' dim 0: opt 2 is below min 4"},
           {"--ir --shape-profile input:1x8/2x8/4x8,other:1x1",
            "this command takes one shape per input"},
           {"--shape input:2x8,input:3x8", "--shape given twice for input 'input'"},
           {"--shape input:2x8,nope:1x1", "'nope', which is not a model input"},
           {"--fp16 --precision bf16", "excludes"},
           {"--fp16 --bf16", "excludes"},
       }) {
    auto r = run_graphc("inspect " + two + " " + c.flags);
    INFO(c.flags << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, c.says));
  }
  // Over a range: the profiles, and the plan graphc build would make for them.
  for (const std::string flags :
       {"--minShapes input:1x8,other:1x1 --optShapes input:2x8,other:1x1 --maxShapes "
        "input:4x8,other:1x1",
        "--shape-profile input:1x8/2x8/4x8,other:1x1"}) {
    auto r = run_graphc("inspect " + two + " " + flags);
    INFO(flags << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, "shapes    over 1 profile"));
    CHECK(contains(r.output, "  profile 0: input: 1x8 / 2x8 / 4x8\n"));
    CHECK(contains(r.output, "kernels: "));
    auto j = run_graphc("inspect " + two + " " + flags + " --json");
    CHECK(j.exit_code == 0);
    const auto doc = nlohmann::json::parse(j.output);
    REQUIRE(doc["profiles"].size() == 1);
    const auto& in = doc["profiles"][0]["inputs"];
    CHECK(in["input"]["min"] == nlohmann::json({1, 8}));
    CHECK(in["input"]["opt"] == nlohmann::json({2, 8}));
    CHECK(in["input"]["max"] == nlohmann::json({4, 8}));
    CHECK_FALSE(in.contains("other"));  // fixed inputs are not ranges
    CHECK(doc["fusion"]["kernels"] == 1);
  }
  auto split = cli::split_shape_list("a:2x8,b:1,3,c:0:4");
  CHECK(split == std::vector<std::string>{"a:2x8", "b:1,3", "c:0:4"});
  CHECK(cli::split_shape_list("x:1,3,224,224") == std::vector<std::string>{"x:1,3,224,224"});
}

TEST_CASE("build checks a shape range over the model and names what cannot follow it yet",
          "[cli][shape-profiles]") {
  TempDir dir;
  const std::string out = dir.file("t.engine");
  const std::string base = "build " + model("transformer_block") + " --arch sm_90 -o " + out + " ";
  // A range the model takes, in each spelling: one engine (its fused
  // attention takes run-time sizes too: tests/attention_range_test.cpp).
  for (const std::string flags :
       {"--min-shape x:1x16x64 --opt-shape x:2x16x64 --max-shape x:64x16x64",
        "--minShapes=x:1x16x64 --optShapes=x:2x16x64 --maxShapes=x:64x16x64",
        "--shape-profile x:1x16x64/2x16x64/64x16x64"}) {
    std::filesystem::remove(out);
    auto r = run_graphc(base + flags);
    INFO(flags << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(std::filesystem::exists(out));
  }
  std::filesystem::remove(out);
  // Ranges the model cannot take, or out of order: exit 2, named, no file.
  struct Bad {
    std::string flags, says;
  };
  for (const Bad& c : std::vector<Bad>{
           {"--min-shape x:1x8x64 --opt-shape x:2x16x64 --max-shape x:4x32x64",
            "input 'x' dim 1: the model fixes it at 16, the range is 8..32"},
           {"--min-shape x:4x16x64 --opt-shape x:2x16x64 --max-shape x:8x16x64",
            "input 'x' dim 0: opt 2 is below min 4"},
           {"--min-shape y:1x16x64 --opt-shape y:2x16x64 --max-shape y:4x16x64",
            "names 'y', which is not a model input"},
       }) {
    auto r = run_graphc(base + c.flags);
    INFO(c.flags << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, c.says));
    CHECK_FALSE(std::filesystem::exists(out));
  }
  // min = opt = max is one shape: an engine as with --shape.
  auto same = run_graphc(base + "--min-shape x:3x16x64 --opt-shape x:3x16x64 --max-shape x:3x16x64");
  INFO(same.output);
  CHECK(same.exit_code == 0);
  CHECK(std::filesystem::exists(out));
}

TEST_CASE("trtexec flags that do not apply are warned about or refused", "[cli][trtexec]") {
  TempDir dir;
  const std::string out = dir.file("m.engine");
  auto warned = run_graphc("build " + model("mlp") + " -o " + out +
                           " --arch sm_90 --workspace=1024 --explicitBatch");
  INFO(warned.output);
  CHECK(warned.exit_code == 0);
  CHECK(contains(warned.output, "--workspace ignored"));
  CHECK(contains(warned.output, "--explicitBatch ignored"));
  for (const std::string flag : {"--int8", "--best"}) {
    auto r = run_graphc("build " + model("mlp") + " -o " + dir.file("x.engine") + " --arch sm_90 " +
                        flag);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, flag + ": graphc"));
    CHECK_FALSE(std::filesystem::exists(dir.file("x.engine")));
  }
  // run: refused before the engine is even read.
  auto streams = run_graphc("run " + out + " --streams=2");
  CHECK(streams.exit_code == 2);
  CHECK(contains(streams.output, "runtime API"));
  auto graphs = run_graphc("run " + out + " --useCudaGraph --no-cuda-graph");
  CHECK(graphs.exit_code == 2);
}

TEST_CASE("unknown flags name the nearest known flag or the command they belong to", "[cli]") {
  struct Case {
    std::string args, says;
  };
  const std::string mlp = model("mlp");
  for (const Case& c : std::vector<Case>{
           {"build --onxx " + mlp + " -o x.engine", "did you mean '--onnx'?"},
           {"build " + mlp + " --savEngine x.engine", "did you mean '--saveEngine'?"},
           {"build " + mlp + " -o x.engine --SHAPES x:1", "did you mean '--shapes'?"},
           {"inspect " + mlp + " --jsn",
            "unknown flag '--jsn' for 'graphc inspect'; did you mean "
            "'--json'?"},
           {"build " + mlp + " -o x.engine --iterations 5",
            "'--iterations' is a flag of 'graphc run', not of 'graphc build'"},
           {"build " + mlp + " -o x.engine --zzzzzzzz", "unknown flag '--zzzzzzzz'"},
           {"--onnx=" + mlp + " --saveEngine=x.engine", "needs a command: graphc build --onnx"},
           {"--loadEngine=x.engine", "graphc run --loadEngine"},
       }) {
    auto r = run_graphc(c.args);
    INFO(c.args << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, c.says));
  }
  CHECK(cli::edit_distance("--onxx", "--onnx") == 1);
  CHECK(cli::edit_distance("--FP16", "--fp16") == 0);  // case is ignored
  CHECK(cli::edit_distance("", "abc") == 3);
  CHECK(cli::edit_distance("kitten", "sitting") == 3);
  CHECK(cli::nearest_name("--iteratons", {"--iterations", "--input"}) == "--iterations");
  CHECK(cli::nearest_name("--frobnicate", {"--iterations", "--input"}).empty());
}

TEST_CASE("build without --arch targets this machine's GPU, or says how to name one", "[cli]") {
  TempDir dir;
  const std::string out = dir.file("native.engine");
  // The stand-in driver reports one sm_90 GPU.
  auto fake =
      run_graphc_binary(kFakeDriver + GRAPHC_BINARY, "build " + model("mlp") + " -o " + out);
  INFO(fake.output);
  REQUIRE(fake.exit_code == 0);
  CHECK(contains(fake.output, "for sm_90 (CUBIN + PTX)"));
  if (have_gpu()) return;  // a real GPU answers for itself
  auto none = run_graphc("build " + model("mlp") + " -o " + dir.file("none.engine"));
  INFO(none.output);
  CHECK(none.exit_code == 2);
  CHECK(contains(none.output, "no --arch given"));
  CHECK(contains(none.output, "--arch sm_90"));
  CHECK_FALSE(std::filesystem::exists(dir.file("none.engine")));
}

TEST_CASE("graphc run takes trtexec's spellings", "[cli][trtexec]") {
  TempDir dir;
  const std::string engine = dir.file("two.engine");
  REQUIRE(run_graphc("build " + two_input_model(dir) +
                     " --shape input:2x8,other:1x1 --arch sm_90 "
                     "-o " +
                     engine)
              .exit_code == 0);
  auto npy = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i + 1);
    auto bytes = npy::serialize(
        1, shape, std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    REQUIRE(bytes.ok());
    return dir.write(name, *bytes);
  };
  const std::string in = npy("input.npy", {2, 8}), other = npy("other.npy", {1, 1});
  auto r = run_graphc_binary(kFakeDriver + GRAPHC_BINARY,
                             "run --loadEngine=" + engine + " --loadInputs=input:" + in +
                                 ",other:" + other +
                                 " --warmUp=0 --iterations=2 --useCudaGraph --dumpProfile"
                                 " --shapes=input:2x8 --avgRuns=10");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "input        input float32 2x8 from " + in));
  CHECK(contains(r.output, "input        other float32 1x1 from " + other));
  CHECK(contains(r.output, "one CUDA graph"));
  CHECK(contains(r.output, "profile      "));
  CHECK(contains(r.output, "--avgRuns ignored"));
  struct Bad {
    std::string args, says;
  };
  const std::string raw = dir.write("raw.bin", std::string(64, '\x01'));
  for (const Bad& c : std::vector<Bad>{
           {"--loadInputs input:" + raw, "not a .npy file: graphc reads .npy files"},
           {"--loadInputs input", "must look like NAME:FILE.npy"},
           {"--shapes input:3x8", "the engine was built for 2x8"},
           {"--shapes nope:3x8", "the engine has no input 'nope'"},
           {"--exportTimes " + dir.file("no/such/t.json"), "does not exist"},
       }) {
    auto b = run_graphc("run " + engine + " " + c.args);
    INFO(c.args << "\n" << b.output);
    CHECK((b.exit_code == 1 || b.exit_code == 2));
    CHECK(contains(b.output, c.says));
    CHECK_FALSE(contains(b.output, "no CUDA"));  // refused before the driver is loaded
  }
}

TEST_CASE("graphc --version names the commit, formats and libraries", "[cli]") {
  auto v = run_graphc("--version");
  INFO(v.output);
  CHECK(v.exit_code == 0);
  std::smatch m;
  CHECK(std::regex_search(
      v.output, m,
      std::regex(
          "^graphc [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{12}(\\+modified)?|unknown)\\)\n")));
  CHECK(contains(v.output, "engine format " + std::to_string(engine::kFormatVersion) + "\n"));
  CHECK(std::regex_search(
      v.output, std::regex("built with CUDA [0-9]+\\.[0-9]+ headers, NVRTC [0-9]+\\.[0-9]+\n")));
  CHECK(std::regex_search(v.output, std::regex("cuBLASLt: ([0-9]+\\.[0-9]+\\.[0-9]+|not found)")));
  CHECK(std::regex_search(v.output, std::regex("cuDNN: ([0-9]+\\.[0-9]+\\.[0-9]+|not found)")));
  // With the stand-in driver it finds the driver and its GPU.
  auto fake = run_graphc_binary(kFakeDriver + GRAPHC_BINARY, "--version");
  CHECK(contains(fake.output, "CUDA driver: found, GPU 0 is sm_90"));
  // A library that is not there is reported, not fatal.
  auto missing = run_graphc_binary(
      "GRAPHC_CUDNN_PATH=/nonexistent/libcudnn.so.9 " + std::string(GRAPHC_BINARY), "--version");
  CHECK(missing.exit_code == 0);
  CHECK(contains(missing.output, "cuDNN: not found (/nonexistent/libcudnn.so.9)"));
}

TEST_CASE("exit codes: 0 ok, 1 error, 2 usage, 3 accuracy", "[cli]") {
  CHECK(cli::accuracy_exit_code(0) == cli::kExitOk);
  CHECK(cli::accuracy_exit_code(2) == cli::kExitAccuracy);
  CHECK(cli::kExitAccuracy == 3);
  CHECK(cli::report(invalid_argument("bad flag")) == 2);
  CHECK(cli::report(not_found("no file")) == 1);
  CHECK(cli::report(Status::ok_status()) == 0);
  CHECK(run_graphc("inspect " + model("mlp")).exit_code == 0);
  CHECK(run_graphc("inspect /nonexistent/model.onnx").exit_code == 1);
  CHECK(run_graphc("inspect " + model("mlp") + " --precision fp64").exit_code == 2);
  CHECK(run_graphc("inspect --frobnicate " + model("mlp")).exit_code == 2);
  // 3: `run --check` (tests/json_output_test.cpp, cli_run_test.cpp) and a failing
  // conformance case (json_output_test.cpp).
}
