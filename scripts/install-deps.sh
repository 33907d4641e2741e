#!/usr/bin/env bash
# Installs the Debian packages tensio needs to build and test, if missing.
# With --bench, also what `make bench` needs (gnuplot for the plot; numpy and
# onnx for the np.load and onnx.load baselines, already in the first list).
# Runs as root, or through sudo when available. Does nothing when all are present.
set -euo pipefail

PACKAGES=(
  gcc make cmake pkg-config    # toolchain
  clang libclang-rt-dev        # second compiler, sanitizer runtimes (ASan, UBSan, TSan), libFuzzer
  libjansson-dev               # JSON with exact int64
  libssl-dev                   # libcrypto: SHA-256
  libcmocka-dev                # unit tests
  libzmq3-dev                  # ZeroMQ transport (tensio send / recv)
  zlib1g-dev                   # .npz: inflate/deflate of zip members; .tar.gz shards
  libbz2-dev liblzma-dev libzstd-dev  # .tar.bz2, .tar.xz, .tar.zst shards (src/tar/decompress.c)
  bzip2 xz-utils zstd          # the tests compress shards with the tools
  liblmdb-dev                  # LMDB stores of tensors (src/lmdb/)
  libcurl4-openssl-dev         # http:// and https:// sources (src/source/http.c)
  nginx                        # the HTTP source tests serve files with it on 127.0.0.1
  python3                      # CLI tests
  python3-zmq python3-numpy    # the tensorcom peer in the streaming tests
  python3-lmdb                 # LMDB stores read/written by a Python peer in the tests
  python3-onnx                 # the protobuf wire tests read and write ONNX models with it
  libonnx-testdata             # ONNX's backend test corpus (tests/onnx/test_backend_corpus.py)
  python3-torch python3-torchvision  # the model-zoo test exports torchvision models to ONNX
  python3-pyarmnn libarmnn-cpuref-backend22 libarmnntfliteparser22  # Arm NN runs the
                               # TensorFlow Lite models tensio writes (test_tflite_rewrite.py,
                               # test_tflite_lower.py)
  python3-dev python3-pytest   # the Python package (python/): its headers, its tests
  python3-pip python3-setuptools python3-wheel python3-venv  # its tests of pip install
                               # --no-build-isolation . (and pip wheel .), offline, in a venv
  mypy                         # its type stubs: mypy --strict on an example, stubtest
  groff-base zsh               # the man pages' and shell completions' test renders/parses them
  graphviz                     # dot: tensio graph -o FILE.svg/.png, and its test
)
if [ "${1:-}" = "--bench" ]; then
  PACKAGES=(gnuplot-nox       # bench/results/latest.png
            python3-numpy python3-onnx) # np.load, onnx.load baselines
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: not a Debian system; make sure these are installed: ${PACKAGES[*]}" >&2
  exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: missing packages (${missing[*]}) and not root; install them or run as root" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
