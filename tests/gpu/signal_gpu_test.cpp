// The generated DFT, STFT, Det, ReverseSequence and RoiAlign kernels on the
// GPU against the reference executor on fresh random inputs: every case of
// tests/signal_cases.h (forward/inverse/onesided DFTs, dft_length padding and
// truncation, the sincospi path past the twiddle table, windowed and complex
// STFTs, batched Det, both ReverseSequence layouts, RoiAlign avg/max in both
// coordinate modes). Float tolerances per case (fp32 accumulation over n).
#include <catch2/catch.hpp>

#include "tests/gpu/gpu_check.h"
#include "tests/signal_cases.h"

using namespace graphc;

TEST_CASE("every signal-op kernel on the GPU matches the reference", "[gpu][signal]") {
  for (const auto& c : testing::dmcases::all_signal_cases())
    testing::check_gpu_matches_reference(c.graph, c.name, c.lo, c.hi, c.half_atol, c.rtol_f32);
}
