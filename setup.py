"""The tensio Python package for pip (docs/python.md): `pip install .` or
`pip wheel .` at the repository root, offline with `--no-build-isolation`
(Debian: python3-setuptools, python3-wheel, python3-numpy, python3-dev).

Where libtensio comes from:
  - by default, compiled into the extension: every src/*/*.c (the same glob as
    the top-level CMakeLists.txt's, so there is one list of sources: the
    directory), in parallel (TENSIO_BUILD_JOBS, default: the CPUs this process
    may use), then linked with libtensio's own dependencies;
  - TENSIO_STATIC_LIB=<build>/libtensio.a: a CMake build tree's static library;
  - TENSIO_PKG_CONFIG=1: an installed libtensio (`make install`), found with
    `pkg-config tensio` (shared library).
libtensio's dependencies come from pkg-config (jansson, zlib, liblzma,
libzstd; -l<name> when pkg-config has no file for one; libzmq's, libcurl's
and libcrypto's headers only: libtensio loads them with dlopen() when first
used)
and -llmdb, -lbz2, which have no pkg-config file on every Debian release.

setuptools' build tree and egg-info go to a temporary directory (removed at
exit) unless --build-base / --egg-base are given, so that the source tree, whose
build/ is usually CMake's, gets nothing. CMake builds the same package its own
way (python/CMakeLists.txt)."""

import atexit
import glob
import os
import shlex
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
# libtensio's dependencies: pkg-config module -> library when it has no .pc file
DEPS = {"jansson": "jansson", "zlib": "z", "liblzma": "lzma", "libzstd": "zstd"}
DEPS_NO_PC = ["lmdb", "bz2", "pthread", "m", "dl"]
# loaded with dlopen() when first used (src/core/dl.h): their headers only
DEPS_HEADERS = ["libzmq", "libcurl", "libcrypto"]


def rel(pattern):
    """Sorted paths relative to this directory (setuptools wants relative ones)."""
    return sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, pattern)))


def pkg_config(*args, required=True):
    try:
        out = subprocess.check_output(["pkg-config", *args], text=True,
                                      stderr=subprocess.DEVNULL if not required else None)
    except (OSError, subprocess.CalledProcessError) as e:
        if not required:
            return None
        raise SystemExit(f"tensio: pkg-config {' '.join(args)} failed ({e}); install libtensio "
                         "(make install), or unset TENSIO_PKG_CONFIG to compile it in")
    return shlex.split(out)


def split_flags(args):
    """pkg-config output -> setuptools Extension keywords."""
    f = {"include_dirs": [], "library_dirs": [], "libraries": [], "extra_link_args": [],
         "define_macros": []}
    words = iter(args)
    for a in words:
        if a == "-isystem":  # its directory is the next word
            f["include_dirs"].append(next(words, ""))
        elif a.startswith(("-I", "-L", "-l")):
            key = {"-I": "include_dirs", "-L": "library_dirs", "-l": "libraries"}[a[:2]]
            f[key].append(a[2:])
        elif a.startswith("-D"):
            name, _, value = a[2:].partition("=")
            f["define_macros"].append((name, value or None))
        else:
            f["extra_link_args"].append(a)
    return f


def dep_flags():
    """libtensio's dependencies, for linking libtensio.a or its sources."""
    f = {"include_dirs": [], "library_dirs": [], "libraries": [], "extra_link_args": [],
         "define_macros": []}
    for module, lib in DEPS.items():
        args = pkg_config("--cflags", "--libs", module, required=False)
        g = split_flags(args) if args is not None else {"libraries": [lib]}
        for k, v in g.items():
            f[k] += [x for x in v if x not in f[k]]
    for module in DEPS_HEADERS:
        args = pkg_config("--cflags", module, required=False)
        g = split_flags(args or [])
        f["include_dirs"] += [x for x in g["include_dirs"] if x not in f["include_dirs"]]
    f["libraries"] += DEPS_NO_PC
    return f


def flags():
    """(Extension keywords, libtensio sources to compile in) for the chosen way."""
    inc = ["include"]
    if os.environ.get("TENSIO_PKG_CONFIG"):
        f = split_flags(pkg_config("--cflags", "--libs", "tensio"))
        f["include_dirs"] = inc + f["include_dirs"]
        return f, []
    f = dep_flags()
    f["include_dirs"] = inc + f["include_dirs"]
    static = os.environ.get("TENSIO_STATIC_LIB")
    if static:
        f["extra_objects"] = [static]
        return f, []
    sources = rel("src/*/*.c")
    if not sources:
        raise SystemExit(f"tensio: no libtensio sources in {HERE}/src")
    return f, sources


def jobs(n):
    if n:
        return int(n)
    env = os.environ.get("TENSIO_BUILD_JOBS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


class BuildExt(build_ext):
    """Compiles libtensio's sources (with libtensio's own defines, as CMake
    does) and the extension's, one compiler process per source, `jobs` at once,
    then links them into tensio/_tensio*.so."""

    def build_extension(self, ext):
        serial = self.compiler.compile
        n = jobs(self.parallel)

        def compile_parallel(sources, *args, **kw):
            with ThreadPoolExecutor(n) as pool:
                done = pool.map(lambda s: serial([s], *args, **kw), sources)
                return [o for objs in done for o in objs]

        self.compiler.compile = compile_parallel
        try:
            lib = getattr(ext, "tensio_lib_sources", [])
            if lib:
                objs = self.compiler.compile(
                    lib, output_dir=self.build_temp,
                    macros=[("_POSIX_C_SOURCE", "200809L")] + ext.define_macros,
                    include_dirs=["include", "src"] + ext.include_dirs,
                    debug=self.debug, extra_postargs=["-std=c11", "-fvisibility=hidden"])
                ext.extra_objects = objs + list(ext.extra_objects or [])
            super().build_extension(ext)
        finally:
            self.compiler.compile = serial


def scratch_options():
    """setuptools' build/ and egg-info in a temporary directory."""
    tmp = tempfile.mkdtemp(prefix="tensio-build-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    return {"build": {"build_base": os.path.join(tmp, "build")},
            "egg_info": {"egg_base": tmp}}


kw, lib_sources = flags()
kw["include_dirs"].append(numpy.get_include())
ext = Extension("tensio._tensio", rel("python/tensio/*.c"),
                extra_compile_args=["-std=c11", "-fvisibility=hidden"], **kw)
ext.tensio_lib_sources = lib_sources
setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt}, options=scratch_options())
