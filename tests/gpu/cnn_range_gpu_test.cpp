// CNN blocks (tests/cnn_range_models.h: a ResNet basic block with a
// projection and classifier, a MobileNetV3 block with squeeze-excitation, an
// Inception-style concat block, depthwise and grouped convs on the generated
// kernels) built once as engines for a batch range, float32 and float16, and
// run on a GPU with `graphc run --check` against the reference executor at
// min, opt, max and odd batches; a ResNet block over batch x height x width.
// cuDNN's convolutions are set up per shape on first use (runtime/cudnn.h);
// the kernel emulator runs the same models without a GPU
// (tests/emu/cnn_range_cases.cpp).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "tests/cli_util.h"
#include "tests/cnn_range_models.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

struct CnnCase {
  const char* name;
  std::function<OnnxModel()> model;
  int64_t channels;
};

// `graphc run --check` of a range engine at each of `shapes` of input x.
void check_runs(const std::string& engine, const std::string& onnx,
                const std::vector<std::string>& shapes, const char* rtol) {
  for (const std::string& shape : shapes) {
    auto r = run_graphc(fmt::format(
        "run {} --shape x:{} --iterations 3 --warmup-ms 0 --check --check-rtol {} --onnx {}",
        engine, shape, rtol, onnx));
    INFO(engine << " at " << shape << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, "(ok)"));
  }
}

}  // namespace

TEST_CASE("CNN range engines match the reference at six batch sizes", "[shape-range][cnn]") {
  TempDir dir;
  const std::vector<CnnCase> cases{{"resnet_block", cnn::resnet_block, 8},
                                   {"mobile_se_block", cnn::mobile_se_block, 8},
                                   {"inception_block", cnn::inception_block, 8},
                                   {"generated_convs", cnn::generated_convs, 16}};
  for (const CnnCase& c : cases) {
    const std::string onnx = dir.file(std::string(c.name) + ".onnx");
    c.model().write(onnx);
    const std::string image = fmt::format("{}x12x12", c.channels);
    for (const char* precision : {"fp32", "fp16"}) {
      const std::string engine = dir.file(fmt::format("{}_{}.engine", c.name, precision));
      auto built = run_graphc(fmt::format(
          "build {0} --precision {1} --min-shape x:1x{2} --opt-shape x:8x{2} --max-shape x:32x{2} "
          "-o {3}",
          onnx, precision, image, engine));
      INFO(c.name << " " << precision << "\n" << built.output);
      REQUIRE(built.exit_code == 0);
      std::vector<std::string> shapes;
      for (int batch : {1, 8, 32, 3, 13, 17}) shapes.push_back(fmt::format("{}x{}", batch, image));
      check_runs(engine, onnx, shapes, std::string(precision) == "fp16" ? "1e-2" : "1e-3");
    }
  }
}

TEST_CASE("a ResNet block range engine over batch, height and width matches the reference",
          "[shape-range][cnn]") {
  TempDir dir;
  const std::string onnx = dir.file("resnet_spatial.onnx");
  cnn::resnet_block_spatial().write(onnx);
  const std::string engine = dir.file("resnet_spatial.engine");
  auto built = run_graphc("build " + onnx +
                          " --min-shape x:1x8x5x5 --opt-shape x:8x8x32x32 --max-shape x:32x8x64x64 -o " +
                          engine);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  check_runs(engine, onnx, {"1x8x5x5", "8x8x32x32", "32x8x64x64", "3x8x17x40", "13x8x64x7"},
             "1e-3");
}

TEST_CASE("one context switches batch sizes of a CNN range engine, with and without CUDA graphs",
          "[shape-range][cnn]") {
  // Each new batch sets up its convolutions (cuDNN descriptors and an
  // algorithm, chosen before the shape's graph is captured); a batch seen
  // again reuses them and gives the same bytes.
  TempDir dir;
  const std::string onnx = dir.file("mobile.onnx");
  cnn::mobile_se_block().write(onnx);
  const std::string engine = dir.file("mobile.engine");
  auto built = run_graphc("build " + onnx +
                          " --min-shape x:1x8x12x12 --opt-shape x:8x8x12x12 "
                          "--max-shape x:32x8x12x12 -o " + engine);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  auto loaded = runtime::load_engine_file(engine);
  REQUIRE(loaded.ok());
  for (bool graphs : {true, false}) {
    runtime::ContextOptions options;
    options.cuda_graph = graphs;
    auto ctx = (*loaded)->create_context(options);
    REQUIRE(ctx.ok());
    std::string first;
    for (int64_t batch : {5, 32, 1, 5}) {
      const std::vector<int64_t> shape{batch, 8, 12, 12};
      REQUIRE((*ctx)->set_input_shape("x", shape).ok());
      std::vector<float> x(static_cast<size_t>(batch * 8 * 12 * 12));
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = 0.03f * static_cast<float>((i * 131 + 7) % 61) - 0.9f;
      const std::string in(reinterpret_cast<const char*>(x.data()), x.size() * 4);
      const std::string_view inputs[] = {in};
      std::string outputs[1];
      Status st = (*ctx)->run_host(inputs, outputs);
      INFO("batch " << batch << " graphs " << graphs << ": " << st.message());
      REQUIRE(st.ok());
      CHECK(outputs[0].size() == static_cast<size_t>(batch * 10) * 4);
      if (batch == 5 && first.empty()) first = outputs[0];
      else if (batch == 5) CHECK(outputs[0] == first);
    }
  }
}
