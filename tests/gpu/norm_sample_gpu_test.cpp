// The GPU lowerings of GroupNormalization, RMSNormalization, LpNormalization,
// DynamicQuantizeLinear, RotaryEmbedding, GridSample and Col2Im
// (tests/norm_sample_cases.h, fused normalization groups included) against
// the reference executor on fresh random inputs.
#include <catch2/catch.hpp>

#include "tests/gpu/gpu_check.h"
#include "tests/norm_sample_cases.h"

using namespace graphc;

TEST_CASE("normalization, rotary and sampling kernels on the GPU match the reference", "[gpu][norm-sample]") {
  for (const auto& c : testing::nscases::all_cases())
    testing::check_gpu_matches_reference(c.graph, c.name, c.lo, c.hi, c.half_atol, c.rtol_f32);
}
