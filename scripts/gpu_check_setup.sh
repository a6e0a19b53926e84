# Sourced by the one-call GPU check scripts (gpu_fp8_epilogue_check.sh, gpu_q8_check.sh) from
# the repository root, with `bin` (graphc and graphc_gpu_tests, gzipped as NAME.gz or not, and
# maybe lib/ with a libprotobuf the machine lacks) and `out` set: unpacks the binaries into a
# temporary folder ($tmp, removed on exit), points the tests and cuDNN at this machine's copies,
# and starts OUT/summary.txt (`say` appends to it) with the device's name. Defines elapsed,
# py (PYTHON, default the PyTorch venv), models (MODELS_DIR, default /tmp/models) and
# `profile ENGINE LABEL` (within what is left of `budget`).
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$(cd "$bin" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }
py=${PYTHON:-/opt/torch/.venv/bin/python}
models=${MODELS_DIR:-/tmp/models}

for f in graphc graphc_gpu_tests; do
  if [ -f "$bin/$f.gz" ]; then gunzip -c "$bin/$f.gz" > "$tmp/$f"; else cp "$bin/$f" "$tmp/$f"; fi
  chmod +x "$tmp/$f"
done
export LD_LIBRARY_PATH=$bin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GRAPHC_SOURCE_DIR=$PWD GRAPHC_TEST_BINARY=$tmp/graphc
for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn/lib; do
  [ -f "$d/libcudnn.so.9" ] && export GRAPHC_CUDNN_PATH=$d
done
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
nvidia-smi -L > "$out/gpus.txt" 2>&1
say "device: $(head -1 "$out/gpus.txt")"

# Per-launch profile of one engine (OUT/profile-LABEL.txt), its head and losses in the summary.
profile() {
  local engine=$1 label=$2
  local left=$((budget - $(elapsed)))
  if [ ! -f "$engine" ] || [ "$left" -lt 25 ]; then
    say "profile $label: skipped (engine $([ -f "$engine" ] && echo present || echo missing), $left s left)"
    return
  fi
  timeout $((left - 5)) "$tmp/graphc" run "$engine" --profile --iterations 20 \
    > "$out/profile-$label.txt" 2>&1
  say "profile $label: rc $? after $(elapsed) s"
  head -45 "$out/profile-$label.txt" >> "$summary"
  grep -A12 "lost against the roofline" "$out/profile-$label.txt" >> "$summary"
}
