#!/usr/bin/env bash
# On the GPU machine (no network, no graphc build dependencies): builds the
# graphc Python extension from the bundle made on the CPU machine
# (scripts/make_python_bundle.sh), installs the package into a private folder,
# then runs the Python tests (GPU ones included) and the Python benchmark.
#   scripts/gpu_python_session.sh BUNDLE OUT
# BUNDLE: the make_python_bundle.sh folder (carried, e.g. build-pybundle).
# OUT: logs, pytest's junit XML, bench JSON, summary.txt (printed last).
# Env: GRAPHC_PYTHON (default /opt/torch/.venv/bin/python), WORK_DIR
# (default /tmp/graphc-python-session), PYTEST_TIMEOUT_S (150), BENCH_TIMEOUT_S (380:
# the bench stops starting models 25 s before, so its JSON and markdown are whole),
# STAGES (default "build test bench"), BENCH_ARGS (more bench_python.py flags, e.g.
# "--zoo resnext50,deit_small,roberta --small="). The defaults fit one 10-minute call with the build.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BUNDLE=$(realpath "${1:?usage: $0 BUNDLE OUT}")
OUT=$(realpath -m "${2:?usage: $0 BUNDLE OUT}")
PY=${GRAPHC_PYTHON:-/opt/torch/.venv/bin/python}
WORK=${WORK_DIR:-/tmp/graphc-python-session}
STAGES=${STAGES:-build test bench}
mkdir -p "$OUT" "$WORK"
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
PATH="$(dirname "$PY"):$PATH"  # cmake and ninja live beside the venv's python
export PATH

note "gpu_python_session: $(date -u +%FT%TZ) python $("$PY" -c 'import sys; print(sys.version.split()[0])') bundle $BUNDLE"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /' | tee -a "$SUMMARY"

SITE=$WORK/site      # the installed package (graphc/ + its dist-info)
DEPS=$WORK/pydeps    # nanobind (build only) and, if missing, pytest
export PYTHONPATH=$SITE:$DEPS${PYTHONPATH:+:$PYTHONPATH}

if [[ " $STAGES " == *" build "* ]]; then
  rm -rf "$SITE" "$DEPS" "$WORK/build"
  mkdir -p "$SITE" "$DEPS"
  for whl in "$BUNDLE"/wheels/nanobind-*.whl; do "$PY" -m zipfile -e "$whl" "$DEPS"; done
  if ! "$PY" -c "import pytest" 2>/dev/null; then
    for whl in "$BUNDLE"/wheels/*.whl; do
      case $(basename "$whl") in nanobind-*) ;; *) "$PY" -m zipfile -e "$whl" "$DEPS" ;; esac
    done
    note "pytest: from the bundle's wheels"
  fi
  NB_DIR=$("$PY" -c "import nanobind; print(nanobind.cmake_dir())")
  GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
  if ! cmake -S python/standalone -B "$WORK/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DPython_EXECUTABLE="$PY" -Dnanobind_ROOT="$NB_DIR" -DGRAPHC_PYTHON_BUNDLE_DIR="$BUNDLE" \
      > "$OUT/build.log" 2>&1 ||
     ! cmake --build "$WORK/build" -j 8 >> "$OUT/build.log" 2>&1; then
    note "build: FAILED (tail of $OUT/build.log below)"; tail -30 "$OUT/build.log" | tee -a "$SUMMARY"; exit 1
  fi
  cp -r python/graphc "$SITE/graphc"
  cp "$WORK"/build/_graphc*.so "$SITE/graphc/"
  # A dist-info, so importlib.metadata sees the package and its torch.compile entry point.
  DI=$SITE/graphc-0.1.0.dist-info
  mkdir -p "$DI"
  printf 'Metadata-Version: 2.1\nName: graphc\nVersion: 0.1.0\n' > "$DI/METADATA"
  printf '[torch_dynamo_backends]\ngraphc = graphc.torch:graphc_backend\n' > "$DI/entry_points.txt"
  if ! "$PY" -c "import graphc, graphc._graphc; print('import graphc: ok', graphc.__file__)" >> "$OUT/build.log" 2>&1; then
    note "import: FAILED"; tail -20 "$OUT/build.log" | tee -a "$SUMMARY"; exit 1
  fi
  note "build: ok ($(ls "$SITE"/graphc/_graphc*.so | xargs -n1 basename))"
fi

if [[ " $STAGES " == *" test "* ]]; then
  timeout "${PYTEST_TIMEOUT_S:-150}" "$PY" -m pytest -p no:cacheprovider -rs -v \
    --junitxml="$OUT/pytest.xml" "$REPO/python/tests" > "$OUT/pytest.log" 2>&1
  rc=$?
  note "pytest: rc $rc: $(tail -1 "$OUT/pytest.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -20 | tee -a "$SUMMARY"
fi

if [[ " $STAGES " == *" bench "* ]]; then
  BENCH_S=${BENCH_TIMEOUT_S:-380}
  timeout "$BENCH_S" "$PY" python/bench/bench_python.py --out "$OUT/python-bench.json" \
    --budget-s $((BENCH_S > 60 ? BENCH_S - 25 : BENCH_S)) ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1
  note "bench: rc $? ($OUT/python-bench.json, $OUT/python-bench.md)"
  grep -E "^(overhead|compile) " "$OUT/bench.log" | cut -c1-400 | tee -a "$SUMMARY"
  # The result tables (the markdown up to its method text).
  [[ -f "$OUT/python-bench.md" ]] && sed -n '/^## /,/^## How it was measured/p' "$OUT/python-bench.md" |
    grep -v "^## How it was measured" | tee -a "$SUMMARY"
  grep -E "Traceback|Error" "$OUT/bench.log" | tail -5 | tee -a "$SUMMARY"
fi
echo "=== summary ($SUMMARY)"; cat "$SUMMARY"
