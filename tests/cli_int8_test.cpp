// graphc build/inspect's int8 flags on a QDQ linear layer as onnxruntime's
// quantize_static writes it: --int8-gemm turns the int8 GEMM on (cuBLASLt's
// IMMA kernels, inspect names the path), --int8-precision fp32 keeps the
// quantize arithmetic in fp32; both are recorded for refit, bad values
// refused, and the default build has neither.
#include <catch2/catch.hpp>

#include "engine_format/engine_file.h"
#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

// y = Relu(DQ(Q(x)) @ DQ(W) + b): x float32[128, 256], W int8 [256, 128]
// with one scale per output column (zero point 0), as quantize_static writes.
std::string qdq_model(const TempDir& dir) {
  OnnxModel m(19);
  m.input("x", onnx::TensorProto::FLOAT, {int64_t{128}, int64_t{256}});
  std::vector<int8_t> w(256 * 128);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 255) - 127);
  std::vector<float> ws(128), b(128);
  for (size_t i = 0; i < ws.size(); ++i) {
    ws[i] = 0.001f + 0.0001f * static_cast<float>(i % 7);
    b[i] = 0.01f * static_cast<float>(static_cast<int>(i % 11) - 5);
  }
  m.initializer(raw_tensor("w_q", onnx::TensorProto::INT8, {256, 128}, w));
  m.initializer(float_tensor("w_scale", {128}, ws));
  m.initializer(raw_tensor("w_zp", onnx::TensorProto::INT8, {128}, std::vector<int8_t>(128, 0)));
  m.initializer(float_tensor("x_scale", {}, {0.03f}));
  m.initializer(raw_tensor("x_zp", onnx::TensorProto::INT8, {}, std::vector<int8_t>{-3}));
  m.initializer(float_tensor("b", {128}, b));
  m.node("QuantizeLinear", {"x", "x_scale", "x_zp"}, {"x_q"}, "quantize_x");
  m.node("DequantizeLinear", {"x_q", "x_scale", "x_zp"}, {"x_dq"}, "dequantize_x");
  auto* dqw = m.node("DequantizeLinear", {"w_q", "w_scale", "w_zp"}, {"w_dq"}, "dequantize_w");
  attr_int(dqw, "axis", 1);
  m.node("MatMul", {"x_dq", "w_dq"}, {"mm"}, "matmul");
  m.node("Add", {"mm", "b"}, {"biased"}, "bias");
  m.node("Relu", {"biased"}, {"y"}, "relu");
  m.output("y", onnx::TensorProto::FLOAT, {int64_t{128}, int64_t{128}});
  const std::string path = dir.file("qdq.onnx");
  m.write(path);
  return path;
}

}  // namespace

TEST_CASE("graphc inspect and build take --int8-gemm and --int8-precision", "[cli][int8]") {
  TempDir dir;
  const std::string model = qdq_model(dir);
  SECTION("inspect names the int8 path, and says why it is off by default") {
    auto on = run_graphc("inspect " + model + " --precision fp16 --int8-gemm");
    INFO(on.output);
    CHECK(on.exit_code == 0);
    CHECK(contains(on.output, "cuBLASLt int8 tensor-core GEMM"));
    auto generated = run_graphc("inspect " + model + " --int8-gemm --gemm generated");
    INFO(generated.output);
    CHECK(generated.exit_code == 0);
    CHECK_FALSE(contains(generated.output, "cuBLASLt int8"));
    auto off = run_graphc("inspect " + model + " --precision fp16");
    INFO(off.output);
    CHECK(off.exit_code == 0);
    CHECK_FALSE(contains(off.output, "int8 tensor-core GEMM"));
  }
  SECTION("build records the flags for refit; without them the engine has none") {
    const std::string e1 = dir.file("int8.engine"), e0 = dir.file("plain.engine");
    auto built = run_graphc("build " + model + " --arch sm_90 --precision fp16 --int8-gemm "
                            "--int8-precision fp32 -o " + e1);
    INFO(built.output);
    REQUIRE(built.exit_code == 0);
    auto c = engine::read_engine_file(e1);
    REQUIRE(c.ok());
    CHECK(c->manifest.refit().recipe().int8_gemm());
    CHECK(c->manifest.refit().recipe().int8_precision() == "fp32");
    bool int8_call = false;
    for (const auto& k : c->manifest.kernels())
      int8_call |= k.has_library_call() && !k.library_call().params().empty() &&
                   static_cast<uint8_t>(k.library_call().params()[0]) == 2;
    CHECK(int8_call);
    auto inspect = run_graphc("inspect " + e1);
    INFO(inspect.output);
    CHECK(contains(inspect.output, "int8->int32"));
    REQUIRE(run_graphc("build " + model + " --arch sm_90 --precision fp16 -o " + e0).exit_code == 0);
    auto plain = engine::read_engine_file(e0);
    REQUIRE(plain.ok());
    CHECK_FALSE(plain->manifest.refit().recipe().int8_gemm());
    CHECK(plain->manifest.refit().recipe().int8_precision().empty());
  }
  SECTION("bad values are refused") {
    auto bad = run_graphc("build " + model + " --arch sm_90 --int8-precision fp8 -o " +
                          dir.file("x.engine"));
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.output, "--int8-precision"));
  }
}
