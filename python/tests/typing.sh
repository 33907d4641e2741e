#!/usr/bin/env bash
# The type stubs (python/tensio/*.pyi, py.typed):
#  - mypy --strict on small programs over the public API (typing/example.py,
#    and typing/example_torch.py for tensio.torch);
#  - stubtest: the stubs against the built package (<build>/python): every
#    public name of the runtime modules in a stub, and the signatures agree;
#  - the programs run against the built package.
# Debian's mypy (scripts/install-deps.sh installs it): a missing mypy fails.
# Usage: typing.sh <python3 with mypy> <repo> <build dir>
set -euo pipefail
PY=$1 REPO=$2 BUILD=$3
if ! "$PY" -c 'import mypy.stubtest' 2>/dev/null; then
  echo "typing: $PY cannot import mypy (Debian: mypy; scripts/install-deps.sh installs it)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
unset PYTHONPATH
export MYPYPATH=$REPO/python PYTHONDONTWRITEBYTECODE=1
"$PY" -m mypy --version
"$PY" -m mypy --strict --cache-dir "$tmp/cache" "$REPO/python/tests/typing/example.py" \
  "$REPO/python/tests/typing/example_torch.py"
PYTHONPATH=$BUILD/python "$PY" -m mypy.stubtest --concise --mypy-config-file /dev/null tensio
for example in example.py example_torch.py; do
  PYTHONPATH=$BUILD/python "$PY" "$REPO/python/tests/typing/$example"
done
