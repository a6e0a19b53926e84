// The signal-processing ops (windows, MelWeightMatrix, DFT, STFT), Det,
// ReverseSequence and RoiAlign: reference values against hand-computed ones,
// bad sizes and attributes refused naming the node, windows folded to
// constants before the GPU plan, and every generated kernel of
// tests/signal_cases.h compiling with NVRTC for sm_80 and sm_90.
#include <catch2/catch.hpp>
#include <cmath>

#include "driver/load_model.h"
#include "emit/cuda/gpu_kernels.h"
#include "emit/nvrtc/nvrtc_compiler.h"
#include "emit/plan/gpu_plan.h"
#include "emit/plan/schedule.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/signal_cases.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;
using graphc::testing::dmcases::ai;
using graphc::testing::dmcases::as;

namespace {

// Shape inference's error for the graph's only node, named "bad".
std::string infer_error(GraphBuilder& b) {
  Graph g = b.graph();
  Status st = driver::infer_graph_shapes(g);
  REQUIRE(!st.ok());
  return st.message();
}

Tensor run_one(Graph g, const std::map<std::string, Tensor>& feeds = {}) {
  auto r = reference::execute(g, feeds);
  if (!r.ok()) FAIL(r.status().message());
  return r->at(g.value(g.outputs[0]).name);
}

}  // namespace

TEST_CASE("window functions match their closed forms", "[signal]") {
  for (int periodic : {0, 1}) {
    GraphBuilder b;
    auto n = b.constant("n", Tensor::scalar_i64(8));
    b.output(b.node(OpKind::HannWindow, {n}, testing::attrs({{"periodic", ai(periodic)}})));
    b.output(b.node(OpKind::HammingWindow, {n}, testing::attrs({{"periodic", ai(periodic)}})));
    b.output(b.node(OpKind::BlackmanWindow, {n},
                    testing::attrs({{"periodic", ai(periodic)}, {"output_datatype", ai(11)}})));
    Graph g = b.build();
    auto r = reference::execute(g, {});
    REQUIRE(r.ok());
    const double N = periodic ? 8 : 7, pi = 3.14159265358979323846;
    const Tensor& hann = r->at(g.value(g.outputs[0]).name);
    const Tensor& hamming = r->at(g.value(g.outputs[1]).name);
    const Tensor& blackman = r->at(g.value(g.outputs[2]).name);
    CHECK(blackman.dtype() == DType::kFloat64);
    for (int i = 0; i < 8; ++i) {
      const double c = std::cos(2 * pi * i / N);
      CHECK(hann.get_f64(i) == Approx(0.5 - 0.5 * c).margin(1e-6));
      CHECK(hamming.get_f64(i) == Approx(25.0 / 46 - 21.0 / 46 * c).margin(1e-6));
      CHECK(blackman.get_f64(i) ==
            Approx(0.42 - 0.5 * c + 0.08 * std::cos(4 * pi * i / N)).margin(1e-12));
    }
  }
}

TEST_CASE("windows and MelWeightMatrix fold to constants: no kernel on the GPU", "[signal]") {
  GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {10});
  auto w = b.node(OpKind::HannWindow, {b.constant("n", Tensor::scalar_i64(10))});
  auto mel = b.node(OpKind::MelWeightMatrix,
                    {b.constant("bins", Tensor::scalar_i64(8)), b.constant("len", Tensor::scalar_i64(16)),
                     b.constant("rate", Tensor::scalar_i64(8192)),
                     b.constant("lo", Tensor::from_f32({0.f}, {})),
                     b.constant("hi", Tensor::from_f32({4096.f}, {}))});
  b.output(b.node(OpKind::Mul, {x, w}));
  b.output(mel);
  Graph g = b.build();
  optimizer::PassContext ctx;
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  for (const Node& n : g.nodes)
    if (!n.dead) {
      CHECK(n.op != OpKind::HannWindow);
      CHECK(n.op != OpKind::MelWeightMatrix);
    }
  auto plan = emit::lower_for_gpu(g);
  if (!plan.ok()) FAIL(plan.status().message());
  // The Mul only: the window and the matrix are weights.
  CHECK(plan->kernels.size() == 1);
}

TEST_CASE("DFT, Det and MelWeightMatrix give known values", "[signal]") {
  {  // [1, 2, 3, 4] -> [10, -2+2i, -2, -2-2i]
    GraphBuilder b;
    auto x = b.constant("x", Tensor::from_f32({1, 2, 3, 4}, {1, 4, 1}));
    b.output(b.node(OpKind::DFT, {x, kNoValue, b.constant("a", Tensor::scalar_i64(1))}));
    Tensor y = run_one(b.build());
    const std::vector<double> want = {10, 0, -2, 2, -2, 0, -2, -2};
    for (int i = 0; i < 8; ++i) CHECK(y.get_f64(i) == Approx(want[i]).margin(1e-5));
  }
  {  // irfft of the onesided spectrum of [1, 2, 3, 4] gives the signal back
    GraphBuilder b;
    auto x = b.constant("x", Tensor::from_f32({10, 0, -2, 2, -2, 0}, {1, 3, 2}));
    b.output(b.node(OpKind::DFT, {x, kNoValue, b.constant("a", Tensor::scalar_i64(1))},
                    testing::attrs({{"inverse", ai(1)}, {"onesided", ai(1)}})));
    Tensor y = run_one(b.build());
    REQUIRE(y.shape() == Shape{1, 4, 1});
    for (int i = 0; i < 4; ++i) CHECK(y.get_f64(i) == Approx(i + 1).margin(1e-5));
  }
  {  // needs a row swap: det [[0, 2, 1], [1, 1, 0], [3, 0, 1]] = 0 - 2*(1 - 0) + 1*(0 - 3) = -5
    GraphBuilder b;
    auto x = b.constant("x", Tensor::from_f32({0, 2, 1, 1, 1, 0, 3, 0, 1}, {1, 3, 3}));
    b.output(b.node(OpKind::Det, {x}));
    CHECK(run_one(b.build()).get_f64(0) == Approx(-5).margin(1e-5));
  }
  {  // each mel filter is a triangle: every column peaks at 1
    GraphBuilder b;
    b.output(b.node(OpKind::MelWeightMatrix,
                    {b.constant("bins", Tensor::scalar_i64(6)), b.constant("len", Tensor::scalar_i64(64)),
                     b.constant("rate", Tensor::scalar_i64(16000)),
                     b.constant("lo", Tensor::from_f32({100.f}, {})),
                     b.constant("hi", Tensor::from_f32({8000.f}, {}))}));
    Tensor y = run_one(b.build());
    REQUIRE(y.shape() == Shape{33, 6});
    for (int c = 0; c < 6; ++c) {
      double peak = 0;
      for (int r = 0; r < 33; ++r) peak = std::max(peak, y.get_f64(r * 6 + c));
      CHECK(peak == Approx(1.0));
    }
  }
}

TEST_CASE("malformed sizes, ranks and attributes of the signal ops are refused naming the node",
          "[signal]") {
  auto named = [](const std::string& msg, const std::string& what) {
    INFO(msg);
    CHECK(msg.find("'bad'") != std::string::npos);
    CHECK(msg.find(what) != std::string::npos);
  };
  {
    GraphBuilder b;
    b.node(OpKind::HannWindow, {b.constant("n", Tensor::scalar_i64(-3))}, {}, 1, "bad");
    named(infer_error(b), "negative");
  }
  {  // a size known only at run time
    GraphBuilder b;
    b.node(OpKind::HammingWindow, {b.input("n", DType::kInt64, {})}, {}, 1, "bad");
    named(infer_error(b), "size");
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 8, 1});
    b.node(OpKind::DFT, {x, kNoValue, b.constant("a", Tensor::scalar_i64(2))}, {}, 1, "bad");
    named(infer_error(b), "axis 2");
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 8, 3});
    b.node(OpKind::DFT, {x, kNoValue, b.constant("a", Tensor::scalar_i64(1))}, {}, 1, "bad");
    named(infer_error(b), "1 or 2");
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 8, 1});
    b.node(OpKind::DFT,
           {x, b.constant("n", Tensor::scalar_i64(-4)), b.constant("a", Tensor::scalar_i64(1))}, {},
           1, "bad");
    named(infer_error(b), "dft_length -4");
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {2, 8, 1});
    b.node(OpKind::DFT, {x, b.input("n", DType::kInt64, {}), b.constant("a", Tensor::scalar_i64(1))},
           {}, 1, "bad");
    named(infer_error(b), "dft_length");
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {1, 20, 1});
    b.node(OpKind::STFT, {x, b.constant("s", Tensor::scalar_i64(2)), kNoValue,
                          b.constant("l", Tensor::scalar_i64(32))}, {}, 1, "bad");
    named(infer_error(b), "frame_length 32");
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {1, 20, 1});
    b.node(OpKind::STFT, {x, b.constant("s", Tensor::scalar_i64(0))}, {}, 1, "bad");
    named(infer_error(b), "frame_step 0");
  }
  {
    GraphBuilder b;
    b.node(OpKind::Det, {b.input("x", DType::kFloat32, {2, 3, 4})}, {}, 1, "bad");
    named(infer_error(b), "[..., M, M]");
  }
  {
    GraphBuilder b;
    b.node(OpKind::ReverseSequence,
           {b.input("x", DType::kFloat32, {3, 4}), b.input("l", DType::kInt64, {3})},
           testing::attrs({{"batch_axis", ai(0)}, {"time_axis", ai(0)}}), 1, "bad");
    named(infer_error(b), "batch_axis");
  }
  {
    GraphBuilder b;
    b.node(OpKind::ReverseSequence,
           {b.input("x", DType::kFloat32, {3, 4}), b.constant("l", testing::dmcases::i64s({1, 9, 2}))},
           testing::attrs({{"batch_axis", ai(1)}, {"time_axis", ai(0)}}), 1, "bad");
    named(infer_error(b), "sequence_lens");
  }
  {
    GraphBuilder b;
    b.node(OpKind::RoiAlign,
           {b.input("x", DType::kFloat32, {1, 2, 5, 5}), b.input("r", DType::kFloat32, {3, 5}),
            b.input("i", DType::kInt64, {3})},
           {}, 1, "bad");
    named(infer_error(b), "rois");
  }
  {
    GraphBuilder b;
    b.node(OpKind::RoiAlign,
           {b.input("x", DType::kFloat32, {1, 2, 5, 5}), b.input("r", DType::kFloat32, {3, 4}),
            b.input("i", DType::kInt64, {3})},
           testing::attrs({{"mode", as("median")}}), 1, "bad");
    named(infer_error(b), "median");
  }
  {
    GraphBuilder b;
    b.node(OpKind::MelWeightMatrix,
           {b.constant("bins", Tensor::scalar_i64(8)), b.constant("len", Tensor::scalar_i64(16)),
            b.constant("rate", Tensor::scalar_i64(8000)), b.constant("lo", Tensor::from_f32({500.f}, {})),
            b.constant("hi", Tensor::from_f32({100.f}, {}))},
           {}, 1, "bad");
    named(infer_error(b), "upper_edge_hertz");
  }
}

TEST_CASE("Det of matrices past the per-thread kernel's size is a clear unsupported", "[signal]") {
  GraphBuilder b;
  b.output(b.node(OpKind::Det, {b.input("x", DType::kFloat32, {2, 40, 40})}, {}, 1, "big"));
  Graph g = b.build();
  auto plan = emit::lower_for_gpu(g);
  REQUIRE(!plan.ok());
  CHECK(plan.status().message().find("'big'") != std::string::npos);
}

TEST_CASE("every signal-op kernel compiles with NVRTC for sm_80 and sm_90", "[signal][emit]") {
  std::vector<emit::CudaSource> sources;
  std::vector<std::string> names;
  for (const auto& c : testing::dmcases::all_signal_cases()) {
    INFO(c.name);
    emit::Schedule s = emit::make_schedule(c.graph);
    REQUIRE(s.kernels.size() == 1);
    auto k = emit::generate_data_movement_kernel(c.graph, s.kernels[0].node);
    if (!k.ok()) FAIL(k.status().message());
    names.push_back(c.name);
    sources.push_back({k->name, k->source});
  }
  auto compiled = emit::compile_cuda_many(sources, {"sm_80", "sm_90"});
  REQUIRE(compiled.size() == sources.size());
  for (size_t i = 0; i < compiled.size(); ++i) {
    INFO(names[i]);
    if (!compiled[i].ok()) FAIL(compiled[i].status().message());
  }
}
