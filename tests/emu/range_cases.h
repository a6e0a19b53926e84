// Engines for a shape range run in the kernel emulator: each case is a model
// with symbolic dims and a profile, lowered once for the whole range
// (driver::optimize_for_range, emit::lower_for_gpu with the range) and run at
// every range check point against the reference executor at that shape.
#pragma once

#include <string>
#include <vector>

namespace graphc::emu {

// Runs every case whose label contains `filter`; prints PASS/FAIL lines and
// returns the process exit code (0: all passed).
int run_range_cases(const std::string& filter);

// ONNX node tests (case folders) with every input dim above 1 a run-time
// size, lowered for that and emulated against the tests' expected outputs;
// cases whose kernels cannot take run-time sizes yet are skipped. Fails on
// any mismatch, or when fewer than `min_passed` ran with run-time sizes.
// `fixed_last`: each input's last dim stays fixed (head dims and hidden
// sizes: the attention node tests, whose kernels need them fixed).
int run_range_onnx_cases(const std::vector<std::string>& dirs, int min_passed,
                         bool fixed_last = false);

}  // namespace graphc::emu
