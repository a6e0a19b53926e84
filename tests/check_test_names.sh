#!/usr/bin/env bash
# ctest runs each Catch2 test case by name (catch_discover_tests); a name with a
# ';' is split by CMake into list items, so ctest runs no test under it and
# reports a pass. No test case may have one. A name starting with '-' is read
# by Catch2 as an option and fails without running. Usage: check_test_names.sh REPO
set -euo pipefail
bad=$(grep -rnE 'TEST_CASE\("[^"]*;' "$1/tests" || true)
if [[ -n $bad ]]; then
  echo "test case names with ';' (ctest would run nothing under them):"
  echo "$bad"
  exit 1
fi
bad=$(grep -rnE 'TEST_CASE\("-' "$1/tests" || true)
if [[ -n $bad ]]; then
  echo "test case names starting with '-' (Catch2 takes them for options):"
  echo "$bad"
  exit 1
fi
echo "no test case name contains ';' or starts with '-'"
