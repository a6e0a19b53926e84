#!/usr/bin/env bash
# cuBLASLt's own FP8 epilogue on the GPU machine (docs/int8.md, "The fp8
# GEMM"), in one call of under 6 minutes on an H100:
#   1. graphc_gpu_tests "[fp8]": the float8 QDQ layers (fused epilogue, float8
#      D read by the next GEMM, the cases that keep a generated epilogue)
#      against the reference executor at fp32, fp16 and bf16 engine precision;
#   2. scripts/bench_int8.py --fp8 --int8-gemm --models bert_b1 bert_b32: the
#      float8 BERT-base engines against the fp16 ones (PyTorch exports them);
#   3. graphc run --profile of the float8 (and, time permitting, the fp16)
#      BERT b32 engine: every launch timed on its own, with its ONNX nodes.
#   scripts/gpu_fp8_epilogue_check.sh BIN OUT
# BIN holds graphc and graphc_gpu_tests, gzipped (NAME.gz) or not, and may
# hold lib/ (a libprotobuf the binaries need that the machine lacks). OUT gets
# the logs, the bench's .md/.json/.log and summary.txt (printed last); models
# and engines stay in a temporary folder (MODELS_DIR, default /tmp/models,
# keeps the exported ONNX models for a later call).
set -uo pipefail
bin=${1:?usage: gpu_fp8_epilogue_check.sh BIN OUT}
out=${2:?usage: gpu_fp8_epilogue_check.sh BIN OUT}
cd "$(dirname "$0")/.."
budget=${BUDGET_S:-340}
# shellcheck source=gpu_check_setup.sh
source scripts/gpu_check_setup.sh

# 1. The [fp8] GPU tests.
timeout 120 "$tmp/graphc_gpu_tests" "[fp8]" -s > "$out/fp8-tests.txt" 2>&1
say "[fp8] GPU tests: rc $? after $(elapsed) s; $(grep -E '^(test cases|All tests)' "$out/fp8-tests.txt" | tr '\n' ' ')"
grep -B4 -A14 "FAILED" "$out/fp8-tests.txt" | head -80 >> "$summary"

# 2. The float8 BERT-base bench against fp16 (b1, b32).
left=$((budget - $(elapsed) - 60))
if [ "$left" -gt 60 ]; then
  timeout "$left" "$py" scripts/bench_int8.py --graphc "$tmp/graphc" --models-dir "$models" \
    --out "$tmp/bench" --fp8 --int8-gemm --models bert_b1 bert_b32 > "$out/bench-stdout.log" 2>&1
  say "bench_int8 --fp8 --int8-gemm: rc $? after $(elapsed) s"
  for f in "$tmp"/bench/*.md "$tmp"/bench/*.json "$tmp"/bench/*.log; do
    [ -f "$f" ] && cp "$f" "$out/"
  done
  for f in "$tmp"/bench/work/*/*.log; do
    [ -f "$f" ] && cp "$f" "$out/$(basename "$(dirname "$f")")-$(basename "$f")"
  done
  grep -h -E "^\| bert" "$tmp"/bench/*.md 2>/dev/null | tee -a "$summary"
else
  say "bench skipped: $left s left"
fi

# 3. Per-launch profile of the BERT b32 engines (float8 first: "int8" is its name there).
for name in int8 fp16; do profile "$tmp/bench/work/bert_b32/$name.engine" "bert_b32-$name"; done
say "done after $(elapsed) s"
cat "$summary"
