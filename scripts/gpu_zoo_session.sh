#!/usr/bin/env bash
# The model zoo on the GPU machine, one shard per GPU, inside one device call:
#   scripts/gpu_zoo_session.sh GRAPHC OUT
# Splits bench_common.ZOO_RUN (27 configurations; env ZOO to name others) into one
# shard per visible GPU (configurations of one model stay together), and runs
# scripts/gpu_models_session.sh for each shard in parallel on its own GPU
# (CUDA_VISIBLE_DEVICES) with its own model and work folders: export, compare
# against onnxruntime (fp32, fp16) and bench (eager, torch.compile default and
# reduce-overhead, graphc; fp16). Then merges every shard's results into
# OUT/zoo/zoo.{json,md,png} (scripts/zoo_report.py).
# Resumable: RESUME_FROM=the OUT of an earlier call skips the configurations it
# finished (compare and bench both done) and seeds each shard with what it has.
# Env: BUDGET_S (per shard, default 540), NGPU (default: all visible), PYTHON.
set -uo pipefail
graphc=$(realpath "$1")
out=$(realpath -m "$2")
here=$(cd "$(dirname "$0")" && pwd)
budget=${BUDGET_S:-540}
mkdir -p "$out"
if [[ -z ${PYTHON:-} ]]; then
  PYTHON=python3
  /opt/torch/.venv/bin/python -c "import torch" 2>/dev/null && PYTHON=/opt/torch/.venv/bin/python
fi
export PYTHON
ngpu=${NGPU:-$(nvidia-smi -L | wc -l)}
((ngpu >= 1)) || { echo "no GPU"; exit 2; }
# One line per shard: the configurations still to do, cheapest-first balance by model.
mapfile -t shards < <("$PYTHON" - "$here" "$ngpu" "${RESUME_FROM:-}" "${ZOO:-}" <<'PYEOF'
import glob, json, os, sys
sys.path.insert(0, sys.argv[1])
import bench_common as bc
n, resume, names = int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
run = names or bc.ZOO_RUN
done = set()
if resume:
    compared, benched = {}, {}
    for f in glob.glob(os.path.join(resume, "shard*", "compare", "real-models.json")):
        for rec in json.load(open(f)).get("results", {}).values():
            compared.setdefault(rec.get("config"), set()).add(rec.get("status"))
    for f in glob.glob(os.path.join(resume, "shard*", "bench", "*.json")):
        for k, rec in json.load(open(f)).get("results", {}).items():
            benched[k] = rec.get("status")
    done = {c for c in run if benched.get(c) == "done" and compared.get(c) and
            compared[c] <= {"pass", "fail"}}
todo = [c for c in run if c not in done]
by_model = {}
for c in bc.load_configs(todo, os.environ.get("CONFIGS_JSON") or None):
    by_model.setdefault(c.model, []).append(c.name)
# Heavier models first, each to the lightest shard (weight: configurations).
shards = [[] for _ in range(n)]
for model, cs in sorted(by_model.items(), key=lambda kv: -len(kv[1])):
    min(shards, key=len).extend(cs)
for s in shards:
    print(" ".join(s))
PYEOF
)
echo "zoo: $ngpu shard(s); resume from ${RESUME_FROM:-nothing}; budget ${budget} s each" | tee "$out/zoo-session.txt"
pids=()
for ((i = 0; i < ngpu; ++i)); do
  configs=${shards[$i]:-}
  [[ -z $configs ]] && continue
  echo "shard $i: $configs" | tee -a "$out/zoo-session.txt"
  work=/tmp/graphc-zoo-work-$i
  mkdir -p "$work"
  resume_env=()
  [[ -n ${RESUME_FROM:-} && -d $RESUME_FROM/shard$i ]] && resume_env=(RESUME_FROM="$RESUME_FROM/shard$i")
  env "${resume_env[@]}" CUDA_VISIBLE_DEVICES=$i MODELS="$configs" MODELS_DIR=/tmp/graphc-zoo-models-$i \
    WORK_DIR="$work" BUDGET_S="$budget" BENCH_RESERVE_S=${BENCH_RESERVE_S:-330} \
    BENCH_ARGS="${BENCH_ARGS:---no-chain --min-s 1.0 --warmup-s 0.3}" \
    "$here/gpu_models_session.sh" "$graphc" "$out/shard$i" >"$out/shard$i.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
# Earlier calls' shard results are merged too (RESUME_FROM), newest record wins.
"$PYTHON" "$here/zoo_report.py" --out "$out/zoo" ${RESUME_FROM:+"$RESUME_FROM"} "$out" 2>&1 | tail -50
