#!/usr/bin/env bash
# cuDNN attention (runtime/cudnn_sdpa.h) on the GPU machine, in one device
# command: the GPU test against the double-precision reference, then the
# benchmark sweep, logs under OUT and a short table printed last.
#
#   scripts/gpu_sdpa_session.sh prepare [BIN]   # on the CPU machine (default BIN: build/tests)
#   scripts/gpu_sdpa_session.sh [BIN] OUT        # on the GPU machine (default BIN: build/tests)
#
# It needs two small binaries, graphc_sdpa_gpu_tests and graphc_sdpa_bench
# (they link only the runtime and libstdc++; cuDNN and the driver are opened
# at run time). `prepare` builds just those two targets (configuring build/
# if needed) and copies them to BIN when BIN is not build/tests. On the GPU
# machine they are taken from BIN; when they are not there the script builds
# them there (cmake --build for those two targets only), which needs the
# project's build dependencies on that machine (protobuf, fmt, spdlog, CLI11,
# Catch2, libonnx-dev): where they are missing it says so and stops.
#
# Run it from the repository root, e.g. through the device tool:
#   cmake --build build --target graphc_sdpa_gpu_tests graphc_sdpa_bench   (here)
#   run(command="scripts/gpu_sdpa_session.sh build/tests $OUT",
#       carry=["build/tests/graphc_sdpa_gpu_tests", "build/tests/graphc_sdpa_bench"])
#
# Environment:
#   BUDGET_S       the whole session in seconds (default 540: one 10-minute device call)
#   BENCH_SWEEP    default | quick | probe (default: default, the attention sweep)
#   BENCH_DTYPES   "fp16" (default) or "fp16 bf16"
#   BENCH_LAYOUT   bhsd (default) or bshd
#   TEST_FILTER    Catch2 test spec for the test (default: every cuDNN SDPA test)
#   SKIP_TEST=1    the benchmark alone (a second call, when the first one's budget ran out)
#   GRAPHC_CUDNN_PATH  libcudnn.so.9 or its folder (default: PyTorch's, as gpu_session.sh finds it)
# OUT gets: device.txt, sdpa-test.log, sdpa-bench.log (JSON lines and the
# table), sdpa-bench.jsonl, cudnn-debug.log (only when something failed:
# cuDNN's own warnings for one small call) and summary.txt (printed last).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2

targets=(graphc_sdpa_gpu_tests graphc_sdpa_bench)

build_targets() {  # build_targets BUILD_DIR
  local dir=$1
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" || return 1
  fi
  cmake --build "$dir" --target "${targets[@]}" -j "$(nproc)"
}

if [ "${1:-}" = prepare ]; then
  bin=${2:-build/tests}
  build_targets build || { echo "gpu_sdpa_session: building ${targets[*]} failed" >&2; exit 1; }
  if [ "$(realpath -m "$bin")" != "$(realpath -m build/tests)" ]; then
    mkdir -p "$bin" && for t in "${targets[@]}"; do cp "build/tests/$t" "$bin/"; done
  fi
  ls -la "${targets[@]/#/$bin/}"
  echo "carry: ${targets[*]/#/$bin/}"
  exit 0
fi

if [ $# -ge 2 ]; then
  bin=$1 out=$2
else
  bin=build/tests out=${1:?usage: scripts/gpu_sdpa_session.sh [BIN] OUT}
fi
mkdir -p "$out"
start=$(date +%s)
budget=${BUDGET_S:-540}
left() { echo $((start + budget - $(date +%s))); }
summary="$out/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# The driver and CUDA's NVRTC (cuDNN's runtime-compiled attention engines use
# it), then PyTorch's NVIDIA libraries (cuDNN lives only there on the GPU machine).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib; do
  [ -d "$d" ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
done
export LD_LIBRARY_PATH
if [ -z "${GRAPHC_CUDNN_PATH:-}" ]; then
  for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib /usr/local/cuda/lib64 \
    /usr/lib/x86_64-linux-gnu; do
    if [ -f "$d/libcudnn.so.9" ]; then
      export GRAPHC_CUDNN_PATH=$d
      break
    fi
  done
fi
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  echo "cuDNN: ${GRAPHC_CUDNN_PATH:-libcudnn.so.9 on the loader path}"
  for f in "${GRAPHC_CUDNN_PATH:-/nonexistent}"/libcudnn.so.9.*; do [ -e "$f" ] && echo "  $f"; done
  echo "nvrtc: $(ls /usr/local/cuda/lib64/libnvrtc.so* 2>/dev/null | tr '\n' ' ')"
  date -u +%FT%TZ
} >"$out/device.txt" 2>&1
say "== device: $(head -1 "$out/device.txt"); $(sed -n 2p "$out/device.txt")"

missing=0
for t in "${targets[@]}"; do [ -x "$bin/$t" ] || missing=1; done
if [ $missing = 1 ]; then
  say "== ${targets[*]} not in $bin: building them here (build-gpu/)"
  if ! build_targets build-gpu >"$out/build.log" 2>&1; then
    say "gpu_sdpa_session: could not build them here (see build.log; the project's build"
    say "dependencies are likely missing on this machine). Build them on the CPU machine:"
    say "  scripts/gpu_sdpa_session.sh prepare   # then carry build/tests/${targets[0]} and build/tests/${targets[1]}"
    tail -20 "$out/build.log"
    exit 2
  fi
  bin=build-gpu/tests
fi

status=0
# 1. The GPU test: every case prints a line ("sdpa ok|WRONG|FAIL|refused ...").
test_limit=$(($(left) / 2))
[ $test_limit -lt 60 ] && test_limit=60
if [ "${SKIP_TEST:-0}" = 1 ]; then
  say "== GPU test skipped (SKIP_TEST=1)"
  : >"$out/sdpa-test.log"
  test_rc=0
else
  say "== GPU test (at most ${test_limit} s): $bin/graphc_sdpa_gpu_tests"
  timeout "$test_limit" "$bin/graphc_sdpa_gpu_tests" "${TEST_FILTER:-[sdpa]}" -d yes \
    >"$out/sdpa-test.log" 2>&1
  test_rc=$?
fi
case $test_rc in
  0) test_result="passed" ;;
  124) test_result="TIMED OUT after ${test_limit} s" ;;
  77) test_result="skipped (no GPU)" ;;
  *) test_result="FAILED (exit $test_rc)" ;;
esac
[ "${SKIP_TEST:-0}" = 1 ] && test_result="not run (SKIP_TEST=1)"
if [ $test_rc = 77 ]; then
  say "no CUDA device here: nothing to measure"
  exit 77
fi
[ $test_rc != 0 ] && status=1
n_ok=$(grep -cE "^sdpa ok " "$out/sdpa-test.log")
n_refused=$(grep -cE "^sdpa refused " "$out/sdpa-test.log")
n_bad=$(grep -cE "^sdpa (WRONG|FAIL) " "$out/sdpa-test.log")
say "GPU test: $test_result ($n_ok cases right, $n_bad wrong or failed, $n_refused probed cases refused by cuDNN)"
# The cases that did not pass, each with its detail line; every case is in sdpa-test.log.
grep -A1 -E "^sdpa (WRONG|FAIL|refused) " "$out/sdpa-test.log" | grep -v "^--" | cut -c1-400 |
  head -60 >>"$summary"
grep -E "^(sdpa summary|probe_sdpa|sdpa with no workspace|test cases|assertions|All tests)" \
  "$out/sdpa-test.log" | cut -c1-400 >>"$summary"

# 2. When something failed: cuDNN's own account of one small call.
if [ $test_rc != 0 ] && [ "$(left)" -gt 90 ]; then
  say "== cuDNN debug log of one small call (cudnn-debug.log)"
  CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG="$out/cudnn-debug.full.log" \
    timeout 60 "$bin/graphc_sdpa_bench" --sweep probe --iters 2 --warmup 1 \
    >"$out/cudnn-probe.txt" 2>&1
  tail -c 8000000 "$out/cudnn-debug.full.log" >"$out/cudnn-debug.log" 2>/dev/null
  rm -f "$out/cudnn-debug.full.log"
  cat "$out/cudnn-probe.txt" >>"$out/cudnn-debug.log"
  rm -f "$out/cudnn-probe.txt"
  grep -E "Reason:" "$out/cudnn-debug.log" | sort | uniq -c | sort -rn | head -8 | tee -a "$summary"
fi

# 3. The benchmark, within what is left.
: >"$out/sdpa-bench.log"
for dt in ${BENCH_DTYPES:-fp16}; do
  bench_budget=$(($(left) - 45))
  if [ $bench_budget -lt 30 ]; then
    say "== benchmark $dt: no time left"
    break
  fi
  say "== benchmark $dt, sweep ${BENCH_SWEEP:-default}, layout ${BENCH_LAYOUT:-bhsd}, budget ${bench_budget} s"
  timeout $((bench_budget + 40)) "$bin/graphc_sdpa_bench" --sweep "${BENCH_SWEEP:-default}" \
    --dtype "$dt" --layout "${BENCH_LAYOUT:-bhsd}" --budget-s "$bench_budget" \
    >>"$out/sdpa-bench.log" 2>&1
  rc=$?
  [ $rc != 0 ] && status=1 && say "benchmark $dt: exit $rc"
done
grep -E '^\{"bench"' "$out/sdpa-bench.log" >"$out/sdpa-bench.jsonl"
echo >>"$summary"
# The table: the benchmark's own, last.
awk '/^cuDNN [0-9]+ SDPA on/{p=1} p && !/^\{/' "$out/sdpa-bench.log" >>"$summary"
grep -E '"status":"(unsupported|error)"' "$out/sdpa-bench.jsonl" | head -5 |
  sed -E 's/.*"batch":([0-9]+).*"seq_q":([0-9]+).*"head_dim":([0-9]+),"causal":(true|false),"status":"([a-z]+)".*"error":"(.{0,300}).*/  \1x\2 d\3 causal=\4 \5: \6/' >>"$summary"
echo >>"$summary"
echo "GPU test: $test_result; measured $(grep -c '"status":"ok"' "$out/sdpa-bench.jsonl") configurations; $(($(date +%s) - start)) s" >>"$summary"
echo
echo "================ summary ================"
cat "$summary"
exit $status
