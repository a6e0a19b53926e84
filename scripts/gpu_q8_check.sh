#!/usr/bin/env bash
# 8-bit (float8 / int8) elementwise kernels at memory speed, on the GPU
# machine (docs/int8.md), in one call of about 400 s on an H100:
#   1. graphc_gpu_tests "[fp8],[int8],[quantize],[qdq],[q8]": the float8 and
#      int8 QDQ layers and convs, QuantizeLinear/DequantizeLinear, and the
#      8-bit elementwise kernels (16-wide, sm_89's float8 cvt, float -> int8
#      in float) bit for bit against the reference executor;
#   2. scripts/bench_int8.py --fp8 --int8-gemm on bert_b1 and bert_b32: the
#      float8 BERT-base engines against the fp16 ones (PyTorch exports them);
#   3. graphc run --profile of the float8 BERT b32 engine (every launch timed
#      on its own, with its GB/s and roofline share);
#   4. scripts/bench_int8.py --int8-gemm on bert_b1 (int8 QDQ, cuBLASLt's
#      int8 GEMM and the generated epilogues);
#   5. graphc run --profile of the fp16 BERT b32 engine, time permitting.
#   scripts/gpu_q8_check.sh BIN OUT
# BIN holds graphc and graphc_gpu_tests, gzipped (NAME.gz) or not, and may
# hold lib/ (a libprotobuf the binaries need that the machine lacks). OUT gets
# the logs, the benches' .md/.json/.log and summary.txt (printed last); models
# and engines stay in a temporary folder (MODELS_DIR, default /tmp/models,
# keeps the exported ONNX models for a later call). BUDGET_S (default 400)
# bounds the whole call.
set -uo pipefail
bin=${1:?usage: gpu_q8_check.sh BIN OUT}
out=${2:?usage: gpu_q8_check.sh BIN OUT}
cd "$(dirname "$0")/.." || exit 1
budget=${BUDGET_S:-400}
# shellcheck source=gpu_check_setup.sh
source scripts/gpu_check_setup.sh

# 1. The 8-bit GPU tests.
timeout 150 "$tmp/graphc_gpu_tests" "[fp8],[int8],[quantize],[qdq],[q8]" -s --durations yes \
  > "$out/q8-tests.txt" 2>&1
say "[fp8],[int8],[quantize],[qdq],[q8] GPU tests: rc $? after $(elapsed) s; $(grep -E '^(test cases|All tests)' "$out/q8-tests.txt" | tr '\n' ' ')"
grep -B4 -A14 "FAILED" "$out/q8-tests.txt" | head -80 >> "$summary"

# bench_int8.py into $tmp/$1 with the rest of the arguments; its tables to OUT.
bench() {
  local name=$1
  shift
  local left=$((budget - $(elapsed) - 30))
  if [ "$left" -lt 60 ]; then
    say "bench $name skipped: $left s left"
    return
  fi
  timeout "$left" "$py" scripts/bench_int8.py --graphc "$tmp/graphc" --models-dir "$models" \
    --out "$tmp/$name" --min-s 1.0 --warmup-s 0.3 "$@" > "$out/$name-stdout.log" 2>&1
  say "bench $name ($*): rc $? after $(elapsed) s"
  for f in "$tmp/$name"/*.md "$tmp/$name"/*.json "$tmp/$name"/*.log; do
    [ -f "$f" ] && cp "$f" "$out/$name-$(basename "$f")"
  done
  for f in "$tmp/$name"/work/*/*.log; do
    [ -f "$f" ] && cp "$f" "$out/$name-$(basename "$(dirname "$f")")-$(basename "$f")"
  done
  grep -h -E "^\| (bert|config)" "$tmp/$name"/*.md 2>/dev/null | tee -a "$summary"
}

# 2-5.
bench fp8 --fp8 --int8-gemm --models bert_b1 bert_b32
profile "$tmp/fp8/work/bert_b32/int8.engine" bert_b32-fp8
bench int8 --int8-gemm --models bert_b1
profile "$tmp/fp8/work/bert_b32/fp16.engine" bert_b32-fp16
say "done after $(elapsed) s"
cat "$summary"
