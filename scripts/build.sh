#!/usr/bin/env bash
# Configures (CMake + Ninja, Release) and builds roboloop into ./build (or $ROBOLOOP_BUILD_DIR),
# with LibTorch and MuJoCo from the project's Python environment (scripts/venv.sh) and nvcc from
# the system CUDA toolkit or, where there is none, from the nvidia wheels that environment's
# Python imports (docs/toolchain.md); it prints which nvcc when it configures.
# Arguments name the Ninja targets to build (default: all); $ROBOLOOP_CMAKE_ARGS adds configure
# arguments when the build folder is new (scripts/fuzz.sh: Clang with ROBOLOOP_FUZZ=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
BUILD_DIR="${ROBOLOOP_BUILD_DIR:-build}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cuda_args=()
  nvcc="$(roboloop_nvcc)"
  if [ -n "$nvcc" ]; then cuda_args=("-DCMAKE_CUDA_COMPILER=$nvcc"); fi
  echo "build.sh: nvcc ${nvcc:-not found (CMake names what is missing)}"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DROBOLOOP_VENV="$ROBOLOOP_VENV" \
    "${cuda_args[@]}" ${ROBOLOOP_CMAKE_ARGS:-}
fi
ninja -C "$BUILD_DIR" -j "${ROBOLOOP_BUILD_JOBS:-$(nproc)}" "$@"
