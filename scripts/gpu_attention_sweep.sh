#!/usr/bin/env bash
# The attention sweep as graphc's engines run it, against PyTorch's SDPA
# backends, in one GPU-machine call:
#   scripts/gpu_attention_sweep.sh BIN OUT
# BIN: graphc_attention_bench and graphc_sdpa_bench built on the CPU machine.
#   1. the generated flash kernel's default tile over the sweep (--default-only);
#   2. graphc's cuDNN SDPA calls over the same shapes (graphc_sdpa_bench);
#   3. scripts/bench_attention.py: PyTorch's flash, cuDNN and memory-efficient
#      backends on the same shapes in the same run, and the table (graphc = what
#      `--attention auto` runs: cuDNN where it takes the call, else the flash kernel).
# OUT: attention-sweep.{json,md}, graphc.jsonl, sdpa-bench.jsonl, sweep.log.
set -uo pipefail
bin=$(realpath "$1") out=$2
mkdir -p "$out"
exec > >(tee -a "$out/sweep.log") 2>&1
export LD_LIBRARY_PATH=$bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/tmp/graphc-sweep-cache
if [[ -z ${GRAPHC_CUDNN_PATH:-} ]]; then
  for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib; do
    [[ -f $d/libcudnn.so.9 ]] && export GRAPHC_CUDNN_PATH=$d && break
  done
fi
PYTHON=python3
/opt/torch/.venv/bin/python -c "import torch" 2>/dev/null && PYTHON=/opt/torch/.venv/bin/python
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
echo "[$(date +%T)] flash kernel sweep (default tile)"
timeout 200 "$bin/graphc_attention_bench" --default-only --out "$out/graphc.jsonl" >/tmp/flash_sweep.log 2>&1 ||
  echo "flash sweep stopped early (rc $?)"
echo "[$(date +%T)] cuDNN SDPA sweep"
timeout 170 "$bin/graphc_sdpa_bench" --sweep default --budget-s 140 >/tmp/sdpa_sweep.log 2>&1 ||
  echo "sdpa sweep stopped early (rc $?)"
grep -E '^\{"bench"' /tmp/sdpa_sweep.log >"$out/sdpa-bench.jsonl"
echo "[$(date +%T)] PyTorch backends and the table"
"$PYTHON" scripts/bench_attention.py --graphc-json "$out/graphc.jsonl" --cudnn-json "$out/sdpa-bench.jsonl" \
  --out "$out" --log /tmp/bench_attention.log
