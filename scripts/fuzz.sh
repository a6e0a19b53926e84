#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS on one core:
#   scripts/fuzz.sh model_fuzzer|engine_fuzzer|tensor_fuzzer SECONDS [libFuzzer flags...]
# Builds build-fuzz (clang, GRAPHC_FUZZ=ON: ASan + UBSan + coverage) if needed,
# writes the seed corpus once (scripts/fuzz_corpus.sh), and keeps the grown
# corpus in build-fuzz/corpus-run/TARGET between runs. A crash, sanitizer report,
# leak, timeout or out-of-memory input is saved under build-fuzz/artifacts/TARGET/
# and the script exits non-zero; reproduce with build-fuzz/fuzz/TARGET FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${1:?usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags]}
SECONDS_TO_RUN=${2:?usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags]}
shift 2
case $TARGET in model_fuzzer | engine_fuzzer | tensor_fuzzer) ;; *)
  echo "fuzz.sh: unknown target '$TARGET' (model_fuzzer, engine_fuzzer, tensor_fuzzer)" >&2
  exit 2
  ;;
esac
BUILD=${GRAPHC_FUZZ_BUILD_DIR:-build-fuzz}

if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  scripts/setup.sh --sanitize # clang and compiler-rt
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DGRAPHC_FUZZ=ON "${launcher[@]}" >/dev/null
fi
cmake --build "$BUILD" -j"${GRAPHC_FUZZ_JOBS:-$(nproc)}" --target "$TARGET" >/dev/null

SEEDS=$BUILD/corpus
if [[ ! -d $SEEDS/$TARGET ]]; then
  # Engine seeds need a graphc binary: the Release one if built, else this dir's.
  [[ -x build/graphc || -x $BUILD/graphc ]] || cmake --build "$BUILD" --target graphc >/dev/null
  scripts/fuzz_corpus.sh "$SEEDS" >&2
fi
RUN_CORPUS=$BUILD/corpus-run/$TARGET
ARTIFACTS=$BUILD/artifacts/$TARGET
mkdir -p "$RUN_CORPUS" "$ARTIFACTS"

# detect_leaks: a leak is a finding. rss/malloc limits: a hostile size that
# is allocated rather than refused fails the run (the targets cap tensors at 64 MiB).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$BUILD/fuzz/$TARGET" "$RUN_CORPUS" "$SEEDS/$TARGET" \
  -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=30 \
  -max_len=1048576 -print_final_stats=1 -artifact_prefix="$ARTIFACTS/" "$@"
