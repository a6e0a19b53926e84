#!/usr/bin/env bash
# `graphc conformance DIR --backend cuda` split over SHARDS processes (the GPU
# machine has 16 cores; NVRTC compiles dominate), merged into one JSON and the
# usual summary line. Also writes the failures with their reasons.
#   scripts/gpu_conformance_sharded.sh GRAPHC DIR OUT_JSON [SHARDS] [extra conformance flags...]
set -uo pipefail
graphc=$1 dir=$2 out=$3 shards=${4:-12}
shift 4 2>/dev/null || shift $#
work=$(mktemp -d)
i=0
for c in "$dir"/*/; do
  s=$((i % shards))
  mkdir -p "$work/s$s"
  ln -s "$(cd "$c" && pwd)" "$work/s$s/$(basename "$c")"
  i=$((i + 1))
done
for s in $(seq 0 $((shards - 1))); do
  [ -d "$work/s$s" ] || continue
  "$graphc" conformance "$work/s$s" --backend cuda --json "$work/s$s.json" "$@" >"$work/s$s.log" 2>&1 &
done
wait
python3 - "$work" "$out" <<'PY'
import glob, json, sys
work, out = sys.argv[1], sys.argv[2]
cases = []
for f in sorted(glob.glob(work + "/s*.json")):
    cases += json.load(open(f))["cases"]
missing = [l for f in glob.glob(work + "/s*.log") for l in open(f) if "conformance:" not in l and "error" in l.lower()]
cases.sort(key=lambda c: c["name"])
n = {k: sum(c["outcome"] == k for c in cases) for k in ("pass", "fail", "skip")}
json.dump({"passed": n["pass"], "failed": n["fail"], "skipped": n["skip"], "total": len(cases),
           "cases": cases}, open(out, "w"), indent=1)
for c in cases:
    if c["outcome"] == "fail":
        print(f"FAIL {c['name']}: {c['reason'][:300]}")
print(f"conformance: {n['pass']} passed, {n['fail']} failed, {n['skip']} skipped of {len(cases)}")
PY
rm -rf "$work"
