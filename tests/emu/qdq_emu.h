// The QDQ int8 GEMM cases (tests/qdq_cases.h) in the kernel emulator.
#pragma once

#include <string>

namespace graphc::emu {

// Runs every case whose label contains `filter`; prints PASS/FAIL lines and
// returns the process exit code (0: all passed).
int run_qdq_cases(const std::string& filter);

// The QDQ conv cases (tests/qdq_conv_cases.h) and ConvInteger/QLinearConv on
// the int8 tensor-core conv (qdq_conv_emu.cpp); as run_qdq_cases.
int run_qdq_conv_cases(const std::string& filter);

// `qdq-conv-model MODEL.onnx`: a QDQ model's int8 engine (--int8-gemm, fp32
// and fp16) emulated on random inputs in [-2, 2] against the reference
// executor on the model as it is; relative L2 below 2e-2 passes.
int run_qdq_conv_model(const std::string& path);

// `qdq-model MODEL.onnx IN_DIR OUT_DIR`: the reference executor on MODEL as
// each int8 build configuration optimizes it (--precision fp32/fp16, the int8
// GEMMs off/on, --int8-precision fp32), on the inputs IN_DIR/NAME.npy; writes
// OUT_DIR/CONFIG/NAME.npy (float32) per output. What an engine's rounding
// gives, without a GPU (scripts/int8_accuracy.py compares with onnxruntime).
int run_qdq_model(int argc, char** argv);

}  // namespace graphc::emu
