#!/usr/bin/env bash
# One batched GPU-machine session (device time is scarce). Binaries and
# engines come prebuilt in BIN (made on the CPU machine):
#   graphc, graphc_gpu_tests, run_engine, libonnx-node.tar.gz (Debian's ONNX
#   1.12 node tests), engines/*.engine (built with --arch sm_90, each with
#   engines/NAME.onnx and engines/NAME.args: extra `graphc run` flags).
# Runs, in parallel where they can share the GPU:
#   1. the GPU test suite, one process per test file (NVRTC compiles dominate),
#      then the [devmem] tests alone (they measure device-wide free memory) and
#      the multi-threaded stress test alone;
#   2. `graphc conformance --backend cuda`, sharded, on ONNX 1.12's and 1.23's
#      node tests (1.23's generated there);
#   3. `graphc run --check` on the engines built elsewhere, and the runtime
#      checks (scripts/gpu_run_checks.sh).
#   scripts/gpu_session.sh BIN OUT        (SUITES="112" skips ONNX 1.23's suite)
set -uo pipefail
bin=$1 out=$2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export GRAPHC_SOURCE_DIR=$PWD
# The CLI tests run this graphc, not the build tree's (which is not on this machine).
export GRAPHC_TEST_BINARY=$(realpath "$bin/graphc")
# Convolutions default to cuDNN; where it is not on the loader path (the GPU
# machine has it only in PyTorch's venv), point the runtime at its folder.
if [ -z "${GRAPHC_CUDNN_PATH:-}" ]; then
  for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib; do
    if [ -f "$d/libcudnn.so.9" ]; then
      export GRAPHC_CUDNN_PATH=$d
      break
    fi
  done
fi
mkdir -p "$out/tests" /tmp/n112 /tmp/n123
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
echo "cuDNN: ${GRAPHC_CUDNN_PATH:-libcudnn.so.9 on the loader path}" | tee -a "$out/device.txt"
date -u +%FT%TZ >"$out/date.txt"
tar -xzf "$bin/libonnx-node.tar.gz" -C /tmp/n112
suites=${SUITES:-112 123}
gen=
if [[ $suites == *123* ]]; then
  python3 scripts/gen_node_tests.py /tmp/n123 >/dev/null 2>&1 &
  gen=$!
fi
pids=()
for f in tests/gpu/*_gpu_test.cpp; do
  t=$(basename "$f" .cpp)
  # The stress test (8 threads, contexts each) runs alone below: among the
  # ~40 other processes it once saw a cuBLASLt launch fail on an H100.
  [ "$t" = runtime_stress_gpu_test ] && continue
  "$bin/graphc_gpu_tests" -# "[#$t]~[devmem]" >"$out/tests/$t.log" 2>&1 &
  pids+=($!)
done
scripts/gpu_conformance_sharded.sh "$bin/graphc" /tmp/n112/node "$out/conformance-112-cuda.json" 8 \
  >"$out/conformance-112.txt" 2>&1
if [ -n "$gen" ]; then
  wait $gen
  scripts/gpu_conformance_sharded.sh "$bin/graphc" /tmp/n123/node "$out/conformance-123-cuda.json" 8 \
    >"$out/conformance-123.txt" 2>&1
fi
{
  for e in "$bin"/engines/*.engine; do
    [ -f "$e" ] || continue
    n=$(basename "$e" .engine)
    args=$(cat "$bin/engines/$n.args" 2>/dev/null)
    echo "=== $n (built on the CPU machine for sm_90)"
    # shellcheck disable=SC2086
    "$bin/graphc" run "$e" --iterations 200 --check --onnx "$bin/engines/$n.onnx" $args \
      --json "$out/run-$n.json" 2>&1
    echo "exit $?"
  done
  scripts/gpu_run_checks.sh "$bin" /tmp/n112/node "$out/run-checks" 2>&1
} >"$out/engines.txt" 2>&1
wait "${pids[@]}"
# Tests that measure device-wide free memory (cuMemGetInfo) run alone, after
# everything else, so other processes' allocations do not count as leaks.
"$bin/graphc_gpu_tests" "[devmem]" -s >"$out/tests/devmem.log" 2>&1
"$bin/graphc_gpu_tests" -# "[#runtime_stress_gpu_test]" >"$out/tests/runtime_stress_gpu_test.log" 2>&1
for f in "$out"/tests/*.log; do
  echo "$(basename "$f" .log): $(grep -E '^(test cases|All tests|SKIPPED)' "$f" | tr '\n' ' ')"
done | tee "$out/gpu-tests-summary.txt"
echo "onnx 1.12 cuda: $(tail -1 "$out/conformance-112.txt")"
[ -n "$gen" ] && echo "onnx 1.23 cuda: $(tail -1 "$out/conformance-123.txt")"
grep -E "^===|exit|error|GPU compute|max abs" "$out/engines.txt" | head -40
