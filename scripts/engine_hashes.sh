#!/usr/bin/env bash
# Builds the shipped models' engines with a spread of flags and prints one
# line per engine: sha256, then the flags. Run it with the graphc binaries of
# two commits and diff the outputs: a refactor that claims to change nothing
# must give byte-identical engines (engines are deterministic).
#   scripts/engine_hashes.sh build/graphc > before.txt
set -euo pipefail
graphc=${1:?usage: engine_hashes.sh GRAPHC_BINARY}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
configs=(
  "--arch sm_80 --arch sm_90"
  "--arch sm_90 --precision fp16"
  "--arch sm_86 --precision bf16"
  "--arch sm_90 --precision fp16 --convert-io"
  "--arch sm_90 --gemm generated --conv generated"
  "--arch sm_90 --gemm cublaslt --allow-tf32"
  "--arch sm_90 --precision fp16 --conv generated"
  "--arch sm_90 --disable-pass fuse-elementwise"
)
for model in mlp conv_block transformer_block; do
  shape=()
  [[ $model == transformer_block ]] && shape=(--shape x:2x16x64)
  for cfg in "${configs[@]}"; do
    # shellcheck disable=SC2086
    "$graphc" build "models/$model.onnx" "${shape[@]}" $cfg -o "$tmp/e.engine" >/dev/null
    echo "$(sha256sum "$tmp/e.engine" | cut -c1-16)  $model $cfg"
  done
done
# Large enough for cuBLASLt and its split epilogues (M*N*K >= 2^20, K >= 128 in auto mode).
for cfg in "--arch sm_90" "--arch sm_90 --precision fp16" "--arch sm_80 --precision bf16 --gemm cublaslt"; do
  # shellcheck disable=SC2086
  "$graphc" build models/transformer_block.onnx --shape x:512x16x64 $cfg -o "$tmp/e.engine" >/dev/null
  echo "$(sha256sum "$tmp/e.engine" | cut -c1-16)  transformer_block x:512x16x64 $cfg"
done
