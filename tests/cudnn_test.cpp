// cuDNN convolutions without a GPU: which convs go to cuDNN and why not, the
// conv descriptor's byte format and every-field validation, engines recording
// cudnn calls (deterministically) and rejecting bad ones, and libcudnn being
// needed only by engines that call it (with a clear error when it is missing).
#include "runtime/cudnn.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "driver/engine_build.h"
#include "emit/plan/gpu_plan.h"
#include "engine_format/conv_params.h"
#include "runtime/engine.h"
#include "runtime/engine_loader.h"
#include "target/cuda/cudnn_rules.h"
#include "tests/cli_util.h"
#include "tests/conv_graphs.h"
#include "tests/engine_test_util.h"
#include "tests/onnx_builder.h"

using namespace graphc;
using graphc::engine::ConvActivation;
using graphc::engine::ConvOp;
using graphc::engine::ConvParams;
using graphc::ir::DType;
using graphc::testing::ConvSpec;

namespace {

target::ConvChoice choose(const ConvSpec& s, target::ConvMode mode = target::ConvMode::kAuto,
                          bool tf32 = false) {
  const ir::Graph g = testing::conv_graph(s);
  return target::choose_conv_lowering(g, testing::only_conv_kernel(g), {mode, tf32});
}

bool has(const std::string& text, const std::string& part) {
  return engine::testing::contains(text, part);
}

ConvParams sample_params() {
  ConvParams p;
  p.op = ConvOp::kForward;
  p.dtype = 10;
  p.layout = engine::ConvLayout::kNhwc;
  p.activation = ConvActivation::kRelu;
  p.has_bias = true;
  p.has_residual = true;
  p.spatial_rank = 2;
  p.n = 2;
  p.c = 8;
  p.k = 12;
  p.groups = 4;
  p.in = {9, 7, 0};
  p.filter = {3, 2, 0};
  p.pads_begin = p.pads_end = {1, 0, 0};
  p.strides = {2, 1, 0};
  p.dilations = {1, 2, 0};
  p.out = {5, 5, 0};  // (9+2-3)/2+1 = 5, (7-3)/1+1 = 5
  p.algorithm = 1;
  return p;
}

}  // namespace

TEST_CASE("cuDNN rule: which convolutions go to cuDNN", "[cudnn]") {
  SECTION("a plain fp32 Conv with its own bias") {
    ConvSpec s;
    s.conv_bias = true;
    auto c = choose(s);
    INFO(c.reason);
    REQUIRE(c.call);
    const ConvParams& p = c.call->params;
    CHECK(c.reason == "cuDNN");
    CHECK(p.op == ConvOp::kForward);
    CHECK(p.dtype == 1);
    CHECK(p.compute == engine::ConvCompute::kF32);
    CHECK(p.layout == engine::ConvLayout::kNchw);
    CHECK(p.has_bias);
    CHECK_FALSE(p.has_residual);
    CHECK(p.activation == ConvActivation::kNone);
    CHECK(p.spatial_rank == 2);
    CHECK(p.n == 1);
    CHECK(p.c == 4);
    CHECK(p.k == 8);
    CHECK(p.out == ConvParams::Dims{6, 6, 0});
    CHECK(p.pads_begin == ConvParams::Dims{1, 1, 0});
    CHECK(p.algorithm == -1);
    CHECK(c.call->args.size() == 4);  // x, w, B, y
  }
  SECTION("bias Add + residual Add + Relu, fp16, TF32 not applied to fp16") {
    ConvSpec s;
    s.dtype = DType::kFloat16;
    s.epilogue = {"bias", "residual", "relu"};
    auto c = choose(s, target::ConvMode::kAuto, true);
    INFO(c.reason);
    REQUIRE(c.call);
    const ConvParams& p = c.call->params;
    CHECK(p.has_bias);
    CHECK(p.has_residual);
    CHECK(p.activation == ConvActivation::kRelu);
    CHECK(p.compute == engine::ConvCompute::kF32);
    CHECK(c.call->args.size() == 5);
    CHECK(c.epilogue_ops_taken >= 2);  // the optimizer may fold the bias Add into B
  }
  SECTION("fp32 with --allow-tf32 records TF32 compute") {
    auto c = choose(ConvSpec{}, target::ConvMode::kCudnn, true);
    REQUIRE(c.call);
    CHECK(c.call->params.compute == engine::ConvCompute::kF32FastTf32);
  }
  SECTION("1-D, 3-D, grouped, depthwise, strided and dilated") {
    ConvSpec one;
    one.in = {17};
    one.filter = {5};
    one.strides = {2};
    one.dilations = {1};
    one.pads = {2, 2};
    auto c1 = choose(one);
    INFO(c1.reason);
    REQUIRE(c1.call);
    CHECK(c1.call->params.spatial_rank == 1);
    CHECK(c1.call->params.out == ConvParams::Dims{9, 0, 0});
    ConvSpec three;
    three.in = {5, 6, 7};
    three.filter = {3, 3, 3};
    three.strides = {1, 2, 1};
    three.dilations = {1, 1, 2};
    three.pads = {1, 1, 2, 1, 1, 2};
    auto c3 = choose(three);
    INFO(c3.reason);
    REQUIRE(c3.call);
    CHECK(c3.call->params.spatial_rank == 3);
    ConvSpec dw;
    dw.c = dw.k = dw.groups = 8;
    auto cd = choose(dw, target::ConvMode::kCudnn);
    REQUIRE(cd.call);
    CHECK(cd.call->params.groups == 8);
    // In auto mode the depthwise cost model gives it to the generated kernel.
    auto ca = choose(dw);
    CHECK_FALSE(ca.call);
    CHECK(has(ca.reason, "generated depthwise (NCHW, 3x3)"));
  }
  SECTION("ConvTranspose is cuDNN's backward data, output_padding included") {
    ConvSpec t;
    t.transpose = true;
    t.c = 6;
    t.k = 4;
    t.groups = 2;
    t.in = {5, 4};
    t.strides = {2, 2};
    t.output_padding = {1, 0};
    t.conv_bias = true;
    auto c = choose(t);
    INFO(c.reason);
    REQUIRE(c.call);
    const ConvParams& p = c.call->params;
    CHECK(p.op == ConvOp::kBackwardData);
    CHECK(p.c == 6);
    CHECK(p.k == 4);
    CHECK(p.out == ConvParams::Dims{10, 7, 0});  // 2*4+1+3-2, 2*3+0+3-2
    CHECK(p.w_elements() == 6 * 2 * 9);
  }
  SECTION("asymmetric pads stay generated") {
    ConvSpec s;
    s.pads = {0, 1, 1, 1};
    auto c = choose(s, target::ConvMode::kCudnn);
    CHECK_FALSE(c.call);
    CHECK(has(c.reason, "generated: pads 0/1 on spatial dim 0"));
  }
  SECTION("an epilogue cuDNN lacks stays generated; the ops before it are counted") {
    ConvSpec s;
    s.epilogue = {"residual", "sigmoid"};
    auto c = choose(s, target::ConvMode::kCudnn);
    CHECK_FALSE(c.call);
    CHECK(has(c.reason, "epilogue op Sigmoid"));
    CHECK(c.epilogue_ops_taken == 1);
    ConvSpec after;
    after.epilogue = {"residual", "relu", "bias"};
    auto a = choose(after, target::ConvMode::kCudnn);
    CHECK_FALSE(a.call);
    CHECK(has(a.reason, "after the Relu"));
    CHECK(a.epilogue_ops_taken == 2);
    ConvSpec two;
    two.epilogue = {"residual", "residual"};
    auto r = choose(two, target::ConvMode::kCudnn);
    CHECK_FALSE(r.call);
    CHECK(has(r.reason, "one output-shaped residual"));
    CHECK(r.epilogue_ops_taken == 1);
  }
  SECTION("--conv generated keeps every conv generated") {
    auto c = choose(ConvSpec{}, target::ConvMode::kGenerated);
    CHECK_FALSE(c.call);
    CHECK(c.reason == "generated (--conv generated)");
  }
  SECTION("double stays generated") {
    ConvSpec s;
    s.dtype = DType::kFloat64;
    auto c = choose(s);
    CHECK_FALSE(c.call);
    CHECK(has(c.reason, "dtype float64"));
  }
  CHECK(target::parse_conv_mode("cudnn").ok());
  CHECK_FALSE(target::parse_conv_mode("fast").ok());
}

TEST_CASE("cuDNN conv params round-trip and reject every bad field", "[cudnn]") {
  const ConvParams p = sample_params();
  const std::string bytes = engine::encode_conv_params(p);
  CHECK(bytes.size() == 224);
  auto back = engine::decode_conv_params(bytes);
  INFO((back.ok() ? "" : back.status().message()));
  REQUIRE(back.ok());
  CHECK(*back == p);
  CHECK(engine::encode_conv_params(*back) == bytes);
  CHECK(engine::describe_conv(p) ==
        "conv2d fp16 NHWC N=2 C=8->K=12 9x7->5x5 f=3x2 s=2x1 p=1x0 d=1x2 g=4 "
        "epilogue=bias+residual+relu algo=1");

  auto refused = [&](const std::string& b, const std::string& part) {
    auto r = engine::decode_conv_params(b);
    REQUIRE_FALSE(r.ok());
    INFO(r.status().message());
    CHECK(r.status().code() == ErrorCode::kInvalidEngine);
    CHECK(has(r.status().message(), part));
  };
  auto with = [&](auto edit) {
    ConvParams q = p;
    edit(q);
    return engine::encode_conv_params(q);
  };
  auto byte_set = [&](size_t at, char v) {
    std::string b = bytes;
    b[at] = v;
    return b;
  };
  refused("", "0 bytes");
  refused(bytes.substr(0, bytes.size() - 1), "bytes, version 1 has 224");
  refused(bytes + "x", "bytes, version 1 has 224");
  refused(byte_set(0, 2), "version 2");
  refused(with([](auto& q) { q.dtype = 11; }), "dtype 11");
  refused(byte_set(8, 2), "unknown op 2");
  refused(byte_set(9, 2), "unknown layout 2");
  refused(byte_set(10, 2), "unknown compute type 2");
  refused(with([](auto& q) { q.compute = engine::ConvCompute::kF32FastTf32; }), "TF32");
  refused(byte_set(11, 2), "unknown activation 2");
  refused(byte_set(12, 2), "has_bias is 2");
  refused(byte_set(13, 2), "has_residual is 2");
  refused(byte_set(14, 4), "spatial_rank 4");
  refused(byte_set(14, 0), "spatial_rank 0");
  refused(byte_set(15, 1), "reserved");
  refused(byte_set(223, 1), "reserved");
  refused(with([](auto& q) { q.n = 0; }), "n = 0");
  refused(with([](auto& q) { q.c = int64_t{1} << 40; }), "c = ");
  refused(with([](auto& q) { q.k = -3; }), "k = -3");
  refused(with([](auto& q) { q.groups = 0; }), "groups = 0");
  refused(with([](auto& q) { q.groups = 3; }), "groups 3 does not divide");
  refused(with([](auto& q) { q.in[0] = 0; }), "in[0] = 0");
  refused(with([](auto& q) { q.filter[1] = -1; }), "filter[1] = -1");
  refused(with([](auto& q) { q.out[0] = 4; }), "out[0] = 4, but the window over 9 gives 5");
  refused(with([](auto& q) { q.strides[0] = 0; }), "strides[0] = 0");
  refused(with([](auto& q) { q.dilations[1] = 0; }), "dilations[1] = 0");
  refused(with([](auto& q) { q.pads_begin[0] = -1; }), "pads_begin[0] = -1");
  refused(with([](auto& q) { q.pads_end[0] = 2; }), "symmetric");
  refused(with([](auto& q) { q.in[2] = 1; }), "in[2] = 1 past spatial_rank 2");
  refused(with([](auto& q) { q.pads_end[2] = 1; }), "pads_end[2] = 1 past spatial_rank");
  refused(with([](auto& q) { q.algorithm = 8; }), "algorithm 8 is outside [-1, 8)");
  refused(with([](auto& q) { q.algorithm = -2; }), "algorithm -2");
  refused(with([](auto& q) {
            q.op = ConvOp::kBackwardData;
            q.algorithm = 6;
            std::swap(q.in, q.out);
          }),
          "algorithm 6 is outside [-1, 6)");
  refused(with([](auto& q) {
            q.n = 1 << 20;
            q.c = 1 << 12;
          }),
          "cuDNN's legacy API indexes with int");
  // Backward data checks the forward conv from out back to in.
  ConvParams t = p;
  t.op = ConvOp::kBackwardData;
  std::swap(t.in, t.out);  // in 5x5 -> out 9x7 (the forward conv gives back 5x5)
  t.out[1] = 8;            // also 5 = (8-3)/1+1... no: (8+0-3)/1+1 = 6
  refused(engine::encode_conv_params(t), "in[1] = 5, but the window over 8 gives 6");
  t.out[1] = 7;
  CHECK(engine::decode_conv_params(engine::encode_conv_params(t)).ok());
  // Every single-byte change of the fields is either refused or decodes to
  // different params: no field is ignored.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0x5a);
    auto r = engine::decode_conv_params(b);
    INFO("byte " << i);
    CHECK((!r.ok() || !(*r == p)));
  }
}

namespace {

engine::EngineContents conv_engine(const ir::Graph& g, target::ConvMode mode) {
  driver::BuildOptions opts;
  opts.archs = {"sm_90"};
  opts.lower.conv.mode = mode;
  auto built = driver::build_engine(g, opts);
  INFO((built.ok() ? "" : built.status().message()));
  REQUIRE(built.ok());
  return std::move(*built);
}

ConvSpec residual_relu_spec() {
  ConvSpec s;
  s.conv_bias = true;
  s.epilogue = {"residual", "relu"};
  return s;
}

engine::Kernel& cudnn_kernel(engine::EngineContents& c) {
  for (auto& k : *c.manifest.mutable_kernels())
    if (k.has_library_call() && k.library_call().library() == "cudnn") return k;
  FAIL("no cudnn call in the engine");
  throw;
}

}  // namespace

TEST_CASE("engines record cuDNN conv calls, deterministically", "[cudnn][build]") {
  const ir::Graph g = testing::conv_graph(residual_relu_spec());
  auto a = conv_engine(g, target::ConvMode::kCudnn);
  auto b = conv_engine(g, target::ConvMode::kCudnn);
  const bool same = engine::testing::serialize_ok(a) == engine::testing::serialize_ok(b);
  CHECK(same);
  const engine::Kernel& k = cudnn_kernel(a);
  CHECK(k.library_call().op() == "conv");
  CHECK(k.library_call().algorithm() == -1);
  CHECK(k.library_call().workspace_bytes() == target::kCudnnWorkspaceLimitBytes);
  CHECK(k.args_size() == 5);                   // x, w, B, residual, y
  CHECK(a.manifest.code_modules_size() == 0);  // nothing generated
  auto reread = engine::parse_engine(engine::testing::serialize_ok(a));
  REQUIRE(reread.ok());
  auto exe = runtime::executable_from_engine(*reread, 90);
  INFO((exe.ok() ? "" : exe.status().message()));
  REQUIRE(exe.ok());
  REQUIRE(exe->launches.size() == 1);
  const runtime::Launch& l = exe->launches[0];
  REQUIRE(l.conv());
  CHECK(l.conv()->params.has_bias);
  CHECK(l.conv()->params.has_residual);
  CHECK(l.conv()->params.activation == ConvActivation::kRelu);
  CHECK_FALSE(l.matmul());
  // --conv generated: a generated kernel and no library call.
  auto gen = conv_engine(g, target::ConvMode::kGenerated);
  for (const auto& kk : gen.manifest.kernels()) CHECK_FALSE(kk.has_library_call());
}

TEST_CASE("manifest validation rejects bad cuDNN calls", "[cudnn][engine]") {
  using graphc::engine::testing::expect_invalid_manifest;
  auto edit = [](auto fn, const std::string& part) {
    auto c = conv_engine(testing::conv_graph(residual_relu_spec()), target::ConvMode::kCudnn);
    fn(cudnn_kernel(c), c.manifest);
    expect_invalid_manifest(c, part);
  };
  auto with_params = [](engine::Kernel& k, auto change) {
    auto p = *engine::decode_conv_params(k.library_call().params());
    change(p);
    k.mutable_library_call()->set_params(engine::encode_conv_params(p));
  };
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_op("pool"); },
       "unknown cudnn op 'pool'");
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_params("junk"); },
       "cudnn conv params");
  edit([](engine::Kernel& k, auto&) { k.mutable_library_call()->set_algorithm(2); },
       "records algorithm 2, its conv params -1");
  edit([](engine::Kernel& k, auto&) { k.mutable_args()->RemoveLast(); }, "takes 5 tensors");
  edit([&](engine::Kernel& k, auto&) { with_params(k, [](auto& p) { p.has_residual = false; }); },
       "takes 4 tensors");
  edit([&](engine::Kernel& k, auto&) { with_params(k, [](auto& p) { p.c *= 2; }); }, "x tensor");
  edit([&](engine::Kernel& k, auto&) { with_params(k, [](auto& p) { p.dtype = 10; }); },
       "has dtype 1, the conv 10");
  edit([](engine::Kernel& k, auto&) { k.set_args(3, k.args(4)); }, "reads its output tensor");
  edit([](engine::Kernel& k, auto&) { k.set_args(4, k.args(2)); }, "y tensor");
  edit([](engine::Kernel& k, auto&) { k.set_module_entry("f"); }, "no module entry");
}

TEST_CASE("libcudnn is needed only by engines that call it", "[cudnn][runtime]") {
  SECTION("a missing file or folder is a clear error") {
    auto missing = runtime::load_cudnn_from("/nonexistent/libcudnn.so.9");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.status().code() == ErrorCode::kUnsupported);
    CHECK(has(missing.status().message(), "/nonexistent/libcudnn.so.9 could not be loaded"));
    CHECK(has(missing.status().message(), "GRAPHC_CUDNN_PATH"));
    CHECK(has(missing.status().message(), "--conv generated"));
    testing::TempDir dir;
    auto folder = runtime::load_cudnn_from(dir.path());
    REQUIRE_FALSE(folder.ok());
    CHECK(has(folder.status().message(), dir.path() + "/libcudnn.so.9 could not be loaded"));
  }
  SECTION("where cuDNN is installed, a folder is enough") {
    const char* dir = "/usr/local/cuda/lib64";
    if (!std::filesystem::exists(std::string(dir) + "/libcudnn.so.9")) return;
    auto api = runtime::load_cudnn_from(dir);
    INFO((api.ok() ? "" : api.status().message()));
    REQUIRE(api.ok());
    CHECK(api->path == std::string(dir) + "/libcudnn.so.9");
    CHECK(api->cudnnGetVersion() / 10000 == 9);
  }
  SECTION("no conv launches: nothing is loaded") {
    const int before = runtime::cudnn_load_attempts();
    std::vector<runtime::Launch> launches(3);
    auto none = runtime::EngineConvs::create(launches);
    REQUIRE(none.ok());
    CHECK((*none)->api() == nullptr);
    CHECK((*none)->workspace_bytes() == 0);
    CHECK(runtime::cudnn_load_attempts() == before);
  }
}

TEST_CASE("graphc run needs libcudnn only for engines that call it", "[cli][cudnn]") {
  testing::TempDir dir;
  const std::string onnx = dir.file("conv.onnx"), lib = dir.file("lib.engine"),
                    gen = dir.file("gen.engine");
  testing::OnnxModel m;
  m.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  m.initializer(testing::float_tensor("w", {4, 3, 3, 3}, std::vector<float>(108, 0.25f)));
  auto* n = m.node("Conv", {"x", "w"}, {"y"});
  testing::attr_ints(n, "pads", {1, 1, 1, 1});
  m.output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}, int64_t{8}, int64_t{8}});
  m.write(onnx);
  for (auto [engine, mode] : {std::pair{lib, "cudnn"}, {gen, "generated"}}) {
    auto built = testing::run_graphc("build " + onnx + " --arch sm_90 --conv " + std::string(mode) +
                                     " -o " + engine);
    INFO(built.output);
    REQUIRE(built.exit_code == 0);
  }
  auto shown = testing::run_graphc("inspect " + lib);
  INFO(shown.output);
  CHECK(has(shown.output, "cudnn conv: conv2d fp32 NCHW N=1 C=3->K=4 8x8->8x8 f=3x3"));
  auto report = testing::run_graphc("inspect " + onnx);
  INFO(report.output);
  CHECK(has(report.output, ": cuDNN"));
  const std::string env = std::string("GRAPHC_CUDNN_PATH=/nonexistent/libcudnn.so.9 ") +
                          "LD_LIBRARY_PATH=" + GRAPHC_FAKE_CUDA_DIR + " ";
  auto missing = testing::run_graphc_binary(env + GRAPHC_BINARY, "run " + lib + " --iterations 1");
  INFO(missing.output);
  CHECK(missing.exit_code == 1);
  CHECK(has(missing.output, "/nonexistent/libcudnn.so.9 could not be loaded"));
  CHECK(has(missing.output, "--conv generated"));
  auto fine = testing::run_graphc_binary(env + GRAPHC_BINARY, "run " + gen + " --iterations 1");
  INFO(fine.output);
  CHECK(fine.exit_code == 0);
  CHECK(testing::run_graphc("build " + onnx + " --arch sm_90 --conv fast -o " + gen).exit_code !=
        0);
}

namespace {

struct TensorDims {
  std::vector<int> dims, strides;
};

TensorDims read_tensor(const runtime::CudnnApi& api, cudnnTensorDescriptor_t t) {
  cudnnDataType_t type{};
  int nb = 0;
  TensorDims out;
  out.dims.resize(8);
  out.strides.resize(8);
  REQUIRE(api.cudnnGetTensorNdDescriptor(t, 8, &type, &nb, out.dims.data(), out.strides.data()) ==
          CUDNN_STATUS_SUCCESS);
  out.dims.resize(static_cast<size_t>(nb));
  out.strides.resize(static_cast<size_t>(nb));
  return out;
}

}  // namespace

TEST_CASE("cuDNN descriptors agree with the conv params (host-only cuDNN calls)",
          "[cudnn][runtime]") {
  // Descriptor calls need no GPU: where cuDNN is installed, check that the
  // tensor dims/strides graphc sets are what the params mean, and that cuDNN's
  // own window arithmetic gives y from x (forward) or x from y (backward data).
  const char* dir = "/usr/local/cuda/lib64";
  if (!std::filesystem::exists(std::string(dir) + "/libcudnn.so.9")) return;
  auto api = runtime::load_cudnn_from(dir);
  REQUIRE(api.ok());
  ConvParams nhwc = sample_params();  // NHWC fp16 2-D, groups 4
  ConvParams one;                     // NCHW fp32 1-D
  one.n = 3;
  one.c = 4;
  one.k = 6;
  one.spatial_rank = 1;
  one.in = {17, 0, 0};
  one.filter = {5, 0, 0};
  one.pads_begin = one.pads_end = {2, 0, 0};
  one.strides = {2, 0, 0};
  one.dilations = {1, 0, 0};
  one.out = {9, 0, 0};
  ConvParams three = one;  // NCHW 3-D backward data, groups 2
  three.op = ConvOp::kBackwardData;
  three.spatial_rank = 3;
  three.groups = 2;
  three.in = {4, 5, 3};
  three.filter = {3, 3, 2};
  three.pads_begin = three.pads_end = {1, 1, 0};
  three.strides = {2, 2, 1};
  three.dilations = {1, 1, 2};
  three.out = {7, 9, 5};  // forward from out: (7+2-3)/2+1 = 4, (9+2-3)/2+1 = 5, (5-3)/1+1 = 3
  for (const ConvParams& p : {nhwc, one, three}) {
    INFO(engine::describe_conv(p));
    REQUIRE(engine::decode_conv_params(engine::encode_conv_params(p)).ok());
    auto d = runtime::make_conv_descriptors(*api, p);
    INFO((d.ok() ? "" : d.status().message()));
    REQUIRE(d.ok());
    const TensorDims x = read_tensor(*api, (*d)->x), y = read_tensor(*api, (*d)->y);
    std::vector<int> want_x{static_cast<int>(p.n), static_cast<int>(p.c)};
    std::vector<int> want_y{static_cast<int>(p.n), static_cast<int>(p.k)};
    if (p.spatial_rank == 1) {
      want_x.push_back(1);
      want_y.push_back(1);
    }
    for (int i = 0; i < p.spatial_rank; ++i) {
      want_x.push_back(static_cast<int>(p.in[static_cast<size_t>(i)]));
      want_y.push_back(static_cast<int>(p.out[static_cast<size_t>(i)]));
    }
    CHECK(x.dims == want_x);
    CHECK(y.dims == want_y);
    // Packed: channels innermost for NHWC, the last dim for NCHW.
    if (p.layout == engine::ConvLayout::kNhwc) {
      CHECK(x.strides[1] == 1);
      CHECK(x.strides.back() == want_x[1]);
      CHECK(x.strides[0] == static_cast<int>(p.x_elements() / p.n));
    } else {
      CHECK(x.strides.back() == 1);
      CHECK(x.strides[1] == static_cast<int>(p.x_elements() / p.n / p.c));
    }
    // cuDNN's forward output of (source, w) is the other tensor.
    const bool fwd = p.op == ConvOp::kForward;
    std::vector<int> got(want_x.size());
    REQUIRE(api->cudnnGetConvolutionNdForwardOutputDim((*d)->conv, fwd ? (*d)->x : (*d)->y, (*d)->w,
                                                       static_cast<int>(got.size()),
                                                       got.data()) == CUDNN_STATUS_SUCCESS);
    CHECK(got == (fwd ? want_y : want_x));
  }
}

TEST_CASE("the runtime rejects conv launches inconsistent with their tensors", "[cudnn][runtime]") {
  // Checked before the driver is loaded: errors on a machine without a GPU too.
  ConvParams p = sample_params();
  p.layout = engine::ConvLayout::kNchw;
  p.has_residual = false;
  const int64_t elem = 2;
  runtime::Executable exe;
  auto slot = [&](const char* name, runtime::TensorSlot::Location loc, int64_t elements) {
    exe.tensors.push_back({name, loc, 0, elements * elem, p.dtype, {elements}});
    return static_cast<int32_t>(exe.tensors.size() - 1);
  };
  const int32_t x = slot("x", runtime::TensorSlot::Location::kInput, p.x_elements());
  exe.weights.assign(static_cast<size_t>((p.w_elements() + p.k) * elem), '\0');
  const int32_t w = slot("w", runtime::TensorSlot::Location::kWeights, p.w_elements());
  const int32_t b = slot("b", runtime::TensorSlot::Location::kWeights, p.k);
  exe.tensors.back().offset = p.w_elements() * elem;
  const int32_t y = slot("y", runtime::TensorSlot::Location::kOutput, p.y_elements());
  exe.inputs = {x};
  exe.outputs = {y};
  runtime::Launch l;
  l.op = runtime::ConvLaunch{p};
  l.args = {x, w, b, y};
  auto refused = [&](runtime::Launch bad, const std::string& part) {
    runtime::Executable e = exe;
    e.launches = {std::move(bad)};
    auto eng = runtime::Engine::create(e);
    REQUIRE_FALSE(eng.ok());
    INFO(eng.status().message());
    CHECK(has(eng.status().message(), part));
  };
  runtime::Launch short_args = l;
  short_args.args.pop_back();
  refused(short_args, "conv launch takes 4 slots");
  runtime::Launch small = l;
  small.args[1] = b;  // the bias slot as w
  refused(small, "conv operand 'b'");
  runtime::Launch as_kernel = l;
  as_kernel.op = runtime::KernelLaunch{};  // a kernel with no entry
  refused(as_kernel, "has no kernel entry");
}

TEST_CASE("every case of the cuDNN GPU test lowers to exactly one cuDNN call", "[cudnn]") {
  // So the GPU run tests cuDNN, not the generated kernel, in every case.
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
    for (const ConvSpec& geo : testing::cudnn_geometries())
      for (ConvSpec s : testing::with_cudnn_epilogues(geo)) {
        s.dtype = dt;
        INFO(s.describe());
        const ir::Graph g = testing::conv_graph(s);
        emit::LowerOptions o;
        o.conv.mode = target::ConvMode::kCudnn;
        auto plan = emit::lower_for_gpu(g, o);
        INFO((plan.ok() ? "" : plan.status().message()));
        REQUIRE(plan.ok());
        REQUIRE(plan->launches.size() == 1);
        REQUIRE(plan->launches[0].library);
        auto p = engine::decode_conv_params(plan->launches[0].library->params);
        REQUIRE(p.ok());
        CHECK(p->op == (s.transpose ? ConvOp::kBackwardData : ConvOp::kForward));
        CHECK(p->has_bias == (s.conv_bias || (!s.epilogue.empty() && s.epilogue[0] == "bias")));
      }
}
