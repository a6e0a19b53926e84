// graphc inspect MODEL --svg FILE: the fused graph drawn by Graphviz's dot,
// every kernel a cluster coloured by kind and labelled with its row number,
// kind and modelled time (driver/fusion_dot.h); a clear error when dot is
// missing or fails, and never a partial file. Rendering checks are skipped
// (with a warning) on a machine without Graphviz.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "driver/fusion_dot.h"
#include "driver/load_model.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

std::string model(const std::string& name) { return source_path("models/" + name + ".onnx"); }

bool have_dot() { return std::system("command -v dot >/dev/null 2>&1") == 0; }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("fusion_graph_dot: one cluster per kernel, coloured, with its modelled time", "[svg]") {
  auto g = driver::load_model(model("conv_block"));
  REQUIRE(g.ok());
  optimizer::PassContext ctx;
  auto report = driver::optimize_and_report(*g, ctx);
  REQUIRE(report.ok());
  REQUIRE(report->rows.size() == 2);  // two convs with their epilogues
  const std::string dot = driver::fusion_graph_dot(*g, *report);
  INFO(dot);
  for (size_t i = 0; i < report->rows.size(); ++i) {
    const auto& row = report->rows[i];
    CHECK(contains(dot, "subgraph cluster_k" + std::to_string(i) + " {"));
    CHECK(contains(dot, "#" + std::to_string(i) + " " + row.kind));
    // max(bytes / 3.35 TB/s, flops / 67 TFLOP/s): H100, fp32 convs on CUDA cores
    const double us = std::max(static_cast<double>(row.bytes_fused) / 3.35e12,
                               static_cast<double>(row.flops) / 67e12) *
                      1e6;
    CHECK(row.flops > 0);
    CHECK(contains(dot, fmt::format("roofline {:.3g} us on NVIDIA H100 SXM", us)));
    for (size_t k = 0; k < row.onnx_nodes.size(); ++k)  // folded BatchNorms have no node
      if (row.onnx_ops[k] != "(merged)") CHECK(contains(dot, "\\n" + row.onnx_nodes[k] + "\""));
  }
  CHECK(count(dot, "fillcolor=\"#fdd0a2\"") == 3);  // two conv clusters and the legend entry
  CHECK(contains(dot, "label=\"kernel kinds\""));
  // Every leaf node is drawn once: Conv, Relu, Conv, Add, Relu.
  CHECK(std::regex_search(dot, std::regex("n0_0 \\[label=\"Conv\\\\nconv1\"\\]")));
  CHECK(count(dot, "[label=\"Conv\\n") == 2);
  CHECK(count(dot, "[label=\"Relu\\n") == 2);
}

TEST_CASE("fusion_graph_dot escapes hostile names", "[svg]") {
  TempDir dir;
  OnnxModel m;
  m.input("x\"\xff", onnx::TensorProto::FLOAT, {int64_t{4}});
  m.node("Relu", {"x\"\xff"}, {"y\\"}, "relu\"\x01\xff");
  m.output("y\\", onnx::TensorProto::FLOAT, {int64_t{4}});
  m.write(dir.file("m.onnx"));
  auto g = driver::load_model(dir.file("m.onnx"));
  REQUIRE(g.ok());
  optimizer::PassContext ctx;
  auto report = driver::optimize_and_report(*g, ctx);
  REQUIRE(report.ok());
  const std::string dot = driver::fusion_graph_dot(*g, *report);
  INFO(dot);
  CHECK(contains(dot, "relu\\\"?\xef\xbf\xbd"));  // quote escaped, control as ?, 0xff as U+FFFD
  CHECK(contains(dot, "label=\"y\\\\\""));
  CHECK_FALSE(contains(dot, "\xff"));
  if (!have_dot()) return;
  // dot accepts it.
  const std::string out = dir.file("m.svg");
  auto r = run_graphc("inspect " + dir.file("m.onnx") + " --svg " + out);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(read(out), "</svg>"));
}

TEST_CASE("inspect --svg writes the picture with Graphviz", "[cli][svg]") {
  TempDir dir;
  const std::string out = dir.file("tb.svg");
  if (!have_dot()) {
    WARN(
        "Graphviz's dot is not installed: SKIPPED rendering inspect --svg (apt-get install "
        "graphviz)");
    return;
  }
  auto r = run_graphc("inspect " + model("transformer_block") + " --shape x:2x16x64 --svg " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "kernels: "));  // the text report is printed as usual
  const std::string svg = read(out);
  CHECK(contains(svg, "<svg"));
  CHECK(contains(svg, "</svg>"));
  CHECK(contains(svg, "#0 reduction"));
  CHECK(contains(svg, "us on NVIDIA H100 SXM"));
  CHECK(contains(svg, "fill=\"#a1d99b\""));  // reductions
  CHECK(contains(svg, "fill=\"#fdae6b\""));  // gemms
  struct stat st {};
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) != 0600);  // a plain file's mode, not mkstemp's
  // --svg together with --json: both.
  auto j = run_graphc("inspect " + model("conv_block") + " --json --svg " + dir.file("cb.svg"));
  CHECK(j.exit_code == 0);
  CHECK(contains(j.output, "\"schema_version\": 1"));
  CHECK(contains(read(dir.file("cb.svg")), "#1 conv"));
}

TEST_CASE("inspect --svg errors: no dot, dot failing, nothing to draw, no partial file",
          "[cli][svg]") {
  TempDir dir;
  const std::string out = dir.file("out.svg");
  std::ofstream(out) << "old";
  // No dot on the PATH (graphc itself is run by its full path).
  auto none = run_graphc_binary("PATH=/nonexistent " + std::string(GRAPHC_BINARY),
                                "inspect " + model("conv_block") + " --svg " + out);
  INFO(none.output);
  CHECK(none.exit_code == 1);
  CHECK(contains(none.output, "Graphviz's 'dot' is not on the PATH"));
  CHECK(contains(none.output, "apt-get install graphviz"));
  CHECK(read(out) == "old");
  // A dot that fails: its message is shown.
  const std::string bin = dir.file("bin");
  std::filesystem::create_directories(bin);
  {
    std::ofstream s(bin + "/dot");
    s << "#!/bin/sh\necho 'syntax error in line 3' >&2\nexit 1\n";
  }
  std::filesystem::permissions(bin + "/dot", std::filesystem::perms::owner_all);
  auto failing = run_graphc_binary("PATH=" + bin + " " + std::string(GRAPHC_BINARY),
                                   "inspect " + model("conv_block") + " --svg " + out);
  INFO(failing.output);
  CHECK(failing.exit_code == 1);
  CHECK(contains(failing.output, "'dot' failed (exit status 1): syntax error in line 3"));
  CHECK(read(out) == "old");
  // Without bound shapes there is no fused graph; engines have none either.
  auto unbound = run_graphc("inspect " + model("transformer_block") + " --svg " + out);
  CHECK(unbound.exit_code == 2);
  CHECK(contains(unbound.output, "bind the symbolic input dims with --shape"));
  auto dot_and_svg = run_graphc("inspect " + model("conv_block") + " --dot --svg " + out);
  CHECK(dot_and_svg.exit_code == 2);
  CHECK(read(out) == "old");
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    CHECK(e.path().filename().string()[0] != '.');  // no temporary file left behind
}
