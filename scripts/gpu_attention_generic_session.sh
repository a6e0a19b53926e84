#!/usr/bin/env bash
# The general attention kernel (emit/cuda/cuda_attention_generic.h) on the GPU
# machine, in one device call:
#   scripts/gpu_attention_generic_session.sh OUT
# run from the repository root of the copied working tree. Stages:
#   1. graphc_gpu_tests: BIN/graphc_gpu_tests when BIN holds a prebuilt one,
#      else a cmake Release build of that target here (JOBS parallel jobs);
#   2. correctness: graphc_gpu_tests "[attention-generic-gpu]" (every case of
#      tests/attention_generic_harness.h plus larger shapes, against graphc's
#      reference executor, outputs poisoned with NaN before each run, two runs
#      bit-identical; every tile over a few cases; no local memory);
#   3. timings: graphc_gpu_tests "[attention-generic-bench]" (prefill and
#      decode shapes in fp32 and fp16: ms, TFLOP/s, K/V GB/s).
# OUT gets session.log (everything printed, device included), gpu_tests.log,
# bench.log and summary.txt. Env: BIN, JOBS (16), BUDGET_S (560).
set -euo pipefail
out=${1:?usage: scripts/gpu_attention_generic_session.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec > >(tee -a "$out/session.log") 2>&1
start=$(date +%s)
budget=${BUDGET_S:-560}
jobs=${JOBS:-16}
work=${WORK_DIR:-/tmp/graphc-attention-generic}
mkdir -p "$work"
left() { echo $((start + budget - $(date +%s))); }
log() { echo "[$(($(date +%s) - start)) s] $*"; }
export LD_LIBRARY_PATH=${BIN:+$BIN:}/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
export XDG_CACHE_HOME=$work/cache  # NVRTC cache of this session
export GRAPHC_SOURCE_DIR=$PWD
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader || true
  nvcc --version | tail -1 || true
  git rev-parse HEAD 2>/dev/null || true
} 2>&1 | tee "$work/device.txt"

tests=
if [[ -n ${BIN:-} && -x ${BIN}/graphc_gpu_tests ]]; then
  tests=$BIN/graphc_gpu_tests
  log "prebuilt $tests"
else
  log "cmake build of graphc_gpu_tests (-j$jobs)"
  if cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 &&
    timeout $(($(left) - 150 > 60 ? $(left) - 150 : 60)) \
      cmake --build "$work/build" --target graphc_gpu_tests -j"$jobs" >>"$work/cmake.log" 2>&1; then
    tests=$work/build/tests/graphc_gpu_tests
    log "built $tests"
  else
    log "cmake build failed"
    tail -30 "$work/cmake.log"
    echo "build failed" >"$out/summary.txt"
    exit 1
  fi
fi

log "correctness: [attention-generic-gpu]"
rc=0
timeout $(($(left) - 60 > 60 ? $(left) - 60 : 60)) "$tests" "[attention-generic-gpu]" >"$out/gpu_tests.log" 2>&1 || rc=$?
grep -E "FAILED|rel_l2|^(test cases|All tests)" "$out/gpu_tests.log" | head -40 || true
log "timings: [attention-generic-bench]"
timeout $(($(left) > 30 ? $(left) : 30)) "$tests" "[attention-generic-bench]" >"$out/bench.log" 2>&1 || true
{
  echo "device: $(head -1 "$work/device.txt")"
  echo "[attention-generic-gpu] (rc $rc): $(grep -E '^(test cases|All tests)' "$out/gpu_tests.log" | tr '\n' ' ')"
  grep -E "^(shape|prefill|decode)" "$out/bench.log" || echo "no timings"
} >"$out/summary.txt"
log "done"
cat "$out/summary.txt"
exit "$rc"
