// Core IR: dtypes, tensors, half conversions, graph utilities, verifier.
#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "support/half.h"
#include "tests/test_util.h"

using namespace graphc;
using namespace graphc::ir;

TEST_CASE("half and bfloat16 round trip representable values", "[ir]") {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f}) {
    CHECK(half_bits_to_float(float_to_half_bits(f)) == f);
  }
  CHECK(bf16_bits_to_float(float_to_bf16_bits(1.5f)) == 1.5f);
  CHECK(std::isinf(half_bits_to_float(float_to_half_bits(1e6f))));
  // Round to nearest even: 1 + 2^-11 is halfway between 1 and 1+2^-10.
  CHECK(half_bits_to_float(float_to_half_bits(1.0f + 1.0f / 2048)) == 1.0f);
}

TEST_CASE("tensor element access converts between dtypes", "[ir]") {
  Tensor t(DType::kInt8, {3});
  t.set_i64(0, -5);
  t.set_i64(1, 127);
  t.set_f64(2, 3.9);
  CHECK(t.get_i64(0) == -5);
  CHECK(t.get_f64(1) == 127.0);
  CHECK(t.get_i64(2) == 3);
  Tensor f = t.cast_to(DType::kFloat16);
  CHECK(f.get_f64(0) == -5.0);
}

TEST_CASE("checked numel rejects overflow and negatives", "[ir]") {
  CHECK(!checked_shape_numel({int64_t{1} << 62, 8}).ok());
  CHECK(!checked_shape_numel({-1, 3}).ok());
  CHECK(checked_shape_numel({2, 3, 4}).value() == 24);
}

TEST_CASE("broadcast_shapes follows numpy rules", "[ir]") {
  CHECK(broadcast_shapes({2, 1, 4}, {3, 1}).value() == Shape{2, 3, 4});
  CHECK(!broadcast_shapes({2, 3}, {4}).ok());
}

TEST_CASE("verifier rejects a cycle and an undefined input", "[ir]") {
  testing::GraphBuilder b;
  auto x = b.input("x", DType::kFloat32, {2});
  auto y = b.node(OpKind::Relu, {x});
  b.output(y);
  Graph g = b.graph();
  CHECK(verify(g).ok());
  // Make Relu read its own output: a cycle.
  g.nodes[0].inputs[0] = g.nodes[0].outputs[0];
  CHECK(!verify(g).ok());
}

TEST_CASE("bind_input_shapes lists every unbound symbolic dim", "[ir]") {
  Graph g;
  Value v;
  v.name = "tokens";
  v.dtype = DType::kInt64;
  v.shape = {-1, -1};
  v.dim_names = {"batch", "seq"};
  v.has_shape = true;
  g.inputs.push_back(g.add_value(v));
  Status st = bind_input_shapes(g, {});
  REQUIRE(!st.ok());
  CHECK(st.message().find("tokens") != std::string::npos);
  CHECK(st.message().find("batch") != std::string::npos);
  CHECK(st.message().find("seq") != std::string::npos);
  CHECK(bind_input_shapes(g, {{"tokens", {2, 8}}}).ok());
  CHECK(g.value(g.inputs[0]).shape == Shape{2, 8});
}
