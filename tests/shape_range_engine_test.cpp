// Engines that serve shape ranges, end to end without a GPU: built from a
// model with symbolic dims (format 4, profiles recorded, static engines
// untouched), inspected (profiles in text and JSON), and run through the
// stand-in driver (tests/fake_cuda: real copies and CUDA graphs, kernels do
// nothing). The model's output is a view of its input, so every byte the
// runtime moves at each shape is checked against the reference executor.
// The runtime API on such engines: tests/gpu/shape_range_gpu_test.cpp.
#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "engine_format/engine_file.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/shape_range_fixture.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

std::string fake_env() { return std::string("LD_LIBRARY_PATH=") + GRAPHC_FAKE_CUDA_DIR + " "; }

}  // namespace

TEST_CASE("an engine for a shape range records its profiles, and a fixed one does not",
          "[shape-range][cli]") {
  RangeFixture f;
  auto header = engine::read_engine_file_header(f.engine);
  REQUIRE(header.ok());
  CHECK(header->min_reader_version == engine::kFormatVersionShapeRange);
  auto fixed = engine::read_engine_file_header(f.static_engine);
  REQUIRE(fixed.ok());
  CHECK(fixed->min_reader_version < engine::kFormatVersionShapeRange);
  auto text = run_graphc("inspect " + f.engine);
  INFO(text.output);
  CHECK(text.exit_code == 0);
  CHECK(contains(text.output, "x                        float32[batchx4x8]"));
  CHECK(contains(text.output, "y                        float32[batchx32]"));
  CHECK(contains(text.output, "shapes    set at run time: 1 profile over batch"));
  CHECK(contains(text.output, "profile 0: x: 1x4x8 / 4x4x8 / 9x4x8"));
  auto json = run_graphc("inspect " + f.engine + " --json");
  REQUIRE(json.exit_code == 0);
  const auto j = nlohmann::json::parse(json.output);
  REQUIRE(j["profiles"].size() == 1);
  CHECK(j["profiles"][0]["inputs"]["x"]["min"] == std::vector<int64_t>{1, 4, 8});
  CHECK(j["profiles"][0]["inputs"]["x"]["opt"] == std::vector<int64_t>{4, 4, 8});
  CHECK(j["profiles"][0]["inputs"]["x"]["max"] == std::vector<int64_t>{9, 4, 8});
  CHECK(j["symbols"] == std::vector<std::string>{"batch"});
  CHECK(j["outputs"][0]["dims"] == std::vector<std::string>{"batch", "32"});
  CHECK(j["outputs"][0]["shape"] == std::vector<int64_t>{9, 32});  // the largest
  auto fixed_json = nlohmann::json::parse(run_graphc("inspect " + f.static_engine + " --json").output);
  CHECK(fixed_json["profiles"].empty());
}

TEST_CASE("graphc run --shape runs any shape of the profile and checks it", "[shape-range][cli]") {
  RangeFixture f;
  // The copy of the view is real in the stand-in driver, the Mul kernel is
  // not: --check passes for y alone, at every shape.
  for (int batch : {1, 2, 4, 7, 9}) {
    const std::string shape = std::to_string(batch) + "x4x8";
    auto r = run_graphc_binary(fake_env() + GRAPHC_BINARY,
                               "run " + f.engine + " --shape x:" + shape +
                                   " --iterations 2 --warmup-ms 0 --check --onnx " + f.onnx);
    INFO(r.output);
    CHECK(contains(r.output, "input        x float32 " + shape + " from random data"));
    CHECK(contains(r.output, "check        y: max abs error 0"));
    CHECK(r.exit_code == 3);  // `scaled` (a kernel) is garbage in the stand-in driver
  }
  // Out of the range, a wrong rank, a fixed dim: usage errors, before the device.
  auto big = run_graphc("run " + f.engine + " --shape x:10x4x8");
  CHECK(big.exit_code == 2);
  CHECK(contains(big.output, "input 'x' dim 0 is 10, outside shape profile 0's range [1, 9]"));
  auto rank = run_graphc("run " + f.engine + " --shape x:2x32");
  CHECK(rank.exit_code == 2);
  CHECK(contains(rank.output, "input 'x' has rank 3; got shape 2x32 of rank 2"));
  auto fixed_dim = run_graphc("run " + f.engine + " --shape x:2x5x8");
  CHECK(fixed_dim.exit_code == 2);
  CHECK(contains(fixed_dim.output, "input 'x' dim 1 is 5, but the engine fixes it at 4"));
  // A second profile, chosen with --shape-profile-index (trtexec's --profile=N).
  const std::string two = f.dir.file("two.engine");
  auto built = run_graphc("build " + f.onnx + " --shape-profile x:1x4x8/2x4x8/3x4x8 "
                          "--shape-profile x:20x4x8/24x4x8/32x4x8 --arch sm_90 -o " + two);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  auto inspect_two = run_graphc("inspect " + two);
  CHECK(contains(inspect_two.output, "2 profiles over batch"));
  CHECK(contains(inspect_two.output, "profile 1: x: 20x4x8 / 24x4x8 / 32x4x8"));
  auto in_second = run_graphc_binary(fake_env() + GRAPHC_BINARY,
                                     "run " + two + " --shape-profile-index 1 --shape x:30x4x8 "
                                     "--iterations 1 --warmup-ms 0 --check --onnx " + f.onnx);
  INFO(in_second.output);
  CHECK(contains(in_second.output, "input        x float32 30x4x8"));
  CHECK(contains(in_second.output, "check        y: max abs error 0"));
  auto not_in_first = run_graphc("run " + two + " --shape x:30x4x8");
  CHECK(not_in_first.exit_code == 2);
  CHECK(contains(not_in_first.output, "outside shape profile 0's range [1, 3]"));
  auto default_opt = run_graphc_binary(fake_env() + GRAPHC_BINARY,
                                       "run " + two + " --shape-profile-index 1 --iterations 1 "
                                       "--warmup-ms 0");
  CHECK(contains(default_opt.output, "input        x float32 24x4x8"));  // profile 1's opt
  auto no_such = run_graphc("run " + two + " --shape-profile-index 2");
  CHECK(no_such.exit_code == 2);
  CHECK(contains(no_such.output, "shape profile 2 does not exist (the engine has 2)"));
  auto on_static = run_graphc("run " + f.static_engine + " --shape x:2x4x8");
  CHECK(on_static.exit_code == 2);
  CHECK(contains(on_static.output, "the engine was built for 4x4x8 only"));
}


TEST_CASE("damaged shape-range fields of an engine are refused, naming the field",
          "[shape-range][engine-format]") {
  RangeFixture f;
  auto good = engine::read_engine_file(f.engine);
  REQUIRE(good.ok());
  REQUIRE(engine::serialize_engine(*good).ok());
  auto refused = [&](const std::function<void(engine::Manifest&)>& damage, const std::string& says) {
    engine::EngineContents c = *good;
    damage(c.manifest);
    auto bytes = engine::serialize_engine(c);
    INFO(says);
    REQUIRE_FALSE(bytes.ok());
    CHECK(bytes.status().code() == ErrorCode::kInvalidEngine);
    CHECK_THAT(bytes.status().message(), Catch::Contains(says));
  };
  auto varying_tensor = [](engine::Manifest& m) -> engine::Tensor& {
    for (auto& t : *m.mutable_tensors())
      if (t.dim_sizes_size() > 0) return t;
    FAIL("no varying tensor");
    return *m.mutable_tensors(0);
  };
  refused([&](engine::Manifest& m) { varying_tensor(m).set_dim_sizes(0, 99); },
          "size index 99 is out of range");
  refused([&](engine::Manifest& m) { varying_tensor(m).add_dim_sizes(-1); }, "dim sizes for rank");
  refused([](engine::Manifest& m) { m.mutable_shape_range()->mutable_sizes(0)->add_code(2); },
          "shape range size 0");
  refused([](engine::Manifest& m) { m.mutable_shape_range()->add_symbols("extra"); },
          "symbol 'extra' is no input's dim");
  refused([](engine::Manifest& m) { m.mutable_shape_range()->add_symbols("batch"); },
          "empty or repeated");
  refused([](engine::Manifest& m) { m.mutable_shape_range()->clear_profiles(); }, "no profiles");
  refused([](engine::Manifest& m) {
            m.mutable_shape_range()->mutable_profiles(0)->mutable_inputs(0)->set_min(0, 5);
          },
          "is not 0 <= min <= opt <= max");
  refused([](engine::Manifest& m) {
            m.mutable_shape_range()->mutable_profiles(0)->mutable_inputs(0)->set_max(1, 5);
          },
          "a fixed dim of 4 given the range");
  refused([](engine::Manifest& m) {  // a profile larger than the tensors were sized for
            m.mutable_shape_range()->mutable_profiles(0)->mutable_inputs(0)->set_max(0, 10);
          },
          "takes more than its");
  refused([](engine::Manifest& m) { m.clear_shape_range(); }, "but the engine no shape range");
  refused([](engine::Manifest& m) {
            for (auto& k : *m.mutable_kernels())
              if (!k.copy()) k.add_size_block(1000);
          },
          "run-time size index 1000");
}
