#!/usr/bin/env bash
# Installs every Debian 12 package roboloop needs to build, test and run.
# Idempotent: runs `apt-get update` and `apt-get install` only when a package is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  clang  # compiles the AVX2 kernels (kernels/CMakeLists.txt)
  libtorch-dev libgloo-dev libopenblas0-pthread python3-torch
  libmujoco-dev libmujoco-samples libqhull-dev libgl-dev libopengl-dev libosmesa6-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev libboost-dev libboost-system-dev
  libgtest-dev libgmock-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libhdf5-dev zlib1g-dev python3-h5py libssl-dev openssl
  chromium  # the report test opens reports in headless Chromium
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
