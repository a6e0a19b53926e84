#!/usr/bin/env bash
# The fused attention kernel on the GPU machine, in one device call:
#   scripts/gpu_attention_session.sh OUT
# run from the repository root of the copied working tree. Stages:
#   1. build graphc_attention_bench there (g++ -j16 over the seven sources it
#      needs, NVRTC from /usr/local/cuda; fmt header-only from the system or
#      from PyTorch's bundled headers), unless BIN holds a prebuilt one;
#   2. correctness: `graphc_attention_bench --check` (every case of
#      tests/attention_harness.h plus a few over every tile variant, against the
#      double-precision CPU reference; the same cases as
#      tests/gpu/attention_kernel_gpu_test.cpp) and, where BIN has a prebuilt
#      graphc_gpu_tests (or CMAKE_TESTS=1 builds one here), its
#      [attention-kernel-gpu] tests;
#   3. the sweep: every tile variant over batch 1..32 x 12 heads x lengths
#      128..8192 x head dims 64/128 x causal or not, plus 2x16x4096x128
#      (QUICK=1: fewer shapes);
#   4. scripts/bench_attention.py: PyTorch SDPA (flash, cuDNN, memory-efficient)
#      on the same shapes in the same run, the comparison table.
# OUT gets (at most 8 files come back from the device machine) session.log (everything
# printed, device and versions included), check.log, graphc.jsonl, attention-sweep.{json,md},
# summary.txt and, when run, gpu_tests.log; other logs stay in WORK_DIR and their
# tails go into session.log. The short table is printed last.
# Env: BIN (prebuilt binaries), QUICK=1, CMAKE_TESTS=1, BUDGET_S (default 560),
# PYTHON (default /opt/torch/.venv/bin/python when it has torch, else python3), JOBS (16).
set -euo pipefail
out=${1:?usage: scripts/gpu_attention_session.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec > >(tee -a "$out/session.log") 2>&1
start=$(date +%s)
budget=${BUDGET_S:-560}
jobs=${JOBS:-16}
work=${WORK_DIR:-/tmp/graphc-attention}
mkdir -p "$work"
left() { echo $((start + budget - $(date +%s))); }
log() { echo "[$(($(date +%s) - start)) s] $*"; }
# BIN may hold libraries its binaries need (libprotobuf.so.32 for graphc_gpu_tests).
export LD_LIBRARY_PATH=${BIN:+$BIN:}/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
export PYTHONUNBUFFERED=1
export XDG_CACHE_HOME=$work/cache  # NVRTC cache of this session
quick=()
[[ ${QUICK:-0} == 1 ]] && quick=(--quick)
if [[ -z ${PYTHON:-} ]]; then
  PYTHON=python3
  /opt/torch/.venv/bin/python -c "import torch" 2>/dev/null && PYTHON=/opt/torch/.venv/bin/python
fi
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
  nvcc --version | tail -1 || true
  g++ --version | head -1 || true
  "$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())" || true
  git rev-parse HEAD 2>/dev/null || true
} >"$work/device.txt" 2>&1
cat "$work/device.txt"

# 1. The benchmark binary.
bench=
if [[ -n ${BIN:-} && -x ${BIN}/graphc_attention_bench ]]; then
  bench=$BIN/graphc_attention_bench
  log "prebuilt $bench"
else
  fmt_inc=
  if [[ -f /usr/include/fmt/format.h ]]; then
    fmt_inc=/usr/include
  else
    tinc=$("$PYTHON" -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'include'))" 2>/dev/null || true)
    [[ -n $tinc && -f $tinc/fmt/format.h ]] && fmt_inc=$tinc
  fi
  [[ -n $fmt_inc ]] || { echo "no fmt headers (system or PyTorch's)"; exit 1; }
  cuda_inc=/usr/local/cuda/include
  flags=(-std=c++20 -O2 -DNDEBUG -DFMT_HEADER_ONLY -DGRAPHC_HAVE_NVRTC=1 "-DGRAPHC_CUDA_INCLUDE_DIRS=\"$cuda_inc\""
    -I. -isystem "$cuda_inc" -w)
  [[ $fmt_inc != /usr/include ]] && flags+=(-isystem "$fmt_inc")
  srcs=(bench/attention_sweep.cpp emit/cuda/cuda_attention.cpp emit/nvrtc/nvrtc_compiler.cpp emit/nvrtc/cubin_resources.cpp
    ir/dtype.cpp support/status.cpp runtime/cuda_driver.cpp)
  log "building graphc_attention_bench (fmt from $fmt_inc)"
  objs=()
  pids=()
  for s in "${srcs[@]}"; do
    o=$work/$(basename "$s" .cpp).o
    objs+=("$o")
    g++ "${flags[@]}" -c "$s" -o "$o" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  g++ -o "$work/graphc_attention_bench" "${objs[@]}" -L/usr/local/cuda/lib64 -lnvrtc -ldl -lpthread
  bench=$work/graphc_attention_bench
  log "built $bench"
fi

# 2. Correctness.
check_rc=0
log "correctness (--check)"
timeout $(($(left) > 300 ? 240 : $(left) / 2)) "$bench" --check --no-sweep >"$out/check.log" 2>&1 || check_rc=$?
grep -E "^FAIL|^check:" "$out/check.log" | head -20 || true
gpu_tests_line="graphc_gpu_tests: not run (no BIN/graphc_gpu_tests; CMAKE_TESTS=1 builds one)"
gpu_tests=
if [[ -n ${BIN:-} && -x ${BIN}/graphc_gpu_tests ]]; then
  gpu_tests=$BIN/graphc_gpu_tests
elif [[ ${CMAKE_TESTS:-0} == 1 ]]; then
  log "cmake build of graphc_gpu_tests"
  if cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 &&
    timeout 300 cmake --build "$work/build" --target graphc_gpu_tests -j"$jobs" >>"$work/cmake.log" 2>&1; then
    gpu_tests=$work/build/tests/graphc_gpu_tests
  else
    gpu_tests_line="graphc_gpu_tests: cmake build failed"
    tail -15 "$work/cmake.log"
  fi
fi
if [[ -n $gpu_tests ]]; then
  GRAPHC_SOURCE_DIR=$PWD timeout 300 "$gpu_tests" "[attention-kernel-gpu]" >"$out/gpu_tests.log" 2>&1 || true
  gpu_tests_line="graphc_gpu_tests [attention-kernel-gpu]: $(grep -E '^(test cases|All tests)' "$out/gpu_tests.log" | tr '\n' ' ')"
fi
log "$gpu_tests_line"

# 3 + 4. graphc's sweep, then PyTorch's on the same shapes, and the table.
log "graphc sweep"
timeout $(($(left) - 150 > 60 ? $(left) - 150 : 60)) "$bench" --out "$out/graphc.jsonl" "${quick[@]}" \
  >"$work/graphc_sweep.log" 2>&1 || log "graphc sweep stopped early (rc $?): the table covers what it reached"
tail -5 "$work/graphc_sweep.log"
log "PyTorch sweep and table"
"$PYTHON" scripts/bench_attention.py --graphc-json "$out/graphc.jsonl" --out "$out" --log "$work/bench_attention.log" \
  "${quick[@]}" >"$work/table.txt" 2>"$work/bench_attention.err" || {
  log "bench_attention.py failed"
  tail -20 "$work/bench_attention.err"
}
{
  echo "device: $(head -1 "$work/device.txt")"
  echo "check: $(grep -E '^check:' "$out/check.log" || echo "did not finish (rc $check_rc)")"
  echo "$gpu_tests_line"
  echo "graphc sweep points: $(wc -l <"$out/graphc.jsonl" 2>/dev/null || echo 0)"
  cat "$work/table.txt" 2>/dev/null || true
} >"$out/summary.txt"
log "done"
cat "$out/summary.txt"
