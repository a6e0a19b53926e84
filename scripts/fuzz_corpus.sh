#!/usr/bin/env bash
# Writes the fuzzers' seed corpora into DIR (default build-fuzz/corpus):
#   model_fuzzer   models/*.onnx + every Nth ONNX node test model (a spread of ops)
#   tensor_fuzzer  node tests' input_N.pb (prefix byte 0: TensorProto reader) and
#                  .npy files of each dtype and rank (prefix byte 1: .npy reader)
#   engine_fuzzer  engines of small models, built for one arch (GRAPHC=graphc binary)
# Needs the .venv (scripts/setup.sh --tests) for the .npy seeds and tiny models.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-build-fuzz/corpus}
GRAPHC=${GRAPHC:-}
if [[ -z $GRAPHC ]]; then
  for c in build/graphc build-fuzz/graphc; do [[ -x $c ]] && GRAPHC=$c && break; done
fi
NODE_DIRS=(/usr/share/libonnx-testdata/data/node build/onnx-node-tests)
STEP=${GRAPHC_FUZZ_SEED_STEP:-8}  # every 8th node test: ~200 models, a few MB
mkdir -p "$OUT"/{model_fuzzer,tensor_fuzzer,engine_fuzzer}

cp models/*.onnx "$OUT/model_fuzzer/"
i=0
for d in "${NODE_DIRS[@]}"; do
  [[ -d $d ]] || continue
  for case in "$d"/*/; do
    i=$((i + 1))
    ((i % STEP == 0)) || continue
    name=$(basename "$case")
    [[ -f $case/model.onnx ]] && cp "$case/model.onnx" "$OUT/model_fuzzer/$name.onnx"
    for pb in "$case"/test_data_set_0/input_*.pb; do
      [[ -f $pb ]] || continue
      # Skip big tensors: they slow every execution and add no coverage.
      (($(stat -c %s "$pb") <= 65536)) || continue
      { printf '\x00'; cat "$pb"; } > "$OUT/tensor_fuzzer/$name-$(basename "$pb")"
    done
  done
done

.venv/bin/python - "$OUT" <<'PY'
import io, os, sys
import numpy as np
import onnx
from onnx import helper, TensorProto
out = sys.argv[1]
for dt in ["f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "?"]:
    for shape in [(), (3,), (2, 3), (1, 2, 1, 2)]:
        buf = io.BytesIO()
        np.save(buf, np.arange(int(np.prod(shape)), dtype=np.int64).astype(dt).reshape(shape))
        name = f"{dt.replace('?', 'b1')}_{'x'.join(map(str, shape)) or 'scalar'}.npy"
        with open(os.path.join(out, "tensor_fuzzer", name), "wb") as f:
            f.write(b"\x01" + buf.getvalue())
# Tiny models for engine seeds: an engine of one Relu is a few KB per arch.
def save(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, os.path.join(out, "engine_models", name + ".onnx"))
os.makedirs(os.path.join(out, "engine_models"), exist_ok=True)
vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
save("relu", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])])
save("add_sum", [helper.make_node("Add", ["x", "w"], ["t"]),
                 helper.make_node("ReduceSum", ["t"], ["y"], keepdims=0)],
     [vi("x", [4])], [vi("y", [])], [helper.make_tensor("w", TensorProto.FLOAT, [4], [1, 2, 3, 4])])
save("transpose", [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])],
     [vi("x", [2, 3])], [vi("y", [3, 2])])
PY

if [[ -n $GRAPHC ]]; then
  for m in "$OUT"/engine_models/*.onnx; do
    n=$(basename "$m" .onnx)
    "$GRAPHC" build "$m" -o "$OUT/engine_fuzzer/$n.engine" --arch sm_80 --no-cache >/dev/null
  done
  "$GRAPHC" build models/mlp.onnx -o "$OUT/engine_fuzzer/mlp.engine" --arch sm_90 --no-cache >/dev/null
else
  echo "fuzz_corpus: no graphc binary (GRAPHC=...): engine_fuzzer starts without seeds" >&2
fi
rm -rf "$OUT/engine_models"
for t in model_fuzzer tensor_fuzzer engine_fuzzer; do
  echo "$t: $(ls "$OUT/$t" | wc -l) seeds, $(du -sh "$OUT/$t" | cut -f1)"
done
