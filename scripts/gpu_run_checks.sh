#!/usr/bin/env bash
# On the GPU machine: `graphc run` and the C example end to end on a few ONNX
# node-test models (elementwise, so every kernel has a GPU lowering): build for
# this GPU, run with random inputs and --check against the reference executor,
# with and without the CUDA graph, with .npy inputs and --output-dir/--json,
# and through examples/run_engine.c; then `graphc build --tune` with a timing
# cache on models/mlp.onnx.
#   scripts/gpu_run_checks.sh BIN_DIR NODE_DIR OUTDIR
#   (BIN_DIR holds graphc and run_engine; NODE_DIR e.g. /usr/share/libonnx-testdata/data/node)
set -uo pipefail
bin=$1
node=$2
out=$3
mkdir -p "$out"
fail=0
step() {  # step NAME CMD...: runs CMD, logs it, counts failures
  local name=$1
  shift
  if "$@" >"$out/$name.log" 2>&1; then echo "ok    $name"; else echo "FAIL  $name (see $out/$name.log)"; fail=1; fi
}
for t in test_add test_relu test_sigmoid test_mul_bcast test_where_example; do
  m="$node/$t/model.onnx"
  e="$out/$t.engine"
  step "$t.build" "$bin/graphc" build "$m" --arch native -o "$e" || continue
  step "$t.run" "$bin/graphc" run "$e" --iterations 50 --check --onnx "$m" --json "$out/$t.json" \
    --output-dir "$out/$t.outputs"
  step "$t.run-no-graph" "$bin/graphc" run "$e" --no-cuda-graph --iterations 20 --duration 0.5 \
    --check --onnx "$m"
  step "$t.example" "$bin/run_engine" "$e"
done
# .npy inputs: the outputs written by one run fed back as inputs of Relu
# (same dtype and shape), then a shape mismatch must be refused.
if [ -f "$out/test_relu.outputs/y.npy" ]; then
  step relu.npy-input "$bin/graphc" run "$out/test_relu.engine" --input "x=$out/test_relu.outputs/y.npy" \
    --check --onnx "$node/test_relu/model.onnx"
  if "$bin/graphc" run "$out/test_mul_bcast.engine" --input "y=$out/test_relu.outputs/y.npy" >"$out/bad.log" 2>&1; then
    echo "FAIL  a wrong-shape .npy input was accepted"; fail=1
  else
    echo "ok    wrong .npy input refused: $(tail -1 "$out/bad.log")"
  fi
fi
# --tune end to end: time cuBLASLt candidates, record them, run the tuned engine
# against the reference; a rebuild from the timing cache times nothing.
root=$(cd "$(dirname "$0")/.." && pwd)
mlp="$root/models/mlp.onnx"
rm -f "$out/mlp.timing"
step mlp.tune "$bin/graphc" build "$mlp" --arch native --gemm cublaslt --tune -v \
  --timing-cache "$out/mlp.timing" -o "$out/mlp.tuned.engine"
step mlp.tuned-run "$bin/graphc" run "$out/mlp.tuned.engine" --iterations 50 --check --onnx "$mlp"
step mlp.tuned-inspect "$bin/graphc" inspect "$out/mlp.tuned.engine"
step mlp.tune-cached "$bin/graphc" build "$mlp" --arch native --gemm cublaslt --tune \
  --timing-cache "$out/mlp.timing" -o "$out/mlp.tuned2.engine"
if grep -q "(0 timed, 0 candidates, 3 from the timing cache)" "$out/mlp.tune-cached.log"; then
  echo "ok    rebuild from the timing cache timed nothing"
else
  echo "FAIL  rebuild from the timing cache (see $out/mlp.tune-cached.log)"; fail=1
fi
exit $fail
