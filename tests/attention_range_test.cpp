// Attention over a shape range (emit/cuda/attention_range.h): models with
// fused attention build as one engine for a range, the attention kernels take
// a size block and a grid at run time (x, y and z as the sizes vary), cuDNN
// SDPA is their preferred call where it takes every shape (else inspect says
// why), what must stay fixed is refused by name, and damaged grid fields of
// such an engine are refused. (The kernels' results
// at every shape: the emulator's range cases and tests/gpu/shape_range_gpu_test.cpp.)
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>

#include "engine_format/engine_file.h"
#include "tests/attention_range_models.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

std::string model(const std::string& name) { return source_path("models/" + name + ".onnx"); }

const engine::Kernel* attention_kernel(const engine::EngineContents& c) {
  for (const auto& k : c.manifest.kernels())
    if (k.name().rfind("attention/", 0) == 0) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("the shipped transformer block builds over a batch range with run-time attention",
          "[shape-range][attention]") {
  TempDir dir;
  const std::string out = dir.file("t.engine");
  auto r = run_graphc("build " + model("transformer_block") +
                      " --arch sm_90 --min-shape x:1x16x64 --opt-shape x:2x16x64 "
                      "--max-shape x:64x16x64 -o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto c = engine::read_engine_file(out);
  REQUIRE(c.ok());
  const engine::Kernel* k = attention_kernel(*c);
  REQUIRE(k != nullptr);
  CHECK(k->params().empty());  // the size block replaces the parameter block
  CHECK(k->size_block_size() > 0);
  REQUIRE(k->grid_sizes_size() == 3);
  CHECK(k->grid_sizes(0) < 0);   // queries fixed at 16: one tile
  CHECK(k->grid_sizes(1) < 0);   // heads fixed
  CHECK(k->grid_sizes(2) >= 0);  // batch at run time
  CHECK(k->grid(2) == 64);       // its most over the range
  CHECK_THAT(k->module_entry(), Catch::Contains("_rt"));
}

TEST_CASE("a BERT-style attention block builds over batch x seq, fp32 and fp16",
          "[shape-range][attention]") {
  TempDir dir;
  const std::string profile =
      " --shape-profile x:1x16x128/4x64x128/8x256x128,attention_mask:1x16/4x64/8x256";
  bert_attention_block(128, 2, true).write(dir.file("bert.onnx"));
  auto r = run_graphc("build " + dir.file("bert.onnx") + profile +
                      " --arch sm_90 --gemm generated -o " + dir.file("bert.engine"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto c = engine::read_engine_file(dir.file("bert.engine"));
  REQUIRE(c.ok());
  const engine::Kernel* k = attention_kernel(*c);
  REQUIRE(k != nullptr);
  CHECK_THAT(k->module_entry(), Catch::StartsWith("graphc_attn_generic_f32"));
  REQUIRE(k->grid_sizes_size() == 3);
  CHECK(k->grid_sizes(0) >= 0);  // query tiles follow seq
  CHECK(k->grid_sizes(1) < 0);
  CHECK(k->grid_sizes(2) >= 0);

  // The attention alone in float16: the flash kernel, with cuDNN's SDPA as its
  // preferred call per shape (tests/sdpa_range_test.cpp); inspect says so.
  bert_attention_block(128, 2, false).write(dir.file("core.onnx"));
  const std::string core_profile =
      " --shape-profile q:1x16x128/4x64x128/8x256x128,k:1x16x128/4x64x128/8x256x128,"
      "v:1x16x128/4x64x128/8x256x128,attention_mask:1x16/4x64/8x256";
  auto half = run_graphc("build " + dir.file("core.onnx") + core_profile +
                         " --arch sm_90 --precision fp16 -o " + dir.file("core.engine"));
  INFO(half.output);
  REQUIRE(half.exit_code == 0);
  auto hc = engine::read_engine_file(dir.file("core.engine"));
  REQUIRE(hc.ok());
  const engine::Kernel* hk = attention_kernel(*hc);
  REQUIRE(hk != nullptr);
  CHECK_THAT(hk->module_entry(), Catch::StartsWith("graphc_attn_f16_d64"));
  CHECK_FALSE(hk->has_library_call());
  CHECK(hk->has_preferred_call());
  auto report = run_graphc("inspect " + dir.file("core.engine"));
  INFO(report.output);
  CHECK(contains(report.output, "attention over the shape range"));
  CHECK(contains(report.output, "cuDNN fused SDPA, planned per shape"));
  auto json = run_graphc("inspect " + dir.file("core.engine") + " --json");
  CHECK(contains(json.output, "\"lowering\": \"cuDNN fused SDPA, planned per shape"));
  // float32: the general kernel alone, and why.
  auto fp32 = run_graphc("inspect " + dir.file("bert.engine"));
  INFO(fp32.output);
  CHECK(contains(fp32.output, "generated: sizes at run time (cuDNN SDPA does not take this attention"));
}

TEST_CASE("attention over a shape range refuses what must stay fixed, by name",
          "[shape-range][attention]") {
  TempDir dir;
  // The head dim varies (every shape is a valid Attention; the kernels are
  // compiled for one head dim). Ratios of heads the model cannot take at some
  // shape are refused earlier, by the range's shape checks.
  OnnxModel m(23);
  for (const char* x : {"q", "k", "v"})
    m.input(x, onnx::TensorProto::FLOAT, {Dim("batch"), int64_t{2}, int64_t{8}, Dim("d")});
  m.node("Attention", {"q", "k", "v"}, {"y"}, "attn");
  m.output("y");
  m.write(dir.file("hd.onnx"));
  auto r = run_graphc("build " + dir.file("hd.onnx") +
                      " --shape-profile q:1x2x8x16/2x2x8x16/3x2x8x32,k:1x2x8x16/2x2x8x16/3x2x8x32,"
                      "v:1x2x8x16/2x2x8x16/3x2x8x32 --arch sm_90 -o " + dir.file("hd.engine"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "attention 'attn': the head dim of 'q' (batchx2x8xd) varies over the shape range"));
  CHECK_FALSE(std::filesystem::exists(dir.file("hd.engine")));
}

TEST_CASE("damaged run-time grid fields of an attention engine are refused",
          "[shape-range][attention][engine-format]") {
  TempDir dir;
  const std::string out = dir.file("t.engine");
  auto built = run_graphc("build " + model("transformer_block") +
                          " --arch sm_90 --shape-profile x:1x16x64/2x16x64/8x16x64 -o " + out);
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  auto good = engine::read_engine_file(out);
  REQUIRE(good.ok());
  int index = -1;
  for (int i = 0; i < good->manifest.kernels_size(); ++i)
    if (good->manifest.kernels(i).name().rfind("attention/", 0) == 0) index = i;
  REQUIRE(index >= 0);
  auto refused = [&](const std::function<void(engine::Kernel&)>& damage, const std::string& says) {
    engine::EngineContents c = *good;
    damage(*c.manifest.mutable_kernels(index));
    auto bytes = engine::serialize_engine(c);
    INFO(says);
    REQUIRE_FALSE(bytes.ok());
    CHECK(bytes.status().code() == ErrorCode::kInvalidEngine);
    CHECK_THAT(bytes.status().message(), Catch::Contains(says));
  };
  refused([](engine::Kernel& k) { k.set_grid_sizes(2, 4000); }, "out of range");
  refused([](engine::Kernel& k) { k.set_grid_sizes(1, -7); }, "out of range");
  refused([](engine::Kernel& k) { k.set_grid(2, 4); }, "grid[2] at profile 0's largest shapes");
  refused([](engine::Kernel& k) { k.mutable_grid_sizes()->RemoveLast(); }, "2 grid sizes (0 or 3)");
  refused([](engine::Kernel& k) { k.set_params("xxxxxxxx"); }, "both a parameter block and run-time sizes");
}
