#!/usr/bin/env bash
# Builds the CUDA attention check (tests/kernels/cuda_attention_check.cc) with plain nvcc and a
# C++ compiler -- no CMake, LibTorch, absl or Debian packages -- and runs it: the way to check
# the CUDA kernels on a GPU machine (issue 5, req 6). Arguments go to the check
# (--emulate, --seed N, --random-cases N). Exit: the check's (0 pass, 1 fail, 77 no GPU).
# CUDA_ARCH (default 90) picks the sm_ target; ROBOLOOP_CUDA_CHECK_DIR the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${ROBOLOOP_CUDA_CHECK_DIR:-build-cuda-check}"
arch="${CUDA_ARCH:-90}"
cxx="${CXX:-c++}"
mkdir -p "$out"

start=$(date +%s)
flags=(-O2 -std=c++17 -I.)
"$cxx" "${flags[@]}" -Wno-psabi -c kernels/attention_core_portable.cc -o "$out/portable.o"
"$cxx" "${flags[@]}" -mavx512f -mfma -c kernels/attention_core_avx512.cc -o "$out/avx512.o"
"$cxx" "${flags[@]}" -mavx2 -mfma -Wno-psabi -c kernels/attention_core_avx2.cc -o "$out/avx2.o"
"$cxx" "${flags[@]}" -DROBOLOOP_KERNELS_HAVE_AVX512 -DROBOLOOP_KERNELS_HAVE_AVX2 \
  -c kernels/attention_core.cc -o "$out/core.o"
for unit in attention_cuda device_buffer; do
  nvcc "${flags[@]}" -arch="sm_${arch}" -c "kernels/cuda/${unit}.cu" -o "$out/${unit}.o"
done
nvcc "${flags[@]}" -arch="sm_${arch}" tests/kernels/cuda_attention_check.cc \
  "$out"/{portable,avx512,avx2,core,attention_cuda,device_buffer}.o -o "$out/cuda_attention_check"
echo "== cuda-check: built in $(( $(date +%s) - start ))s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
"$out/cuda_attention_check" "$@"
