// The QDQ int8 GEMM cases (tests/qdq_cases.h) in the kernel emulator.
#pragma once

#include <string>

namespace graphc::emu {

// Runs every case whose label contains `filter`; prints PASS/FAIL lines and
// returns the process exit code (0: all passed).
int run_qdq_cases(const std::string& filter);

}  // namespace graphc::emu
