#!/usr/bin/env bash
# Installs what roboloop needs to build, test and run: Debian 12 packages, and a Python virtual
# environment (scripts/venv.sh says where) with the pinned LibTorch and MuJoCo wheels of
# python/pins.txt. Idempotent: apt runs only when a package is missing, pip only when the pins
# or the environment changed, so a second run is a no-op in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  clang  # compiles the AVX2 kernels (kernels/CMakeLists.txt)
  libgloo-dev libopenblas0-pthread
  python3 python3-venv  # the project's virtual environment (LibTorch, MuJoCo, test fixtures)
  libgl-dev libosmesa6-dev libegl-dev  # GL, OSMesa and EGL headers (sim/gl_context.cc loads the libraries at run time)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev libboost-dev libboost-system-dev
  libgtest-dev libgmock-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libhdf5-dev zlib1g-dev libssl-dev openssl
  libdeflate-dev  # frames of image keys compressed and inflated on several threads (data/frame_codec.h)
  # LeRobot videos (data/lerobot_video.cc); libavfilter8 and libavdevice59 for LeRobot's torchcodec.
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libavfilter8 libavdevice59
  chromium  # the report test opens reports in headless Chromium
  iproute2  # the two-host training test runs each node in a network namespace of its own
)

install_debian_packages() {
  local missing=() pkg
  for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} Debian packages present"
    return 0
  fi
  echo "install-deps: installing ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The wheels every machine gets; versions come from python/pins.txt.
PYTHON_PACKAGES=(torch mujoco numpy h5py gymnasium pyarrow)
# nvcc and the CUDA headers of the pinned 13.0 release, for machines without a CUDA toolkit.
CUDA_TOOLKIT_WHEELS=("cuda-toolkit[nvcc,crt,cccl,cudart]")

# Creates or updates the virtual environment. A stamp records what was installed (the pins'
# hash and whether the CUDA toolkit wheels were wanted); a matching stamp skips pip entirely.
install_python_environment() {
  local wanted=("${PYTHON_PACKAGES[@]}")
  if [ -z "$(roboloop_system_nvcc)" ]; then
    echo "install-deps: no CUDA toolkit on this machine; nvcc comes from PyPI's CUDA 13.0 wheels"
    wanted+=("${CUDA_TOOLKIT_WHEELS[@]}")
  fi
  local stamp_text
  stamp_text="$(sha256sum python/pins.txt | cut -d' ' -f1) ${wanted[*]}"
  mkdir -p "$(dirname "$ROBOLOOP_VENV")"
  # One installer at a time per environment (several clones may share it).
  exec 9>"$ROBOLOOP_VENV.lock"
  flock 9
  if [ -f "$ROBOLOOP_VENV/roboloop-stamp" ] && [ "$(cat "$ROBOLOOP_VENV/roboloop-stamp")" = "$stamp_text" ]; then
    echo "install-deps: Python environment $ROBOLOOP_VENV up to date"
    return 0
  fi
  if [ ! -x "$ROBOLOOP_VENV/bin/python" ]; then
    echo "install-deps: creating the Python environment $ROBOLOOP_VENV"
    /usr/bin/python3 -m venv "$ROBOLOOP_VENV"
  fi
  echo "install-deps: installing ${wanted[*]} (pinned by python/pins.txt) into $ROBOLOOP_VENV"
  "$ROBOLOOP_VENV/bin/python" -m pip install -q --disable-pip-version-check \
    -c python/pins.txt "${wanted[@]}"
  if [ -z "$(roboloop_system_nvcc)" ]; then lay_out_cuda_wheels_as_a_toolkit; fi
  echo "$stamp_text" > "$ROBOLOOP_VENV/roboloop-stamp"
}

# The CUDA wheels keep their libraries in lib/ under versioned names only, where nvcc's profile
# looks in lib64/ and CMake's CUDA modules look for libNAME.so: links make the folder a toolkit.
lay_out_cuda_wheels_as_a_toolkit() {
  local toolkit library unversioned
  for toolkit in "$ROBOLOOP_VENV"/lib/python3*/site-packages/nvidia/cu13; do
    ln -sfn lib "$toolkit/lib64"
    for library in "$toolkit"/lib/lib*.so.*; do
      unversioned="${library%%.so.*}.so"
      if [ ! -e "$unversioned" ]; then ln -s "$(basename "$library")" "$unversioned"; fi
    done
  done
}

install_debian_packages
install_python_environment
scripts/lerobot-venv.sh
