#!/usr/bin/env bash
# Makes the pieces scripts/gpu_python_session.sh needs to build the graphc
# Python package on the GPU machine (which has Python 3.12 and PyTorch but no
# graphc build dependencies and no network):
#   OUT/lib/libgraphc_python_bundle.a   graphc's libraries + the Python core, position-independent
#   OUT/lib/libprotobuf.so.32           the protobuf runtime they were built against
#   OUT/wheels/                         nanobind (source build) and pytest with its dependencies
# Usage: scripts/make_python_bundle.sh [OUT]   (default build-pybundle, git-ignored)
# Builds with the pip build folder (build/python/...) when it exists, else
# configures one (GRAPHC_BUILD_PYTHON=ON, ccache). Prints the bundle's size.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build-pybundle}
PY=${GRAPHC_VENV_PYTHON:-.venv/bin/python}
BUILD=$(ls -d build/python/*/ 2>/dev/null | head -1 || true)
if [[ -z "$BUILD" ]]; then
  BUILD=build/python/bundle
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHC_BUILD_PYTHON=ON \
    -DGRAPHC_BUILD_TESTS=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DPython_EXECUTABLE="$PY"
fi
cmake --build "$BUILD" --target graphc_python_bundle
rm -rf "$OUT"
mkdir -p "$OUT/lib" "$OUT/wheels"
cp "$BUILD/python/libgraphc_python_bundle.a" "$OUT/lib/"
strip --strip-debug "$OUT/lib/libgraphc_python_bundle.a"
cp -L /usr/lib/x86_64-linux-gnu/libprotobuf.so.32 "$OUT/lib/"
NANOBIND=$("$PY" -c "import importlib.metadata as m; print(m.version('nanobind'))")
"$PY" -m pip download -q --no-deps -d "$OUT/wheels" "nanobind==$NANOBIND"
# pytest for Python 3.12, pure-Python wheels, used only if the GPU machine lacks it.
"$PY" -m pip download -q --only-binary=:all: --python-version 3.12 -d "$OUT/wheels" "pytest==8.4.2"
du -sh "$OUT"
ls -la "$OUT/lib" "$OUT/wheels"
