#!/usr/bin/env bash
# make bench: generates the data, runs every case of bench/tio_bench (each
# repetition timed after a warm-up; a case compared with a baseline runs
# both interleaved and repeats until steady), then writes
# bench/results/latest.md and latest.png through bench/report.py and
# gnuplot. See docs/performance.md.
#
# usage: bench/run.sh BUILD_DIR
# environment (defaults in brackets):
#   BENCH_DIR      where files are written (write, durable, convert's output)
#                  [/dev/shm/tensio-bench when /dev/shm is a tmpfs with 6 GiB
#                  free, else BUILD_DIR/data]
#   BENCH_READ_DIR where the files that are only read go (open, scan, sha256,
#                  convert's input), page cache warm [BENCH_DIR when set, else
#                  BUILD_DIR/data]: a disk file system's page cache maps large
#                  folios, tmpfs 4 KiB pages (see docs/performance.md). The
#                  report names both file systems. Every bench-* file made in
#                  either is removed. When it is on another file system than
#                  BENCH_DIR, write, durable and convert also write there
#                  (rows named by that file system, e.g. "ext4"): where a
#                  user's files are, what a tmpfs hides (issue 38).
#   BENCH_SIZE     bytes of each data file [1G]
#   BENCH_TENSORS  tensors in the many-tensor files [10000]
#   BENCH_REPS     timed repetitions [5]      BENCH_WARMUP  untimed first [1]
#   BENCH_MAX_REPS paired cases (tensio against a baseline, interleaved) run
#                  until their last BENCH_REPS paired ratios are within ±10 %
#                  of their median, at most this many repetitions [4×BENCH_REPS]
#   BENCH_FAULT_SIZE the file mapped to measure the page-fault cost [256M]
#   BENCH_CASES    [open scan sha256 write durable convert zmq model onnx recvfiles shards
#                  http torch python]  (torch: checkpoints torch.save writes, BENCH_SIZE and
#                  BENCH_TENSORS as the formats' files, and torchvision's resnet18;
#                  http: shards and files served by Debian's nginx on 127.0.0.1)
#   BENCH_FORMATS  [btf tenbin zio rten tmfile safetensors gguf npz npy]
#                  (npy: one tensor only, the format holds one array)
#   BENCH_MODEL_SIZE, BENCH_MODEL_CONSTS   the generated models (model, onnx) [1G, 1000]
#   BENCH_CNN_SIZE, BENCH_CNN_LAYERS  onnx: the CNN converted to TFLite (Conv 3x3 +
#                  Relu layers, weights permuted on the way) [100M, 40]
#   BENCH_MLP_SIZE, BENCH_MLP_LAYERS  onnx: MatMul + Relu layers converted to TFLite
#                  (each weight transposed on the way) [256M, 16]
#   BENCH_ZMQ_SIZES [1K,4K,16K,64K,256K,1M,4M,16M]   BENCH_ZMQ_BUDGET [1G]
#   BENCH_FILES_COUNTS [1000,10000,100000]  recvfiles: files per run (each >= 2)
#   BENCH_FILES_MODES  [default,sync-each,no-sync]  recvfiles: tensio recv's durability
#   BENCH_SHARD_SAMPLES [10000]  shards: samples in the shard of BENCH_SIZE
#   BENCH_SHARD_MEMBER_TO [safetensors]  shards: the format convert --member-to
#                  re-encodes the .ten members to (one that holds 2 tensors)
#   BENCH_LMDB_COUNTS [10000,100000,1000000]  shards: the LMDB store's sizes
#   BENCH_LMDB_READS  [10000]  shards: random reads per repetition and size
#   BENCH_PY_SIZE  python: the .ten / .npy opened [BENCH_SIZE]
#   BENCH_PY_STREAM_SIZES [1K,64K,1M,16M]  BENCH_PY_STREAM_BUDGET [256M]
#   BENCH_OUT      results directory [bench/results]
#   BENCH_KEEP     set: keep the lines of the previous latest.tsv that this
#                  run does not measure again (by case, group and subject: a
#                  partial re-run of some cases or formats; machine.tsv says
#                  which cases were re-run, when, on which commit and file system)
#   BENCH_CHECK    set: tio_bench --check (verify results; used by bench_smoke)
#   BENCH_HOLD_KEPT  M: run every case with free memory held until about M MiB
#                  are left in the blocks a virtual machine's host does not take
#                  back (tio_bench hold): the state where either side's writes
#                  fault in the host at random (issue 38); machine.tsv says so
set -euo pipefail
BUILD=${1:?usage: bench/run.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
B="$BUILD/bench/tio_bench"
CLI="$BUILD/tensio"
PY=/usr/bin/python3
# tmpfs by default: the cases then measure tensio and the page cache, not the
# virtual disk's write-back (see docs/performance.md).
BENCH_DIR_SET=${BENCH_DIR:-}
if [ -z "${BENCH_DIR:-}" ] && [ "$(df -PT /dev/shm 2>/dev/null | awk 'NR==2 {print $2}')" = tmpfs ] &&
   [ "$(df -Pk /dev/shm | awk 'NR==2 {print $4}')" -gt $((6 * 1024 * 1024)) ]; then
  BENCH_DIR=/dev/shm/tensio-bench
fi
DATA=${BENCH_DIR:-$BUILD/data}
READ=${BENCH_READ_DIR:-${BENCH_DIR_SET:-$BUILD/data}}
SIZE=${BENCH_SIZE:-1G}
MANY=${BENCH_TENSORS:-10000}
REPS=${BENCH_REPS:-5}
WARM=${BENCH_WARMUP:-1}
CASES=${BENCH_CASES:-open scan sha256 write durable convert zmq model onnx recvfiles shards http torch python}
FORMATS=${BENCH_FORMATS:-btf tenbin zio rten tmfile safetensors gguf npz npy}
MAXREPS=${BENCH_MAX_REPS:-$((4 * ${BENCH_REPS:-5}))}
FAULT=${BENCH_FAULT_SIZE:-256M}
MSIZE=${BENCH_MODEL_SIZE:-1G}
MCONSTS=${BENCH_MODEL_CONSTS:-1000}
CNNSIZE=${BENCH_CNN_SIZE:-100M}
CNNLAYERS=${BENCH_CNN_LAYERS:-40}
MLPSIZE=${BENCH_MLP_SIZE:-256M}
MLPLAYERS=${BENCH_MLP_LAYERS:-16}
ZSIZES=${BENCH_ZMQ_SIZES:-1K,4K,16K,64K,256K,1M,4M,16M}
ZBUDGET=${BENCH_ZMQ_BUDGET:-1G}
FCOUNTS=${BENCH_FILES_COUNTS:-1000,10000,100000}
FMODES=${BENCH_FILES_MODES:-default,sync-each,no-sync}
SSAMPLES=${BENCH_SHARD_SAMPLES:-10000}
SMEMBER=${BENCH_SHARD_MEMBER_TO:-safetensors}
LCOUNTS=${BENCH_LMDB_COUNTS:-10000,100000,1000000}
LREADS=${BENCH_LMDB_READS:-10000}
OUT=${BENCH_OUT:-$ROOT/bench/results}

[ -x "$B" ] || { echo "run.sh: $B missing (make bench builds it)" >&2; exit 1; }
mkdir -p "$DATA" "$READ" "$OUT"
DATA=$(cd "$DATA" && pwd)
READ=$(cd "$READ" && pwd)
RAW="$OUT/latest.tsv"
T="$B --reps $REPS --max-reps $MAXREPS --warmup $WARM${BENCH_CHECK:+ --check}"
# what is measured, before this run's own outputs make the tree dirty
TENSIO_REV=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '?')
PREV="$OUT/.previous.tsv"
rm -f "$PREV"
[ -n "${BENCH_KEEP:-}" ] && [ -s "$RAW" ] && cp "$RAW" "$PREV"
: >"$RAW"
HOLD=
# on exit: the holder stopped (BENCH_HOLD_KEPT), the data files removed
cleanup() {
  [ -z "$HOLD" ] || kill "$HOLD" 2>/dev/null || true
  rm -rf "$DATA"/bench-* "$READ"/bench-* "$PREV"
}
trap cleanup EXIT

has() { [[ " $CASES " == *" $1 "* ]]; }
ext() { case $1 in btf) echo btf ;; tenbin) echo ten ;; zio) echo zmsg ;; rten) echo rten ;;
  tmfile) echo tmfile ;; safetensors) echo safetensors ;; gguf) echo gguf ;; npz) echo npz ;;
  npy) echo npy ;; esac; }
# Where each format's many-tensor file is converted to.
convert_to() { case $1 in btf) echo tenbin ;; tenbin) echo btf ;; zio) echo tenbin ;;
  rten) echo tenbin ;; tmfile) echo btf ;; safetensors) echo tenbin ;; gguf) echo safetensors ;;
  npz) echo safetensors ;; esac; }
run() { echo "+ $*" >&2; "$@" >>"$RAW"; }
# A row written onto a disk file system (case convert_disk, group $1, the
# rest the run): how a save would write there, asked of the host as the
# library asks it (whole, or 64 KiB pieces where the balloon takes free
# memory back), before and after the row; the report shows it.
run_disk() {
  local g=$1
  shift
  "$B" host --bytes "$SIZE" --case convert_disk --group "$g" --when before >>"$RAW"
  run "$@"
  "$B" host --bytes "$SIZE" --case convert_disk --group "$g" --when after >>"$RAW"
}
step() { echo "== $*" >&2; }
fstype() { df -PT "$1" | awk 'NR==2 {print $2}'; }
# machine.tsv's measured lines: the page-fault cost of a tmpfs file and, when
# the read files are on a disk file system, of a file there; memcpy's GB/s
measure_machine() {
  local dirs=() shm
  if [ "$(fstype "$DATA")" = tmpfs ]; then shm=$DATA; elif [ "$(fstype /dev/shm 2>/dev/null)" = tmpfs ]; then
    shm=/dev/shm; fi
  [ -n "${shm:-}" ] && dirs+=(--fault-dir "$shm")
  [ "$(fstype "$READ")" != tmpfs ] && dirs+=(--fault-dir "$READ")
  "$B" machine --bytes "$FAULT" "${dirs[@]}"
}

# ------------------------------------------------------------ the machine
if [ -f "$PREV" ] && [ -f "$OUT/machine.tsv" ]; then
  # the note of an earlier re-run of the same cases goes: its lines do
  grep -vF "re-run	$CASES only:" "$OUT/machine.tsv" >"$OUT/machine.tsv.new" || true
  mv "$OUT/machine.tsv.new" "$OUT/machine.tsv"
  echo "re-run	$CASES only: $(date -u +%Y-%m-%dT%H:%MZ), tensio $TENSIO_REV, $REPS reps after $WARM warm-up (paired cases up to $MAXREPS), written to $(df -PT "$DATA" | awk 'NR==2 {print $2}') ($DATA); every other case is from the run above" >>"$OUT/machine.tsv"
  # the machine's measured figures: now, marked as of the re-run
  grep -vE '^(page fault|memcpy)' "$OUT/machine.tsv" >"$OUT/machine.tsv.new" || true
  measure_machine | sed 's/$/ (measured at the last re-run)/' >>"$OUT/machine.tsv.new"
  mv "$OUT/machine.tsv.new" "$OUT/machine.tsv"
else
{
  echo "date	$(date -u +%Y-%m-%dT%H:%MZ)"
  echo "cpu	$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "cores	$(nproc)"
  echo "memory	$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel	$(uname -r)"
  echo "filesystem	written: $(df -PT "$DATA" | awk 'NR==2 {print $2}') ($DATA); read: $(df -PT "$READ" | awk 'NR==2 {print $2}') ($READ), page cache warm"
  echo "compiler	$(grep -m1 CMAKE_C_COMPILER: "$BUILD/CMakeCache.txt" | cut -d= -f2) ($(grep -m1 CMAKE_BUILD_TYPE: "$BUILD/CMakeCache.txt" | cut -d= -f2))"
  echo "libzmq	$(pkg-config --modversion libzmq 2>/dev/null || echo '?')"
  echo "numpy	$($PY -c 'import numpy; print(numpy.__version__)' 2>/dev/null || echo '?')"
  echo "pyzmq	$($PY -c 'import zmq; print(zmq.__version__)' 2>/dev/null || echo '?')"
  echo "tensio	$TENSIO_REV"
  echo "reps	$REPS timed after $WARM warm-up; a case paired with a baseline: the last $REPS steady (paired ratios within ±10 % of their median), up to $MAXREPS run"
  echo "size	$SIZE per data file, $MANY tensors in the many-tensor files"
  measure_machine
} >"$OUT/machine.tsv"
fi
# the host keeping little free memory in small blocks, on request
grep -v '^held	' "$OUT/machine.tsv" >"$OUT/machine.tsv.new" || true
mv "$OUT/machine.tsv.new" "$OUT/machine.tsv"
if [ -n "${BENCH_HOLD_KEPT:-}" ]; then
  "$B" hold --kept "$BENCH_HOLD_KEPT" 2>"$OUT/hold.log" &
  HOLD=$!
  echo "held	free memory held by tio_bench hold until about $BENCH_HOLD_KEPT MiB were left in the blocks the host does not take back (BENCH_HOLD_KEPT; what it took: hold.log)" >>"$OUT/machine.tsv"
fi
cat "$OUT/machine.tsv" >&2

one="1 tensor"
many="$MANY tensors"
# The data files' own file system, when the other rows write elsewhere: the
# writes and conversions are measured there too, named by it.
DISK= DFS=
if [ "$(fstype "$READ")" != "$(fstype "$DATA")" ]; then DISK=$READ DFS=$(fstype "$READ"); fi

# ------------------------------------------------------------ baselines
# (read() of each file is paired with its open, memcpy with its scan; these
# are the reference rows of the scan table)
if has scan; then
  step "baseline for scan: memcpy and checksum in memory"
  run $T files memcpy --bytes "$SIZE" --group "$one"
  run $T files memcpy --bytes "$SIZE" --group "$many"
fi

# ------------------------------------------------------------ per format
touched=
pyok=
[ -x "$PY" ] && $PY -c 'import numpy' 2>/dev/null && pyok=1
for f in $FORMATS; do
  e=$(ext "$f")
  f1="$READ/bench-1.$e"
  fm="$READ/bench-many.$e"
  # .npy holds one array: its tensor files are the 1-tensor ones only
  only1=; [ "$f" = npy ] && only1=1
  if has open || has scan || has sha256 || has convert; then
    step "$f: generate $one${only1:+ only}"
    run "$B" gen --format "$f" --size "$SIZE" --tensors 1 --out "$f1"
    files=("$f1")
    if [ -z "$only1" ]; then
      run "$B" gen --format "$f" --size "$SIZE" --tensors "$MANY" --out "$fm"
      files+=("$fm")
    fi
    sync -f "$f1" # no write-back while timing
    cat "${files[@]}" >/dev/null # warm the page cache
  fi
  if has open; then
    run $T files open "$f1" --group "$one"
    if [ -z "$only1" ]; then
      run $T files open "$fm" --group "$many"
      # `tensio ls` in a process of its own: of the 1-tensor file (the
      # baseline: process start, the mapping) and of the many-tensor one
      run $T files spawn --case ls --group "$f, $many" --out "$DATA/bench-ls.out" --quiet \
        :: base:ls-1 "$CLI" ls "$f1" :: tensio:ls "$CLI" ls "$fm"
    fi
    if [ -z "$touched" ] && [ -z "$only1" ]; then
      # the fault cost, read against the opens: every page of a 1-tensor
      # file; one page per tensor, spread as the many-tensor file's are
      run $T files touch "$f1" --group "$one"
      run $T files touch "$fm" --group "$many" --touches "$MANY"
      touched=1
    fi
    if [ "$f" = npy ]; then
      if [ -n "$pyok" ]; then
        run $PY "$ROOT/bench/py/np_open.py" "$f1" --group "$one" --group "$many" \
          --reps "$REPS" --warmup "$WARM"
      else
        echo "run.sh: no numpy under $PY: the np.load baseline is skipped" >&2
      fi
    fi
  fi
  if has scan; then
    run $T files scan "$f1" --group "$one"
    if [ -z "$only1" ]; then run $T files scan "$fm" --group "$many"; fi
    # the same with TIO_OPEN_PREFETCH: the mapping populated in one call
    run $T files scan "$f1" --group "$one, prefetch" --prefetch
    if [ -z "$only1" ]; then run $T files scan "$fm" --group "$many, prefetch" --prefetch; fi
  fi
  if [ "$f" = safetensors ] && { has open || has scan; }; then
    # the reader a Python user without the safetensors package writes
    cs=$(has open && echo open),$(has scan && echo scan)
    cs=${cs#,}; cs=${cs%,}
    if [ -n "$pyok" ]; then
      run $PY "$ROOT/bench/py/st_read.py" "$f1" --group "$one" --cases "$cs" --reps "$REPS" --warmup "$WARM"
      run $PY "$ROOT/bench/py/st_read.py" "$fm" --group "$many" --cases "$cs" --reps "$REPS" --warmup "$WARM"
    else
      echo "run.sh: no numpy under $PY: the Python safetensors baseline is skipped" >&2
    fi
  fi
  if has sha256 && [ "$f" = btf ]; then
    run $T files sha256 "$fm" --group "$many"
  fi
  if has convert && [ -z "$only1" ]; then
    to=$(convert_to "$f")
    o="$DATA/bench-out.$(ext "$to")"
    cli=()
    [ "$f" = btf ] && cli=(:: tensio:cli "$CLI" convert --no-sync --drop-names --to "$to" "$fm" "$o")
    # cp and tensio interleaved, one process per repetition each
    run $T files spawn --case convert --group "$f→$to" --out "$o" --warm "$SIZE" \
      :: base:cp cp "$fm" "$o" :: tensio:lib "$B" files convert-once "$fm" "$o" "$to" "${cli[@]}"
    if [ -n "$DISK" ]; then
      # onto the data files' file system, 1 and many tensors, every run
      # starting with no dirty pages (sync, untimed): --no-sync against cp,
      # the default durability (fsync of the file and its directory) against
      # cp followed by sync of the file
      od="$DISK/bench-out.$(ext "$to")"
      for which in "$one" "$many"; do
        in=$fm; [ "$which" = "$one" ] && in=$f1
        g="$f→$to, $which, $DFS"
        run_disk "$g" $T files spawn --case convert_disk --group "$g" --out "$od" \
          --warm "$SIZE" --sync-first \
          :: base:cp cp "$in" "$od" \
          :: tensio:cli "$CLI" convert --no-sync --drop-names --to "$to" "$in" "$od"
        run_disk "$g, fsync" $T files spawn --case convert_disk --group "$g, fsync" --out "$od" \
          --warm "$SIZE" --sync-first \
          :: base:cp sh -c 'cp "$1" "$2" && sync "$2"' cp+sync "$in" "$od" \
          :: tensio:cli "$CLI" convert --drop-names --to "$to" "$in" "$od"
      done
    fi
    if [ "$f" = safetensors ]; then
      # the same tensors as a Hugging Face sharded checkpoint (shards of a
      # quarter, and an index) and as a selection (convert --exclude of a
      # name none has): saved from the shards' and the input's files as from
      # one file's (tio_container_hold), against cp of the one file
      sd="$READ/bench-shards"
      rm -rf "$sd"
      "$CLI" convert --no-sync --max-shard-size $(($(stat -c %s "$fm") / 4 + 1)) "$fm" "$sd/" >&2
      ns=$(ls "$sd"/*.safetensors | wc -l)
      cat "$sd"/*.safetensors >/dev/null
      for dst in "$DATA" ${DISK:+"$DISK"}; do
        c=convert sfx= sf=()
        [ "$dst" = "${DISK:-}" ] && c=convert_disk sfx=", $DFS" sf=(--sync-first)
        od="$dst/bench-out.ten"
        g1="safetensors ($ns shards)→tenbin, $many$sfx" g2="safetensors (a selection)→tenbin, $many$sfx"
        r1=(run) r2=(run)
        if [ $c = convert_disk ]; then r1=(run_disk "$g1") r2=(run_disk "$g2"); fi
        "${r1[@]}" $T files spawn --case $c --group "$g1" \
          --out "$od" --warm "$SIZE" "${sf[@]}" :: base:cp cp "$fm" "$od" \
          :: tensio:cli "$CLI" convert --no-sync --drop-metadata --to tenbin "$sd" "$od"
        "${r2[@]}" $T files spawn --case $c --group "$g2" \
          --out "$od" --warm "$SIZE" "${sf[@]}" :: base:cp cp "$fm" "$od" \
          :: tensio:cli "$CLI" convert --no-sync --exclude 'no-such-name*' --to tenbin "$fm" "$od"
      done
      rm -rf "$sd"
    fi
  fi
  rm -f "$f1" "$fm"
  # the many-tensor files; one tensor for .npy, with np.save of it beside
  wn=$MANY wg=$many
  [ -n "$only1" ] && wn=1 wg=$one
  if has write; then
    step "$f: write $wg"
    run $T files write --format "$f" --size "$SIZE" --tensors "$wn" \
      --out "$DATA/bench-w.$e" --group "$wg"
    if [ "$f" = npy ] && [ -n "$pyok" ]; then
      run $PY "$ROOT/bench/py/np_save.py" "$DATA/bench-w-np.npy" --group "$wg" \
        --bytes "$("$B" gen --data-bytes --size "$SIZE" --tensors 1)" --reps "$REPS" --warmup "$WARM"
    fi
  fi
  if has durable; then
    run $T files write --format "$f" --size "$SIZE" --tensors "$wn" \
      --out "$DATA/bench-w.$e" --group "$wg+fsync" --sync
  fi
  if [ -n "$DISK" ] && has write; then
    run $T files write --format "$f" --size "$SIZE" --tensors "$wn" \
      --out "$DISK/bench-w.$e" --group "$wg, $DFS"
  fi
  if [ -n "$DISK" ] && has durable; then
    run $T files write --format "$f" --size "$SIZE" --tensors "$wn" \
      --out "$DISK/bench-w.$e" --group "$wg, $DFS+fsync" --sync
  fi
done

# ------------------------------------------------------------ ZeroMQ
if has zmq; then
  step "zmq loopback: tensio against raw libzmq and Python tensorcom"
  run $T zmq --sizes "$ZSIZES" --budget "$ZBUDGET" --subjects raw,raw2,raw3,zio,tensorcom \
    $([ "$(nproc)" -ge 2 ] && echo --pin)
  if [ -x "$PY" ] && $PY -c 'import zmq, numpy' 2>/dev/null; then
    run $PY "$ROOT/bench/py/tensorcom_bench.py" --sizes "$ZSIZES" --budget "$ZBUDGET" \
      --reps "$REPS" --warmup "$WARM"
  else
    echo "run.sh: no pyzmq/numpy under $PY: the Python tensorcom baseline is skipped" >&2
  fi
fi

# ------------------------------------------------------------ models
if has model; then
  step "models: the vectors, then $MCONSTS constants in $MSIZE"
  V="$ROOT/../shared/vectors"
  [ -d "$V" ] || V="$ROOT/tests/vectors"
  mapfile -t models < <(find "$V/rten" "$V/tmfile" -maxdepth 2 -type f \
    \( -name '*.rten' -o -name '*.tmfile' \) ! -path '*malformed*' 2>/dev/null | sort)
  [ ${#models[@]} -gt 0 ] && run $T model "${models[@]}"
  for f in rten tmfile; do
    m="$READ/bench-model.$f"
    run "$B" gen --format "$f" --size "$MSIZE" --tensors "$MCONSTS" --out "$m"
    cat "$m" >/dev/null
    run $T model --group-prefix "generated-" "$m"
    rm -f "$m"
  done
fi

# ------------------------------------------------------------ ONNX
if has onnx; then
  step "onnx: $MCONSTS initializers in $MSIZE: open + list, ONNX ⇄ rten, onnx.load; tflite → tflite"
  on="$READ/bench-model.onnx"
  small="$READ/bench-model-small.onnx"
  rt="$READ/bench-model.rten"
  gi="$MCONSTS initializers, $MSIZE"
  run "$B" gen --format onnx --size "$MSIZE" --tensors "$MCONSTS" --out "$on"
  # the same graph and initializers, 4 KiB each: what open + list costs
  # without the bytes
  run "$B" gen --format onnx --size $((MCONSTS * 4096)) --tensors "$MCONSTS" --out "$small"
  run "$B" gen --format rten --size "$MSIZE" --tensors "$MCONSTS" --out "$rt"
  sync -f "$on" # no write-back while timing
  cat "$on" "$small" "$rt" >/dev/null
  run $T model --case onnx --group "$gi" "$on"
  run $T model --case onnx --group "$MCONSTS initializers, 4 KiB each" "$small"
  if [ -x "$PY" ] && $PY -c 'import onnx' 2>/dev/null; then
    run $PY "$ROOT/bench/py/onnx_load.py" "$on" --group "$gi" --reps "$REPS" --warmup "$WARM" ||
      printf 'M\tonnx\t%s\tbase:onnx.load\tmissing\tonnx_load.py failed (see the log)\n' "$gi" >>"$RAW"
  else
    echo "run.sh: no python3-onnx under $PY: the onnx.load baseline is skipped" >&2
    printf 'M\tonnx\t%s\tbase:onnx.load\tmissing\tno python3-onnx under %s (scripts/install-deps.sh --bench installs it)\n' \
      "$gi" "$PY" >>"$RAW"
  fi
  o="$DATA/bench-out.rten"
  run $T files spawn --case onnx --group "onnx→rten" --out "$o" --warm "$MSIZE" \
    :: base:cp cp "$on" "$o" :: tensio:cli "$CLI" convert --no-sync "$on" "$o" \
    :: tensio:lib "$B" files convert-once "$on" "$o" rten
  # rten's onnx_hash is the SHA-256 of the .onnx: that alone, over the same
  # mapped file, with the same OpenSSL
  run $T files spawn --case onnx --group "onnx→rten" --subject "base:sha256" --out "$o.sha256" \
    --bytes-of "$on" -- "$B" files sha256-once "$on" "$o.sha256"
  o="$DATA/bench-out.onnx"
  run $T files spawn --case onnx --group "rten→onnx" --out "$o" --warm "$MSIZE" \
    :: base:cp cp "$rt" "$o" :: tensio:cli "$CLI" convert --no-sync "$rt" "$o"
  rm -f "$on" "$small" "$rt"
  # .tflite -> .tflite (issue 36: >= 0.9x cp): the same constants as a model
  # of constants (tio_bench gen --format tflite)
  tf="$READ/bench-model.tflite"
  run "$B" gen --format tflite --size "$MSIZE" --tensors "$MCONSTS" --out "$tf"
  sync -f "$tf"
  cat "$tf" >/dev/null
  # open + list of the .tflite (issue 36: <= 2 us per tensor): every operator,
  # value and constant through the graph raised to ONNX semantics
  run $T model --case onnx --group "tflite: $MCONSTS constants, $MSIZE" "$tf"
  o="$DATA/bench-out.tflite"
  run $T files spawn --case onnx --group "tflite→tflite" --out "$o" --warm "$MSIZE" \
    :: base:cp cp "$tf" "$o" :: tensio:cli "$CLI" convert --no-sync "$tf" "$o"
  rm -f "$tf"
  # ONNX -> TFLite (issue 36: >= 0.5x cp, < 64 MiB anonymous memory): a CNN
  # whose Conv weights are permuted OIHW -> OHWI on the way
  cn="$READ/bench-cnn.onnx"
  run "$B" gen --format onnx --graph conv --size "$CNNSIZE" --tensors "$CNNLAYERS" --out "$cn"
  sync -f "$cn"
  cat "$cn" >/dev/null
  o="$DATA/bench-out.tflite"
  run $T files spawn --case onnx --group "onnx→tflite, CNN $CNNSIZE" --out "$o" --warm "$CNNSIZE" \
    :: base:cp cp "$cn" "$o" :: tensio:cli "$CLI" convert --no-sync "$cn" "$o"
  rm -f "$cn"
  # ONNX -> TFLite of MatMul layers: each [K, K] weight transposed on the way
  # (by bands and tiles, src/tflite/lower_w.c)
  mn="$READ/bench-mlp.onnx"
  run "$B" gen --format onnx --graph mlp --size "$MLPSIZE" --tensors "$MLPLAYERS" --out "$mn"
  sync -f "$mn"
  cat "$mn" >/dev/null
  run $T files spawn --case onnx --group "onnx→tflite, MLP $MLPSIZE" --out "$o" --warm "$MLPSIZE" \
    :: base:cp cp "$mn" "$o" :: tensio:cli "$CLI" convert --no-sync "$mn" "$o"
  rm -f "$mn"
fi

# ------------------------------------------------------------ recv -o
if has recvfiles; then
  step "recv -o: one file per message ($FCOUNTS files), against write() + rename()"
  msg="$DATA/bench-msg.zmsg"
  run "$B" gen --format zio --size 1K --tensors 1 --out "$msg"
  run $T recvfiles --cli "$CLI" --msg "$msg" --dir "$DATA" --counts "$FCOUNTS" --modes "$FMODES"
  rm -f "$msg"
fi

# ------------------------------------------------------------ shards, LMDB
if has shards; then
  step "shards: a WebDataset shard of $SSAMPLES samples in $SIZE: iterate vs cat, convert vs cp, Python; LMDB"
  sh="$READ/bench-shard.tar"
  sg="$SSAMPLES samples, $SIZE"
  run "$B" shards gen --out "$sh" --size "$SIZE" --samples "$SSAMPLES"
  sync -f "$sh" # no write-back while timing
  cat "$sh" >/dev/null
  run $T shards iterate "$sh" --group "$sg"
  o="$DATA/bench-out-shard.tar"
  # cp and the two conversions interleaved, one process per repetition each
  run $T files spawn --case shards_convert --group "shard→shard, $sg" --out "$o" --warm "$SIZE" \
    :: base:cp cp "$sh" "$o" :: tensio:copy "$CLI" convert --no-sync "$sh" "$o" \
    :: "tensio:--member-to $SMEMBER" "$CLI" convert --no-sync --member-to "$SMEMBER" "$sh" "$o"
  if [ -f "$BUILD/python/tensio/__init__.py" ] && $PY -c 'import numpy' 2>/dev/null; then
    PRE=()
    [ -n "${BENCH_PY_PRELOAD:-}" ] && PRE=(LD_PRELOAD="$BENCH_PY_PRELOAD" ASAN_OPTIONS=detect_leaks=0)
    DS=()
    $PY -c 'import torch' 2>/dev/null && DS=(--dataset) # and tensio.torch.ShardDataset
    run env "${PRE[@]}" PYTHONPATH="$BUILD/python" $PY "$ROOT/bench/py/shard_read.py" "$sh" \
      --group "$sg" --reps "$REPS" --max-reps "$MAXREPS" --warmup "$WARM" "${DS[@]}"
    if [ ${#DS[@]} -gt 0 ]; then # large samples: the dataset against cat
      shl="$READ/bench-shard-large.tar"
      run "$B" shards gen --out "$shl" --size "$SIZE" --samples 16
      sync -f "$shl"
      cat "$shl" >/dev/null
      run env "${PRE[@]}" PYTHONPATH="$BUILD/python" $PY "$ROOT/bench/py/shard_read.py" "$shl" \
        --group "16 samples, $SIZE" --reps "$REPS" --max-reps "$MAXREPS" --warmup "$WARM" "${DS[@]}"
      rm -f "$shl"
    fi
  else
    echo "run.sh: no tensio package in $BUILD/python or no numpy: the Python shard reads are skipped" >&2
    printf 'M\tshards_py\t%s\tbase:tarfile+tenbin.py\tmissing\tno tensio package in %s or no numpy under %s\n' \
      "$sg" "$BUILD/python" "$PY" >>"$RAW"
  fi
  rm -f "$sh"
  step "lmdb: $LREADS random reads from a store of $LCOUNTS records"
  mkdir -p "$DATA/bench-lmdb"
  run $T lmdb --dir "$DATA/bench-lmdb" --sizes "$LCOUNTS" --reads "$LREADS"
  rm -rf "$DATA/bench-lmdb"
fi

# ------------------------------------------------------------ HTTP
if has http; then
  step "http: shards and model files from nginx on 127.0.0.1: iterate vs curl, ls reads the header only"
  if command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; then
    hd="$READ/bench-http"
    mkdir -p "$hd/www"
    run "$B" shards gen --out "$hd/www/small.tar" --size "$SIZE" --samples "$SSAMPLES"
    run "$B" shards gen --out "$hd/www/large.tar" --size "$SIZE" --samples 16
    run "$B" gen --format safetensors --size "$SIZE" --tensors "$MANY" --out "$hd/www/many.safetensors"
    run "$B" gen --format gguf --size "$SIZE" --tensors "$MANY" --out "$hd/www/many.gguf"
    sync -f "$hd/www/small.tar"
    cat "$hd"/www/* >/dev/null
    # nginx, stopped when this pipe closes
    exec {NGW}> >(exec $PY "$ROOT/bench/py/http_serve.py" "$hd/www" "$hd" >"$hd/url")
    for _ in $(seq 100); do [ -s "$hd/url" ] && break; sleep 0.1; done
    U=$(head -1 "$hd/url")
    for sh in small:"$SSAMPLES samples" large:"16 samples"; do
      f=${sh%%:*}
      run $T files spawn --case http_shards --group "${sh#*:}, $SIZE, from nginx" \
        --out "$DATA/bench-http-none" --bytes-of "$hd/www/$f.tar" --quiet \
        :: base:curl curl -s -o /dev/null "$U/$f.tar" :: "tensio:ls" "$CLI" ls "$U/$f.tar"
    done
    # bytes fetched by ls of a file over HTTP (nginx's access log: $body_bytes_sent)
    log="$hd/nginx/access.log"
    for f in many.safetensors many.gguf; do
      n0=$(wc -l <"$log")
      "$CLI" ls "$U/$f" >/dev/null
      sleep 0.3
      sent=$(tail -n +$((n0 + 1)) "$log" | awk '{s += $2} END {print s + 0}')
      reqs=$(($(wc -l <"$log") - n0))
      printf 'M\thttp_ls\t%s\ttensio:ls\tfetched\t%s\nM\thttp_ls\t%s\ttensio:ls\tsize\t%s\nM\thttp_ls\t%s\ttensio:ls\trequests\t%s\n' \
        "$f, $MANY tensors" "$sent" "$f, $MANY tensors" "$(stat -c %s "$hd/www/$f")" "$f, $MANY tensors" "$reqs" >>"$RAW"
    done
    if [ -f "$BUILD/python/tensio/__init__.py" ] && $PY -c 'import numpy' 2>/dev/null; then
      PRE=()
      [ -n "${BENCH_PY_PRELOAD:-}" ] && PRE=(LD_PRELOAD="$BENCH_PY_PRELOAD" ASAN_OPTIONS=detect_leaks=0)
      run env "${PRE[@]}" PYTHONPATH="$BUILD/python" $PY "$ROOT/bench/py/shard_read.py" "$hd/www/small.tar" \
        --url "$U/small.tar" --group "$SSAMPLES samples, $SIZE, from nginx" --reps "$REPS" \
        --max-reps "$MAXREPS" --warmup "$WARM"
    fi
    exec {NGW}>&-
    rm -rf "$hd"
  else
    printf 'M\thttp_shards\t-\tbase:curl\tmissing\tno nginx (scripts/install-deps.sh installs it)\n' >>"$RAW"
  fi
fi

# ------------------------------------------------------------ PyTorch
if has torch; then
  step "torch: checkpoints written by torch.save: open + list, torch.load, .pt → safetensors"
  if [ -f "$BUILD/python/tensio/__init__.py" ] && $PY -c 'import torch, torchvision, numpy' 2>/dev/null; then
    TB="$ROOT/bench/py/torch_bench.py"
    p1="$READ/bench-1.pt" pm="$READ/bench-many.pt" pr="$READ/bench-resnet18.pt"
    bytes=$("$B" gen --data-bytes --size "$SIZE" --tensors 1)
    run $PY "$TB" gen "$p1" --bytes "$bytes" --tensors 1
    run $PY "$TB" gen "$pm" --bytes "$bytes" --tensors "$MANY"
    run $PY "$TB" gen "$pr" --resnet18
    sync -f "$p1"
    cat "$p1" "$pm" "$pr" >/dev/null
    # the open case's rows (section 1): tensio:torch beside the other formats
    run $T files open "$p1" --group "$one"
    run $T files open "$pm" --group "$many"
    PRE=()
    [ -n "${BENCH_PY_PRELOAD:-}" ] && PRE=(LD_PRELOAD="$BENCH_PY_PRELOAD" ASAN_OPTIONS=detect_leaks=0)
    for pair in "$p1:torch.save, $one" "$pm:torch.save, $many" "$pr:resnet18 state dict"; do
      run env "${PRE[@]}" PYTHONPATH="$BUILD/python" $PY "$TB" load "${pair%%:*}" \
        --group "${pair#*:}" --reps "$REPS" --warmup "$WARM"
    done
    # .bin → .safetensors, what people run torch.load for (section 4)
    o="$DATA/bench-out.safetensors"
    for which in "$one" "$many"; do
      in=$pm; [ "$which" = "$one" ] && in=$p1
      run $T files spawn --case convert --group "torch→safetensors, $which" --out "$o" \
        --warm "$SIZE" :: base:cp cp "$in" "$o" \
        :: tensio:cli "$CLI" convert --no-sync --to safetensors "$in" "$o"
      if [ -n "$DISK" ]; then
        od="$DISK/bench-out.safetensors"
        run_disk "torch→safetensors, $which, $DFS" \
          $T files spawn --case convert_disk --group "torch→safetensors, $which, $DFS" \
          --out "$od" --warm "$SIZE" --sync-first :: base:cp cp "$in" "$od" \
          :: tensio:cli "$CLI" convert --no-sync --to safetensors "$in" "$od"
      fi
    done
    rm -f "$p1" "$pm" "$pr"
  else
    echo "run.sh: no tensio package in $BUILD/python or no torch/torchvision/numpy under $PY: torch skipped" >&2
  fi
fi

# ------------------------------------------------------------ Python
if has python; then
  step "python: tensio.load vs tenbin.load and np.load(mmap), decode/encode_buffer, Stream"
  if [ -f "$BUILD/python/tensio/__init__.py" ] && $PY -c 'import numpy, zmq' 2>/dev/null; then
    PS=${BENCH_PY_STREAM_SIZES:-1K,64K,1M,16M}
    PB=${BENCH_PY_STREAM_BUDGET:-256M}
    # BENCH_PY_PRELOAD: a sanitizer build's runtime, loaded before its extension
    PRE=()
    [ -n "${BENCH_PY_PRELOAD:-}" ] && PRE=(LD_PRELOAD="$BENCH_PY_PRELOAD" ASAN_OPTIONS=detect_leaks=0)
    run env "${PRE[@]}" PYTHONPATH="$BUILD/python" $PY "$ROOT/bench/py/py_bench.py" "$READ" \
      --size "${BENCH_PY_SIZE:-$SIZE}" --reps "$REPS" --warmup "$WARM" \
      --stream-sizes "$PS" --stream-budget "$PB"
    run env "${PRE[@]}" PYTHONPATH="$BUILD/python" $PY "$ROOT/bench/py/tensorcom_bench.py" \
      --case python --group-prefix "stream " \
      --sizes "$PS" --budget "$PB" --reps "$REPS" --warmup "$WARM"
  else
    echo "run.sh: no tensio package in $BUILD/python or no numpy/pyzmq: python skipped" >&2
  fi
fi

# a partial re-run: the previous lines of every case, group and subject not
# measured now (a re-run of some formats keeps the others' rows of its cases)
if [ -f "$PREV" ]; then
  awk -F'\t' 'NR == FNR { now[$2 FS $3 FS $4] = 1; next } !(($2 FS $3 FS $4) in now)' \
    "$RAW" "$PREV" >"$RAW.kept"
  cat "$RAW" >>"$RAW.kept"
  mv "$RAW.kept" "$RAW"
fi

step "report"
$PY "$ROOT/bench/report.py" "$RAW" "$OUT/machine.tsv" "$OUT"
