#!/usr/bin/env bash
# The one command for the real models on the GPU machine, inside one
# 10-minute device call:
#   scripts/gpu_models_session.sh GRAPHC OUT
# Stages (env STAGES, default "export compare bench"):
#   export   scripts/export_models.py for the models not yet in MODELS_DIR/manifest.json
#            (EXPORT_JOBS of them at once, default 8)
#   compare  scripts/compare_models.py: fp32 and fp16 engines against onnxruntime
#   bench    scripts/bench.py: PyTorch eager / torch.compile / graphc, the elementwise chain
# Env: BUDGET_S (default 540: the whole session, all stages), MODELS (configurations,
# default all seven), MODELS_DIR (default /tmp/graphc-real-models), WORK_DIR (default
# /tmp/graphc-models-session: results there are resumed by the next call on a warm
# machine), BENCH_RESERVE_S (time kept for bench when compare runs first, default 300),
# PYTHON (default: /opt/torch/.venv/bin/python when it has torch, else python3),
# COMPARE_ARGS / BENCH_ARGS (extra flags), CONFIGS_JSON (more configurations, see
# compare_models.py --configs-json), RESUME_FROM (the OUT of an earlier call, e.g. on a
# machine since given back: its compare/real-models.json and bench/*.json seed WORK_DIR,
# so only what they lack is run). Each stage stops starting models when its
# time is up; what it did not reach is recorded as skipped and done by the next call.
# OUT gets the logs, the results (compare/real-models.{json,md}, bench/*.{json,md,png})
# and summary.txt, which is also the last thing printed.
set -uo pipefail
graphc=$(realpath "$1")
out=$2
here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
budget=${BUDGET_S:-540}
deadline=$((start + budget))
stages=${STAGES:-export compare bench}
models_dir=${MODELS_DIR:-/tmp/graphc-real-models}
work=${WORK_DIR:-/tmp/graphc-models-session}
configs=${MODELS:-resnet50_b1 resnet50_b32 mobilenet_v2_b1 vit_b_16_b1 bert_b1 bert_b32 gpt2_b1}
read -ra config_list <<<"$configs"
extra_configs=()
[[ -n ${CONFIGS_JSON:-} ]] && extra_configs=(--configs-json "$(realpath "$CONFIGS_JSON")")
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
export TORCHINDUCTOR_CACHE_DIR=$work/inductor-cache # its state (empty or not) goes into the bench JSON
if [[ -z ${PYTHON:-} ]]; then
  PYTHON=python3
  /opt/torch/.venv/bin/python -c "import torch" 2>/dev/null && PYTHON=/opt/torch/.venv/bin/python
fi
mkdir -p "$out" "$models_dir" "$work"
if [[ -n ${RESUME_FROM:-} ]]; then
  mkdir -p "$work/compare" "$work/bench"
  [[ -f $work/compare/real-models.json ]] || cp "$RESUME_FROM/compare/real-models.json" "$work/compare/" 2>/dev/null
  compgen -G "$work/bench/*.json" >/dev/null || cp "$RESUME_FROM"/bench/*.json "$work/bench/" 2>/dev/null
fi
left() { echo $((deadline - $(date +%s))); }
has_stage() { [[ " $stages " == *" $1 "* ]]; }
log() { echo "[$(($(date +%s) - start)) s] $*"; }

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
  "$graphc" --version
  "$PYTHON" -c "import torch, onnx, onnxruntime as o; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'onnx', onnx.__version__, 'onnxruntime', o.__version__)"
} >"$out/versions.txt" 2>&1
log "python $PYTHON; stages: $stages; budget ${budget} s; configurations: $configs"

# The model files the configurations need (resnet50_b32 -> resnet50).
read -ra needed < <("$PYTHON" - "$here" "${CONFIGS_JSON:-}" "${config_list[@]}" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import bench_common as bc
print(" ".join(sorted({c.model for c in bc.load_configs(sys.argv[3:], sys.argv[2] or None)})))
EOF
)
((${#needed[@]})) || { echo "unknown configuration in MODELS='$configs'"; exit 2; }

if has_stage export; then
  read -ra missing < <("$PYTHON" - "$models_dir" "${needed[@]}" <<'EOF'
import json, os, sys
try:
    done = {m["name"] for m in json.load(open(os.path.join(sys.argv[1], "manifest.json")))}
except (OSError, ValueError):
    done = set()
print(" ".join(n for n in sys.argv[2:] if n not in done or not os.path.exists(os.path.join(sys.argv[1], n + ".onnx"))))
EOF
)
  if ((${#missing[@]})); then
    t=$(($(left) - 120))
    ((t > 300)) && t=300
    if ((t < 30)); then
      log "export: no time left for ${missing[*]}"
    else
      log "export: ${missing[*]} (limit ${t} s)"
      timeout --signal=TERM -k 10 "$t" "$PYTHON" "$here/export_models.py" --out "$models_dir" --jobs "${EXPORT_JOBS:-8}" --models "${missing[@]}" \
        >>"$out/export.log" 2>&1
      log "export: exit $?"
    fi
  else
    log "export: all of ${needed[*]} already in $models_dir"
  fi
  grep -E "^[a-z_0-9]+: " "$out/export.log" 2>/dev/null | cut -c1-300
fi

if has_stage compare; then
  stage_end=$deadline
  has_stage bench && stage_end=$((deadline - ${BENCH_RESERVE_S:-300}))
  t=$((stage_end - $(date +%s)))
  if ((t < 60)); then
    log "compare: no time left (${t} s)"
  else
    log "compare: until +$((stage_end - start)) s"
    # shellcheck disable=SC2086
    timeout --signal=TERM -k 10 $((t + 20)) "$PYTHON" "$here/compare_models.py" --graphc "$graphc" \
      --models-dir "$models_dir" --out "$work/compare" --models "${config_list[@]}" "${extra_configs[@]}" --deadline "$stage_end" \
      ${COMPARE_ARGS:-} >"$out/compare.txt" 2>&1
    log "compare: exit $?"
  fi
fi

if has_stage bench; then
  t=$(left)
  if ((t < 60)); then
    log "bench: no time left (${t} s)"
  else
    log "bench: until +$((deadline - start)) s"
    # shellcheck disable=SC2086
    timeout --signal=TERM -k 10 $((t + 20)) "$PYTHON" "$here/bench.py" --graphc "$graphc" \
      --models-dir "$models_dir" --out-dir "$work/bench" --work "$work/bench-work" --models "${config_list[@]}" "${extra_configs[@]}" \
      --deadline "$deadline" ${BENCH_ARGS:-} >"$out/bench.txt" 2>&1
    log "bench: exit $?"
  fi
fi

# Results (without engines and inputs) and the summary.
mkdir -p "$out/compare" "$out/bench"
cp "$work"/compare/real-models.{json,md} "$work"/compare/compare.log "$out/compare/" 2>/dev/null
cp "$work"/bench/*.{json,md,png} "$out/bench/" 2>/dev/null
cp "$work"/bench-work/bench.log "$out/bench/" 2>/dev/null
cp "$models_dir"/manifest.json "$out/export-manifest.json" 2>/dev/null
"$PYTHON" - "$here" "$work" <<'EOF' >"$out/summary.txt" 2>&1
import glob, json, os, sys
sys.path.insert(0, sys.argv[1])
import bench_report
work = sys.argv[2]
path = os.path.join(work, "compare", "real-models.json")
if os.path.exists(path):
    data = json.load(open(path))
    print("== compare (graphc vs onnxruntime)")
    for rec in data["results"].values():
        print(bench_report.compare_line(rec)[:400])
benches = sorted(glob.glob(os.path.join(work, "bench", "*.json")), key=os.path.getmtime)
if benches:
    data = json.load(open(benches[-1]))
    print(f"== bench ({os.path.basename(benches[-1])}; ms, median)")
    print(bench_report.bench_summary(data))
EOF
log "done; outputs in $out"
tail -c 8000 "$out/summary.txt"
