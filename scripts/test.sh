#!/usr/bin/env bash
# Runs the whole test suite: set-up with the tests (idempotent: test packages, .venv,
# node tests, every target), the Python package (built into .venv, then its
# pytest tests on the stand-in driver), then ctest, ending with ctest's summary.
# GPU tests report as skipped on a machine without a GPU.
# GRAPHC_TEST_PYTHON_PACKAGE=0 skips the Python package.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHC_BUILD_DIR:-build}
scripts/setup.sh --tests
if [[ ${GRAPHC_TEST_PYTHON_PACKAGE:-1} != 0 ]]; then
  scripts/test_python.sh "$BUILD_DIR"
fi
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)" "$@"
