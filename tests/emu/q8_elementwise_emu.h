// The 8-bit elementwise cases (tests/q8_elementwise_cases.h) in the kernel
// emulator.
#pragma once

#include <string>

namespace graphc::emu {

// `q8 [FILTER]`: every case whose label contains `filter` through the default
// pipeline, its kernels' vector width checked and the plan emulated (float8
// conversions by the shim's model of sm_89's cvt) against the reference
// executor on the graph as built, bit for bit; prints PASS/FAIL lines and
// returns the process exit code (0: all passed).
int run_q8_cases(const std::string& filter);

}  // namespace graphc::emu
