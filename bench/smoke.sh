#!/usr/bin/env bash
# The bench_smoke test: bench/run.sh end to end on tiny data (1 MiB files,
# 10 tensors, 1 KiB and 64 KiB messages, a shard of 10 samples, LMDB stores
# of 100 and 1000 records, one repetition), with tio_bench's
# --check, into a scratch directory. It asserts that every case ran (with
# its baselines, paired where they are), that the report has every section
# and the machine's measured figures; it never looks at a time.
# usage: bench/smoke.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
BUILD=$1
OUT=$2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$OUT"
mkdir -p "$OUT/data" "$OUT/results"
# Outputs onto a tmpfs where there is one, the data files in the scratch
# directory: when that is on another file system, the conversions onto it
# (section 4b) and the host's state beside them (tio_bench host) run too.
WDIR="$OUT/data" DISK=
fstype() { df -PT "$1" | awk 'NR==2 {print $2}'; }
if [ "$(fstype /dev/shm 2>/dev/null)" = tmpfs ] && [ "$(fstype "$OUT/data")" != tmpfs ]; then
  WDIR=$(mktemp -d /dev/shm/tensio-smoke.XXXXXX)
  DISK=$(fstype "$OUT/data")
  trap 'rm -rf "$WDIR"' EXIT
fi
BENCH_DIR="$WDIR" BENCH_READ_DIR="$OUT/data" BENCH_OUT="$OUT/results" BENCH_SIZE=1M BENCH_TENSORS=10 \
  BENCH_REPS=1 BENCH_MAX_REPS=2 BENCH_WARMUP=0 BENCH_CHECK=1 BENCH_MODEL_SIZE=1M \
  BENCH_MODEL_CONSTS=10 BENCH_FAULT_SIZE=1M BENCH_MLP_SIZE=1M BENCH_MLP_LAYERS=2 \
  BENCH_ZMQ_SIZES=1K,64K BENCH_ZMQ_BUDGET=1M BENCH_FILES_COUNTS=10,100 \
  BENCH_SHARD_SAMPLES=10 BENCH_LMDB_COUNTS=100,1000 BENCH_LMDB_READS=100 \
  BENCH_HOLD_KEPT=$((1 << 40)) \
  bash "$ROOT/bench/run.sh" "$BUILD" 2>"$OUT/run.log" || { cat "$OUT/run.log"; exit 1; }
md="$OUT/results/latest.md"
fail=0
for section in "## Goals" "## 1. Open + list" "## 2. Read all data" "## 3. Write" \
               "## 4. Convert" "## 5. ZeroMQ" "## 6. Model files" "## 7. recv -o" \
               "## 8. ONNX" "## 10. WebDataset shards and LMDB"; do
  grep -qF "$section" "$md" || { echo "bench_smoke: no '$section' in $md"; fail=1; }
done
for f in btf zio tenbin rten tmfile safetensors gguf npz npy; do
  grep -q "tensio:$f" "$md" || { echo "bench_smoke: nothing measured for $f"; fail=1; }
done
for s in base:read base:memcpy base:write base:cp base:libzmq tensio:zio tensio:tensorcom \
         base:write+rename "tensio:recv --sync-each" "tensio:recv --no-sync" \
         "tensio: open + list" "| onnx→rten | tensio:cli" "| onnx→rten | tensio:lib" \
         "| rten→onnx | tensio:cli" "ONNX open + list" "ONNX→rten convert" \
         "ONNX→rten convert, peak anonymous" base:touch base:np.save "tensio:npy" \
         "base:py-safetensors(numpy)" "| page fault, " "| memcpy |" "python3-safetensors" \
         base:cat tensio:iterate "| tensio:copy |" "tensio:--member-to " \
         "shard iterate + checksum" "shard→shard convert (members copied)" \
         "| 1,000 | " "LMDB random read, 100 → 1,000 records" \
         "### \`tensio ls\` in a process of its own" "| tmfile, 10 tensors |" \
         "\`tensio ls\`, a process each, many tensors" "TFLite open + list" \
         "TFLite→TFLite convert" "ONNX→TFLite convert" "| onnx→tflite, CNN " "| pread, " \
         "ONNX→TFLite convert, transposed weights" "| onnx→tflite, MLP "; do
  grep -qF "$s" "$md" || { echo "bench_smoke: no $s row"; fail=1; }
done
# BENCH_HOLD_KEPT: tio_bench hold ran beside the cases (here it takes
# nothing: more is asked to be left than there is), the machine table says
# so, and it is gone once run.sh is
grep -qF "| held | free memory held by tio_bench hold" "$md" || { echo "bench_smoke: no held row"; fail=1; }
hp=$(sed -n 's/^hold: pid \([0-9]*\),.*/\1/p' "$OUT/results/hold.log")
[ -n "$hp" ] || { echo "bench_smoke: tio_bench hold did not start"; fail=1; }
for _ in $(seq 50); do [ -n "$hp" ] && kill -0 "$hp" 2>/dev/null || break; sleep 0.1; done
[ -z "$hp" ] || ! kill -0 "$hp" 2>/dev/null || { echo "bench_smoke: tio_bench hold outlived run.sh"; fail=1; }
# paired cases: their ratios are the median of paired repetitions (P lines)
grep -q "^P	open	" "$OUT/results/latest.tsv" || { echo "bench_smoke: no paired open"; fail=1; }
grep -qE "× ±[0-9]+ %" "$md" || { echo "bench_smoke: no paired ratio in $md"; fail=1; }
# shards: the Python side, measured or a line saying why not
grep -qF "base:tarfile+tenbin.py" "$md" || { echo "bench_smoke: no tarfile+tenbin.py row or note"; fail=1; }
# onnx.load: measured, or a line saying why not (no python3-onnx)
grep -qF "base:onnx.load" "$md" || { echo "bench_smoke: no base:onnx.load row or note"; fail=1; }
# onto the data files' own file system: the 4b rows, and how the host had
# a save write before and after each (tio_bench host: H lines)
if [ -n "$DISK" ]; then
  grep -qF "## 4b. Convert onto $DISK" "$md" || { echo "bench_smoke: no section 4b"; fail=1; }
  grep -qF "| writes |" "$md" || { echo "bench_smoke: no writes column in 4b"; fail=1; }
  grep -qE "^H	convert_disk	btf→tenbin, 10 tensors, $DISK	(before|after)	(whole|64 KiB pieces)" \
    "$OUT/results/latest.tsv" || { echo "bench_smoke: no host line for a 4b row"; fail=1; }
fi
# no data file left behind
if [ -n "$(find "$OUT/data" "$WDIR" -maxdepth 1 -name 'bench-*' | head -1)" ]; then
  echo "bench_smoke: data left"; fail=1
fi
[ $fail = 0 ] && echo "bench_smoke: every case ran; report complete ($md)"
exit $fail
