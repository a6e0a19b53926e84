// graphc refit on the command line: the file it writes is the file graphc
// build writes for the new model (also in place, over the engine itself),
// inspect shows the refit record, and every refusal (missing files, a file
// that is no engine, an engine of another model or without a record, no
// -o, an output folder that does not exist) is a clear message, a non-zero
// exit and no file, temporary or not, left behind.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/refit_test_util.h"
#include "tests/test_util.h"

using namespace graphc;
using graphc::testing::contains;
using graphc::testing::run_graphc;
using graphc::testing::TempDir;

namespace {

namespace fs = std::filesystem;

std::string q(const std::string& path) { return "'" + path + "'"; }

// Names in `dir` other than `keep`: what a failed command left behind.
std::vector<std::string> files_besides(const TempDir& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> extra;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    const std::string name = e.path().filename().string();
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) extra.push_back(name);
  }
  return extra;
}

}  // namespace

TEST_CASE("graphc refit writes the file graphc build writes for the new model", "[cli][refit]") {
  TempDir dir;
  const std::string model = testing::source_path("models/conv_block.onnx");
  const std::string new_model =
      dir.write("new.onnx", testing::reweighted_model(model, testing::test_rng()));
  const std::string flags = " --arch sm_90 --precision fp16";
  auto old_build = run_graphc("build " + q(model) + flags + " -o " + q(dir.file("old.engine")));
  INFO(old_build.output);
  REQUIRE(old_build.exit_code == 0);
  auto new_build = run_graphc("build " + q(new_model) + flags + " -o " + q(dir.file("new.engine")));
  REQUIRE(new_build.exit_code == 0);
  auto refit = run_graphc("refit " + q(dir.file("old.engine")) + " " + q(new_model) + " -o " +
                          q(dir.file("refit.engine")));
  INFO(refit.output);
  REQUIRE(refit.exit_code == 0);
  CHECK(contains(refit.output, "wrote " + dir.file("refit.engine")));
  CHECK(contains(refit.output, "nothing compiled"));
  const std::string fresh = testing::read_file_bytes(dir.file("new.engine"));
  CHECK(testing::read_file_bytes(dir.file("refit.engine")) == fresh);
  CHECK(testing::read_file_bytes(dir.file("old.engine")) != fresh);

  auto inspect = run_graphc("inspect " + q(dir.file("refit.engine")));
  CHECK(contains(inspect.output, "format    version 5 (readers of version 2 and newer)"));
  CHECK(contains(inspect.output, "refit     structure "));
  CHECK(contains(inspect.output, "graphc refit keeps this build: --arch sm_90 --precision fp16"));
  auto json = run_graphc("inspect --json " + q(dir.file("refit.engine")));
  CHECK(contains(json.output, "\"build_flags\": \"--arch sm_90 --precision fp16\""));

  // In place: the engine's manifest and code are read before the file is replaced.
  auto in_place = run_graphc("refit " + q(dir.file("old.engine")) + " " + q(new_model) + " -o " +
                             q(dir.file("old.engine")));
  INFO(in_place.output);
  REQUIRE(in_place.exit_code == 0);
  CHECK(testing::read_file_bytes(dir.file("old.engine")) == fresh);
  CHECK(files_besides(dir, {"new.onnx", "old.engine", "new.engine", "refit.engine"}).empty());
}

TEST_CASE("graphc refit refusals are clear errors that leave no file", "[cli][refit]") {
  TempDir dir;
  const std::string mlp = testing::source_path("models/mlp.onnx");
  const std::string conv = testing::source_path("models/conv_block.onnx");
  REQUIRE(
      run_graphc("build " + q(mlp) + " --arch sm_90 -o " + q(dir.file("mlp.engine"))).exit_code ==
      0);
  dir.write("not_an.engine", "this is not an engine\n");
  const std::string out = " -o " + q(dir.file("out.engine"));
  struct Case {
    std::string what, args, message;
    int exit_code;
  };
  const std::vector<Case> cases = {
      {"a missing engine", q(dir.file("missing.engine")) + " " + q(mlp) + out, "does not exist", 1},
      {"a missing model", q(dir.file("mlp.engine")) + " " + q(dir.file("missing.onnx")) + out,
       "missing.onnx", 1},
      {"a file that is no engine", q(dir.file("not_an.engine")) + " " + q(mlp) + out,
       "not a graphc engine", 1},
      {"an engine of another model", q(dir.file("mlp.engine")) + " " + q(conv) + out,
       "differs from the one the engine was built from", 1},
      {"no -o", q(dir.file("mlp.engine")) + " " + q(mlp), "--output is required", 2},
      {"an output folder that does not exist",
       q(dir.file("mlp.engine")) + " " + q(mlp) + " -o " + q(dir.file("nowhere/out.engine")),
       "does not exist", 1},
      {"-o naming the model", q(dir.file("mlp.engine")) + " " + q(mlp) + " -o " + q(mlp),
       "is the model itself", 2},
  };
  for (const Case& c : cases) {
    auto r = run_graphc("refit " + c.args);
    INFO(c.what << ": " << r.output);
    CHECK(r.exit_code == c.exit_code);
    if (c.what != "no -o") CHECK(contains(r.output, "graphc: error:"));  // CLI11's own words
    CHECK(contains(r.output, c.message));
    CHECK(files_besides(dir, {"mlp.engine", "not_an.engine"}).empty());
  }

  // An engine from before refit support (no record): refused, with what to do.
  auto built = cli::build_engine_from_flags(testing::refit_test_flags(mlp), {});
  REQUIRE(built.ok());
  built->contents.manifest.clear_refit();
  auto old = engine::serialize_engine(built->contents);
  REQUIRE(old.ok());
  dir.write("old.engine", *old);
  auto r = run_graphc("refit " + q(dir.file("old.engine")) + " " + q(mlp) + out);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "built before refit support"));
  CHECK(files_besides(dir, {"mlp.engine", "not_an.engine", "old.engine"}).empty());
}
