#!/usr/bin/env bash
# Builds Debian 12's own absl (20220623.1) and protobuf (3.21.12) sources, with Debian's patches, as shared
# libraries instrumented with ThreadSanitizer, into $ROBOLOOP_TSAN_DEPS (default ~/.cache/roboloop/tsan-deps).
# scripts/sanitize.sh thread builds against them and runs with them first on the library path, so roboloop,
# and Debian's gRPC through the same sonames, lock through an absl::Mutex that TSan sees, and protobuf's map
# fields have one layout on both sides (docs/RELIABILITY.md, "Sanitizers"). Idempotent: a finished prefix is kept.
set -euo pipefail
prefix="${ROBOLOOP_TSAN_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/roboloop/tsan-deps}"
if [ -f "$prefix/.complete" ]; then echo "$prefix"; exit 0; fi
work="$prefix.work"
pool="http://deb.debian.org/debian/pool/main"
jobs="${ROBOLOOP_BUILD_JOBS:-$(nproc)}"
flags="-fsanitize=thread -O1 -g1 -fno-omit-frame-pointer"
mkdir -p "$work/downloads"

# Downloads pool file $1 (a path under $pool) into downloads/ and checks its SHA-256 ($2) from Debian's index.
fetch_checked() {
  local file="$work/downloads/$(basename "$1")"
  if [ ! -f "$file" ]; then curl -sSfL -o "$file.part" "$pool/$1" && mv "$file.part" "$file"; fi
  echo "$2  $file" | sha256sum -c --quiet - || { rm -f "$file"; echo "checksum mismatch: $pool/$1" >&2; exit 1; }
}

# Unpacks orig tarball $1 and Debian tarball $2 into source dir $3 and applies debian/patches/series.
unpack_patched() {
  rm -rf "$3" && mkdir -p "$3"
  tar xzf "$work/downloads/$1" -C "$3" --strip-components=1
  tar xJf "$work/downloads/$2" -C "$3"
  local patch
  while read -r patch; do
    [ -n "$patch" ] && [ "${patch#\#}" = "$patch" ] && patch -s -d "$3" -p1 < "$3/debian/patches/$patch"
  done < "$3/debian/patches/series"
}

# Configures, builds and installs CMake source dir $1 into $prefix with extra cache arguments $2...
cmake_install() {
  local src="$1"
  shift
  cmake -S "$src" -B "$src/build-tsan" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DBUILD_SHARED_LIBS=ON \
    -DCMAKE_CXX_STANDARD=17 "$@" > "$src.configure.log"
  ninja -C "$src/build-tsan" -j "$jobs" install > "$src.build.log"
}

fetch_checked a/abseil/abseil_20220623.1.orig.tar.gz abfe2897f3a30edaa74bc34365afe3c2a3cd012091a97dc7e008f7016adcd5fe
fetch_checked a/abseil/abseil_20220623.1-1+deb12u2.debian.tar.xz e08490fc7b6f3beca1925953b0c4fb92df2de5e2a01295e4641e2a3d4e528eeb
fetch_checked p/protobuf/protobuf_3.21.12.orig.tar.gz 930c2c3b5ecc6c9c12615cf5ad93f1cd6e12d0aba862b572e076259970ac3a53
fetch_checked p/protobuf/protobuf_3.21.12-3+deb12u1.debian.tar.xz 49cdad49801545cb797355af19fbd6b3627084c6549f629512faaa4e25dd5647

unpack_patched abseil_20220623.1.orig.tar.gz abseil_20220623.1-1+deb12u2.debian.tar.xz "$work/abseil"
cmake_install "$work/abseil"
unpack_patched protobuf_3.21.12.orig.tar.gz protobuf_3.21.12-3+deb12u1.debian.tar.xz "$work/protobuf"
cmake_install "$work/protobuf" -Dprotobuf_BUILD_TESTS=OFF -Dprotobuf_BUILD_PROTOC_BINARIES=OFF \
  -Dprotobuf_BUILD_LIBPROTOC=OFF -Dprotobuf_WITH_ZLIB=ON
touch "$prefix/.complete"
echo "$prefix"
