// The runtime API on engines that serve shape ranges: contexts run each
// shape set on them (checked against the reference executor at five shapes
// on a GPU), CUDA graphs are cached per shape, and errors name the input, dim
// and range. The [copy-only] cases check only what the stand-in driver
// (tests/fake_cuda: real copies and graphs, kernels that do nothing) can:
// ctest runs them there as runtime_fake_driver.
#include <catch2/catch.hpp>
#include <numeric>

#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "runtime/graphc_runtime.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/shape_range_fixture.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;

TEST_CASE("execution contexts run each shape set on them", "[shape-range][copy-only]") {
  RangeFixture f;
  auto engine = runtime::load_engine_file(f.engine);
  REQUIRE(engine.ok());
  CHECK((*engine)->has_shape_ranges());
  CHECK((*engine)->num_profiles() == 1);
  auto range = (*engine)->input_range("x");
  REQUIRE(range.ok());
  CHECK(range->max == std::vector<int64_t>{9, 4, 8});
  runtime::ContextOptions options;
  options.max_cached_graphs = 2;  // four shapes below: graphs are evicted and recaptured
  auto ctx = (*engine)->create_context(options);
  REQUIRE(ctx.ok());
  auto& c = **ctx;
  CHECK(*c.tensor_shape("y") == std::vector<int64_t>{4, 32});  // the opt shape at first
  for (int64_t batch : {3, 9, 1, 3, 6, 9}) {
    const std::vector<int64_t> shape{batch, 4, 8};
    REQUIRE(c.set_input_shape("x", shape).ok());
    CHECK(*c.tensor_shape("y") == std::vector<int64_t>{batch, 32});
    CHECK(*c.tensor_bytes(1) == batch * 32 * 4);
    std::vector<float> x(static_cast<size_t>(batch * 32));
    std::iota(x.begin(), x.end(), static_cast<float>(batch) * 100.0f);
    std::string in(reinterpret_cast<const char*>(x.data()), x.size() * 4);
    const std::string_view inputs[] = {in};
    std::string outputs[2];
    Status st = c.run_host(inputs, outputs);
    INFO(st.message());
    REQUIRE(st.ok());
    CHECK(outputs[0] == in);  // the view's copy moved exactly this shape's bytes
    CHECK(outputs[1].size() == in.size());
    // Bytes of another shape are refused.
    std::string wrong(in.size() + 4, '\0');
    const std::string_view bad[] = {wrong};
    CHECK(c.run_host(bad, outputs).code() == ErrorCode::kInvalidArgument);
  }
  // Errors name the input, the dim and the range.
  const std::vector<int64_t> big{10, 4, 8}, fixed{2, 5, 8}, flat{2, 32};
  Status st = c.set_input_shape("x", big);
  CHECK(st.code() == ErrorCode::kOutOfRange);
  CHECK_THAT(st.message(), Catch::Contains("dim 0 is 10, outside shape profile 0's range [1, 9]"));
  CHECK_THAT(c.set_input_shape("x", fixed).message(), Catch::Contains("fixes it at 4"));
  CHECK_THAT(c.set_input_shape("x", flat).message(), Catch::Contains("has rank 3"));
  CHECK(c.set_input_shape("nope", flat).code() == ErrorCode::kNotFound);
  CHECK(c.set_optimization_profile(1).code() == ErrorCode::kInvalidArgument);
  REQUIRE(c.set_optimization_profile(0).ok());
  CHECK(*c.tensor_shape("y") == std::vector<int64_t>{4, 32});  // back at opt

  // The C API says the same.
  graphc_engine* ce = nullptr;
  REQUIRE(graphc_engine_load(f.engine.c_str(), &ce) == GRAPHC_OK);
  graphc_context* cc = nullptr;
  REQUIRE(graphc_context_create(ce, &cc) == GRAPHC_OK);
  int32_t profiles = 0, rank = 0;
  CHECK(graphc_engine_num_profiles(ce, &profiles) == GRAPHC_OK);
  CHECK(profiles == 1);
  int64_t mn[GRAPHC_MAX_RANK], mx[GRAPHC_MAX_RANK];
  CHECK(graphc_engine_input_range(ce, "x", 0, mn, nullptr, mx, &rank) == GRAPHC_OK);
  CHECK((rank == 3 && mn[0] == 1 && mx[0] == 9));
  const int64_t five[] = {5, 4, 8}, eleven[] = {11, 4, 8};
  CHECK(graphc_context_set_input_shape(cc, "x", five, 3) == GRAPHC_OK);
  int64_t dims[GRAPHC_MAX_RANK];
  uint64_t bytes = 0;
  CHECK(graphc_context_get_tensor_shape(cc, "y", dims, GRAPHC_MAX_RANK, &rank, &bytes) == GRAPHC_OK);
  CHECK((rank == 2 && dims[0] == 5 && dims[1] == 32 && bytes == 5 * 32 * 4));
  CHECK(graphc_context_set_input_shape(cc, "x", eleven, 3) == GRAPHC_ERROR_OUT_OF_RANGE);
  CHECK_THAT(std::string(graphc_last_error()), Catch::Contains("outside shape profile 0's range"));
  CHECK(graphc_context_get_tensor_shape(cc, "y", dims, 1, &rank, nullptr) != GRAPHC_OK);
  graphc_context_destroy(cc);
  graphc_engine_destroy(ce);
}

TEST_CASE("inputs sharing a dim must agree, and fixed engines keep their shape",
          "[shape-range][copy-only]") {
  TempDir dir;
  OnnxModel m(17);
  m.input("x", onnx::TensorProto::FLOAT, {Dim("batch"), int64_t{8}});
  m.input("s", onnx::TensorProto::FLOAT, {Dim("batch"), int64_t{1}});
  m.node("Mul", {"x", "s"}, {"y"}, "mul");
  m.output("y");
  m.write(dir.file("m.onnx"));
  auto built = run_graphc("build " + dir.file("m.onnx") +
                          " --min-shape x:1x8,s:1x1 --opt-shape x:2x8,s:2x1 --max-shape x:16x8,s:16x1"
                          " --arch sm_90 -o " + dir.file("m.engine"));
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  auto engine = runtime::load_engine_file(dir.file("m.engine"));
  REQUIRE(engine.ok());
  auto ctx = (*engine)->create_context();
  REQUIRE(ctx.ok());
  const std::vector<int64_t> x3{3, 8}, s5{5, 1}, s3{3, 1};
  REQUIRE((*ctx)->set_input_shape("x", x3).ok());
  REQUIRE((*ctx)->set_input_shape("s", s5).ok());  // each in range alone
  Status st = (*ctx)->enqueue();
  CHECK(st.code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(st.message(), Catch::Contains("input 's' dim 0 is 5, but input 'x' gives 'batch' the value 3"));
  REQUIRE((*ctx)->set_input_shape("s", s3).ok());
  CHECK((*ctx)->enqueue().ok());
  CHECK((*ctx)->synchronize().ok());
  CHECK(*(*ctx)->tensor_shape("y") == x3);

  auto fixed_built = run_graphc("build " + dir.file("m.onnx") + " --shape x:2x8,s:2x1 --arch sm_90 -o " +
                                dir.file("fixed.engine"));
  REQUIRE(fixed_built.exit_code == 0);
  auto fixed = runtime::load_engine_file(dir.file("fixed.engine"));
  REQUIRE(fixed.ok());
  CHECK_FALSE((*fixed)->has_shape_ranges());
  auto fctx = (*fixed)->create_context();
  REQUIRE(fctx.ok());
  const std::vector<int64_t> x2{2, 8};
  CHECK((*fctx)->set_input_shape("x", x2).ok());
  CHECK_THAT((*fctx)->set_input_shape("x", x3).message(), Catch::Contains("built for that shape only"));
}

TEST_CASE("a fused chain over a shape range matches the reference at five shapes",
          "[shape-range]") {
  // On a GPU: graphc run --check at min, opt, max and two odd shapes between.
  TempDir dir;
  OnnxModel m(17);
  m.input("x", onnx::TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{64}});
  std::vector<float> bias(64);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * static_cast<float>(i) - 0.3f;
  m.initializer(float_tensor("bias", {64}, bias));
  m.node("Add", {"x", "bias"}, {"a"}, "bias");
  m.node("Erf", {"a"}, {"e"}, "erf");
  m.node("Mul", {"a", "e"}, {"g"}, "gate");
  m.node("Add", {"g", "x"}, {"y"}, "residual");
  m.output("y");
  m.write(dir.file("chain.onnx"));
  auto built = run_graphc("build " + dir.file("chain.onnx") +
                          " --min-shape x:1x1x64 --opt-shape x:8x128x64 --max-shape x:32x512x64"
                          " -o " + dir.file("chain.engine"));
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  for (const char* shape : {"1x1x64", "8x128x64", "32x512x64", "3x77x64", "17x5x64"}) {
    auto r = run_graphc("run " + dir.file("chain.engine") + " --shape x:" + shape +
                        " --iterations 3 --warmup-ms 0 --check --onnx " + dir.file("chain.onnx"));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, std::string("input        x float32 ") + shape));
  }
}

TEST_CASE("a cuBLASLt matmul over a shape range matches the reference at five shapes",
          "[shape-range][cublaslt]") {
  // y = Relu(x @ w + bias) with M = batch * seq at run time (one cuBLASLt set-up
  // per M, made on first use), fp32 and fp16.
  TempDir dir;
  OnnxModel m(17);
  m.input("x", onnx::TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{64}});
  std::vector<float> w(64 * 96), bias(96);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.02f * static_cast<float>((i * 37) % 53) - 0.5f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * static_cast<float>(i) - 0.4f;
  m.initializer(float_tensor("w", {64, 96}, w));
  m.initializer(float_tensor("bias", {96}, bias));
  m.node("MatMul", {"x", "w"}, {"p"}, "dense");
  m.node("Add", {"p", "bias"}, {"a"}, "bias_add");
  m.node("Relu", {"a"}, {"y"}, "relu");
  m.output("y");
  m.write(dir.file("dense.onnx"));
  for (const char* precision : {"fp32", "fp16"}) {
    INFO(precision);
    const std::string engine = dir.file(std::string("dense_") + precision + ".engine");
    auto built = run_graphc("build " + dir.file("dense.onnx") + " --precision " + precision +
                            " --gemm cublaslt --min-shape x:1x1x64 --opt-shape x:4x16x64 "
                            "--max-shape x:8x40x64 -o " + engine);
    INFO(built.output);
    REQUIRE(built.exit_code == 0);
    const std::string rtol = std::string(precision) == "fp16" ? " --check-rtol 1e-2" : "";
    for (const char* shape : {"1x1x64", "4x16x64", "8x40x64", "3x7x64", "5x33x64"}) {
      auto r = run_graphc("run " + engine + " --shape x:" + shape +
                          " --iterations 3 --warmup-ms 0 --check --onnx " + dir.file("dense.onnx") +
                          rtol);
      INFO(r.output);
      CHECK(r.exit_code == 0);
    }
    // One context switching shapes without CUDA graphs: each enqueue finds its
    // M's set-up (made once, then cached), and a shape seen again gives the same bytes.
    auto loaded = runtime::load_engine_file(engine);
    REQUIRE(loaded.ok());
    runtime::ContextOptions options;
    options.cuda_graph = false;
    auto ctx = (*loaded)->create_context(options);
    REQUIRE(ctx.ok());
    std::string first;
    for (int64_t seq : {7, 40, 7}) {
      const std::vector<int64_t> shape{3, seq, 64};
      REQUIRE((*ctx)->set_input_shape("x", shape).ok());
      const size_t elem = 4;  // fp16 engines keep the model's float32 inputs and outputs
      std::vector<float> x(static_cast<size_t>(3 * seq * 64));
      for (size_t i = 0; i < x.size(); ++i) x[i] = 0.03f * static_cast<float>((i * 131 + 7) % 61) - 0.9f;
      const std::string in(reinterpret_cast<const char*>(x.data()), x.size() * elem);
      const std::string_view inputs[] = {in};
      std::string outputs[1];
      Status st = (*ctx)->run_host(inputs, outputs);
      INFO(st.message());
      REQUIRE(st.ok());
      CHECK(outputs[0].size() == static_cast<size_t>(3 * seq * 96) * elem);
      if (seq == 7 && first.empty()) first = outputs[0];
      else if (seq == 7) CHECK(outputs[0] == first);
    }
  }
}

TEST_CASE("torchvision's tiny ViT over a batch range matches the reference at five shapes",
          "[shape-range][index-map]") {
  // Its head split and merge run as index-map kernels that read the batch
  // at run time, its transposes as vectors of 16 bytes (fp32 and fp16).
  TempDir dir;
  const std::string model = source_path("models/tiny/vit_tiny.onnx");
  for (const char* precision : {"fp32", "fp16"}) {
    INFO(precision);
    const std::string engine = dir.file(std::string("vit_") + precision + ".engine");
    auto built = run_graphc("build " + model + " --precision " + precision +
                            " --min-shape input:1x3x32x32 --opt-shape input:4x3x32x32"
                            " --max-shape input:9x3x32x32 -o " + engine);
    INFO(built.output);
    REQUIRE(built.exit_code == 0);
    auto listed = run_graphc("inspect " + engine);
    CHECK(contains(listed.output, "im_fused_elementwise"));
    const std::string rtol = std::string(precision) == "fp16" ? " --check-rtol 2e-2" : "";
    for (const char* batch : {"1", "4", "9", "2", "7"}) {
      auto r = run_graphc("run " + engine + " --shape input:" + batch +
                          "x3x32x32 --iterations 3 --warmup-ms 0 --check --onnx " + model + rtol);
      INFO(r.output);
      CHECK(r.exit_code == 0);
    }
  }
}
