#!/usr/bin/env bash
# Installs npm's onnxruntime-node into tests/ort/node_modules for the tests
# that run .onnx files tensio writes (tests/ort/run_model.js), if missing.
# `npm install --ignore-scripts`: the package's install script would download
# GPU binaries; the CPU ones are in the package. Fails (exit 1) when npm is
# missing and cannot be installed: those tests must not be skipped silently.
set -euo pipefail
cd "$(dirname "$0")/../tests/ort"
if [ -f node_modules/onnxruntime-node/package.json ]; then exit 0; fi
if ! command -v npm >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "install-ort: installing npm"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm
  else
    echo "install-ort: npm is missing (Debian: apt-get install npm); the onnxruntime tests need it" >&2
    exit 1
  fi
fi
echo "install-ort: npm install --ignore-scripts onnxruntime-node (tests/ort)"
npm install --ignore-scripts --no-audit --no-fund
