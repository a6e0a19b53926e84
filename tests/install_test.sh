#!/usr/bin/env bash
# The installed runtime as an application sees it: `cmake --install` into a
# temporary prefix, then
#   - the files: bin/graphc, lib/libgraphc_runtime.so (versioned SONAME) and .a,
#     include/graphc/graphc_runtime.h(pp), the CMake package, the pkg-config file;
#   - the shared library needs no NVRTC, ONNX, cuBLASLt, cuDNN or libcuda at
#     link time and exports only the C API (graphc_*);
#   - examples/ builds against the prefix with find_package (shared and static)
#     and with pkg-config alone, and every example runs an engine built by the
#     installed graphc on the stand-in driver (tests/fake_cuda).
# usage: install_test.sh SOURCE_DIR BUILD_DIR FAKE_CUDA_DIR
set -euo pipefail
src=$1 build=$2 fake=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in bin/graphc lib/libgraphc_runtime.a include/graphc/graphc_runtime.h \
         include/graphc/graphc_runtime.hpp lib/cmake/graphc_runtime/graphc_runtime-config.cmake \
         lib/cmake/graphc_runtime/graphc_runtime-config-version.cmake \
         lib/cmake/graphc_runtime/graphc_runtime-targets.cmake lib/pkgconfig/graphc_runtime.pc; do
  [[ -e $prefix/$f ]] || fail "not installed: $f"
done
so=$(ls "$prefix"/lib/libgraphc_runtime.so.*.*.* 2>/dev/null | head -1)
[[ -n $so ]] || fail "no versioned lib/libgraphc_runtime.so.X.Y.Z"
[[ -L $prefix/lib/libgraphc_runtime.so ]] || fail "lib/libgraphc_runtime.so is not a link"

soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libgraphc_runtime\.so\.[0-9]+$ ]] || fail "SONAME '$soname'"
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "libgraphc_runtime NEEDED: $(echo $needed)"
if grep -Eiq 'nvrtc|onnx|cublas|cudnn|libcuda' <<<"$needed"; then
  fail "the runtime library links a compiler or GPU library: $needed"
fi
# Exported (defined, dynamic) symbols: the C API only.
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^$')
others=$(grep -v '^graphc_' <<<"$exported" || true)
[[ -z $others ]] || fail "exports more than the C API: $(head -5 <<<"$others")"
for fn in graphc_engine_load graphc_engine_refit; do
  grep -qx $fn <<<"$exported" || fail "$fn is not exported"
done
echo "exports $(wc -l <<<"$exported") symbols, all graphc_*"

# A sanitizer build's libraries need the sanitizer runtime in the program:
# the examples are built and run by the plain build's test stage.
if grep -Eq '^GRAPHC_(SANITIZE|FUZZ):BOOL=ON' "$build/CMakeCache.txt"; then
  echo "sanitizer build: installed files checked; examples are built and run in the plain build"
  exit 0
fi

# An engine built by the installed compiler (no GPU needed).
engine=$tmp/mlp.engine
"$prefix/bin/graphc" build "$src/models/mlp.onnx" --arch sm_90 -o "$engine" >/dev/null ||
  fail "installed graphc could not build models/mlp.onnx"

cmake -S "$src/examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release >"$tmp/examples.log" 2>&1 || { cat "$tmp/examples.log"; fail "configuring examples/"; }
cmake --build "$tmp/examples" >>"$tmp/examples.log" 2>&1 || { cat "$tmp/examples.log"; fail "building examples/"; }
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
cc -o "$tmp/run_engine_pc" "$src/examples/run_engine.c" $(pkg-config --cflags --libs graphc_runtime) ||
  fail "building examples/run_engine.c with pkg-config"

for exe in "$tmp/examples/run_engine" "$tmp/examples/run_engine_cpp" \
           "$tmp/examples/run_engine_static" "$tmp/run_engine_pc"; do
  out=$(LD_LIBRARY_PATH="$fake:$prefix/lib" "$exe" "$engine" 2>&1) || { echo "$out"; fail "$(basename "$exe") failed"; }
  grep -q '^output' <<<"$out" || { echo "$out"; fail "$(basename "$exe") listed no output binding"; }
  echo "ok: $(basename "$exe")"
done
# A bad engine is a clear error and exit 1 through the installed library.
echo "not an engine" >"$tmp/bad.engine"
if out=$(LD_LIBRARY_PATH="$fake:$prefix/lib" "$tmp/examples/run_engine_cpp" "$tmp/bad.engine" 2>&1); then
  fail "run_engine_cpp accepted a bad engine"
fi
grep -q "GRAPHC_ERROR_INVALID_ENGINE" <<<"$out" || fail "bad engine message: $out"
echo "install test passed"
