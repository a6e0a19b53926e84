// A model with a symbolic batch and engines built from it, for the tests of
// engines that serve shape ranges (tests/shape_range_engine_test.cpp,
// tests/gpu/shape_range_gpu_test.cpp).
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "tests/cli_util.h"
#include "tests/onnx_builder.h"

namespace graphc::testing {

// y = Reshape(x, Concat(Shape(x)[0], -1)) for x [batch, 4, 8]: y [batch, 32],
// copied from x at the shape set; scaled = x * w, elementwise (a kernel).
struct RangeFixture {
  TempDir dir;
  std::string onnx = dir.file("flatten.onnx");
  std::string engine = dir.file("flatten.engine");
  std::string static_engine = dir.file("static.engine");

  RangeFixture() {
    OnnxModel m(17);
    m.input("x", onnx::TensorProto::FLOAT, {Dim("batch"), int64_t{4}, int64_t{8}});
    m.initializer(int64_tensor("zero", {1}, {0}));
    m.initializer(int64_tensor("one", {1}, {1}));
    m.initializer(int64_tensor("rest", {1}, {-1}));
    m.initializer(float_tensor("w", {8}, {1, 2, 3, 4, 5, 6, 7, 8}));
    m.node("Shape", {"x"}, {"s"}, "shape");
    m.node("Slice", {"s", "zero", "one"}, {"b"}, "batch");
    attr_int(m.node("Concat", {"b", "rest"}, {"target"}, "target"), "axis", 0);
    m.node("Reshape", {"x", "target"}, {"y"}, "flatten");
    m.node("Mul", {"x", "w"}, {"scaled"}, "scale");
    m.output("y");
    m.output("scaled");
    m.write(onnx);
    auto built = run_graphc("build " + onnx +
                            " --min-shape x:1x4x8 --opt-shape x:4x4x8 --max-shape x:9x4x8 "
                            "--arch sm_90 -o " + engine);
    INFO(built.output);
    REQUIRE(built.exit_code == 0);
    auto fixed = run_graphc("build " + onnx + " --shape x:4x4x8 --arch sm_90 -o " + static_engine);
    INFO(fixed.output);
    REQUIRE(fixed.exit_code == 0);
  }
};

}  // namespace graphc::testing
