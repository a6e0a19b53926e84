#!/usr/bin/env bash
# compute-sanitizer over the GPU test suite on the GPU machine: memcheck (with
# leak checking) and racecheck, one process per test file (as
# scripts/gpu_session.sh runs them), within a wall-clock budget. Device time
# is scarce and the tools slow kernels down 10-100x, so (tool, file) jobs run
# in a fixed priority order, a few at once, each killed when the budget ends;
# the summary says which ran, which were cut off and which never started.
#   scripts/gpu_sanitize.sh BIN_DIR OUT
# BIN_DIR holds graphc_gpu_tests (and graphc, which the profile test runs).
# Environment:
#   GRAPHC_SANITIZER_BUDGET_S  whole stage, seconds (default 300)
#   GRAPHC_SANITIZER_JOBS      sanitizer processes at once (default 4)
#   GRAPHC_SANITIZER_JOBS_LIST "tool:file ..." instead of the default order
#                              (file = tests/gpu/FILE.cpp without .cpp)
#   GRAPHC_SANITIZER_LISTED_ONLY=1  only those jobs (else every other file gets memcheck)
#   COMPUTE_SANITIZER          the tool (default /usr/local/cuda/bin/compute-sanitizer)
# Writes OUT/<tool>/<file>.log, OUT/summary.tsv and OUT/summary.md; exits 1
# when any finished job reported a sanitizer error, 0 otherwise.
#
# Options, and why (docs/reports/gpu-sanitizers.md has the longer story):
#   --target-processes all   the profile test runs `graphc run --profile` as
#                            a child process; it is checked too.
#   --error-exitcode 86      a sanitizer error is told apart from a failing test.
#   --leak-check full        (memcheck) device allocations still live when the
#                            CUDA context is torn down at exit are reported.
#   --report-api-errors no   graphc checks every driver call itself and tests
#                            provoke some on purpose (bad engines, injected
#                            failures); those are not memory errors.
#   Tests excluded: [sticky-gpu] (a kernel traps on purpose, in a child
#   process) and [devmem] (compares cuMemGetInfo before and after, which the
#   tool's own padded allocations distort; memcheck's leak check covers it).
#   racecheck hazards inside NVIDIA's cuBLASLt Hopper GEMM kernels (nvjet_*)
#                            are counted apart, as third-party: a plain
#                            cuBLASLt program with no graphc in it reports them
#                            too (tests/gpu/repro/cublaslt_gelubias_racecheck.cpp:
#                            every nvjet_sm90_hsh_* candidate, with or without an
#                            epilogue, while 300 runs of each give the same
#                            bits), so they are not graphc's to fix. They stay
#                            in every summary, and that program runs under
#                            racecheck as its own row when nvcc is here. (Not
#                            --kernel-name-exclude: the 2025.3 tool then fails
#                            with "failed to handle a hardware exception" and the
#                            excluded kernel faults.) Any other racecheck error
#                            fails the run.
#   libcuda is loaded with dlopen and kernels come from NVRTC (cuModuleLoadData):
#   the tool hooks the driver itself, so both are instrumented; CUDA graphs are
#   supported since compute-sanitizer 2020.2.
set -uo pipefail
bin=$1 out=$2
cs=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
budget=${GRAPHC_SANITIZER_BUDGET_S:-300}
max_jobs=${GRAPHC_SANITIZER_JOBS:-4}
min_start=20  # a job that cannot get this many seconds is not started
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export GRAPHC_SOURCE_DIR=$PWD
# Tests that cannot hold under the tools (the profile's stream hold) check this.
export GRAPHC_UNDER_SANITIZER=1
mkdir -p "$out/memcheck" "$out/racecheck"
[ -x "$cs" ] || { echo "gpu_sanitize: no compute-sanitizer at $cs" >&2; exit 2; }
"$cs" --version | tail -1 | tee "$out/tool-version.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/device.txt" 2>/dev/null ||
  echo "unknown (no nvidia-smi)" >"$out/device.txt"

# Runtime paths first (every launch kind, copies, graphs, threads, faults),
# then the kernels with shared memory for racecheck, then the rest.
default_jobs="memcheck:runtime_api_gpu_test racecheck:reduction_gpu_test
memcheck:runtime_profile_gpu_test racecheck:pool_contraction_gpu_test
memcheck:engine_gpu_test memcheck:cublaslt_gpu_test memcheck:runtime_fault_gpu_test
memcheck:runtime_copy_gpu_test memcheck:reduction_gpu_test memcheck:pool_contraction_gpu_test
racecheck:models_gpu_test memcheck:runtime_stress_gpu_test memcheck:elementwise_gpu_test
memcheck:data_movement_gpu_test racecheck:cublaslt_gpu_test memcheck:models_gpu_test
memcheck:driver_gpu_test racecheck:elementwise_gpu_test racecheck:data_movement_gpu_test
racecheck:engine_gpu_test"
jobs_list=${GRAPHC_SANITIZER_JOBS_LIST:-$default_jobs}
# A test file missing from the list still gets memcheck, last (unless
# GRAPHC_SANITIZER_LISTED_ONLY=1: a re-run of a few jobs).
[[ ${GRAPHC_SANITIZER_LISTED_ONLY:-0} == 1 ]] || for f in tests/gpu/*_gpu_test.cpp; do
  t=$(basename "$f" .cpp)
  [[ $jobs_list == *":$t"* ]] || jobs_list+=" memcheck:$t"
done

# racecheck is the slow tool: a whole test file did not finish in 110 s on the
# H100, so each racecheck job is split into one job per test case (run by its
# exact name, Catch's special characters escaped), which run in parallel and
# are cut off one by one. GRAPHC_SANITIZER_SPLIT_RACECHECK=0 keeps whole files.
if [[ ${GRAPHC_SANITIZER_SPLIT_RACECHECK:-1} == 1 ]]; then
  expanded=""
  for job in $jobs_list; do
    tool=${job%%:*} file=${job#*:}
    n=0
    if [[ $tool == racecheck ]]; then
      while IFS= read -r name; do
        [[ -z $name ]] && continue
        printf '%s\n' "$name" >"$out/racecheck/$file.$n.name"
        expanded+=" racecheck:$file.$n"
        n=$((n + 1))
      done < <("$bin/graphc_gpu_tests" -# --list-test-names-only "[#$file]~[sticky-gpu]~[devmem]" 2>/dev/null |
        sed -e 's/^ *//' -e 's/ *$//' | grep -v '^[0-9]* matching test case')
    fi
    ((n == 0)) && expanded+=" $job"
  done
  jobs_list=$expanded
fi

# A job as the summary names it: the file, and the test case of a split job.
shown() {  # shown TOOL FILE
  if [ -f "$out/$1/$2.name" ]; then
    echo "$2: $(cut -c1-70 "$out/$1/$2.name")"
  else
    echo "$2"
  fi
}

# The Catch test spec of a job: one test case by name, or a whole file.
test_spec() {  # test_spec TOOL FILE
  if [ -f "$out/$1/$2.name" ]; then
    # A leading '-' would read as an option: '*' matches it (names are unique).
    sed -e 's/[][\\,~*"]/\\&/g' -e 's/^-/*/' "$out/$1/$2.name"
  else
    echo "[#$2]~[sticky-gpu]~[devmem]"
  fi
}

tool_flags() {
  case $1 in
    memcheck) echo "--tool memcheck --leak-check full --print-limit 50" ;;
    # Every racecheck error printed (3 lines each): the third-party count needs their kernel names.
    racecheck) echo "--tool racecheck --racecheck-report analysis --print-limit 0" ;;
  esac
}

# The third-party row: plain cuBLASLt under racecheck, nothing excluded.
third_party_racecheck() {
  local nvcc=${NVCC:-/usr/local/cuda/bin/nvcc} repro=tests/gpu/repro/cublaslt_gelubias_racecheck.cpp
  if [ ! -x "$nvcc" ] || [ ! -f "$repro" ]; then
    echo "not run (no nvcc or no $repro)" >"$out/third-party.txt"
    return
  fi
  "$nvcc" -O2 -arch=sm_90 -o "$out/lt_race" "$repro" -lcublasLt >"$out/third-party.build.log" 2>&1 ||
    { echo "not run (nvcc failed, see third-party.build.log)" >"$out/third-party.txt"; return; }
  timeout 120 "$cs" --tool racecheck --racecheck-report analysis --print-limit 20 \
    "$out/lt_race" gelubias 1 >"$out/racecheck/third-party-cublaslt.log" 2>&1
  local kernels
  kernels=$(grep -aEo 'Race reported between [A-Za-z]+ access at [A-Za-z0-9_]+' \
    "$out/racecheck/third-party-cublaslt.log" | awk '{print $NF}' | sed 's/_[0-9a-z]*x[0-9].*//' | sort -u | tr '\n' ' ')
  echo "$(grep -a 'RACECHECK SUMMARY' "$out/racecheck/third-party-cublaslt.log" | sed 's/=* *//') in plain cuBLASLt (no graphc), kernels: ${kernels:-none}" >"$out/third-party.txt"
}

start=$(date +%s)
third_party_racecheck &
declare -A began
run_job() {  # run_job TOOL FILE SECONDS
  local tool=$1 file=$2 limit=$3
  # shellcheck disable=SC2046
  timeout --kill-after=15 "$limit" "$cs" $(tool_flags "$tool") --target-processes all \
    --error-exitcode 86 --report-api-errors no \
    "$bin/graphc_gpu_tests" -# "$(test_spec "$tool" "$file")" >"$out/$tool/$file.log" 2>&1
  echo $? >"$out/$tool/$file.rc"
}
for job in $jobs_list; do
  while (($(jobs -rp | wc -l) >= max_jobs)); do wait -n; done
  left=$((budget - ($(date +%s) - start)))
  if ((left < min_start)); then
    echo "$job" >>"$out/not-started.txt"
    continue
  fi
  tool=${job%%:*} file=${job#*:}
  began[$job]=$(date +%s)
  run_job "$tool" "$file" "$left" &
done
wait

# Summary: per job, sanitizer errors (memcheck ERROR SUMMARY and racecheck
# hazards, summed over the test process and its children), the test verdict,
# the exit status and the wall time.
printf 'tool\tfile\tstatus\tsanitizer_errors\tthird_party_errors\twarnings\tleaked_bytes\ttests\texit\tseconds\n' >"$out/summary.tsv"
any_error=0
for job in $jobs_list; do
  tool=${job%%:*} file=${job#*:}
  log=$out/$tool/$file.log
  if [ -z "${began[$job]:-}" ]; then
    printf '%s\t%s\tnot started (budget)\t-\t-\t-\t-\t-\t-\t-\n' "$tool" "$(shown "$tool" "$file")" >>"$out/summary.tsv"
    continue
  fi
  rc=$(cat "$out/$tool/$file.rc" 2>/dev/null || echo "?")
  secs=$(($(stat -c %Y "$out/$tool/$file.rc" 2>/dev/null || date +%s) - ${began[$job]}))
  # racecheck's verdict is its RACECHECK SUMMARY line; memcheck's (leaks
  # included) the ERROR SUMMARY line.
  if [[ $tool == racecheck ]] && grep -aq 'RACECHECK SUMMARY' "$log"; then
    errs=$(grep -aEo 'RACECHECK SUMMARY: .*\([0-9]+ error' "$log" | grep -Eo '\([0-9]+' |
      tr -d '(' | awk '{s += $1} END {print s + 0}')
  else
    errs=$(grep -aEo 'ERROR SUMMARY: [0-9]+ error' "$log" | awk '{s += $3} END {print s + 0}')
  fi
  leaked=$(grep -aEo 'LEAK SUMMARY: [0-9]+ bytes' "$log" | awk '{s += $3} END {print s + 0}')
  warns=$(grep -aE 'RACECHECK SUMMARY' "$log" | grep -Eo '[0-9]+ warning' |
    awk '{s += $1} END {print s + 0}')
  summaries=$(grep -acE '(ERROR|RACECHECK) SUMMARY' "$log")
  tests=$(grep -aE '^(All tests passed|test cases:)' "$log" | tail -1 | tr '\t|' ' /' | tr -s ' ')
  case $rc in
    124 | 137) status="cut off by the budget" ;;
    86) status="SANITIZER ERRORS" ;;
    0) status="clean" ;;
    *) status="test failures (exit $rc)" ;;
  esac
  ((summaries == 0)) && [[ $rc != 124 && $rc != 137 ]] && status="no sanitizer summary (exit $rc)"
  # A racecheck error names its kernel; NVIDIA's cuBLASLt kernels (nvjet_*) are third-party.
  third=$(grep -acE 'Race reported between [A-Za-z]+ access at nvjet_' "$log")
  errs=$((errs - third))
  if ((third > 0 && errs == 0)) && [[ $status == "SANITIZER ERRORS" ]]; then
    status="clean in graphc; third-party hazards (cuBLASLt)"
    [[ $tests == *" failed"* ]] && status="test failures (third-party hazards too)"
  fi
  ((errs > 0)) && status="SANITIZER ERRORS" && any_error=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$(shown "$tool" "$file")" "$status" "$errs" "$third" "$warns" \
    "$leaked" "${tests:-no verdict}" "$rc" "$secs" >>"$out/summary.tsv"
done
{
  echo "compute-sanitizer $(cat "$out/tool-version.txt"), device $(cat "$out/device.txt"),"
  echo "budget ${budget} s, ${max_jobs} jobs at once, wall $(($(date +%s) - start)) s"
  echo
  echo "Third-party: racecheck errors inside NVIDIA's cuBLASLt kernels (nvjet_*) are counted apart; a plain"
  echo "cuBLASLt program (tests/gpu/repro/cublaslt_gelubias_racecheck.cpp) under racecheck:"
  cat "$out/third-party.txt" 2>/dev/null || echo 'did not finish'
  echo
  echo "| tool | test file | status | sanitizer errors | third-party errors | warnings | leaked bytes | tests | exit | s |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  tail -n +2 "$out/summary.tsv" | awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10}'
} >"$out/summary.md"
cat "$out/summary.md"
exit $any_error
