"""The extension's build for pip (the project's CMake builds it too:
python/CMakeLists.txt). Against an installed libtensio, found with
`pkg-config tensio` (shared library), or, for a build tree, with
TENSIO_INCLUDE_DIR=<repo>/include and TENSIO_STATIC_LIB=<build>/libtensio.a
(then libtensio's own dependencies come from pkg-config: jansson, libcrypto,
libzmq, libcurl, zlib, liblzma, libzstd; and -llmdb, -lbz2, which have no pkg-config file on every
Debian release)."""

import os
import shlex
import subprocess

import numpy
from setuptools import Extension, setup


def pkg_config(*args):
    try:
        out = subprocess.check_output(["pkg-config", *args], text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"tensio: pkg-config {' '.join(args)} failed ({e}); install libtensio "
                         "(make install) or set TENSIO_INCLUDE_DIR and TENSIO_STATIC_LIB")
    return shlex.split(out)


def flags():
    inc = os.environ.get("TENSIO_INCLUDE_DIR")
    static = os.environ.get("TENSIO_STATIC_LIB")
    if static:
        return {"include_dirs": [inc] if inc else [], "extra_objects": [static],
                "extra_link_args": pkg_config("--libs", "jansson", "libcrypto", "libzmq", "libcurl",
                                              "zlib", "liblzma", "libzstd")
                + ["-llmdb", "-lbz2", "-lpthread"]}
    args = pkg_config("--cflags", "--libs", "tensio")
    return {"include_dirs": ([inc] if inc else []) + [a[2:] for a in args if a.startswith("-I")],
            "library_dirs": [a[2:] for a in args if a.startswith("-L")],
            "libraries": [a[2:] for a in args if a.startswith("-l")]}


f = flags()
f["include_dirs"].append(numpy.get_include())
setup(ext_modules=[Extension("tensio._tensio", ["tensio/_tensio.c", "tensio/_shard.c",
                                                    "tensio/_checkpoint.c"],
                             extra_compile_args=["-std=c11"], **f)])
