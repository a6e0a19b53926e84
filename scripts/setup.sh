#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for graphc and builds it (Release, build/).
# Idempotent: installs only what is missing, rebuilds only what changed.
#   scripts/setup.sh            everything
#   GRAPHC_BUILD_DIR=dir        another build folder (e.g. for sanitizers)
#   GRAPHC_CMAKE_ARGS="..."     extra CMake arguments
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${GRAPHC_BUILD_DIR:-build}

log() { printf '[setup] %s\n' "$*"; }

# 1. Debian packages (C++ toolchain and dependencies, test data, Python venv support;
#    clang and its runtime libraries for the sanitizer/fuzzer build, scripts/sanitize.sh).
PACKAGES=(cmake g++ make pkg-config libonnx-dev libprotobuf-dev protobuf-compiler libcli11-dev
          libspdlog-dev libfmt-dev catch2 libonnx-testdata python3 python3-venv python3-pip
          clang libclang-rt-14-dev)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing: ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages present"
fi

# 2. CUDA 13 toolkit (headers, NVRTC, cuBLASLt, cuDNN) is expected at /usr/local/cuda. No GPU needed.
if [[ ! -d /usr/local/cuda ]]; then
  log "warning: /usr/local/cuda not found; GPU code generation will be unavailable"
fi

# 3. Python virtualenv for scripts and test oracles (onnx, onnxruntime, numpy), pinned.
PY=${GRAPHC_PYTHON:-python3}
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || ! -f $stamp || $(cat $stamp) != "$want" ]]; then
  log "creating .venv from requirements.txt"
  "$PY" -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" > $stamp
else
  log "Python venv up to date"
fi

# 4. The newer ONNX node-test suite (onnx 1.23: opsets past 17), written from the pinned onnx.
NODE_TESTS="$BUILD_DIR/onnx-node-tests"
if [[ ! -f $NODE_TESTS/.stamp || $(cat $NODE_TESTS/.stamp) != "$want" ]]; then
  log "generating ONNX $(.venv/bin/python -c 'import onnx; print(onnx.__version__)') node tests into $NODE_TESTS"
  rm -rf "$NODE_TESTS"
  mkdir -p "$NODE_TESTS"
  .venv/bin/python scripts/gen_node_tests.py "$NODE_TESTS" >/dev/null
  echo "$want" > "$NODE_TESTS/.stamp"
fi

# 5. Configure and build.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" ${GRAPHC_CMAKE_ARGS:-} >/dev/null
log "building in $BUILD_DIR"
cmake --build "$BUILD_DIR" -j"$(nproc)"
log "done: $ROOT/$BUILD_DIR/graphc"
