// 8-bit elementwise kernels on the GPU (tests/q8_elementwise_cases.h): 16
// elements per thread, float8 conversions through sm_89+'s cvt (in float
// below sm_89 and for the fnuz types), float -> int8 in float. Every output
// must equal the reference executor's on the graph as built bit for bit, on
// fresh random inputs holding the conversions' edge values; and a sweep of
// floats (q8_float_sweep: every float8 code's value, the ties between codes
// and their float neighbours, random float bit patterns) through each
// conversion.
#include <catch2/catch.hpp>

#include "driver/gpu_execute.h"
#include "optimizer/pass.h"
#include "reference/executor.h"
#include "tests/cuda_pass_context.h"
#include "tests/gpu/gpu_check.h"
#include "tests/q8_elementwise_cases.h"

using namespace graphc;
using namespace graphc::ir;

namespace {

void check_on_gpu(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  auto want = reference::execute(g, feeds);
  REQUIRE(want.ok());
  Graph opt = g;
  optimizer::PassContext ctx = testing::cuda_pass_context();
  REQUIRE(optimizer::run_passes(opt, ctx).ok());
  auto got = driver::execute_on_gpu(opt, feeds);
  INFO((got.ok() ? "" : got.status().message()));
  REQUIRE(got.ok());
  for (const auto& [name, t] : *want) {
    REQUIRE(got->count(name));
    const std::string d = testing::check_q8_outputs(t, got->at(name));
    INFO(name << ": " << d);
    CHECK(d.empty());
  }
}

}  // namespace

TEST_CASE("8-bit elementwise kernels (16-wide, float8 cvt, int8 in float) match the reference bit for bit",
          "[gpu][quantize][q8][fp8][int8]") {
  for (const auto& c : testing::q8_cases()) {
    INFO(c.label);
    check_on_gpu(c.graph, testing::q8_inputs(c, testing::test_rng()));
  }
}

TEST_CASE("float32 -> float8 and int8 conversions on the GPU equal the reference's on a float sweep",
          "[gpu][quantize][q8][fp8][int8]") {
  const testing::Q8Case c = testing::q8_sweep_case(1024);  // 2^20 floats
  const ir::Value& x = c.graph.value(c.graph.inputs[0]);
  check_on_gpu(c.graph, {{x.name, testing::q8_float_sweep(x.shape, testing::test_rng())}});
}
