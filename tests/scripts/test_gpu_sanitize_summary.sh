#!/usr/bin/env bash
# CPU test of scripts/gpu_sanitize.sh's verdict, on stand-ins for the test
# binary and compute-sanitizer: racecheck errors inside NVIDIA's cuBLASLt
# kernels (nvjet_*) are counted apart as third-party and do not fail the run;
# a race in any other kernel does, and so does a test failing under the tool.
#   tests/scripts/test_gpu_sanitize_summary.sh REPO_ROOT
set -uo pipefail
root=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"

# The test binary: only listing is asked of it (the stand-in tool "runs" it).
cat >"$work/bin/graphc_gpu_tests" <<'FAKE'
#!/usr/bin/env bash
case "$*" in
  *"[#alpha_gpu_test]"*) printf 'clean case\nnvjet case, with a comma\n' ;;
  *"[#beta_gpu_test]"*) printf 'graphc race case\n' ;;
  *"[#gamma_gpu_test]"*) printf 'nvjet case that fails its test\n' ;;
  *"[#delta_gpu_test]"*) printf 'case with errors left unprinted\n' ;;
esac
FAKE
# The tool: a canned log per test case, exit 86 on a sanitizer error.
cat >"$work/compute-sanitizer" <<'FAKE'
#!/usr/bin/env bash
[[ $1 == --version ]] && { echo "Version 0.0 (stand-in)"; exit 0; }
spec=${!#}
race() { printf '========= Error: Race reported between Read access at %s+0xa60\n=========     and Write access at %s+0x4ad0 [512 hazards]\n' "$1" "$1"; }
case $spec in
  *"nvjet case\\, with a comma"*)
    race nvjet_sm90_hsh_64x64_64x13_2x1_v_bz_gelubias_NNT
    race nvjet_sm90_hsh_96x64_64x8_2x4_h_bz_gelubias_NNN
    echo "All tests passed (3 assertions in 1 test case)"
    echo "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)"; exit 86 ;;
  *"nvjet case that fails"*)
    race nvjet_sm90_hsh_64x64_64x13_2x1_v_bz_NNT
    echo "test cases: 1 | 1 failed"
    echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"; exit 86 ;;
  *"left unprinted"*)
    race nvjet_sm90_hsh_64x64_64x13_2x1_v_bz_NNT
    echo "All tests passed (1 assertion in 1 test case)"
    echo "========= RACECHECK SUMMARY: 1 hazard displayed (4 errors, 0 warnings)"; exit 86 ;;
  *"graphc race case"*)
    race nvjet_sm90_hsh_64x64_64x13_2x1_v_bz_NNT
    race graphc_reduce_sum_k3
    echo "All tests passed (1 assertion in 1 test case)"
    echo "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)"; exit 86 ;;
  *"clean case"*)
    echo "All tests passed (5 assertions in 1 test case)"
    echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" ;;
  *)
    echo "All tests passed (1 assertion in 1 test case)"
    echo "========= ERROR SUMMARY: 0 errors" ;;
esac
FAKE
chmod +x "$work/bin/graphc_gpu_tests" "$work/compute-sanitizer"

failures=0
check() {  # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}
run() {  # run OUT JOBS_LIST
  (cd "$root" && COMPUTE_SANITIZER="$work/compute-sanitizer" NVCC=/nonexistent \
    GRAPHC_SANITIZER_BUDGET_S=60 GRAPHC_SANITIZER_JOBS=4 GRAPHC_SANITIZER_JOBS_LIST="$2" \
    scripts/gpu_sanitize.sh "$work/bin" "$1" >"$1.stdout" 2>&1)
}
row() { grep -a "$2" "$1/summary.tsv"; }  # row OUT CASE_NAME

run "$work/a" "racecheck:alpha_gpu_test"
rc=$?
check "only third-party hazards: exit 0" test "$rc" = 0
check "the third-party row says so" grep -q "clean in graphc; third-party hazards (cuBLASLt)	0	2	" <(row "$work/a" "nvjet case")
check "a clean case stays clean" grep -q "	clean	0	0	" <(row "$work/a" "clean case")
check "the summary says the third-party check did not run" grep -q "not run (no nvcc" "$work/a/summary.md"

run "$work/b" "racecheck:alpha_gpu_test racecheck:beta_gpu_test"
rc=$?
check "a race in a graphc kernel: exit 1" test "$rc" = 1
check "its row counts 1 graphc error and 1 third-party" grep -q "SANITIZER ERRORS	1	1	" <(row "$work/b" "graphc race case")

run "$work/c" "racecheck:gamma_gpu_test"
check "a failing test is not hidden by third-party hazards" grep -q "test failures (third-party hazards too)" <(row "$work/c" "fails its test")

run "$work/d" "racecheck:delta_gpu_test"
rc=$?
check "errors the tool did not print count as graphc's: exit 1" test "$rc" = 1
check "3 of 4 errors unattributed" grep -q "SANITIZER ERRORS	3	1	" <(row "$work/d" "left unprinted")

echo "$failures failed"
exit $((failures > 0))
