// A small elementwise engine built in-process (no files, no GPU: NVRTC only),
// shared by the runtime API tests on the CPU and on the GPU. Header-only.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "driver/engine_build.h"
#include "optimizer/pass.h"
#include "tests/test_util.h"

namespace graphc::testing {

// out = Relu(x + y) and sig = Sigmoid(x) * 2 (an initializer), with
// x float32[4, 257], y float32[257]: two inputs, two outputs, weights.
inline ir::Graph small_runtime_graph() {
  GraphBuilder b;
  auto x = b.input("x", ir::DType::kFloat32, {4, 257});
  auto y = b.input("y", ir::DType::kFloat32, {257});
  auto two = b.constant("two", ir::Tensor::from_f32({2.0f}, {1}));
  auto relu = b.node(ir::OpKind::Relu, {b.node(ir::OpKind::Add, {x, y})}, {}, 1, "relu");
  auto sig = b.node(ir::OpKind::Mul, {b.node(ir::OpKind::Sigmoid, {x}), two}, {}, 1, "sig");
  b.output(relu);
  b.output(sig);
  ir::Graph g = b.build();
  optimizer::PassContext ctx;
  REQUIRE(optimizer::run_passes(g, ctx).ok());
  return g;
}

// The engine contents for `archs` ("sm_90"...).
inline engine::EngineContents small_runtime_engine(const ir::Graph& g,
                                                   std::vector<std::string> archs) {
  driver::BuildOptions opts;
  opts.archs = std::move(archs);
  auto contents = driver::build_engine(g, opts);
  INFO((contents.ok() ? "" : contents.status().message()));
  REQUIRE(contents.ok());
  return std::move(*contents);
}

}  // namespace graphc::testing
