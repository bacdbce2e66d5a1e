#!/usr/bin/env bash
# Configures (CMake + Ninja, Release) and builds roboloop into ./build (or $ROBOLOOP_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${ROBOLOOP_BUILD_DIR:-build}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
ninja -C "$BUILD_DIR" -j "${ROBOLOOP_BUILD_JOBS:-$(nproc)}"
