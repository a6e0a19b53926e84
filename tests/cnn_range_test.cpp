// CNNs over a batch range without a GPU: the engine records each cuDNN
// convolution's run-time sizes, the runtime's descriptors at a shape and at
// each profile's corners (where the workspace is planned), the per-shape
// set-up cache, and the refusals of what the kernels cannot follow yet. The
// kernel emulator checks the same models' results at every range check point
// (tests/emu/cnn_range_cases.cpp); a GPU runs them in
// tests/gpu/cnn_range_gpu_test.cpp.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "engine_format/engine_file.h"
#include "runtime/conv_shapes.h"
#include "runtime/engine_loader.h"
#include "tests/cli_util.h"
#include "tests/cnn_range_models.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

runtime::Executable executable_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  auto parsed = engine::parse_engine(bytes.str());
  INFO(parsed.status().message());
  REQUIRE(parsed.ok());
  auto exe = runtime::executable_from_engine(*parsed, 90);
  INFO(exe.status().message());
  REQUIRE(exe.ok());
  return std::move(*exe);
}

}  // namespace

TEST_CASE("a CNN range engine records its convs' run-time sizes and sets them per shape",
          "[shape-range][cnn]") {
  // fp16 makes the convs channels-last (N x H x W x C values): the range
  // shapes must follow that layout too.
  const std::string precision = GENERATE(std::string("fp32"), std::string("fp16"));
  INFO(precision);
  TempDir dir;
  const std::string onnx = dir.file("resnet.onnx");
  cnn::resnet_block().write(onnx);
  const std::string engine = dir.file("resnet.engine");
  auto built = run_graphc("build --arch sm_90 --precision " + precision + " " + onnx +
                          " --min-shape x:1x8x12x12 --opt-shape x:8x8x12x12 "
                          "--max-shape x:32x8x12x12 -o " + engine);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  const runtime::Executable exe = executable_of(engine);
  runtime::ShapeState shapes(exe);
  const int64_t three[] = {3, 8, 12, 12};
  REQUIRE(shapes.set_input_shape(0, "x", three).ok());
  REQUIRE(shapes.resolve({"x"}).ok());
  int convs = 0, sized_kernels = 0, transposes = 0;
  for (size_t i = 0; i < exe.launches.size(); ++i) {
    const runtime::Launch& l = exe.launches[i];
    if (l.kernel() && !l.kernel()->size_block.empty()) ++sized_kernels;
    // The NCHW <-> NHWC transposes around fp16's channels-last convs move
    // 32x32 tiles (a 32x8 block) with the batch at run time.
    if (l.kernel() && l.label().find("transpose") != std::string::npos) {
      INFO(l.label());
      CHECK(l.kernel()->block[0] == 32);
      CHECK(l.kernel()->block[1] == 8);
      ++transposes;
    }
    const runtime::ConvLaunch* c = l.conv();
    if (!c) continue;
    ++convs;
    INFO(l.label());
    CHECK((c->params.layout == engine::ConvLayout::kNhwc) == (precision == "fp16"));
    REQUIRE(c->sizes.size() == 5);  // N, in H W, out H W
    CHECK(c->params.n == 8);        // built at opt
    auto at = runtime::conv_params_at_shapes(l, shapes);
    INFO(at.status().message());
    REQUIRE(at.ok());
    CHECK(at->n == 3);
    CHECK(at->in == c->params.in);
    CHECK(at->out == c->params.out);
    CHECK(at->algorithm == -1);
    auto corners = runtime::conv_params_at_profile_corners(exe, i);
    REQUIRE(corners.ok());
    REQUIRE(corners->size() == 3);
    CHECK((*corners)[0].n == 1);
    CHECK((*corners)[1].n == 8);
    CHECK((*corners)[2].n == 32);
  }
  CHECK(convs == 3);  // two 3x3 and the 1x1 projection; MaxPool and the head are generated
  CHECK(sized_kernels >= 2);
  CHECK((transposes > 0) == (precision == "fp16"));
}

TEST_CASE("a conv's descriptor at a shape is checked as a recorded one is", "[cnn]") {
  engine::ConvParams p;
  p.n = 8;
  p.c = 8;
  p.k = 16;
  p.in = {12, 12, 0};
  p.filter = {3, 3, 0};
  p.out = {6, 6, 0};
  p.pads_begin = p.pads_end = {1, 1, 0};
  p.strides = {2, 2, 0};
  p.dilations = {1, 1, 0};
  p.algorithm = 1;
  const int64_t built[] = {8, 12, 12, 6, 6};
  auto same = engine::conv_params_at(p, built);
  REQUIRE(same.ok());
  CHECK(same->algorithm == 1);  // the recorded algorithm holds at the built shape only
  const int64_t other[] = {3, 17, 20, 9, 10};
  auto at = engine::conv_params_at(p, other);
  INFO(at.status().message());
  REQUIRE(at.ok());
  CHECK(at->algorithm == -1);
  CHECK(at->n == 3);
  const int64_t wrong[] = {3, 17, 20, 9, 9};
  auto bad = engine::conv_params_at(p, wrong);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("out[1] = 9, but the window over 20 gives 10"));
  const int64_t short_list[] = {3, 17, 20};
  CHECK_FALSE(engine::conv_params_at(p, short_list).ok());
}

TEST_CASE("per-shape set-ups are made once per key and a failed one is not kept", "[cnn]") {
  runtime::ShapeSetupCache<int> cache;
  int made = 0;
  auto make = [&]() -> Expected<std::unique_ptr<int>> { return std::make_unique<int>(++made); };
  auto a = cache.get("n=3", make);
  auto b = cache.get("n=3", make);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK(made == 1);
  auto failed = cache.get("n=5", []() -> Expected<std::unique_ptr<int>> {
    return unsupported("no algorithm fits");
  });
  CHECK_FALSE(failed.ok());
  CHECK(cache.size() == 1);
  REQUIRE(cache.get("n=5", make).ok());
  CHECK(made == 2);
}

TEST_CASE("CNN ranges the kernels cannot follow are refused at build, naming what",
          "[shape-range][cnn]") {
  TempDir dir;
  const std::string resnet = dir.file("resnet.onnx");
  cnn::resnet_block().write(resnet);
  const std::string out = " -o " + dir.file("e.engine");
  // The generated implicit-GEMM conv has no run-time batch: cuDNN takes them.
  auto generated = run_graphc("build --arch sm_90 " + resnet +
                              " --conv generated --min-shape x:1x8x12x12 --opt-shape x:8x8x12x12 "
                              "--max-shape x:32x8x12x12" + out);
  CHECK(generated.exit_code != 0);
  CHECK(contains(generated.output, "implicit-GEMM convolution does not take run-time sizes yet"));
  // The model fixes height and width: a range over them is refused naming the dim.
  auto fixed = run_graphc("build --arch sm_90 " + resnet +
                          " --min-shape x:1x8x8x8 --opt-shape x:8x8x12x12 --max-shape x:32x8x16x16" +
                          out);
  CHECK(fixed.exit_code == 2);
  CHECK(contains(fixed.output, "'x'"));
  CHECK(contains(fixed.output, "dim 2"));
  // Spatial ranges reach cuDNN's convs, not the generated pooling kernels.
  const std::string spatial = dir.file("spatial.onnx");
  OnnxModel m(18);
  m.input("x", onnx::TensorProto::FLOAT, {Dim("batch"), int64_t{4}, Dim("h"), Dim("w")});
  auto* pool = m.node("MaxPool", {"x"}, {"y"}, "pool");
  attr_ints(pool, "kernel_shape", {2, 2});
  m.output("y");
  m.write(spatial);
  auto pooled = run_graphc("build --arch sm_90 " + spatial +
                           " --min-shape x:1x4x4x4 --opt-shape x:2x4x8x8 --max-shape x:4x4x16x16" +
                           out);
  INFO(pooled.output);
  CHECK(pooled.exit_code != 0);
  // Refused before any kernel is generated: the expanded size of the pooled
  // output is not yet bounded over the box (range_bounds.h takes products,
  // not the expanded polynomial); otherwise the pooling kernel refuses it.
  CHECK(contains(pooled.output, "value 'y' is batchx4x(h - 1)x(w - 1) over the shape range"));
  CHECK_FALSE(std::ifstream(dir.file("e.engine")).good());  // no output file
}

TEST_CASE("an fp16 CNN range engine launches the kernels a static engine at opt launches",
          "[shape-range][cnn]") {
  // Channels-last convs bring transposes; over a batch range the unit-dim
  // ones (a squeeze-excitation's N x C x 1 x 1) must stay views as they do
  // in a static engine, and the others tiled.
  TempDir dir;
  const std::string onnx = dir.file("mobile.onnx");
  cnn::mobile_se_block().write(onnx);
  auto kernels = [&](const std::string& shapes, const std::string& name) {
    const std::string engine = dir.file(name);
    auto built = run_graphc("build --arch sm_90 --precision fp16 " + onnx + " " + shapes +
                            " -o " + engine);
    INFO(built.output);
    REQUIRE(built.exit_code == 0);
    std::vector<std::string> labels;
    const runtime::Executable exe = executable_of(engine);
    for (const runtime::Launch& l : exe.launches) {
      std::string label = l.label();
      if (auto rt = label.find("_rt_"); rt != std::string::npos) label.erase(rt, 3);
      labels.push_back(label);
    }
    return labels;
  };
  const auto fixed = kernels("--shape x:8x8x12x12", "static.engine");
  const auto range = kernels(
      "--min-shape x:1x8x12x12 --opt-shape x:8x8x12x12 --max-shape x:32x8x12x12", "range.engine");
  CHECK(range == fixed);
}
