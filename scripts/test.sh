#!/usr/bin/env bash
# Runs the whole test suite: set-up (idempotent) then ctest, ending with ctest's summary.
# GPU tests report as skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHC_BUILD_DIR:-build}
scripts/setup.sh
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)" "$@"
