#!/usr/bin/env bash
# Fails when docs/operators.md is not what scripts/gen_docs.sh generates now.
set -euo pipefail
root=$1 graphc=$2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
DOCS_OUT=$tmp GRAPHC=$graphc "$root/scripts/gen_docs.sh" >/dev/null
if ! diff -u "$root/docs/operators.md" "$tmp"; then
  echo "docs/operators.md is stale: run scripts/gen_docs.sh" >&2
  exit 1
fi
echo "docs/operators.md is current"
