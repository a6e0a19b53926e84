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

TEST_CASE("every data-movement kernel on the GPU matches the reference", "[gpu]") {
  for (const auto& c : testing::dmcases::all_cases())
    testing::check_gpu_matches_reference(c.graph, c.name, c.lo, c.hi, c.half_atol, c.rtol_f32);
}

TEST_CASE("large data-movement kernels on the GPU match the reference", "[gpu]") {
  for (const auto& c : testing::dmcases::large_cases())
    testing::check_gpu_matches_reference(c.graph, c.name, c.lo, c.hi, c.half_atol, c.rtol_f32);
}
