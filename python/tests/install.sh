#!/usr/bin/env bash
# The two ways the package installs, each into a scratch directory, each then
# imported and made to save and open a file:
#  - make install (cmake --install of the build, component python, DESTDIR);
#  - pip install --no-build-isolation --target, offline, of the repository
#    (setup.py at its root; its build tree and egg-info go to a temporary
#    directory), linking this build's libtensio.a (TENSIO_STATIC_LIB).
# (pip_venv.sh installs it with libtensio compiled in, into a venv.)
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
for stub in ("py.typed", "__init__.pyi", "_tensio.pyi"):  # the type stubs
    assert os.path.isfile(os.path.join(os.path.dirname(tensio.__file__), stub)), stub
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

TENSIO_STATIC_LIB="$BUILD/libtensio.a" PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 \
  PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
  "$PY" -m pip install -q --no-build-isolation --no-deps --target "$tmp/site" "$REPO"
check "$tmp/site"
