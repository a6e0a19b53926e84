#!/usr/bin/env bash
# Repeats one GPU test file while other GPU test processes keep the GPU, its
# copy engines and the CPUs busy (a first-run race that only showed
# under such load: 5 of 277 runs of models_gpu_test on the H100 before the
# weights-upload fix in runtime/engine.cpp). On the GPU machine:
#   scripts/gpu_load_repeat.sh BIN OUT [SECONDS] [TEST_FILE]
# BIN holds graphc_gpu_tests; TEST_FILE defaults to models_gpu_test. Prints
# "N of M failed" and keeps each failing run's log (with the test's own
# diagnosis: whether a second run in the same process matches) in OUT.
set -uo pipefail
bin=$1 out=$2 seconds=${3:-240} test=${4:-models_gpu_test}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export GRAPHC_SOURCE_DIR=$PWD
if [ -z "${GRAPHC_CUDNN_PATH:-}" ]; then
  for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib; do
    [ -f "$d/libcudnn.so.9" ] && export GRAPHC_CUDNN_PATH=$d && break
  done
fi
mkdir -p "$out"
start=$(date +%s)
fails=0 runs=0
while (($(date +%s) - start < seconds)); do
  # The load: three large test files, each in its own process.
  for load in reduction_gpu_test elementwise_gpu_test data_movement_gpu_test; do
    "$bin/graphc_gpu_tests" -# "[#$load]" >/dev/null 2>&1 &
  done
  while (($(jobs -rp | wc -l) > 0)); do
    runs=$((runs + 1))
    if ! "$bin/graphc_gpu_tests" -# "[#$test]" >"$out/run.log" 2>&1; then
      fails=$((fails + 1))
      cp "$out/run.log" "$out/fail_$runs.log"
    fi
  done
done
rm -f "$out/run.log"
echo "$test under load: $fails of $runs failed"
grep -h -a -A6 "^\[models\]" "$out"/fail_*.log 2>/dev/null | head -40
exit $((fails > 0))
