#!/usr/bin/env bash
# Runs the libFuzzer targets built in BUILD/fuzz (cmake -DTIO_FUZZ=ON).
#
#   fuzz/run.sh BUILD regress          replay fuzz/regress/<target>/ and the seeds
#   fuzz/run.sh BUILD smoke SECONDS    each target SECONDS from the seeds, in a
#                                      scratch corpus (make test)
#   fuzz/run.sh BUILD long SECONDS     each target SECONDS, keeping new inputs in
#                                      fuzz/corpus/<target>/ (make fuzz)
#
# TARGETS="btf zio" picks targets; JOBS (default: nproc) targets run at once;
# FUZZ_RUNS=N stops a target after N executions instead of after SECONDS;
# FUZZ_MAX_LEN=N caps the input size (default 65536); FUZZ_TIMEOUT=S the
# seconds an input may take (default 2; libFuzzer counts wall-clock time, so
# `make test`, which may run on a loaded machine, passes 20).
# A crash, leak, sanitizer report, broken round trip, a single allocation over
# 64 MiB (inputs are at most 64 KiB) or an input that takes over 2 s (-timeout;
# the targets bound dense work at 1 MiB, see fuzz_common.h) fails the run; the
# input is left in BUILD/fuzz/artifacts/ and the log in BUILD/fuzz/logs/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "$1" && pwd)"
mode="$2"
seconds="${3:-20}"
targets="${TARGETS:-btf tenbin rten flatbuf tmfile zio zmsg onnx pb tensorproto safetensors npy gguf npz tar tar_stream torch pickle hfindex tflite}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
bin="$build/fuzz"
seeds="$bin/seeds"
mkdir -p "$bin/artifacts" "$bin/logs"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

rm -rf "$seeds"
python3 "$here/seeds.py" "$seeds" >/dev/null

limits=(-max_len="${FUZZ_MAX_LEN:-65536}" -malloc_limit_mb=64 -rss_limit_mb=2048
        -timeout="${FUZZ_TIMEOUT:-2}")

run_one() {
    local t="$1" log="$bin/logs/$1.log" corpus
    local args=("${limits[@]}" "-dict=$here/dict/$t.dict" "-artifact_prefix=$bin/artifacts/$t-"
                -print_final_stats=1)
    case "$mode" in
    regress)
        local files=()
        shopt -s nullglob
        files=("$here/regress/$t"/* "$seeds/$t"/*)
        shopt -u nullglob
        if ! "$bin/fuzz_$t" "${args[@]}" -runs=1 "${files[@]}" >"$log" 2>&1; then
            echo "FAIL $t (regression inputs): see $log"; tail -n 30 "$log"; return 1
        fi
        echo "ok   $t: replayed ${#files[@]} inputs"
        return 0 ;;
    smoke)
        corpus="$bin/corpus-smoke/$t"
        rm -rf "$corpus"; mkdir -p "$corpus" ;;
    long)
        corpus="$here/corpus/$t"
        mkdir -p "$corpus" ;;
    *) echo "run.sh: unknown mode $mode" >&2; return 2 ;;
    esac
    local stop=(-max_total_time="$seconds")
    [ -n "${FUZZ_RUNS:-}" ] && stop=(-runs="$FUZZ_RUNS")
    if ! "$bin/fuzz_$t" "${args[@]}" "${stop[@]}" "$corpus" "$seeds/$t" "$here/regress/$t" \
            >"$log" 2>&1; then
        echo "FAIL $t: see $log"; grep -E "fuzz:|ERROR|SUMMARY|Test unit written" "$log" | head -n 8
        # the frames in tensio's own code, and the input itself when small:
        # a CI machine's artifact directory is gone with the machine
        grep -E "^ +#[0-9]+ .*/(src|fuzz)/" "$log" | head -n 16
        local art
        art=$(sed -n 's/.*Test unit written to //p' "$log" | head -n 1)
        if [ -n "$art" ] && [ -f "$art" ] && [ "$(stat -c %s "$art")" -le 16384 ]; then
            echo "the input, base64 (base64 -d > input; $bin/fuzz_$t input):"
            base64 -w 76 "$art"
        fi
        return 1
    fi
    local execs rate
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    echo "ok   $t: $execs executions, $rate/s, corpus $(ls "$corpus" | wc -l) inputs"
}

fail=0
pids=()
running=0
for t in $targets; do
    if [ ! -x "$bin/fuzz_$t" ]; then echo "FAIL $t: $bin/fuzz_$t not built"; fail=1; continue; fi
    run_one "$t" &
    pids+=($!)
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait "${pids[0]}" || fail=1
        pids=("${pids[@]:1}")
        running=$((running - 1))
    fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
exit $fail
