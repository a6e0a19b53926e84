// graphc build end to end on small elementwise ONNX models (no GPU needed):
// the engine reads back and validates with CUBIN + PTX of every kernel
// module for every --arch, inspect shows it, builds are byte-identical, a
// rebuild is served by the NVRTC cache, and every failure (bad --arch, no GPU
// lowering, missing model, unwritable output) is a clear error that leaves no
// file behind. The progress line appears only on a terminal.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "driver/engine_build.h"
#include "engine_format/engine_file.h"
#include "runtime/engine_loader.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using graphc::testing::contains;
using graphc::testing::OnnxModel;
using graphc::testing::run_graphc;
using graphc::testing::TempDir;

namespace {

namespace fs = std::filesystem;

// Sets an environment variable for the scope (the graphc child inherits it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// y = sigmoid(tanh(x + b)) (one fused kernel), z = reshape(exp(x)) (an
// elementwise kernel and a copy: z is a view that is a graph output).
void write_elementwise_model(const std::string& path) {
  OnnxModel m(17, "small");
  m.input("x", onnx::TensorProto::FLOAT, {2, 3, 8});
  m.output("y", onnx::TensorProto::FLOAT, {2, 3, 8});
  m.output("z", onnx::TensorProto::FLOAT, {6, 8});
  std::vector<float> bias(8);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.25f * static_cast<float>(i);
  m.initializer(graphc::testing::float_tensor("b", {8}, bias));
  m.initializer(graphc::testing::int64_tensor("shape", {2}, {6, 8}));
  m.node("Add", {"x", "b"}, {"t"}, "add");
  m.node("Tanh", {"t"}, {"u"}, "tanh");
  m.node("Sigmoid", {"u"}, {"y"}, "sigmoid");
  m.node("Exp", {"x"}, {"e"}, "exp");
  m.node("Reshape", {"e", "shape"}, {"z"}, "reshape");
  m.write(path);
}

// Gemm on int32 with a fractional alpha is valid ONNX but has no GPU
// lowering (the generated integer GEMM scales exactly, by integers only).
void write_unlowerable_model(const std::string& path) {
  OnnxModel m(17, "int_gemm");
  m.input("a", onnx::TensorProto::INT32, {4, 8});
  m.input("b", onnx::TensorProto::INT32, {8, 4});
  m.output("y", onnx::TensorProto::INT32, {4, 4});
  auto* n = m.node("Gemm", {"a", "b"}, {"y"}, "gemm");
  graphc::testing::attr_float(n, "alpha", 0.5f);
  m.write(path);
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A temp folder holding model.onnx, with the NVRTC cache in cache/ (so hits
// and misses do not depend on earlier runs).
struct BuildDir {
  TempDir dir;
  std::string model = dir.file("model.onnx");
  std::string cache = dir.file("cache");
  ScopedEnv env{"XDG_CACHE_HOME", cache};
  BuildDir() { write_elementwise_model(model); }
  std::string build(const std::string& out, const std::string& flags) const {
    return "build " + model + " -o " + dir.file(out) + " " + flags;
  }
};

}  // namespace

TEST_CASE("graphc build writes an engine with CUBIN and PTX of every module for each arch",
          "[cli][build]") {
  // Two archs: the engine validates, has one code module per distinct kernel
  // with a CUBIN (ELF) and PTX (.target of that arch, defining the module's
  // entries) for each arch, the copy kernel for the reshape output, and the
  // summary line names the path, size, kernels, archs and build time.
  BuildDir b;
  auto r = run_graphc(b.build("model.engine", "--arch sm_80 --arch sm_90"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::string path = b.dir.file("model.engine");
  CHECK(std::regex_search(r.output,
                          std::regex("wrote " + path +
                                     " \\([0-9.]+ KiB\\): 3 kernels in 2 modules for sm_80, sm_90 "
                                     "\\(CUBIN \\+ PTX\\), .* built in [0-9.]+ s\n")));
  CHECK_FALSE(contains(r.output, "\r"));  // not a terminal: no progress line
  auto engine = engine::read_engine_file(path);
  INFO(engine.status().message());
  REQUIRE(engine.ok());
  const engine::Manifest& m = engine->manifest;
  REQUIRE(engine::module_count(m) == 2);
  CHECK(m.code_modules_size() == 4);
  REQUIRE(engine->code.size() == 8);
  for (const auto& blob : engine->code) {
    INFO(blob.arch << " module " << blob.module);
    if (blob.kind == engine::CodeBlob::Kind::kCubin) {
      CHECK(blob.bytes.rfind("\x7f"
                             "ELF",
                             0) == 0);
      continue;
    }
    CHECK(contains(blob.bytes, ".target " + blob.arch));
    for (const auto& k : m.kernels())
      if (!k.copy() && k.module() == blob.module)
        CHECK(contains(blob.bytes, ".entry " + k.module_entry()));
  }
  REQUIRE(m.kernels_size() == 3);
  int copies = 0;
  for (const auto& k : m.kernels()) copies += k.copy() ? 1 : 0;
  CHECK(copies == 1);
  CHECK(m.inputs(0).name() == "x");
  CHECK(m.outputs(1).name() == "z");
  for (int sm : {80, 90, 100}) {  // sm_100 runs the sm_90 PTX
    auto exe = runtime::executable_from_engine(*engine, sm);
    INFO(sm << ": " << exe.status().message());
    REQUIRE(exe.ok());
    CHECK(exe->images.size() == 2);
  }

  auto shown = run_graphc("inspect " + path);
  INFO(shown.output);
  CHECK(shown.exit_code == 0);
  // Written with a refit record (format 5), readable by version-2 readers.
  CHECK(contains(shown.output, "format    version 5 (readers of version 2 and newer)"));
  CHECK(contains(shown.output, "refit     structure "));
  CHECK(std::regex_search(shown.output, std::regex("sm_80 +PTX .* CUBIN ")));
  CHECK(std::regex_search(shown.output, std::regex("sm_90 +PTX .* CUBIN ")));
  CHECK(std::regex_search(shown.output, std::regex("x +float32\\[2x3x8\\]")));
  CHECK(contains(shown.output, "copy/reshape  <- reshape"));
  CHECK(contains(shown.output, "<- add, tanh, sigmoid"));
}

TEST_CASE("graphc build is deterministic across caches and --arch order", "[cli][build]") {
  // Cold cache, warm cache, --no-cache and the archs in the other order (or
  // repeated) all give the same bytes.
  BuildDir b;
  REQUIRE(run_graphc(b.build("a.engine", "--arch sm_80 --arch sm_90")).exit_code == 0);
  REQUIRE(run_graphc(b.build("b.engine", "--arch sm_80 --arch sm_90")).exit_code == 0);
  REQUIRE(run_graphc(b.build("c.engine", "--arch sm_90 --arch sm_80 --arch sm_90 --no-cache"))
              .exit_code == 0);
  std::string a = read_file(b.dir.file("a.engine"));
  REQUIRE(!a.empty());
  CHECK(a == read_file(b.dir.file("b.engine")));
  CHECK(a == read_file(b.dir.file("c.engine")));
}

TEST_CASE("a rebuild is served by the NVRTC cache, -v logs phases and cache use", "[cli][build]") {
  // 2 modules x 2 archs: the first build misses 4 times, the second hits 4
  // times; -v logs each phase's duration; --no-cache says the cache is off.
  BuildDir b;
  auto first = run_graphc(b.build("a.engine", "--arch sm_80 --arch sm_90 -v"));
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  CHECK(contains(first.output,
                 "NVRTC cache: 0 hits, 4 misses of 4 compilations (2 kernel "
                 "modules x 2 architectures)"));
  for (const char* phase : {"import", "optimize", "emit", "compile", "write"})
    CHECK(std::regex_search(first.output,
                            std::regex(std::string("build: ") + phase + " took [0-9]+ ms")));
  auto second = run_graphc("--verbose " + b.build("b.engine", "--arch sm_90 --arch sm_80"));
  INFO(second.output);
  REQUIRE(second.exit_code == 0);
  CHECK(contains(second.output, "NVRTC cache: 4 hits, 0 misses"));
  auto debug = run_graphc(b.build("c.engine", "--arch sm_90 --log-level debug"));
  CHECK(std::regex_search(debug.output, std::regex("NVRTC cache hit ew_\\w+ \\(sm_90\\)")));
  auto off = run_graphc(b.build("d.engine", "--arch sm_90 --no-cache -v"));
  CHECK(contains(off.output, "NVRTC cache off (--no-cache): 2 compilations"));
  auto quiet = run_graphc(b.build("e.engine", "--arch sm_90"));
  CHECK_FALSE(contains(quiet.output, "[graphc info]"));
}

TEST_CASE("graphc build draws a progress line only on a terminal", "[cli][build]") {
  // Under a pseudo-terminal (script(1)) stderr is a tty: the status line is
  // rewritten with \r through the phases and the compile bar, then cleared
  // before the summary.
  if (::system("command -v script >/dev/null 2>&1") != 0) {
    WARN("script(1) is not installed; skipping the terminal check");
    return;
  }
  BuildDir b;
  std::string cmd = "script -qec '" + std::string(GRAPHC_BINARY) + " " +
                    b.build("t.engine", "--arch sm_90") + "' /dev/null 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int status = ::pclose(p);
  INFO(out);
  CHECK(status == 0);
  for (const char* part :
       {"\r\033[K[graphc build] import", "[graphc build] optimize", "[graphc build] emit",
        "[graphc build] compile [", "2/2 kernels", "[graphc build] write", "\r\033[Kwrote "})
    CHECK(contains(out, part));
}

TEST_CASE("graphc build refuses bad --arch values before doing any work", "[cli][build]") {
  // Unknown forms, archs NVRTC cannot target and arch-specific variants are
  // usage errors naming the flag; --arch native without a GPU says a GPU is
  // needed. Nothing is written.
  BuildDir b;
  struct Case {
    std::string arch, message;
  };
  for (const Case& c : {Case{"sm_12",
                             "--arch 'sm_12': architecture 'sm_12' is not supported by "
                             "NVRTC"},
                        Case{"foo", "--arch 'foo': expected sm_NN (sm_80, sm_90, ...) or native"},
                        Case{"sm90", "--arch 'sm90': expected sm_NN"},
                        Case{"sm_90a", "arch-specific targets such as 'sm_90a' are not supported"},
                        Case{"", "expected sm_NN"}}) {
    auto r = run_graphc(b.build("x.engine", "--arch '" + c.arch + "'"));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, c.message));
  }
  if (!driver::device_sm().ok()) {
    auto r = run_graphc(b.build("x.engine", "--arch native"));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, "--arch native needs a GPU (name one, e.g. --arch sm_90)"));
  }
  auto none = run_graphc("build " + b.model + " -o " + b.dir.file("x.engine"));
  CHECK(none.exit_code == 2);
  CHECK(contains(none.output, "--arch"));
  CHECK(files_in(b.dir.path()) == std::vector<std::string>{"model.onnx"});
}

TEST_CASE("graphc build names the kernels that have no GPU lowering and writes nothing",
          "[cli][build]") {
  // The unlowerable integer Gemm fails the build with the kernel's name, kind
  // and op; no engine and no temporary file is left.
  BuildDir b;
  std::string model = b.dir.file("int_gemm.onnx");
  write_unlowerable_model(model);
  auto r = run_graphc("build " + model + " --arch sm_90 -o " + b.dir.file("x.engine"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "no GPU lowering for 1 of the model's kernels"));
  CHECK(contains(r.output, "'gemm' (Gemm)"));
  CHECK(files_in(b.dir.path()) == std::vector<std::string>{"int_gemm.onnx", "model.onnx"});
}

TEST_CASE("graphc build reports missing models and unwritable outputs and leaves no file",
          "[cli][build]") {
  // A missing model, an output folder that does not exist, a file where the
  // folder should be, a folder as the output and -o naming the model itself
  // all fail with a message naming the path; the folder is left as it was.
  BuildDir b;
  auto missing =
      run_graphc("build " + b.dir.file("nope.onnx") + " --arch sm_90 -o " + b.dir.file("x.engine"));
  CHECK(missing.exit_code == 1);
  CHECK(contains(missing.output, "nope.onnx"));
  auto no_folder = run_graphc(b.build("sub/x.engine", "--arch sm_90"));
  CHECK(no_folder.exit_code == 1);
  CHECK(contains(no_folder.output, "folder '" + b.dir.file("sub") + "' does not exist"));
  auto file_parent = run_graphc("build " + b.model + " --arch sm_90 -o " + b.model + "/x.engine");
  CHECK(file_parent.exit_code == 1);
  CHECK(contains(file_parent.output, "'" + b.model + "' is not a folder"));
  auto folder = run_graphc("build " + b.model + " --arch sm_90 -o " + b.dir.path());
  CHECK(folder.exit_code == 1);
  CHECK(contains(folder.output, "it is a folder"));
  auto itself = run_graphc("build " + b.model + " --arch sm_90 -o " + b.model);
  CHECK(itself.exit_code == 2);
  CHECK(contains(itself.output, "refusing to overwrite it"));
  auto bad_model = run_graphc("build " + b.dir.write("junk.onnx", "not a model") +
                              " --arch sm_90 -o " + b.dir.file("x.engine"));
  CHECK(bad_model.exit_code == 1);
  CHECK(files_in(b.dir.path()) == std::vector<std::string>{"junk.onnx", "model.onnx"});
}
