#!/usr/bin/env bash
# pip install . at the repository root, as a Python user installs things: into
# a fresh virtual environment, offline (--no-index, --no-build-isolation),
# libtensio compiled into the extension by the build backend (setup.py); then,
# from a directory outside the repository, the venv's tensio saves and opens a
# file, and its extension is the venv's. pip wheel . builds a wheel that holds
# the extension and the type stubs.
#
# The interpreter: a CPython >= 3.10 other than Debian's when one is present
# (TIO_PIP_PYTHON, else pyenv's newest of Debian's python3's minor version:
# Debian's NumPy is compiled for that minor version's ABI), in a venv made with
# its own ensurepip (pip, setuptools: bundled with that CPython, offline);
# Debian's NumPy and wheel (python3-numpy, python3-wheel) are made importable
# in it by a .pth naming a directory of links to those two packages (and their
# metadata, so pip sees them installed) — nothing else of Debian's
# dist-packages. Without such an interpreter: Debian's python3 in a venv made
# with --system-site-packages (its NumPy, setuptools and wheel).
# Usage: pip_venv.sh <repo>
set -euo pipefail
REPO=$(cd "$1" && pwd)
DEB_PY=/usr/bin/python3
DEB_SITE=/usr/lib/python3/dist-packages
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset PYTHONPATH PYTHONHOME
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
  PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
# ccache, when present, makes pip wheel's compile of the same sources a cache hit
if command -v ccache >/dev/null 2>&1 && [ -z "${CC:-}" ]; then
  export CC="ccache cc"
fi

deb_minor=$("$DEB_PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
py=${TIO_PIP_PYTHON:-}
if [ -z "$py" ]; then
  pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
  for cand in $(ls -d "$pyenv_root/versions/$deb_minor".* 2>/dev/null | sort -V -r); do
    if [ -x "$cand/bin/python3" ] && "$cand/bin/python3" -c 'import ensurepip, venv' 2>/dev/null \
       && [ -f "$cand/include/python$deb_minor/Python.h" ]; then
      py=$cand/bin/python3
      break
    fi
  done
fi

venv=$tmp/venv
if [ -n "$py" ]; then
  "$py" -m venv "$venv"
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir "$tmp/debian"
  for p in "$DEB_SITE"/numpy "$DEB_SITE"/numpy-*info "$DEB_SITE"/wheel "$DEB_SITE"/wheel-*info; do
    ln -s "$p" "$tmp/debian/"
  done
  echo "$tmp/debian" > "$site/debian-numpy-wheel.pth"
else
  py=$DEB_PY
  "$py" -m venv --system-site-packages "$venv"
fi
V=$venv/bin/python
echo "pip_venv: $("$V" -c 'import sys; print(sys.version.split()[0], sys._base_executable)'), NumPy $("$V" -c 'import numpy; print(numpy.__version__)')"
"$V" -m pip --version

cd "$tmp"  # nothing of the repository on sys.path from here
SECONDS=0
"$V" -m pip install -q --no-build-isolation --no-index "$REPO"
echo "pip_venv: pip install took ${SECONDS} s"

"$V" - "$venv" "$REPO" <<'PYEOF'
import glob, os, sys
import numpy as np
import tensio, tensio._tensio
import tensio.tenbin as tenbin
venv, repo = (os.path.realpath(p) for p in sys.argv[1:])
ext = os.path.realpath(tensio._tensio.__file__)
for f in (tensio.__file__, ext, tenbin.__file__):
    f = os.path.realpath(f)
    assert f.startswith(venv + os.sep) and not f.startswith(repo + os.sep), f
here = os.path.dirname(os.path.realpath(tensio.__file__))
for stub in ("py.typed", "__init__.pyi", "_tensio.pyi", "shard.pyi", "tenbin.pyi"):
    assert os.path.isfile(os.path.join(here, stub)), stub
x = np.arange(6, dtype=np.float32).reshape(2, 3)
tensio.save("a.safetensors", {"x": x, "b": np.array([True, False])}, sync=False)
with tensio.open("a.safetensors") as c:
    assert c.names == ["x", "b"] and c["x"].tolist() == x.tolist(), c.names
    assert c.format == "safetensors" and c["b"].dtype == np.bool_
tenbin.save("a.ten", x, infos=["x"])
assert tenbin.load("a.ten", infos=True)[1] == ["x"]
assert "onnx" in tensio.formats() and tensio.formats()["npy"]["write"]
print("pip_venv: installed and working:", ext)
PYEOF
# self-contained: libtensio is inside the extension, not a library it loads
ext=$("$V" -c 'import tensio._tensio as t; print(t.__file__)')
if ldd "$ext" | grep -q libtensio; then
  echo "pip_venv: $ext loads a libtensio:" >&2
  ldd "$ext" >&2
  exit 1
fi

SECONDS=0
"$V" -m pip wheel -q --no-build-isolation --no-index --no-deps -w "$tmp/wheels" "$REPO"
echo "pip_venv: pip wheel took ${SECONDS} s"
"$V" - "$tmp/wheels" <<'PYEOF'
import glob, sys, sysconfig, zipfile
(whl,) = glob.glob(sys.argv[1] + "/tensio-*.whl")
tag = "cp%d%d" % sys.version_info[:2]
assert ("-%s-%s-" % (tag, tag)) in whl, whl
names = set(zipfile.ZipFile(whl).namelist())
ext = "tensio/_tensio" + sysconfig.get_config_var("EXT_SUFFIX")
for n in (ext, "tensio/__init__.py", "tensio/__init__.pyi", "tensio/py.typed",
          "tensio/shard.py", "tensio/torch.pyi"):
    assert n in names, (n, sorted(names))
assert not any(n.endswith((".c", ".h")) for n in names), sorted(names)
print("pip_venv: wheel", whl.rsplit("/", 1)[1], len(names), "files")
PYEOF
