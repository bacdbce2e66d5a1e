#!/usr/bin/env bash
# Prepares gpu-bundle/ (or $ROBOLOOP_GPU_BUNDLE_DIR): what scripts/gpu-check.sh needs on a GPU
# machine that has LibTorch (system Python's torch), nvcc, CMake, Ninja and GCC but none of our
# Debian libraries and no network (docs/gpu.md).
#
# Contract: run here, on a Debian 12 (bookworm, amd64) machine with network to Debian's archive
# and PyPI. Writes, replacing what was there:
#   debs/      the Debian 12 packages that configure roboloop and build and run its GPU tests
#              and benchmarks, fetched with `apt-get download` (nothing is installed);
#   wheels/    the MuJoCo wheel pinned by python/pins.txt for each CPython version of
#              $ROBOLOOP_GPU_PYTHON_VERSIONS (default 3.12, Ubuntu 24.04's), fetched with pip;
#   MANIFEST   what was fetched (name, version, size), for the record.
# ROBOLOOP_GPU_BUNDLE_EXTRA_DEBS adds packages (e.g. libsqlite3-0 for a GPU machine without it).
# Prints the bundle's size and the size of bundle + source tree against the 60 MiB that may be
# copied to the GPU machine; exits 1 when the bundle exceeds $ROBOLOOP_GPU_BUNDLE_LIMIT_MIB (45).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh

BUNDLE_DIR="${ROBOLOOP_GPU_BUNDLE_DIR:-gpu-bundle}"
PYTHON_VERSIONS="${ROBOLOOP_GPU_PYTHON_VERSIONS:-3.12}"
LIMIT_MIB="${ROBOLOOP_GPU_BUNDLE_LIMIT_MIB:-45}"

# Everything CMake's find_package calls need (cmake/RoboloopDependencies.cmake), plus the run-time
# libraries those link. Left out on purpose, because Ubuntu 24.04 with Python has them under the
# same soname (gpu-check.sh points the -dev symlinks at the system's copy): libc, libstdc++,
# libgcc, libgomp, zlib1g, libzstd1, libidn2-0, libssl3, libsqlite3-0, and GnuTLS with its
# libraries (apt needs them). Also left out: the OSMesa library (it pulls LLVM, ICU and z3;
# gpu-check.sh links a stub that fails to create a context, so nothing renders there).
# gpu-check.sh drops any carried run-time library that the GPU machine has under its soname.
DEB_PACKAGES=(
  # gRPC, protobuf and their libraries
  libgrpc++-dev libgrpc-dev libgrpc++1.51 libgrpc29 protobuf-compiler-grpc
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 libprotoc32 protobuf-compiler
  libabsl-dev libabsl20220623 libre2-dev libre2-9 libc-ares-dev libc-ares2
  # headers (and the -dev symlinks) of libraries the system has at run time
  libssl-dev libsqlite3-dev zlib1g-dev
  # configuration, logging, command lines, JSON, Boost headers
  libyaml-cpp-dev libyaml-cpp0.7 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  libcli11-dev nlohmann-json3-dev libboost1.74-dev
  # HDF5, and libcurl.so.4 that it loads with what Ubuntu 24.04 lacks of libcurl's libraries
  libhdf5-dev libhdf5-103-1 libsz2 libaec0
  libcurl4 libnghttp2-14 librtmp1 libssh2-1 libpsl5 libunistring2 libbrotli1
  libldap-2.5-0 libsasl2-2 libsasl2-modules-db libdb5.3
  libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1 libcom-err2
  # libdeflate: the frame codec of image keys (data/frame_codec.h)
  libdeflate-dev libdeflate0
  # OSMesa's, GL's and EGL's headers, for sim/gl_context.cc (EGL: libegl1, glvnd's loader of the driver's EGL,
  # and libglvnd0, whose libGLdispatch.so.0 it links)
  libosmesa6-dev libgl-dev libegl-dev libegl1 libglvnd0
  # Gloo collectives (train/gloo) and what libgloo.so.0 loads
  libgloo-dev libgloo0 libibverbs1 libnl-3-200 libnl-route-3-200 libhiredis0.14
  # GoogleTest and gmock (headers, static libraries, CMake config)
  libgtest-dev libgmock-dev
  # pkg-config: gRPC's CMake config finds re2 through it
  pkgconf-bin libpkgconf3
)
# shellcheck disable=SC2206  # a space-separated list of package names
DEB_PACKAGES+=(${ROBOLOOP_GPU_BUNDLE_EXTRA_DEBS:-})

# Runs apt-get as root (through sudo when needed).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Downloads the .deb files into $BUNDLE_DIR/debs; refreshes the package lists once if a
# package is not found (stale lists name versions the archive no longer has).
download_debs() {
  rm -rf "$BUNDLE_DIR/debs"
  mkdir -p "$BUNDLE_DIR/debs"
  if ! (cd "$BUNDLE_DIR/debs" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "${DEB_PACKAGES[@]}"); then
    echo "gpu-bundle: apt-get download failed; refreshing the package lists and retrying"
    as_root apt-get update -q
    (cd "$BUNDLE_DIR/debs" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "${DEB_PACKAGES[@]}")
  fi
}

# The version python/pins.txt pins for package $1.
pinned_version() {
  sed -n "s/^$1==\([^ #]*\).*/\1/p" python/pins.txt
}

# Downloads the pinned MuJoCo wheel (no dependencies: CMake needs only its library, headers and
# metadata) for each CPython version the GPU machine may run.
download_wheels() {
  local version python pip_python
  version="$(pinned_version mujoco)"
  [ -n "$version" ] || { echo "gpu-bundle: no mujoco pin in python/pins.txt" >&2; exit 1; }
  pip_python="$ROBOLOOP_VENV/bin/python"
  [ -x "$pip_python" ] || pip_python=python3
  rm -rf "$BUNDLE_DIR/wheels"
  mkdir -p "$BUNDLE_DIR/wheels"
  for python in $PYTHON_VERSIONS; do
    "$pip_python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --implementation cp --python-version "$python" \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$BUNDLE_DIR/wheels" "mujoco==$version"
  done
  # Gymnasium (pure Python): its humanoid.xml is a built-in task's model (CMake asks for it).
  "$pip_python" -m pip download -q --disable-pip-version-check --no-deps -d "$BUNDLE_DIR/wheels" \
    "gymnasium==$(pinned_version gymnasium)"
}

# Records what the bundle holds.
write_manifest() {
  {
    echo "# roboloop GPU bundle, made $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "# package version bytes"
    local deb
    for deb in "$BUNDLE_DIR"/debs/*.deb; do
      echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version) $(stat -c %s "$deb")"
    done
    echo "# wheels"
    (cd "$BUNDLE_DIR/wheels" && ls -l --time-style=+ ./*.whl | awk '{print $NF, $5}')
  } > "$BUNDLE_DIR/MANIFEST"
}

# Bytes of the files git would copy: tracked (and present) and untracked-but-not-ignored.
source_tree_bytes() {
  git ls-files -z --cached --others --exclude-standard \
    | { du -cb --files0-from=- 2>/dev/null || true; } | tail -1 | cut -f1
}

# Prints the sizes; fails when the bundle is over its limit.
report_size() {
  local bundle_bytes tree_bytes mib=$((1024 * 1024))
  bundle_bytes="$(du -sb "$BUNDLE_DIR" | cut -f1)"
  tree_bytes="$(source_tree_bytes)"
  printf 'gpu-bundle: %s holds %d .debs (%.1f MiB), wheels (%.1f MiB), total %.1f MiB\n' \
    "$BUNDLE_DIR" "$(ls "$BUNDLE_DIR"/debs/*.deb | wc -l)" \
    "$(du -sb "$BUNDLE_DIR/debs" | cut -f1 | awk -v m=$mib '{print $1 / m}')" \
    "$(du -sb "$BUNDLE_DIR/wheels" | cut -f1 | awk -v m=$mib '{print $1 / m}')" \
    "$(awk -v b="$bundle_bytes" -v m=$mib 'BEGIN {print b / m}')"
  printf 'gpu-bundle: with the source tree (%.1f MiB): %.1f MiB of the 60 MiB budget\n' \
    "$(awk -v b="$tree_bytes" -v m=$mib 'BEGIN {print b / m}')" \
    "$(awk -v b="$((bundle_bytes + tree_bytes))" -v m=$mib 'BEGIN {print b / m}')"
  if [ "$bundle_bytes" -gt $((LIMIT_MIB * mib)) ]; then
    echo "gpu-bundle: the bundle exceeds ${LIMIT_MIB} MiB" >&2
    exit 1
  fi
}

download_debs
download_wheels
write_manifest
report_size
