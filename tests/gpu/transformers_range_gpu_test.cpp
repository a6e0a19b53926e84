// Transformers exported by PyTorch with dynamic batch and sequence axes
// (models/tiny: BERT, GPT-2, RoBERTa), each built once as an engine for a
// shape range, float32 and float16, and run on a GPU with `graphc run --check`
// against the reference executor at min, opt, max and odd shapes between.
// The emulator runs the same engines without a GPU (tests/emu/range_cases.cpp).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;

TEST_CASE("tiny BERT, GPT-2 and RoBERTa range engines match the reference at six shapes",
          "[shape-range][transformers]") {
  TempDir dir;
  const std::string range =
      "--min-shape input_ids:1x1,attention_mask:1x1 --opt-shape input_ids:8x64,attention_mask:8x64 "
      "--max-shape input_ids:32x128,attention_mask:32x128";
  const std::vector<std::pair<int, int>> points{{1, 1},  {8, 64}, {32, 128},
                                                {3, 77}, {17, 5}, {1, 128}};
  for (const char* name : {"bert", "gpt2", "roberta"})
    for (const char* precision : {"fp32", "fp16"}) {
      const std::string onnx = source_path(fmt::format("models/tiny/{}_tiny.onnx", name));
      const std::string engine = dir.file(fmt::format("{}_{}.engine", name, precision));
      auto built = run_graphc(
          fmt::format("build {} {} --precision {} -o {}", onnx, range, precision, engine));
      INFO(name << " " << precision << "\n" << built.output);
      REQUIRE(built.exit_code == 0);
      for (auto [b, s] : points) {
        auto r = run_graphc(
            fmt::format("run {2} --shape input_ids:{0}x{1},attention_mask:{0}x{1} --iterations 3 "
                        "--warmup-ms 0 --check --check-rtol {4} --onnx {3}",
                        b, s, engine, onnx, std::string(precision) == "fp16" ? "1e-2" : "1e-3"));
        INFO(name << " " << precision << " at " << b << "x" << s << "\n" << r.output);
        CHECK(r.exit_code == 0);
        CHECK(contains(r.output, fmt::format(" {}x{}x64\n", b, s)));  // the output line
        CHECK(contains(r.output, "(ok)"));
      }
    }
}
