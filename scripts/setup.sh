#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for graphc and builds it (Release, build/).
# Idempotent: installs only what is missing, rebuilds only what changed.
#   scripts/setup.sh              the graphc tool: its Debian packages (Graphviz
#                                 optional, for inspect --svg), then build/graphc
#   scripts/setup.sh --tests      also the test packages (Catch2, ONNX test data), the
#                                 Python venv (.venv), the ONNX 1.23 node tests and every
#                                 target (scripts/test.sh runs this, then ctest)
#   scripts/setup.sh --sanitize   only the sanitizer/fuzzer toolchain (clang, compiler-rt;
#                                 scripts/sanitize.sh runs this)
#   GRAPHC_BUILD_DIR=dir          another build folder
#   GRAPHC_CMAKE_ARGS="..."       extra CMake arguments
#   CUDAToolkit_ROOT=dir          the CUDA toolkit, if not at /usr/local/cuda
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${GRAPHC_BUILD_DIR:-build}
MODE=tool
case "${1:-}" in
  "") ;;
  --tests) MODE=tests ;;
  --sanitize) MODE=sanitize ;;
  *) echo "usage: scripts/setup.sh [--tests | --sanitize]" >&2; exit 2 ;;
esac

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

# 1. The CUDA 13 toolkit (headers, NVRTC; cuBLASLt and cuDNN for engines that call them)
#    is not a Debian package: check for it before anything else. No GPU is needed.
CUDA_ROOT=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [[ $MODE != sanitize && ! -f $CUDA_ROOT/include/nvrtc.h ]]; then
  die "the CUDA toolkit is missing: $CUDA_ROOT/include/nvrtc.h not found. graphc needs CUDA 13's
        headers and NVRTC (no GPU): install NVIDIA's CUDA 13 toolkit for Debian 12
        (https://developer.nvidia.com/cuda-downloads, package cuda-toolkit-13-0), or set
        CUDAToolkit_ROOT to where it is installed"
fi

# 2. Debian packages.
TOOL_PACKAGES=(cmake g++ make pkg-config libonnx-dev libprotobuf-dev protobuf-compiler libcli11-dev
               libspdlog-dev libfmt-dev nlohmann-json3-dev)
OPTIONAL_PACKAGES=(graphviz)   # `dot`, for graphc inspect --svg
TEST_PACKAGES=(catch2 libonnx-testdata python3 python3-venv python3-pip)
SANITIZE_PACKAGES=(clang libclang-rt-14-dev)
case $MODE in
  tool) wanted=("${TOOL_PACKAGES[@]}") ;;
  tests) wanted=("${TOOL_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  sanitize) wanted=("${SANITIZE_PACKAGES[@]}") ;;
esac
missing() {
  local p out=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out+=("$p")
  done
  echo "${out[*]}"
}
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO=sudo
updated=0
apt_install() {
  ((updated)) || { $SUDO apt-get update -qq; updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
read -ra need <<<"$(missing "${wanted[@]}")"
if ((${#need[@]})); then
  log "installing: ${need[*]}"
  apt_install "${need[@]}"
else
  log "Debian packages present"
fi
if [[ $MODE != sanitize ]]; then
  read -ra need <<<"$(missing "${OPTIONAL_PACKAGES[@]}")"
  if ((${#need[@]})); then
    log "installing (optional): ${need[*]}"
    apt_install "${need[@]}" || log "warning: could not install ${need[*]}; graphc inspect --svg needs Graphviz's dot"
  fi
fi
[[ $MODE == sanitize ]] && { log "sanitizer toolchain present"; exit 0; }

cmake_args=()
if [[ $MODE == tests ]]; then
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
  cmake_args+=(-DGRAPHC_TEST_PYTHON="$ROOT/.venv/bin/python")

  # 4. The newer ONNX node-test suite (onnx 1.23: opsets past 17), written from the pinned onnx.
  NODE_TESTS="$BUILD_DIR/onnx-node-tests"
  if [[ ! -f $NODE_TESTS/.stamp || $(cat $NODE_TESTS/.stamp) != "$want" ]]; then
    log "generating ONNX $(.venv/bin/python -c 'import onnx; print(onnx.__version__)') node tests into $NODE_TESTS"
    rm -rf "$NODE_TESTS"
    mkdir -p "$NODE_TESTS"
    .venv/bin/python scripts/gen_node_tests.py "$NODE_TESTS" >/dev/null
    echo "$want" > "$NODE_TESTS/.stamp"
  fi
fi

# 5. Configure and build: the tool alone first (what the quick start needs), then, for
#    --tests, everything else.
command -v ccache >/dev/null && cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
[[ -n ${CUDAToolkit_ROOT:-} ]] && cmake_args+=(-DCUDAToolkit_ROOT="$CUDAToolkit_ROOT")
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" ${GRAPHC_CMAKE_ARGS:-} >/dev/null
log "building graphc in $BUILD_DIR"
cmake --build "$BUILD_DIR" -j"$(nproc)" --target graphc
if [[ $MODE == tests ]]; then
  log "building the tests in $BUILD_DIR"
  cmake --build "$BUILD_DIR" -j"$(nproc)"
fi
log "done: $ROOT/$BUILD_DIR/graphc"
