// The CLI on attention: inspect shows an `attention` kernel with the ONNX
// nodes it covers (for exporters' attention and for ONNX's own Attention op)
// and lists the softmaxes left unfused; fuse-attention is a named pass; build
// lowers each attention to one launch.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <regex>

#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc::testing;

namespace {

std::string tb() { return source_path("models/transformer_block.onnx") + " --shape x:2x16x64"; }

// ONNX Attention (opset 23), 3-D GQA with a bool mask; `probs_too` adds an
// exporter-style attention whose probabilities are also a model output.
std::string write_attention_model(const TempDir& dir, bool probs_too) {
  OnnxModel m(23);
  m.input("Q", onnx::TensorProto::FLOAT, {2, 5, 32});
  m.input("K", onnx::TensorProto::FLOAT, {2, 7, 16});
  m.input("V", onnx::TensorProto::FLOAT, {2, 7, 16});
  m.input("mask", onnx::TensorProto::BOOL, {5, 7});
  auto* a = m.node("Attention", {"Q", "K", "V", "mask"}, {"Y"}, "onnx_attention");
  attr_int(a, "q_num_heads", 4);
  attr_int(a, "kv_num_heads", 2);
  m.output("Y");
  if (probs_too) {
    m.input("q4", onnx::TensorProto::FLOAT, {1, 2, 5, 8});
    m.input("k4", onnx::TensorProto::FLOAT, {1, 2, 5, 8});
    m.input("v4", onnx::TensorProto::FLOAT, {1, 2, 5, 8});
    attr_ints(m.node("Transpose", {"k4"}, {"kt"}, "kt"), "perm", {0, 1, 3, 2});
    m.node("MatMul", {"q4", "kt"}, {"s"}, "qk");
    attr_int(m.node("Softmax", {"s"}, {"p"}, "probs"), "axis", -1);
    m.node("MatMul", {"p", "v4"}, {"o"}, "pv");
    m.output("o");
    m.output("p");
  }
  std::string path = dir.file("attention.onnx");
  m.write(path);
  return path;
}

}  // namespace

TEST_CASE("inspect shows ONNX's Attention as one attention kernel, unfused softmaxes say why",
          "[cli][fuse-attention]") {
  TempDir dir;
  auto r = run_graphc("inspect " + write_attention_model(dir, true));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(std::regex_search(r.output,
                          std::regex("attention +float32\\[2x5x32\\] .* onnx_attention\n")));
  CHECK(contains(r.output,
                 "attention not fused:\n  Softmax 'probs': its output is read by "
                 "MatMul 'pv', a graph output, not by MatMul(probabilities, V) alone"));
  auto json = run_graphc("inspect --json " + write_attention_model(dir, true));
  REQUIRE(json.exit_code == 0);
  INFO(json.output);
  const auto doc = nlohmann::json::parse(json.output);
  const auto& notes = doc["fusion"]["attention_notes"];
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].get<std::string>().rfind("Softmax 'probs': ", 0) == 0);
  bool attention_row = false;
  for (const auto& row : doc["fusion"]["kernel_list"])
    attention_row |= row["kind"] == "attention" && row["name"] == "onnx_attention";
  CHECK(attention_row);
}

TEST_CASE("fuse-attention is a named pass: --print-passes, --disable-pass, --dump-after",
          "[cli][fuse-attention]") {
  auto passes = run_graphc("inspect --print-passes");
  CHECK(std::regex_search(passes.output, std::regex("fuse-attention +MatMul/scale/mask/Softmax")));
  auto off = run_graphc("inspect " + tb() + " --disable-pass fuse-attention");
  INFO(off.output);
  REQUIRE(off.exit_code == 0);
  CHECK_FALSE(contains(off.output, "  attention  "));
  CHECK(std::regex_search(off.output, std::regex("reduction .* scale, softmax\n")));
  auto dump = run_graphc("inspect " + tb() + " --dump-after fuse-attention");
  REQUIRE(dump.exit_code == 0);
  CHECK(contains(dump.output, "--- after fuse-attention ---"));
  CHECK(contains(dump.output,
                 "= Attention(%q_lin, %k_lin, %v_lin) kv_num_heads=4 q_num_heads=4 "
                 "scale=0.25  # softmax/attention"));
}

TEST_CASE("graphc build lowers attention to one launch: cuDNN's SDPA, or the generated kernel",
          "[cli][fuse-attention]") {
  TempDir dir;
  // fp16: cuDNN's fused SDPA takes transformer_block's attention (no mask, D = 16).
  auto r = run_graphc("build " + tb() + " --arch sm_90 --precision fp16 -o " +
                      dir.file("tb.engine"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto j = run_graphc("inspect " + dir.file("tb.engine") + " --json");
  INFO(j.output);
  REQUIRE(j.exit_code == 0);
  CHECK(contains(j.output, "\"library\": \"cudnn\""));
  CHECK(contains(j.output, "\"op\": \"sdpa\""));
  // The model report says which path and why.
  auto text = run_graphc("inspect " + tb() + " --precision fp16");
  INFO(text.output);
  CHECK(contains(text.output, "softmax/attention: cuDNN fused SDPA"));
  // --attention generated never makes a library call for attention.
  auto gen = run_graphc("inspect " + tb() + " --precision fp16 --attention generated");
  INFO(gen.output);
  CHECK_FALSE(contains(gen.output, "cuDNN fused SDPA"));
}
