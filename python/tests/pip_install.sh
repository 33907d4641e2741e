#!/usr/bin/env bash
# pip install --no-build-isolation of ./python, offline, into a scratch
# directory, against this build's libtensio.a (TENSIO_STATIC_LIB), from a
# copy of python/ so that the source tree gets no build/ or egg-info; then the
# installed package opens what it saves.
# Usage: pip_install.sh <python3> <repo> <build dir>
set -euo pipefail
PY=$1 REPO=$2 BUILD=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$REPO/python" "$tmp/src"
rm -rf "$tmp/src/tests"
TENSIO_INCLUDE_DIR="$REPO/include" TENSIO_STATIC_LIB="$BUILD/libtensio.a" \
  PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
  "$PY" -m pip install -q --no-build-isolation --no-deps --target "$tmp/site" "$tmp/src"
cd "$tmp"
PYTHONPATH="$tmp/site" "$PY" - <<'PYEOF'
import numpy as np
import tensio
assert tensio.__file__.startswith(__import__("os").getcwd()), tensio.__file__
tensio.save("a.ten", {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, sync=False)
with tensio.open("a.ten") as c:
    assert c.names == ["x"] and c["x"].tolist() == [[0, 1, 2], [3, 4, 5]]
print("pip install: ok", tensio.__file__)
PYEOF
