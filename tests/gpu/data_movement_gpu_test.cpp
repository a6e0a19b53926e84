// Generated data-movement kernels on the GPU against the reference executor,
// on fresh random inputs: every case of tests/data_movement_cases.h (every op,
// several dtypes and attributes, odd sizes, negative axes and indices,
// duplicate scatter indices). Pure data movement compares exactly; CumSum
// and linear/cubic Resize use the float tolerances of gpu_check.h.
#include <catch2/catch.hpp>

#include "tests/data_movement_cases.h"
#include "tests/gpu/gpu_check.h"

using namespace graphc;
using namespace graphc::ir;
using graphc::testing::GraphBuilder;

TEST_CASE("every data-movement kernel on the GPU matches the reference", "[gpu]") {
  for (const auto& c : testing::dmcases::all_cases())
    testing::check_gpu_matches_reference(c.graph, c.name, c.lo, c.hi, c.half_atol, c.rtol_f32);
}

TEST_CASE("large transposes and gathers on the GPU match the reference", "[gpu]") {
  // Sizes past one grid of blocks (the kernels loop) and past 32x32 tiles.
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {3, 129, 1031});
    b.output(b.node(OpKind::Transpose, {x}, testing::attrs({{"perm", Attribute::of_ints({2, 0, 1})}})));
    testing::check_gpu_matches_reference(b.build(), "Transpose 3x129x1031 -> 1031x3x129");
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat16, {8, 64, 33, 35});
    b.output(b.node(OpKind::Transpose, {x}, testing::attrs({{"perm", Attribute::of_ints({0, 2, 3, 1})}})));
    testing::check_gpu_matches_reference(b.build(), "Transpose NCHW -> NHWC fp16");
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {50257, 67});
    auto i = b.input("i", DType::kInt64, {4, 301});
    b.output(b.node(OpKind::Gather, {x, i}));
    testing::check_gpu_matches_reference(b.build(), "embedding-style Gather");
  }
  {
    GraphBuilder b;
    auto x = b.input("x", DType::kFloat32, {1, 300001});
    b.output(b.node(OpKind::CumSum, {x, b.constant("a", Tensor::scalar_i64(1))}));
    testing::check_gpu_matches_reference(b.build(), "CumSum one row of 300001", 0, 1, 0, 1e-3);
  }
}
