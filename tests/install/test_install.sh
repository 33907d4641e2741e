#!/usr/bin/env bash
# Installs the build into a scratch DESTDIR, then builds and runs a consumer
# three ways: pkg-config (shared), pkg-config --static, find_package(tensio).
set -euo pipefail
build=$1
here=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=/opt/tensio-test

DESTDIR="$tmp/dest" cmake --install "$build" --prefix "$prefix" >/dev/null
root="$tmp/dest$prefix"
libdir=$(dirname "$(find "$root" -name tensio.pc | head -1)")/..
libdir=$(cd "$libdir" && pwd)
for f in include/tensio.h bin/tensio; do
  [ -e "$root/$f" ] || { echo "missing $f"; exit 1; }
done
ls "$libdir"/libtensio.so* "$libdir"/libtensio.a "$libdir"/cmake/tensio/tensioConfig.cmake >/dev/null
"$root/bin/tensio" --version

# pkg-config, shared
export PKG_CONFIG_PATH="$libdir/pkgconfig"
pcflags=(--define-variable=prefix="$root")
cc -o "$tmp/pc_shared" "$here/consumer.c" $(pkg-config "${pcflags[@]}" --cflags --libs tensio)
LD_LIBRARY_PATH="$libdir" "$tmp/pc_shared"
# pkg-config, static
cc -o "$tmp/pc_static" "$here/consumer.c" $(pkg-config "${pcflags[@]}" --cflags tensio) \
   "$libdir/libtensio.a" $(pkg-config --libs libcrypto jansson libzmq libcurl zlib) -lm
"$tmp/pc_static"
# find_package(tensio)
cmake -S "$here" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$root" >/dev/null
cmake --build "$tmp/cm" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/cm/consumer_shared"
"$tmp/cm/consumer_static"
echo "install test: 4 consumers built and ran"
