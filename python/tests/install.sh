#!/usr/bin/env bash
# The two ways the package installs, each into a scratch directory, each then
# imported and made to save and open a file:
#  - make install (cmake --install of the build, component python, DESTDIR);
#  - pip install --no-build-isolation, offline, from a copy of python/ (so the
#    source tree gets no build/ or egg-info), against this build's
#    libtensio.a (TENSIO_STATIC_LIB, python/setup.py).
# Usage: install.sh <python3> <repo> <build dir> <install dir rel. to prefix>
set -euo pipefail
PY=$1 REPO=$2 BUILD=$3 SITE_REL=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # $1 = the directory that holds the installed tensio/
  (cd "$tmp" && PYTHONPATH="$1" PYTHONDONTWRITEBYTECODE=1 "$PY" - "$1" <<'PYEOF'
import os, sys
import numpy as np
import tensio
assert os.path.dirname(os.path.dirname(tensio.__file__)) == sys.argv[1], tensio.__file__
tensio.save("a.ten", {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, sync=False)
with tensio.open("a.ten") as c:
    assert c.names == ["x"] and c["x"].tolist() == [[0, 1, 2], [3, 4, 5]]
import tensio.tenbin as tenbin
assert os.path.dirname(tenbin.__file__) == os.path.dirname(tensio.__file__), tenbin.__file__
assert tenbin.load("a.ten", infos=True)[1] == ["x"]
os.remove("a.ten")
print("installed and working:", tensio.__file__)
PYEOF
  )
}

DESTDIR="$tmp/dest" cmake --install "$BUILD" --prefix /opt/tio --component python >/dev/null
check "$tmp/dest/opt/tio/$SITE_REL"

cp -r "$REPO/python" "$tmp/src"
rm -rf "$tmp/src/tests"
TENSIO_INCLUDE_DIR="$REPO/include" TENSIO_STATIC_LIB="$BUILD/libtensio.a" \
  PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
  "$PY" -m pip install -q --no-build-isolation --no-deps --target "$tmp/site" "$tmp/src"
check "$tmp/site"
