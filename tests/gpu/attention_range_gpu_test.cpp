// Engines with fused attention built once for a shape range
// (emit/cuda/attention_range.h), run on a GPU with `graphc run --check`
// against the reference executor at min, opt, max and odd shapes between:
// the shipped transformer block over a batch range, a BERT-style attention
// block over batch x seq (float32: the general kernel; the attention alone in
// float16: the flash kernel), and ONNX Attention with a padding mask and
// causal, float16 and float32.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "tests/attention_range_models.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

struct Point {
  std::string shapes;  // --shape value: every input
  std::string shown;   // what `run` prints for the first input
};

// Builds `onnx` with `build_flags` (a range) and checks `run --check` at each point.
void check_points(const std::string& onnx, const std::string& engine, const std::string& build_flags,
                  const std::vector<Point>& points) {
  auto built = run_graphc("build " + onnx + " " + build_flags + " -o " + engine);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  for (const Point& p : points) {
    auto r = run_graphc("run " + engine + " --shape " + p.shapes +
                        " --iterations 3 --warmup-ms 0 --check --onnx " + onnx);
    INFO(p.shapes << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, p.shown));
  }
}

// batch x seq points of a BERT-style block (hidden 128): min, opt, max and three between.
std::vector<Point> bert_points(const std::vector<std::string>& hidden_inputs) {
  std::vector<Point> out;
  for (auto [b, s] : std::vector<std::pair<int, int>>{{1, 16}, {4, 64}, {8, 256}, {3, 77}, {7, 200},
                                                      {1, 255}}) {
    std::string shapes;
    for (const auto& in : hidden_inputs) shapes += fmt::format("{}:{}x{}x128,", in, b, s);
    shapes += fmt::format("attention_mask:{}x{}", b, s);
    out.push_back({shapes, fmt::format("{}x{}x128", b, s)});
  }
  return out;
}

}  // namespace

TEST_CASE("the transformer block over a batch range matches the reference at six shapes",
          "[shape-range][attention]") {
  TempDir dir;
  const std::string onnx = source_path("models/transformer_block.onnx");
  std::vector<Point> points;
  for (int b : {1, 2, 64, 3, 37, 63})
    points.push_back({fmt::format("x:{}x16x64", b), fmt::format("input        x float32 {}x16x64", b)});
  check_points(onnx, dir.file("tb.engine"),
               "--min-shape x:1x16x64 --opt-shape x:2x16x64 --max-shape x:64x16x64", points);
}

TEST_CASE("a BERT-style attention block over batch x seq matches the reference",
          "[shape-range][attention]") {
  TempDir dir;
  const std::string range =
      "--shape-profile x:1x16x128/4x64x128/8x256x128,attention_mask:1x16/4x64/8x256";
  bert_attention_block(128, 2, true).write(dir.file("bert.onnx"));
  check_points(dir.file("bert.onnx"), dir.file("bert.engine"), range + " --gemm generated",
               bert_points({"x"}));
  // The attention alone: float16 runs the flash kernel, float32 the general one.
  bert_attention_block(128, 2, false).write(dir.file("core.onnx"));
  const std::string core_range =
      "--shape-profile q:1x16x128/4x64x128/8x256x128,k:1x16x128/4x64x128/8x256x128,"
      "v:1x16x128/4x64x128/8x256x128,attention_mask:1x16/4x64/8x256";
  check_points(dir.file("core.onnx"), dir.file("core16.engine"), core_range + " --precision fp16",
               bert_points({"q", "k", "v"}));
  check_points(dir.file("core.onnx"), dir.file("core32.engine"), core_range,
               bert_points({"q", "k", "v"}));
}

TEST_CASE("ONNX Attention with a padding mask or causal over batch x seq matches the reference",
          "[shape-range][attention]") {
  TempDir dir;
  for (const bool half : {true, false}) {
    const auto dt = half ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT;
    // 4-D, a boolean padding mask over the keys (fp16: the flash kernel; fp32: the general one).
    OnnxModel padded(23);
    for (const char* x : {"q", "k", "v"})
      padded.input(x, dt, {Dim("batch"), int64_t{4}, Dim("seq"), int64_t{64}});
    padded.input("mask", onnx::TensorProto::BOOL, {Dim("batch"), int64_t{1}, int64_t{1}, Dim("seq")});
    padded.node("Attention", {"q", "k", "v", "mask"}, {"y"}, "attn");
    padded.output("y", dt);
    padded.write(dir.file("padded.onnx"));
    std::vector<Point> points;
    for (auto [b, s] : std::vector<std::pair<int, int>>{{1, 1}, {2, 128}, {16, 512}, {3, 77},
                                                        {11, 300}, {16, 1}}) {
      const std::string qkv = fmt::format("{}x4x{}x64", b, s);
      points.push_back({fmt::format("q:{0},k:{0},v:{0},mask:{1}x1x1x{2}", qkv, b, s),
                        qkv});
    }
    check_points(dir.file("padded.onnx"), dir.file("padded.engine"),
                 "--shape-profile q:1x4x1x64/2x4x128x64/16x4x512x64,k:1x4x1x64/2x4x128x64/"
                 "16x4x512x64,v:1x4x1x64/2x4x128x64/16x4x512x64,mask:1x1x1x1/2x1x1x128/16x1x1x512",
                 points);
    // 3-D causal.
    OnnxModel causal(23);
    for (const char* x : {"q", "k", "v"}) causal.input(x, dt, {Dim("batch"), Dim("seq"), int64_t{256}});
    auto* n = causal.node("Attention", {"q", "k", "v"}, {"y"}, "attn");
    attr_int(n, "is_causal", 1);
    attr_int(n, "q_num_heads", 4);
    attr_int(n, "kv_num_heads", 4);
    causal.output("y", dt);
    causal.write(dir.file("causal.onnx"));
    points.clear();
    for (auto [b, s] : std::vector<std::pair<int, int>>{{1, 1}, {2, 128}, {16, 512}, {3, 77}, {5, 333}}) {
      const std::string x = fmt::format("{}x{}x256", b, s);
      points.push_back({fmt::format("q:{0},k:{0},v:{0}", x), x});
    }
    check_points(dir.file("causal.onnx"), dir.file("causal.engine"),
                 "--shape-profile q:1x1x256/2x128x256/16x512x256,k:1x1x256/2x128x256/16x512x256,"
                 "v:1x1x256/2x128x256/16x512x256",
                 points);
  }
}
