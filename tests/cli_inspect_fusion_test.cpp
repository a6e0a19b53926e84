// graphc inspect's optimizer side: the fusion report on the shipped models,
// the pass-manager flags (--print-passes, --disable-pass, --dump-after,
// --verify-after-all), --dot clusters and flag errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using graphc::testing::contains;
using graphc::testing::run_graphc;
using graphc::testing::source_path;

namespace {
std::string model(const std::string& name) { return source_path("models/" + name + ".onnx"); }

// N from the report's "kernels: X ONNX nodes -> N kernels" line, or -1.
int kernels_of(const std::string& out) {
  std::smatch m;
  static const std::regex re("ONNX nodes -> ([0-9]+) kernels");
  return std::regex_search(out, m, re) ? std::stoi(m[1]) : -1;
}
}  // namespace

TEST_CASE("inspect reports conv_block as two conv kernels with their epilogues", "[cli]") {
  // BatchNorm folds into each Conv; relu1 rides conv1, and the residual add and
  // final Relu ride conv2: 7 ONNX nodes -> 2 kernels, less HBM traffic fused.
  auto r = run_graphc("inspect " + model("conv_block"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "kernels: 7 ONNX nodes -> 2 kernels"));
  CHECK(std::regex_search(r.output, std::regex("conv .* conv1, bn1, relu1")));
  CHECK(std::regex_search(r.output, std::regex("conv .* conv2, bn2, skip_add, relu_out")));
  CHECK(std::regex_search(r.output, std::regex("HBM traffic \\(model\\): .* unfused -> .* fused")));
  CHECK(contains(r.output, "memory plan: naive "));
}

TEST_CASE("inspect's transformer_block report has one kernel per attention and layer norm", "[cli]") {
  // The attention (both MatMuls, the scale, the softmax and the head split and
  // merge around them) is one attention kernel; each LayerNormalization is one
  // reduction kernel; bias adds and the GELU ride their GEMMs.
  auto r = run_graphc("inspect " + model("transformer_block") + " --shape x:2x16x64");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(std::regex_search(r.output,
                          std::regex("attention .* softmax/attention, q_split_heads, "
                                     "k_split_heads, v_split_heads, q_transpose, k_transpose")));
  CHECK_FALSE(contains(r.output, "attention not fused"));
  CHECK(std::regex_search(r.output, std::regex("reduction .* ln1\n")));
  CHECK(std::regex_search(r.output, std::regex("gemm .* fc1, fc1_bias, gelu")));
  CHECK_FALSE(std::regex_search(r.output, std::regex("\n +[0-9]+  elementwise ")));
  auto unbound = run_graphc("inspect " + model("transformer_block"));
  CHECK(unbound.exit_code == 0);
  CHECK(contains(unbound.output, "bind the symbolic input dims with --shape to optimize"));
}

TEST_CASE("inspect --disable-pass changes the report, unknown passes are usage errors", "[cli]") {
  // merge-matmul-bias makes mlp's MatMul+Add pairs 3 Gemms; without
  // fuse-epilogues and fuse-elementwise the 2 Relus stay kernels (5); with
  // them they ride the Gemms (3).
  auto fused = run_graphc("inspect " + model("mlp"));
  auto unfused = run_graphc("inspect " + model("mlp") +
                            " --disable-pass fuse-epilogues --disable-pass fuse-elementwise");
  INFO(fused.output << unfused.output);
  REQUIRE(fused.exit_code == 0);
  REQUIRE(unfused.exit_code == 0);
  CHECK(kernels_of(fused.output) == 3);
  CHECK(kernels_of(unfused.output) == 5);
  auto bad = run_graphc("inspect " + model("mlp") + " --disable-pass fuse-everything");
  CHECK(bad.exit_code == 2);
  CHECK(contains(bad.output, "unknown pass 'fuse-everything'"));
  CHECK(contains(bad.output, "fuse-epilogues"));
  auto bad_dump = run_graphc("inspect " + model("mlp") + " --dump-after nope");
  CHECK(bad_dump.exit_code == 2);
  auto bad_precision = run_graphc("inspect " + model("mlp") + " --precision fp8");
  CHECK(bad_precision.exit_code == 2);
}

TEST_CASE("inspect --print-passes, --dump-after and --verify-after-all", "[cli]") {
  // The pipeline lists every pass with its reason; --dump-after prints the IR
  // after the named pass (FusedGroup bodies shown); verification passes.
  auto p = run_graphc("inspect --print-passes");
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  CHECK(contains(p.output, "fold-constants"));
  CHECK(contains(p.output, "fuse-elementwise"));
  auto d =
      run_graphc("inspect " + model("mlp") + " --dump-after fuse-epilogues --verify-after-all");
  INFO(d.output);
  REQUIRE(d.exit_code == 0);
  CHECK(contains(d.output, "--- after fuse-epilogues ---"));
  CHECK(contains(d.output, "FusedGroup"));
  CHECK_FALSE(contains(d.output, "--- after fuse-reductions ---"));
  auto all = run_graphc("inspect " + model("conv_block") + " --dump-after all");
  CHECK(contains(all.output, "--- after fold-batchnorm ---"));
  CHECK(contains(all.output, "--- after fuse-elementwise ---"));
}

TEST_CASE("inspect --dot draws each fused kernel as a cluster", "[cli]") {
  // conv_block: two clusters, each holding its Conv and epilogue nodes; the
  // edge into conv2's cluster comes from relu1 inside conv1's.
  auto r = run_graphc("inspect " + model("conv_block") + " --dot");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "digraph graphc {"));
  CHECK(contains(r.output, "subgraph cluster_0 {"));
  CHECK(contains(r.output, "subgraph cluster_1 {"));
  CHECK(contains(r.output, "label=\"conv kernel: "));
  CHECK(std::regex_search(r.output, std::regex("label=\"Relu\\\\nrelu1\"")));
  auto plain = run_graphc("inspect " + model("conv_block") + " --dot --no-optimize");
  CHECK(plain.exit_code == 0);
  CHECK_FALSE(contains(plain.output, "subgraph cluster_"));
  CHECK(contains(plain.output, "BatchNormalization"));
}

TEST_CASE("inspect numbers kernels as the engine launches them", "[cli]") {
  // The model report's launch numbers are the engine's kernel indices (what
  // `inspect ENGINE` and `run --profile` show); rows that launch nothing have none.
  graphc::testing::TempDir dir;
  const std::string model = source_path("models/mlp.onnx");
  auto json = run_graphc("inspect " + model + " --json --disable-pass fuse-elementwise");
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.output);
  const auto& rows = doc["fusion"]["kernel_list"];
  int64_t next = 0;
  for (const auto& row : rows) {
    if (row["kind"] == "view (no kernel)") {
      CHECK(row["launch"].is_null());
      continue;
    }
    REQUIRE(row["launch"].is_number_integer());
    CHECK(row["launch"].get<int64_t>() == next++);
  }
  CHECK(next == doc["fusion"]["kernels"].get<int64_t>());
  auto built = run_graphc("build " + model + " --arch sm_90 --disable-pass fuse-elementwise -o " +
                          dir.file("mlp.engine"));
  REQUIRE(built.exit_code == 0);
  auto engine = run_graphc("inspect " + dir.file("mlp.engine") + " --json");
  REQUIRE(engine.exit_code == 0);
  const auto kernels = nlohmann::json::parse(engine.output)["kernels"];
  REQUIRE(kernels.is_array());
  CHECK(static_cast<int64_t>(kernels.size()) == next);
}
