#!/usr/bin/env bash
# On the GPU machine: the GPU test suite, then `graphc conformance --backend cuda`
# on Debian's ONNX 1.12 node tests (carried as a tarball) and on ONNX 1.23's
# (generated there), next to the reference backend.
#   scripts/gpu_backend_checks.sh BIN_DIR OUTDIR   (BIN_DIR holds graphc, graphc_gpu_tests, libonnx-node.tar.gz)
set -uo pipefail
bin=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" /tmp/node112 /tmp/node123
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
"$bin/graphc_gpu_tests" 2>&1 | tee "$out/gpu_tests.log" | tail -40
tar -xzf "$bin/libonnx-node.tar.gz" -C /tmp/node112
python3 "$here/gen_node_tests.py" /tmp/node123 >/dev/null 2>&1
for suite in 112:/tmp/node112/node 123:/tmp/node123/node; do
  tag=${suite%%:*} dir=${suite#*:}
  for backend in reference cuda; do
    json=()
    [ "$backend" = cuda ] && json=(--json "$out/conformance-$tag-cuda.json")
    "$bin/graphc" conformance "$dir" --backend "$backend" "${json[@]}" >/tmp/conf.log 2>&1
    { echo "=== onnx $tag $backend"; cat /tmp/conf.log; } >>"$out/conformance.log"
    echo "onnx $tag $backend: $(tail -1 /tmp/conf.log)"
  done
done | tee "$out/conformance-summary.txt"
