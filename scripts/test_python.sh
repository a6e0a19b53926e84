#!/usr/bin/env bash
# Builds and installs the graphc Python package into .venv (pip install .,
# scikit-build-core; the build folder build/python/ persists and ccache is used
# when installed, so a rebuild compiles only what changed), then runs its pytest
# tests with the stand-in driver (tests/fake_cuda) and the CLI of BUILD_DIR.
#   scripts/test_python.sh [BUILD_DIR]     (default build; needs its graphc and fake libcuda)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
PY=.venv/bin/python
start=$(date +%s)
launcher=()
command -v ccache >/dev/null && launcher=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake --build "$BUILD_DIR" --target graphc graphc_fake_cuda >/dev/null
"$PY" -m pip install -q --disable-pip-version-check --no-build-isolation "${launcher[@]}" .
built=$(date +%s)
GRAPHC_FAKE_CUDA_DIR="$PWD/$BUILD_DIR/tests/fake_cuda" GRAPHC_BIN="$PWD/$BUILD_DIR/graphc" \
  "$PY" -m pytest -q -p no:cacheprovider python/tests
echo "python package: install $((built - start)) s, tests $(($(date +%s) - built)) s"
