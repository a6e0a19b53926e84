#!/usr/bin/env bash
# On the GPU machine (PyTorch installed): export the five real models with random
# weights, run `graphc inspect` on each at the batch sizes the benchmarks use, and
# check the optimizer's promises (scripts/check_model_reports.py).
#   scripts/gpu_model_reports.sh GRAPHC OUTDIR
# Writes OUTDIR/export.log, reports.txt (every text report), reports.json.tar.gz
# (the --json reports) and checks.txt.
set -uo pipefail
graphc=$1
out=$2
models=${MODELS_DIR:-/tmp/graphc-real-models}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" "$models" "$out/json"
PYTHONUNBUFFERED=1 python3 "$here/export_models.py" --out "$models" ${EXPORT_MODELS:+--models $EXPORT_MODELS} \
  >"$out/export.log" 2>&1
grep -E "^[a-z_0-9]+: " "$out/export.log"
runs=(
  "resnet50_b1 resnet50 input:1x3x224x224"
  "resnet50_b32 resnet50 input:32x3x224x224"
  "mobilenet_v2_b1 mobilenet_v2 input:1x3x224x224"
  "vit_b_16_b1 vit_b_16 input:1x3x224x224"
  "bert_b1 bert input_ids:1x128 attention_mask:1x128"
  "bert_b32 bert input_ids:32x128 attention_mask:32x128"
  "gpt2_b1 gpt2 input_ids:1x128"
)
: >"$out/reports.txt"
for run in "${runs[@]}"; do
  set -- $run
  tag=$1 model=$2
  shift 2
  flags=()
  for s in "$@"; do flags+=(--shape "$s"); done
  [ -f "$models/$model.onnx" ] || { echo "== $tag: no model (export failed)" >>"$out/reports.txt"; continue; }
  echo "== $tag: graphc inspect $model.onnx ${flags[*]}" >>"$out/reports.txt"
  start=$(date +%s%N)
  timeout 300 "$graphc" inspect "$models/$model.onnx" "${flags[@]}" >>"$out/reports.txt" 2>&1
  rc=$?
  echo "(exit $rc, $(( ($(date +%s%N) - start) / 1000000 )) ms)" >>"$out/reports.txt"
  timeout 300 "$graphc" inspect "$models/$model.onnx" "${flags[@]}" --json >"$out/json/$tag.json" 2>>"$out/reports.txt"
done
python3 "$here/check_model_reports.py" "$out"/json/*.json 2>&1 | tee "$out/checks.txt"
tar -czf "$out/reports.json.tar.gz" -C "$out" json && rm -rf "$out/json"
