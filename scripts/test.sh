#!/usr/bin/env bash
# Runs the whole test suite: set-up with the tests (idempotent: test packages, .venv,
# node tests, every target) then ctest, ending with ctest's summary.
# GPU tests report as skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHC_BUILD_DIR:-build}
scripts/setup.sh --tests
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)" "$@"
