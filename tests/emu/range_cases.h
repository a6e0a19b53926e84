// Engines for a shape range run in the kernel emulator: each case is a model
// with symbolic dims and a profile, lowered once for the whole range
// (driver::optimize_for_range, emit::lower_for_gpu with the range) and run at
// every range check point against the reference executor at that shape.
#pragma once

#include <string>

namespace graphc::emu {

// Runs every case whose label contains `filter`; prints PASS/FAIL lines and
// returns the process exit code (0: all passed).
int run_range_cases(const std::string& filter);

}  // namespace graphc::emu
