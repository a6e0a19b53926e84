#!/usr/bin/env bash
# Engines that serve a shape range, on the GPU machine (issue: dynamic shapes;
# docs/dynamic-shapes.md). BIN holds graphc, graphc_gpu_tests and
# graphc_shape_switch_bench built on the CPU machine. In one call:
#   1. the GPU tests of range engines (tests/gpu/shape_range_gpu_test.cpp);
#   2. the benchmark block (scripts/make_shape_range_model.py: LayerNorm, two
#      GEMMs with GELU, a fused residual LayerNorm, Softmax; batch x seq x 256)
#      built once for batch 1-32 x seq 16-512 (opt 8x128) and once per shape as
#      static engines (both --gemm generated: the kernels that take run-time
#      sizes), each run with --check against the reference at min, opt, max and
#      odd shapes between: OUT/runs.tsv has the median GPU time of each, so
#      dynamic/static is read off per shape;
#   3. the host cost of switching between two cached shapes and of a new shape
#      (OUT/switch.json).
#   scripts/gpu_shape_range_session.sh BIN OUT
set -uo pipefail
bin=$1 out=$2
mkdir -p "$out/engines"
export GRAPHC_SOURCE_DIR=$PWD GRAPHC_TEST_BINARY=$(realpath "$bin/graphc")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
"$bin/graphc_gpu_tests" "[shape-range]" >"$out/gpu_tests.txt" 2>&1
echo "gpu tests rc=$?" | tee -a "$out/device.txt"
python3 scripts/make_shape_range_model.py "$out/engines/block.onnx" || exit 1
g="$bin/graphc"
$g build "$out/engines/block.onnx" --min-shape x:1x16x256 --opt-shape x:8x128x256 \
  --max-shape x:32x512x256 --gemm generated -o "$out/engines/range.engine" >"$out/build.txt" 2>&1 ||
  { cat "$out/build.txt"; exit 1; }
printf 'shape\tengine\trc\tmedian_ms\n' >"$out/runs.tsv"
for s in 8x128x256 1x16x256 32x512x256 3x77x256 17x300x256 32x16x256 1x512x256; do
  $g build "$out/engines/block.onnx" --shape x:$s --gemm generated -o "$out/engines/static_$s.engine" \
    >>"$out/build.txt" 2>&1
  for e in range static; do
    f="$out/engines/range.engine"; [ $e = static ] && f="$out/engines/static_$s.engine"
    $g run "$f" --shape x:$s --iterations 200 --warmup-ms 200 --check --onnx "$out/engines/block.onnx" \
      --json "$out/run_${e}_$s.json" >"$out/run_${e}_$s.txt" 2>&1
    rc=$?
    med=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['gpu_compute_ms']['median'])" \
      "$out/run_${e}_$s.json" 2>/dev/null || echo -)
    printf '%s\t%s\t%s\t%s\n' "$s" "$e" "$rc" "$med" | tee -a "$out/runs.tsv"
  done
done
# Where the range engine loses to static ones: per-kernel times at both ends.
for s in 32x512x256 1x16x256; do
  $g run "$out/engines/range.engine" --shape x:$s --profile --iterations 50 >"$out/profile_range_$s.txt" 2>&1
  $g run "$out/engines/static_$s.engine" --shape x:$s --profile --iterations 50 >"$out/profile_static_$s.txt" 2>&1
done
"$bin/graphc_shape_switch_bench" "$out/engines/range.engine" x 8x128x256 16x128x256 \
  3x77x256 32x512x256 1x16x256 | tee "$out/switch.json"
rm -f "$out"/engines/*.engine
