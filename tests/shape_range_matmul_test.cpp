// cuBLASLt matmuls in engines for a shape range: activations [batch, seq, K]
// times fixed weights take M = batch * seq at run time (engine
// LibraryCall.sizes), what cannot is refused naming the kernel, and damaged
// fields are refused by the reader. Running them needs cuBLASLt and a GPU:
// tests/gpu/shape_range_gpu_test.cpp.
#include <catch2/catch.hpp>
#include <functional>
#include <random>

#include "engine_format/engine_file.h"
#include "engine_format/matmul_params.h"
#include "engine_format/shape_range.h"
#include "support/size_program.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// y = Relu(x @ w + bias), x [batch, seq, 64], w [64, 96].
void write_dense_model(const std::string& path) {
  OnnxModel m(17);
  m.input("x", onnx::TensorProto::FLOAT, {Dim("batch"), Dim("seq"), int64_t{64}});
  m.initializer(float_tensor("w", {64, 96}, random_floats(64 * 96, 1)));
  m.initializer(float_tensor("bias", {96}, random_floats(96, 2)));
  m.node("MatMul", {"x", "w"}, {"p"}, "dense");
  m.node("Add", {"p", "bias"}, {"a"}, "bias_add");
  m.node("Relu", {"a"}, {"y"}, "relu");
  m.output("y");
  m.write(path);
}

const engine::Kernel* matmul_call(const engine::Manifest& m) {
  for (const auto& k : m.kernels())
    if (k.has_library_call() && k.library_call().op() == "matmul") return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("a cuBLASLt matmul over a shape range takes M at run time",
          "[shape-range][cublaslt][engine-format]") {
  TempDir dir;
  write_dense_model(dir.file("dense.onnx"));
  auto built = run_graphc("build " + dir.file("dense.onnx") +
                          " --gemm cublaslt --min-shape x:1x1x64 --opt-shape x:4x16x64 "
                          "--max-shape x:8x40x64 --arch sm_90 -o " + dir.file("dense.engine"));
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  auto contents = engine::read_engine_file(dir.file("dense.engine"));
  REQUIRE(contents.ok());
  const engine::Manifest& m = contents->manifest;
  const engine::Kernel* call = matmul_call(m);
  REQUIRE(call != nullptr);
  REQUIRE(call->library_call().sizes_size() == 1);
  auto params = engine::decode_matmul_params(call->library_call().params());
  REQUIRE(params.ok());
  CHECK(params->m == 4 * 16);  // at the opt shape it was built at
  CHECK(params->batch == 1);
  CHECK(params->has_bias);
  // M is batch * seq at every shape of the range.
  const auto programs = engine::size_programs(m.shape_range());
  const auto& rows = programs[static_cast<size_t>(call->library_call().sizes(0))];
  REQUIRE(m.shape_range().symbols_size() == 2);
  const bool batch_first = m.shape_range().symbols(0) == "batch";
  for (auto [b, s] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {8, 40}, {5, 33}}) {
    const std::vector<int64_t> symbols = batch_first ? std::vector<int64_t>{b, s}
                                                     : std::vector<int64_t>{s, b};
    auto v = evaluate_size_program(rows, symbols);
    REQUIRE(v.ok());
    CHECK(*v == b * s);
  }
  // The same model at a fixed shape: no run-time sizes, engine as before.
  auto fixed = run_graphc("build " + dir.file("dense.onnx") +
                          " --gemm cublaslt --shape x:4x16x64 --arch sm_90 -o " +
                          dir.file("fixed.engine"));
  REQUIRE(fixed.exit_code == 0);
  auto fixed_contents = engine::read_engine_file(dir.file("fixed.engine"));
  REQUIRE(fixed_contents.ok());
  const engine::Kernel* fixed_call = matmul_call(fixed_contents->manifest);
  REQUIRE(fixed_call != nullptr);
  CHECK(fixed_call->library_call().sizes_size() == 0);

  SECTION("damaged run-time M fields are refused, naming the field") {
    auto refused = [&](const std::function<void(engine::Kernel&)>& damage, const std::string& says) {
      engine::EngineContents c = *contents;
      for (auto& k : *c.manifest.mutable_kernels())
        if (k.has_library_call()) damage(k);
      auto bytes = engine::serialize_engine(c);
      INFO(says);
      REQUIRE_FALSE(bytes.ok());
      CHECK(bytes.status().code() == ErrorCode::kInvalidEngine);
      CHECK_THAT(bytes.status().message(), Catch::Contains(says));
    };
    refused([](engine::Kernel& k) { k.mutable_library_call()->set_sizes(0, 999); },
            "M's size index 999 is out of range");
    refused([](engine::Kernel& k) { k.mutable_library_call()->add_sizes(0); },
            "a cuBLASLt matmul's M alone");
    refused([](engine::Kernel& k) { k.mutable_library_call()->clear_sizes(); },
            "a library call on tensor");
    refused(
        [](engine::Kernel& k) {
          auto p = engine::decode_matmul_params(k.library_call().params());
          p->trans_a = true;
          k.mutable_library_call()->set_params(engine::encode_matmul_params(*p));
        },
        "A not transposed");
    // M pointed at a new size, twice M: more rows than the tensors were sized for.
    {
      engine::EngineContents c = *contents;
      engine::ShapeRange& r = *c.manifest.mutable_shape_range();
      auto* twice = r.add_sizes();
      *twice = r.sizes(call->library_call().sizes(0));
      twice->add_code(SizeProgram::kConstant);
      twice->add_code(2);
      twice->add_code(SizeProgram::kMul);
      const int32_t index = r.sizes_size() - 1;
      for (auto& k : *c.manifest.mutable_kernels())
        if (k.has_library_call()) k.mutable_library_call()->set_sizes(0, index);
      auto bytes = engine::serialize_engine(c);
      REQUIRE_FALSE(bytes.ok());
      CHECK(bytes.status().code() == ErrorCode::kInvalidEngine);
      CHECK_THAT(bytes.status().message(), Catch::Contains("needs more than tensor"));
    }
  }
}

TEST_CASE("a cuBLASLt call whose batch varies over a shape range is refused, naming the kernel",
          "[shape-range][cublaslt]") {
  TempDir dir;
  OnnxModel m(17);
  m.input("a", onnx::TensorProto::FLOAT, {Dim("batch"), int64_t{64}, int64_t{64}});
  m.input("b", onnx::TensorProto::FLOAT, {Dim("batch"), int64_t{64}, int64_t{64}});
  m.node("MatMul", {"a", "b"}, {"y"}, "batched");
  m.output("y");
  m.write(dir.file("batched.onnx"));
  auto built = run_graphc("build " + dir.file("batched.onnx") +
                          " --gemm cublaslt --min-shape a:1x64x64,b:1x64x64 "
                          "--opt-shape a:4x64x64,b:4x64x64 --max-shape a:8x64x64,b:8x64x64 "
                          "--arch sm_90 -o " + dir.file("batched.engine"));
  INFO(built.output);
  CHECK(built.exit_code != 0);
  CHECK(contains(built.output, "kernel 'batched'"));
  CHECK(contains(built.output, "the call is a batch of 4 matrices"));
  CHECK_FALSE(std::filesystem::exists(dir.file("batched.engine")));
}
