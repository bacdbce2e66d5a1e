#!/usr/bin/env bash
# The nvcc lookups of scripts/venv.sh on a stand-in of pip's CUDA 13 wheels (site-packages/
# nvidia/cu13 with bin/nvcc, include/ and versioned libraries in lib/, no lib64): Python finds
# their nvcc also through a folder that only its path names, and the toolkit view shows the
# wheels' folder with lib64 and unversioned library links without writing into it, and its
# nvcc runs as <view>/bin/nvcc (so that nvcc's profile takes the view as its toolkit).
set -euo pipefail
# shellcheck source=scripts/venv.sh
source "$(dirname "$0")/../../scripts/venv.sh"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
wheels="$work/site/nvidia/cu13"
mkdir -p "$wheels/bin" "$wheels/include" "$wheels/lib" "$wheels/nvvm/bin"
# shellcheck disable=SC2016  # the stand-in nvcc prints the path it was called by
printf '#!/bin/sh\necho "$0"\n' > "$wheels/bin/nvcc"
chmod +x "$wheels/bin/nvcc"
touch "$wheels/bin/nvcc.profile" "$wheels/lib/libcudart.so.13" "$wheels/include/cuda_runtime.h"
# A Python that sees the stand-in only through its path (as a .pth file would add it).
printf '#!/bin/sh\nPYTHONPATH=%q exec python3 "$@"\n' "$work/site" > "$work/python"
chmod +x "$work/python"

failures=0
check() {
  local what="$1" expected="$2" actual="$3"
  if [ "$expected" != "$actual" ]; then
    echo "FAIL: $what: expected '$expected', got '$actual'" >&2
    failures=$((failures + 1))
  fi
}

check "wheel nvcc" "$wheels/bin/nvcc" "$(roboloop_wheel_nvcc "$work/python")"
check "no python, no nvcc" "" "$(roboloop_wheel_nvcc "$work/no-python")"
mkdir -p "$work/venv/bin"
ln -s "$work/python" "$work/venv/bin/python"
check "the environment's nvcc where the system has none" "$wheels/bin/nvcc" \
  "$(ROBOLOOP_IGNORE_SYSTEM_CUDA=1 ROBOLOOP_VENV="$work/venv" roboloop_nvcc)"

view="$work/view"
check "view's nvcc" "$view/bin/nvcc" "$(roboloop_cuda_toolkit_view "$wheels" "$view")"
check "view's nvcc runs as itself" "$view/bin/nvcc" "$("$view/bin/nvcc")"
check "view's bin is a folder" yes "$([ -d "$view/bin" ] && [ ! -L "$view/bin" ] && echo yes)"
check "view's profile" "$wheels/bin/nvcc.profile" "$(readlink -f "$view/bin/nvcc.profile")"
check "view's include" "$wheels/include" "$(readlink -f "$view/include")"
check "view's nvvm" "$wheels/nvvm" "$(readlink -f "$view/nvvm")"
check "view's lib64" "$wheels/lib/libcudart.so.13" "$(readlink -f "$view/lib64/libcudart.so")"
check "wheels untouched" "bin include lib nvvm" "$(cd "$wheels" && echo *)"
check "wheels' lib untouched" "libcudart.so.13" "$(cd "$wheels/lib" && echo *)"

if [ "$failures" -gt 0 ]; then exit 1; fi
echo "nvcc lookups: all checks passed"
