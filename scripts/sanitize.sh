#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer + UndefinedBehaviorSanitizer, in
# build-fuzz (clang, GRAPHC_FUZZ=ON: the same build holds the fuzzers), then a
# short smoke run of each fuzzer. Any sanitizer report fails the test that
# triggered it (halt_on_error), so ctest's summary is the verdict.
#   scripts/sanitize.sh                 build, ctest, 60 s per fuzzer
#   GRAPHC_FUZZ_SMOKE_SECONDS=0         skip the fuzz smoke
# Needs scripts/setup.sh --tests first (packages, .venv, build/onnx-node-tests;
# scripts/test.sh runs it); installs the clang toolchain itself.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --sanitize
BUILD=${GRAPHC_FUZZ_BUILD_DIR:-build-fuzz}
SMOKE=${GRAPHC_FUZZ_SMOKE_SECONDS:-60}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DGRAPHC_FUZZ=ON "${launcher[@]}" >/dev/null
echo "[sanitize] building $BUILD (ASan + UBSan)"
cmake --build "$BUILD" -j"$(nproc)"
# Node tests are written once by setup.sh into build/; the sanitizer build reads the same.
[[ -d $BUILD/onnx-node-tests || ! -d build/onnx-node-tests ]] ||
  ln -s "$(pwd)/build/onnx-node-tests" "$BUILD/onnx-node-tests"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$(pwd)/scripts/sanitizer_suppressions/lsan.txt:print_suppressions=0"
echo "[sanitize] ctest in $BUILD"
(cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" --timeout 1500)

if ((SMOKE > 0)); then
  for t in model_fuzzer engine_fuzzer tensor_fuzzer; do
    echo "[sanitize] fuzz smoke: $t for ${SMOKE}s"
    scripts/fuzz.sh "$t" "$SMOKE" 2>&1 | tail -n 4
  done
fi
