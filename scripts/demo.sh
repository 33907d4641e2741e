#!/usr/bin/env bash
# make demo: inspect, convert and validate a few tensor files with build/tensio.
set -uo pipefail
tensio=${1:-build/tensio}
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(dirname "$tensio")
vec="$here/tests/vectors"
out="$build/demo"
rm -rf "$out" && mkdir -p "$out"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; local rc=$?; [ $rc -ne 0 ] && printf '(exit %d)\n' $rc; return 0; }

step "tensio $("$tensio" --version | cut -d' ' -f2): formats"
run "$tensio" formats

step "Build a container with the C API and save it as tenbin (examples/api_example.c)"
run "$build/examples/api_example" "$out/batch.ten"

step "Inspect it"
run "$tensio" ls "$out/batch.ten"
run "$tensio" info "$out/batch.ten"
run "$tensio" dump --limit 8 "$out/batch.ten" image

step "Convert to BTF: BTF has no tensor names, so tensio refuses to drop them silently"
run "$tensio" convert "$out/batch.ten" "$out/batch.btf"
run "$tensio" convert --drop-names "$out/batch.ten" "$out/batch.btf"
run "$tensio" ls "$out/batch.btf"

step "Same bytes, same hashes in both formats (ls --json --hash)"
run "$tensio" ls --json --hash "$out/batch.ten"
run "$tensio" ls --json --hash "$out/batch.btf"

step "A sparse COO tensor written by TFRT's layout; tenbin is dense-only"
run "$tensio" ls "$vec/btf/coo_btf_info_test.btf"
run "$tensio" dump "$vec/btf/coo_btf_info_test.btf" 1
run "$tensio" convert "$vec/btf/coo_btf_info_test.btf" "$out/coo.ten"
run "$tensio" convert --densify "$vec/btf/coo_btf_info_test.btf" "$out/coo.ten"
run "$tensio" dump "$out/coo.ten" 1

step "A model: rten's small CNN (V2) — header, metadata, inputs/outputs, operators"
run "$tensio" info "$vec/rten/small_cnn/small_cnn.v2.rten"
run "$tensio" ls --hash "$vec/rten/small_cnn/small_cnn.v2.rten"

step "Export its weights to tenbin; convert it to the V1 layout and back"
run "$tensio" convert "$vec/rten/small_cnn/small_cnn.v2.rten" "$out/weights.ten"
run "$tensio" ls --hash "$out/weights.ten"
run "$tensio" convert --rten-version 1 "$vec/rten/small_cnn/small_cnn.v2.rten" "$out/cnn.v1.rten"
run "$tensio" convert "$out/cnn.v1.rten" "$out/cnn.rten"
run "$tensio" convert "$out/weights.ten" "$out/nograph.rten"

step "Did the conversions change anything? (diff: exit 0 equal, 1 different)"
run "$tensio" diff "$vec/rten/small_cnn/small_cnn.v2.rten" "$out/cnn.rten"
run "$tensio" diff "$out/batch.ten" "$out/batch.btf"
run "$tensio" diff --json --tensors-only "$vec/rten/small_cnn/small_cnn.v2.rten" "$out/weights.ten"
run "$tensio" diff "$vec/onnx/int_consts.onnx" "$vec/rten/int_consts/int_consts.v2.rten"  # rten narrows int64

step "Statistics of each tensor (a sparkline of the histogram on a terminal; --json: its bins)"
run "$tensio" stats --sparkline "$vec/tenbin/multi_infos.ten"
run "$tensio" stats "$vec/btf/coo_btf_info_test.btf"

step "The model's graph as Graphviz DOT (and SVG when Graphviz's dot is installed)"
run "$tensio" graph "$vec/rten/small_cnn/small_cnn.v2.rten"
if command -v dot >/dev/null 2>&1; then
  run "$tensio" graph "$vec/rten/small_cnn/small_cnn.v2.rten" -o "$out/small_cnn.svg"
  printf 'open %s in a browser\n' "$out/small_cnn.svg"
else
  printf '(no dot: apt-get install graphviz for tensio graph -o FILE.svg/.png)\n'
fi

step "Validation: a clean file prints nothing; broken ones say where and what"
run "$tensio" validate "$out/batch.ten" "$out/batch.btf"
run "$tensio" validate "$vec/btf/malformed/num_tensors_huge.btf" \
    "$vec/btf/malformed/reserved_nonzero.btf" "$vec/tenbin/malformed/data_length_long.ten" \
    "$vec/tenbin/malformed/nonzero_padding.ten"

if [ -d "$build/python/tensio" ]; then
  step "Python: import tensio — NumPy views into the mapped file (docs/python.md)"
  cat > "$out/demo.py" <<'PYEOF'
import sys
import numpy as np
import tensio

out, vec = sys.argv[1], sys.argv[2]
with tensio.open(f"{out}/batch.ten") as c:
    print(c, c.names)
    image = c["image"]
print("after close, the view still reads the mapping:", image.dtype, image.shape,
      "writeable:", image.flags.writeable, "base:", type(image.base).__name__)
g = tensio.open(f"{vec}/rten/small_cnn/small_cnn.v2.rten").graph
print("graph:", [f"{n.op}({', '.join(v.name for v in n.inputs)})" for n in g.nodes])
tensio.save(f"{out}/py.zmsg", {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, seqno=7)
print("saved and reloaded:", tensio.load(f"{out}/py.zmsg", as_dict=True))
try:
    tensio.save(f"{out}/py.btf", {"x": np.zeros(2, np.float32)})
except tensio.LossyError as e:
    print(f"{type(e).__name__} (code {e.code}): {e}")
PYEOF
  py=$(sed -n 's/^TIO_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt" 2>/dev/null)
  run env PYTHONPATH="$build/python" "${py:-python3}" "$out/demo.py" "$out" "$vec"
fi

printf '\nDemo files are in %s\n' "$out"
