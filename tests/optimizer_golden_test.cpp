// Golden text IR of the shipped models after the default pipeline
// (tests/golden/<model>.ir): a change in what gets fused shows up as a diff a
// reviewer can read. Each model is also checked numerically: the optimized
// graph on the reference executor matches the unoptimized one on fresh random
// inputs. GRAPHC_UPDATE_GOLDEN=1 rewrites the files (then review the diff).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "driver/load_model.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

void check_golden(const std::string& name, const std::map<std::string, ir::Shape>& shapes) {
  driver::LoadOptions opts;
  opts.input_shapes = shapes;
  auto loaded = driver::load_model(source_path("models/" + name + ".onnx"), opts);
  INFO(name << ": " << (loaded.ok() ? "" : loaded.status().message()));
  REQUIRE(loaded.ok());
  ir::Graph optimized = *loaded;
  optimizer::PassContext ctx;
  ctx.verify_after_all = true;
  Status st = optimizer::run_passes(optimized, ctx);
  INFO(st.message());
  REQUIRE(st.ok());
  std::string text = ir::print_graph(optimized);

  const std::string path = source_path("tests/golden/" + name + ".ir");
  if (const char* u = std::getenv("GRAPHC_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(path) << text;
  }
  std::ifstream in(path);
  INFO("golden file " << path << " (GRAPHC_UPDATE_GOLDEN=1 rewrites it)");
  REQUIRE(in.good());
  std::stringstream want;
  want << in.rdbuf();
  CHECK(text == want.str());

  // Same outputs before and after on fresh random inputs (float32: the
  // reassociation inside fused kernels stays within 1e-5 relative).
  std::map<std::string, ir::Tensor> feeds;
  for (auto id : loaded->inputs) {
    const auto& v = loaded->value(id);
    feeds[v.name] = random_tensor(v.dtype, v.shape, test_rng(), -1, 1);
  }
  auto before = reference::execute(*loaded, feeds);
  auto after = reference::execute(optimized, feeds);
  REQUIRE(before.ok());
  INFO((after.ok() ? "" : after.status().message()));
  REQUIRE(after.ok());
  for (const auto& [out, t] : *before) {
    REQUIRE(after->count(out));
    auto a = t.to_f64_vector(), b = after->at(out).to_f64_vector();
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i)
      worst = std::max(worst, std::fabs(a[i] - b[i]) / (1.0 + std::fabs(a[i])));
    INFO(name << " output " << out << " worst relative error " << worst);
    CHECK(worst < 1e-5);
  }
}

}  // namespace

TEST_CASE("golden IR: mlp after the default pipeline", "[golden]") {
  // Each MatMul takes its bias (and Relu) as a GEMM epilogue: 3 fused nodes.
  check_golden("mlp", {});
}

TEST_CASE("golden IR: conv_block after the default pipeline", "[golden]") {
  // BatchNorm folds into both Convs; Relu, residual Add and Relu ride them.
  check_golden("conv_block", {});
}

TEST_CASE("golden IR: transformer_block (batch 2) after the default pipeline", "[golden]") {
  // LayerNorms, softmax with its scale, GELU and bias/residual epilogues.
  check_golden("transformer_block", {{"x", {2, 16, 64}}});
}
