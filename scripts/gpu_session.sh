#!/usr/bin/env bash
# One batched GPU-machine session (device time is scarce): GPU test suite in
# the background, `conformance --backend cuda` sharded over both node-test
# suites (Debian's ONNX 1.12 set, carried as a tarball, and ONNX 1.23's,
# generated there). Binaries come prebuilt in BIN (graphc, graphc_gpu_tests).
#   scripts/gpu_session.sh BIN OUT [gpu-test filter]
set -uo pipefail
bin=$1 out=$2 filter=${3:-}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export GRAPHC_SOURCE_DIR=$PWD
mkdir -p "$out" /tmp/n112 /tmp/n123
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
date -u +%FT%TZ >"$out/date.txt"
tar -xzf "$bin/libonnx-node.tar.gz" -C /tmp/n112
python3 scripts/gen_node_tests.py /tmp/n123 >/dev/null 2>&1 &
gen=$!
"$bin/graphc_gpu_tests" $filter >"$out/gpu_tests.log" 2>&1 &
tests=$!
scripts/gpu_conformance_sharded.sh "$bin/graphc" /tmp/n112/node "$out/conformance-112-cuda.json" 12 \
  >"$out/conformance-112.txt" 2>&1
wait $gen
scripts/gpu_conformance_sharded.sh "$bin/graphc" /tmp/n123/node "$out/conformance-123-cuda.json" 12 \
  >"$out/conformance-123.txt" 2>&1
wait $tests
echo "gpu tests: $(tail -3 "$out/gpu_tests.log" | tr '\n' ' ')"
echo "onnx 1.12 cuda: $(tail -1 "$out/conformance-112.txt")"
echo "onnx 1.23 cuda: $(tail -1 "$out/conformance-123.txt")"
