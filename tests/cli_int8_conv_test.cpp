// graphc inspect on QDQ convs as onnxruntime's quantize_static writes them:
// with --int8-gemm a 3x3 conv (uint8 activations, per-channel int8 weights,
// int32 bias through a DequantizeLinear, Relu folded into the output's Q)
// runs as the generated int8 tensor-core conv and inspect says so; the
// depthwise conv after it stays float and inspect says why; without the flag
// both stay float, as before sm_80. A build with the flag writes an engine.
#include <catch2/catch.hpp>

#include "tests/cli_util.h"
#include "tests/onnx_builder.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::testing;

namespace {

// x float32[1, 8, 16, 16] -> Q/DQ -> Conv 3x3 (8 -> 16) -> Q/DQ -> depthwise Conv 3x3 -> y.
std::string qdq_conv_model(const TempDir& dir) {
  OnnxModel m(19);
  m.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{8}, int64_t{16}, int64_t{16}});
  auto weights = [&](const std::string& name, int64_t oc, int64_t ci) {
    std::vector<int8_t> w(static_cast<size_t>(oc * ci * 9));
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 253) - 126);
    std::vector<float> ws(static_cast<size_t>(oc));
    for (size_t i = 0; i < ws.size(); ++i) ws[i] = 0.002f + 0.0001f * static_cast<float>(i % 5);
    m.initializer(raw_tensor(name + "_q", onnx::TensorProto::INT8, {oc, ci, 3, 3}, w));
    m.initializer(float_tensor(name + "_scale", {oc}, ws));
    m.initializer(raw_tensor(name + "_zp", onnx::TensorProto::INT8, {oc}, std::vector<int8_t>(static_cast<size_t>(oc), 0)));
    auto* dq = m.node("DequantizeLinear", {name + "_q", name + "_scale", name + "_zp"}, {name + "_dq"},
                      "dequantize_" + name);
    attr_int(dq, "axis", 0);
  };
  weights("w1", 16, 8);
  weights("w2", 16, 1);
  std::vector<int32_t> bias(16);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<int32_t>(i * 13 % 41) - 20;
  m.initializer(raw_tensor("b_q", onnx::TensorProto::INT32, {16}, bias));
  m.initializer(float_tensor("b_scale", {}, {0.0001f}));
  m.node("DequantizeLinear", {"b_q", "b_scale"}, {"b_dq"}, "dequantize_bias");
  m.initializer(float_tensor("x_scale", {}, {0.03f}));
  m.initializer(raw_tensor("x_zp", onnx::TensorProto::UINT8, {}, std::vector<uint8_t>{120}));
  m.initializer(float_tensor("h_scale", {}, {0.05f}));
  m.initializer(raw_tensor("h_zp", onnx::TensorProto::UINT8, {}, std::vector<uint8_t>{0}));
  m.node("QuantizeLinear", {"x", "x_scale", "x_zp"}, {"x_q"}, "quantize_x");
  m.node("DequantizeLinear", {"x_q", "x_scale", "x_zp"}, {"x_dq"}, "dequantize_x");
  auto* c1 = m.node("Conv", {"x_dq", "w1_dq", "b_dq"}, {"h"}, "conv");
  attr_ints(c1, "pads", {1, 1, 1, 1});
  m.node("QuantizeLinear", {"h", "h_scale", "h_zp"}, {"h_q"}, "quantize_h");
  m.node("DequantizeLinear", {"h_q", "h_scale", "h_zp"}, {"h_dq"}, "dequantize_h");
  auto* c2 = m.node("Conv", {"h_dq", "w2_dq"}, {"y"}, "depthwise");
  attr_ints(c2, "pads", {1, 1, 1, 1});
  attr_int(c2, "group", 16);
  m.output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{16}, int64_t{16}, int64_t{16}});
  const std::string path = dir.file("qdq_conv.onnx");
  m.write(path);
  return path;
}

}  // namespace

TEST_CASE("graphc inspect names the int8 conv and why a depthwise QDQ conv stays float",
          "[cli][int8][conv]") {
  TempDir dir;
  const std::string model = qdq_conv_model(dir);
  auto on = run_graphc("inspect " + model + " --precision fp16 --int8-gemm");
  INFO(on.output);
  REQUIRE(on.exit_code == 0);
  CHECK(contains(on.output, "generated: int8 tensor-core conv (mma.sync m16n8k32 s8"));
  CHECK(contains(on.output, "1x fuse-qdq-conv: DQ -> Conv <- DQ(int8 weight) becomes an int8 tensor-core conv"));
  CHECK(contains(on.output, "fuse-qdq-conv: Conv 'depthwise' stays float: groups = 16"));
  auto off = run_graphc("inspect " + model + " --precision fp16");
  INFO(off.output);
  REQUIRE(off.exit_code == 0);
  CHECK_FALSE(contains(off.output, "int8 tensor-core conv"));
  auto built = run_graphc("build " + model + " --arch sm_90 --precision fp16 --int8-gemm -o " +
                          dir.file("int8.engine"));
  INFO(built.output);
  CHECK(built.exit_code == 0);
  // Before sm_80 (no mma.sync s8) the convs stay float: the build still works.
  auto old_arch = run_graphc("build " + model + " --arch sm_75 --int8-gemm -o " + dir.file("old.engine"));
  INFO(old_arch.output);
  CHECK(old_arch.exit_code == 0);
}
