#!/usr/bin/env bash
# One call on a machine with several GPUs: the model zoo on some of them
# (scripts/gpu_zoo_session.sh, one shard per GPU) and the GPU test session
# (scripts/gpu_session.sh) on the last, in parallel; results tarred to
# $OUT/res.tgz (the device tool brings $OUT back).
#   scripts/gpu_multi_session.sh BIN           BIN: graphc, graphc_gpu_tests,
#                                              libonnx-node.tar.gz[, lib/ for
#                                              libraries the machine lacks]
# Env: MODE ("zoo tests" default; either alone), ZOO_GPUS (default: all but the
# last when tests run, else all), BUDGET_S (per zoo shard, 530), TESTS_S (the
# test session's limit, 520), RESUME (an earlier call's zoo folder), ZOO
# (configurations, default the whole zoo).
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$bin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mode=${MODE:-zoo tests}
ng=$(nvidia-smi -L | wc -l)
res=/tmp/res
mkdir -p "$res"
nvidia-smi -L >"$res/gpus.txt"
pids=()
tests=0
[[ " $mode " == *" tests "* ]] && tests=1
if ((tests)); then
  (CUDA_VISIBLE_DEVICES=$((ng - 1)) timeout "${TESTS_S:-520}" "$here/gpu_session.sh" "$bin" "$res/session" \
    >"$res/session.log" 2>&1) &
  pids+=($!)
fi
if [[ " $mode " == *" zoo "* ]]; then
  zg=${ZOO_GPUS:-$((tests && ng > 1 ? ng - 1 : ng))}
  (NGPU=$zg BUDGET_S=${BUDGET_S:-530} ${RESUME:+RESUME_FROM=$RESUME} "$here/gpu_zoo_session.sh" \
    "$bin/graphc" "$res/zoo" >"$res/zoo.log" 2>&1) &
  pids+=($!)
fi
for p in "${pids[@]}"; do wait "$p"; done
cat "$res/session/gpu-tests-summary.txt" 2>/dev/null
tail -40 "$res/zoo.log" 2>/dev/null
tar -czf "${OUT:-/tmp}/res.tgz" -C /tmp res
