#!/usr/bin/env bash
# The GPU check (docs/gpu.md). On a machine with an NVIDIA GPU, LibTorch 2.11 for CUDA 13.0 in its
# Python (pip's torch), nvcc 13.0, CMake, Ninja and GCC -- but none of roboloop's Debian
# libraries and no network -- it builds the GPU tests and benchmarks from this source tree and
# gpu-bundle/ (made by scripts/gpu-bundle.sh on a Debian 12 machine), runs every ctest test
# labelled `gpu` and the GPU benchmarks, runs the quick start's closed loop with its training
# stages on the GPU (device auto), and prints a summary with the time of each stage.
#
# Contract:
#   Run from a copy of the repository holding gpu-bundle/ (or $ROBOLOOP_GPU_BUNDLE_DIR).
#   Writes only $ROBOLOOP_GPU_CHECK_WORK (default /tmp/roboloop-gpu-check: the packages unpacked
#   with `dpkg -x` into prefix/, never into /, and a Python environment venv/ that sees the
#   system's torch and holds the carried MuJoCo wheel) and the build folder
#   $ROBOLOOP_GPU_CHECK_BUILD (default build-gpu/). With ROBOLOOP_GPU_CHECK_OUT=DIR it also
#   writes DIR/gpu-check.log (everything printed), DIR/summary.txt, DIR/ctest.log and
#   DIR/bench-<n>-<name>.txt and DIR/quickstart.txt.
#   Exit: 0 every gpu test and benchmark passed; 2 the machine lacks something (GPU, bundle,
#   matching wheel, a system library); 1 (or the failing command's status) otherwise.
#   Settings: ROBOLOOP_GPU_PYTHON (python3), TORCH_CUDA_ARCH_LIST (the GPU's, from nvidia-smi),
#   ROBOLOOP_BUILD_JOBS (all cores), ROBOLOOP_TEST_JOBS (4), ROBOLOOP_GPU_BENCHMARKS
#   (';'-separated "<bench binary> <args>"), ROBOLOOP_GPU_CHECK_CMAKE_ARGS (extra cmake
#   arguments), ROBOLOOP_GPU_CHECK_VENV (an existing environment to use instead of making one),
#   ROBOLOOP_GPU_QUICKSTART_S (the quick start's own time cap in seconds, default 900; 0 skips it),
#   ROBOLOOP_GPU_CHECK_UNTIL=configure (stop after configuring: checks the bundle, needs no GPU).
# shellcheck disable=SC2317  # the stage functions run through stage()
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh

BUNDLE="$(realpath -m "${ROBOLOOP_GPU_BUNDLE_DIR:-gpu-bundle}")"
WORK="${ROBOLOOP_GPU_CHECK_WORK:-/tmp/roboloop-gpu-check}"
PREFIX="$WORK/prefix"
VENV="${ROBOLOOP_GPU_CHECK_VENV:-$WORK/venv}"
# The nvcc lookups of scripts/venv.sh, on this script's environment.
ROBOLOOP_VENV="$VENV"
source scripts/venv.sh
BUILD="${ROBOLOOP_GPU_CHECK_BUILD:-build-gpu}"
OUT="${ROBOLOOP_GPU_CHECK_OUT:-}"
UNTIL="${ROBOLOOP_GPU_CHECK_UNTIL:-}"
JOBS="${ROBOLOOP_BUILD_JOBS:-$(nproc)}"
BUDGET_S=480  # the issue's 8 minutes, build included
MULTIARCH=x86_64-linux-gnu

# What the gpu-labelled tests need built, unless the project defines the aggregate target
# roboloop_gpu_checks: the binaries with CUDA cases (kernels' varlen attention test: LibTorch's
# FlashAttention / memory-efficient kernels behind the op and the own CUDA kernels; the
# trainer test and its libroboloop_torch.so; the precision, input pipeline, CUDA graph step and
# vision policies' tests; the standalone CUDA attention check; the camera test, EGL on the GPU), and, on a
# machine with two GPUs or more, the training CLI test (NCCL ranks; it builds the whole CLI).
GPU_TEST_TARGETS=(kernels_varlen_attention_test kernels_host_to_device_test train_trainer_test train_precision_test train_input_pipeline_test
  train_cuda_graph_test train_graphed_step_test train_vision_policy_test cuda_attention_check sim_camera_test)
MULTI_GPU_TEST_TARGETS=(train_train_cli_test)
# The GPU benchmarks, "<binary in build/bin> <arguments>" separated by ';': train_bench's
# part g (ours vs the PyTorch peer, alternating) on the issue's 151 M-parameter policy (batch
# 64; its peer also runs torch.compile) and on the small default policy (batch 256; also ours
# padded as a CUDA graph vs eager, a few seconds more). Two runs each keep the stage within a few
# minutes of the 8-minute budget; ROBOLOOP_GPU_BENCHMARKS="" skips it.
GPU_BENCHMARKS="${ROBOLOOP_GPU_BENCHMARKS-train_bench --device cuda --model 151m --batch 64 --runs 2 --steps 10 --warmup 3;train_bench --device cuda --model small --batch 256 --runs 2 --steps 20 --warmup 3 --cuda-graph on}"
# The quick start's closed loop (configs/pipelines/quickstart.yaml, training stages on
# device auto) runs after the benchmarks under its own cap, outside the 8-minute budget.
QUICKSTART_S="${ROBOLOOP_GPU_QUICKSTART_S:-900}"

# Where the packages put libraries (some of Debian 12's still use /lib).
LIB_DIRS=("$PREFIX/usr/lib/$MULTIARCH" "$PREFIX/lib/$MULTIARCH" "$PREFIX/usr/lib")
# The unpacked Debian libraries come first for every program this script starts (the build
# runs protoc, and gtest discovery runs the test binaries); the system's libc, libstdc++, zlib,
# OpenSSL and SQLite serve as they are (gpu-bundle.sh does not carry them).
LD_LIBRARY_PATH="$(IFS=:; echo "${LIB_DIRS[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
export PKG_CONFIG_LIBDIR="$PREFIX/usr/lib/$MULTIARCH/pkgconfig:$PREFIX/usr/share/pkgconfig:/usr/lib/$MULTIARCH/pkgconfig:/usr/share/pkgconfig"
export PATH="$PREFIX/usr/bin:$PATH"

fail_setup() {
  echo "gpu-check: $*" >&2
  exit 2
}

# Copies everything printed from here on into $OUT/gpu-check.log.
start_log() {
  [ -n "$OUT" ] || return 0
  mkdir -p "$OUT"
  exec > >(tee "$OUT/gpu-check.log") 2>&1
}

# Prints the GPU, driver and toolchain; without a GPU only a configure-only run may go on.
machine_info() {
  echo "== gpu-check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), $(nproc) cores, git $(git rev-parse --short=12 HEAD 2>/dev/null || echo '?')"
  if ! nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null; then
    [ "$UNTIL" = configure ] || fail_setup "no NVIDIA GPU (nvidia-smi failed)"
    echo "no NVIDIA GPU: configuring only"
  fi
  local nvcc
  nvcc="$(roboloop_system_nvcc)"
  echo "nvcc: ${nvcc:-none in CUDACXX, PATH or /usr/local/cuda (configure looks among the nvidia wheels of the Python environment)}"
  echo "cmake: $(cmake --version | head -1), ninja $(ninja --version), $(c++ --version | head -1)"
  [ -d "$BUNDLE/debs" ] || fail_setup "no $BUNDLE/debs: run scripts/gpu-bundle.sh on a Debian 12 machine and copy gpu-bundle/ here (docs/gpu.md)"
}

# glvnd's libEGL finds a driver's EGL through vendor files in /usr/share/glvnd/egl_vendor.d and
# /etc/glvnd/egl_vendor.d. A driver mounted elsewhere (a container's /usr/local/nvidia) keeps its
# file beside itself: name that file, and its library folder where the loader's cache lacks it,
# unless the environment already names a vendor.
point_egl_at_the_driver() {
  local dir found
  [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}${__EGL_VENDOR_LIBRARY_DIRS:-}" ] || return 0
  for dir in /usr/share/glvnd/egl_vendor.d /etc/glvnd/egl_vendor.d; do
    if compgen -G "$dir/*nvidia*.json" >/dev/null; then return 0; fi
  done
  found="$(find /usr/local/nvidia /usr/lib/nvidia /opt/nvidia -path '*egl_vendor.d/*nvidia*.json' 2>/dev/null \
    | head -1 || true)"
  if [ -z "$found" ]; then
    echo "EGL: no NVIDIA vendor file found (gpu.GlBackendTest.EglRendersOnTheNvidiaGpu will say what fails)"
    return 0
  fi
  export __EGL_VENDOR_LIBRARY_FILENAMES="$found"
  echo "EGL: the driver's vendor file is $found"
  if [ -z "$(system_library libEGL_nvidia.so.0)" ]; then
    for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
      if [ -e "$dir/libEGL_nvidia.so.0" ]; then export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"; fi
    done
  fi
}

# How many GPUs the driver shows.
gpu_count() {
  nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true
}

# The compute capability of GPU 0 as TORCH_CUDA_ARCH_LIST wants it ("9.0"); 9.0 without a GPU.
gpu_arch() {
  local cap
  cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 || true)"
  echo "${cap:-9.0}"
}

# --- unpack -----------------------------------------------------------------------------------

# Unpacks every carried .deb into $PREFIX (dpkg -x: files only, no maintainer scripts).
unpack_debs() {
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  local deb
  for deb in "$BUNDLE"/debs/*.deb; do dpkg -x "$deb" "$PREFIX"; done
  relocate_package_files
  merge_multiarch_headers
  link_system_runtimes
  prefer_system_runtimes
  echo "unpacked $(ls "$BUNDLE"/debs/*.deb | wc -l) packages into $PREFIX ($(du -sh "$PREFIX" | cut -f1))"
}

# Debian's CMake and pkg-config files may name /usr (Gloo's imported library, every .pc
# file); point them at the prefix. Files that compute their prefix from their own location
# are unaffected.
relocate_package_files() {
  find "$PREFIX/usr" \( -name '*.cmake' -path '*/cmake/*' \) -type f -print0 \
    | xargs -0 -r sed -i "s#\"/usr\\([/\"]\\)#\"$PREFIX/usr\\1#g"
  find "$PREFIX/usr" -name '*.pc' -type f -print0 \
    | xargs -0 -r sed -i "s#\\([= ]\\|-[IL]\\)/usr\\([/ ]\\|\$\\)#\\1$PREFIX/usr\\2#g"
}

# Debian puts some headers (OpenSSL's configuration.h, opensslconf.h) under the multiarch
# include folder, which only a compiler of the system searches: link them into the prefix's
# include folder next to the others.
merge_multiarch_headers() {
  local header
  [ -d "$PREFIX/usr/include/$MULTIARCH" ] || return 0
  (cd "$PREFIX/usr/include/$MULTIARCH" && find . -type f -print0) | while IFS= read -r -d '' header; do
    header="${header#./}"
    mkdir -p "$(dirname "$PREFIX/usr/include/$header")"
    ln -sfn "$PREFIX/usr/include/$MULTIARCH/$header" "$PREFIX/usr/include/$header"
  done
}

# The -dev packages' libX.so links name run-time files left to the system (zlib, OpenSSL,
# SQLite): point each dangling one at the system's library of the same soname.
link_system_runtimes() {
  local link target soname system
  while IFS= read -r -d '' link; do
    target="$(basename "$(readlink "$link")")"
    soname="$(echo "$target" | sed -n 's/^\(lib.*\.so\.[0-9]*\).*/\1/p')"
    [ -n "$soname" ] || continue
    system="$(system_library "$soname")"
    if [ -n "$system" ]; then
      ln -sfn "$system" "$link"
    elif [[ "$(basename "$link")" =~ ^lib(z|ssl|crypto|sqlite3)\.so$ ]]; then
      fail_setup "the system has no $soname: rerun gpu-bundle.sh with" \
        "ROBOLOOP_GPU_BUNDLE_EXTRA_DEBS naming its Debian package (zlib1g, libssl3, libsqlite3-0)"
    fi
  done < <(find "$PREFIX/usr/lib" "$PREFIX/lib" -xtype l -name 'lib*.so' -print0)
}

# The path of the system's library with this soname (from the loader's cache), or nothing.
system_library() {
  # awk reads to the end: an early exit would stop ldconfig with SIGPIPE and fail the pipeline.
  /sbin/ldconfig -p | awk -v name="$1" '$1 == name && /x86-64/ && !found {print $NF; found = 1}'
}

# A carried library that no -dev link names is loaded only by its soname: where the system has
# that soname (a GPU server's own rdma-core, libcurl, Kerberos), the system's copy serves and
# the carried one is removed, so that LD_LIBRARY_PATH cannot shadow it.
prefer_system_runtimes() {
  local dir lib name dropped=()
  for dir in "${LIB_DIRS[@]}"; do
    for lib in "$dir"/lib*.so.*; do
      name="$(basename "$lib")"
      [ -e "$lib" ] || continue
      ! has_dev_link "${name%%.so.*}" || continue
      [ -n "$(system_library "$name")" ] || continue
      rm -f "$(readlink -f "$lib")" "$lib"
      dropped+=("$name")
    done
  done
  if [ "${#dropped[@]}" -gt 0 ]; then echo "the system's copy serves for ${dropped[*]}"; fi
}

# Whether a -dev package's libNAME.so (what the linker and CMake use) is in the prefix.
has_dev_link() {
  local dir
  for dir in "${LIB_DIRS[@]}"; do
    if [ -e "$dir/$1.so" ]; then return 0; fi
  done
  return 1
}

# --- Python -----------------------------------------------------------------------------------

# A virtual environment over the system Python (its torch and nvidia-* wheels) with the
# carried MuJoCo wheel: what cmake/RoboloopToolchain.cmake asks ROBOLOOP_VENV for.
make_python_env() {
  if [ -n "${ROBOLOOP_GPU_CHECK_VENV:-}" ]; then
    echo "using the existing environment $VENV"
  else
    local python="${ROBOLOOP_GPU_PYTHON:-python3}" tag wheel
    tag="$("$python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')"
    wheel="$(ls "$BUNDLE"/wheels/mujoco-*-"$tag"-*.whl 2>/dev/null | head -1 || true)"
    [ -n "$wheel" ] || fail_setup "no MuJoCo wheel for $tag in $BUNDLE/wheels: rerun gpu-bundle.sh with ROBOLOOP_GPU_PYTHON_VERSIONS=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    rm -rf "$VENV"
    "$python" -m venv --system-site-packages --without-pip "$VENV"
    see_site_packages_of "$python"
    install_wheel "$wheel"
    install_wheel "$(ls "$BUNDLE"/wheels/gymnasium-*-py3-none-any.whl | head -1)"
  fi
  "$VENV/bin/python" - <<'EOF'
import importlib.metadata as m, importlib.util as u, sys
import torch
assert u.find_spec("mujoco") and u.find_spec("nvidia.nccl") and u.find_spec("gymnasium"), \
    "mujoco, gymnasium or nvidia-nccl missing"
print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
      f"mujoco {m.version('mujoco')}, GPUs visible to torch: {torch.cuda.device_count()}")
EOF
  [ "$UNTIL" = configure ] || require_torch_gpu
}

# --system-site-packages shows the new environment the base interpreter's site-packages only:
# not the user's (where `pip install --user` puts torch), nor those of a virtual environment
# that python $1 itself runs in (the device runner's python3 is /opt/torch/.venv's, torch
# inside). A .pth file adds every site-packages folder python $1 sees, with the .pth files in
# them, so torch and the nvidia-* wheels import as they do for it.
see_site_packages_of() {
  "$1" -c 'import os, site
for folder in site.getsitepackages() + [site.getusersitepackages()]:
    if os.path.isdir(folder):
        print("import site; site.addsitedir(%r)" % folder)' > "$(venv_site)/roboloop-python-sites.pth"
}

venv_site() {
  "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
}

# Installs a wheel offline: with pip when the system has it, else by unzipping it into the
# environment's site-packages (the wheel carries its metadata; MuJoCo's needs no scripts).
install_wheel() {
  if "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps "$1"
  else
    "$VENV/bin/python" -m zipfile -e "$1" "$(venv_site)"
  fi
}

# Without a GPU that LibTorch sees, every CUDA test would skip and the check would pass.
require_torch_gpu() {
  "$VENV/bin/python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
    || fail_setup "LibTorch in $VENV sees no CUDA device"
}

# --- build ------------------------------------------------------------------------------------

# Prints the nvcc to build with: the system's (CUDACXX, PATH, /usr/local/cuda), else the one of
# the nvidia wheels that the environment's Python imports (pip's nvidia-cuda-nvcc: the device
# runner's machines have nvcc only in /opt/torch/.venv), called through a toolkit view in $WORK
# that adds the links the wheels lack. Fails the setup, saying where it looked, without one.
cuda_compiler() {
  local nvcc
  nvcc="$(roboloop_system_nvcc)"
  if [ -n "$nvcc" ]; then echo "$nvcc"; return 0; fi
  nvcc="$(roboloop_wheel_nvcc "$VENV/bin/python")"
  [ -n "$nvcc" ] || fail_setup "no nvcc: none in CUDACXX, PATH or /usr/local/cuda, nor among the nvidia" \
    "wheels that $VENV/bin/python imports (install nvidia-cuda-nvcc 13.0 there, or set CUDACXX)"
  echo "nvcc of the nvidia wheels: $nvcc" >&2
  roboloop_cuda_toolkit_view "$(dirname "$(dirname "$nvcc")")" "$WORK/cuda-toolkit"
}

configure() {
  local nvcc
  nvcc="$(cuda_compiler)"
  echo "nvcc: $nvcc ($("$nvcc" --version | tail -1))"
  rm -f "$BUILD/CMakeCache.txt"
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DROBOLOOP_VENV="$VENV" -DTORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-$(gpu_arch)}" \
    -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
    -DPKG_CONFIG_EXECUTABLE="$PREFIX/usr/bin/pkgconf" \
    -DProtobuf_PROTOC_EXECUTABLE="$PREFIX/usr/bin/protoc" \
    ${ROBOLOOP_GPU_CHECK_CMAKE_ARGS:-}
}

# The aggregate target when the project has one, else the lists above; plus the benchmarks.
# Keeps going past a failed target, so that the tests that did build still run.
build_targets() {
  local targets=() entry
  if ninja -C "$BUILD" -t query roboloop_gpu_checks >/dev/null 2>&1; then
    targets=(roboloop_gpu_checks)
  elif [ "$(gpu_count)" -ge 2 ]; then
    targets=("${GPU_TEST_TARGETS[@]}" "${MULTI_GPU_TEST_TARGETS[@]}")
  else
    targets=("${GPU_TEST_TARGETS[@]}")
    echo "one GPU: not building ${MULTI_GPU_TEST_TARGETS[*]} (its gpu cases need two)"
  fi
  while IFS= read -r entry; do
    targets+=("${entry%% *}")
  done < <(benchmark_entries)
  if [ "$QUICKSTART_S" -gt 0 ]; then targets+=(roboloop); fi
  echo "building ${targets[*]} with $JOBS jobs"
  ninja -C "$BUILD" -k 0 -j "$JOBS" "${targets[@]}"
}

# --- run --------------------------------------------------------------------------------------

run_tests() {
  local log="$WORK/ctest.out" rc=0
  ctest --test-dir "$BUILD" -L gpu --no-tests=error --output-on-failure --timeout 600 \
    -j "${ROBOLOOP_TEST_JOBS:-4}" 2>&1 | tee "$log" || rc=$?
  if [ -n "$OUT" ]; then cp "$BUILD/Testing/Temporary/LastTest.log" "$OUT/ctest.log" 2>/dev/null || true; fi
  return "$rc"
}

# One benchmark entry per line.
benchmark_entries() {
  tr ';' '\n' <<< "$GPU_BENCHMARKS" | sed 's/^ *//; s/ *$//' | grep -v '^$' || true
}

run_benchmarks() {
  local entry name rc=0 n=0
  if [ -z "$(benchmark_entries)" ]; then
    echo "no GPU benchmarks defined (ROBOLOOP_GPU_BENCHMARKS is empty)"
    return 0
  fi
  while IFS= read -r entry; do
    name="${entry%% *}"
    n=$((n + 1))
    echo "-- $entry"
    # shellcheck disable=SC2086
    "$BUILD/bin/$name" ${entry#"$name"} 2>&1 | tee "${OUT:-$WORK}/bench-$n-$name.txt" || rc=1
  done < <(benchmark_entries)
  return "$rc"
}

# The quick start with its training on the GPU, capped at $QUICKSTART_S seconds: its output
# (the train stages' placement and samples/s, the gate, the champion) and its wall time go to
# $OUT/quickstart.txt (else $WORK/quickstart.txt) for docs/BENCHMARKS.md.
run_quickstart() {
  local log="${OUT:-$WORK}/quickstart.txt" root="$WORK/quickstart" start=$SECONDS rc=0
  if [ "$QUICKSTART_S" -le 0 ]; then
    echo "quick start skipped (ROBOLOOP_GPU_QUICKSTART_S=0)"
    return 0
  fi
  rm -rf "$root"
  timeout --signal=INT --kill-after=60 "$QUICKSTART_S" \
    "$BUILD/bin/roboloop" run configs/pipelines/quickstart.yaml --root "$root" 2>&1 | tee "$log" || rc=$?
  if [ "$rc" -eq 124 ]; then echo "quick start: stopped at its cap of $QUICKSTART_S s" | tee -a "$log"; fi
  echo "quick start: exit $rc after $((SECONDS - start)) s (cap $QUICKSTART_S s), GPU:" \
    "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee -a "$log"
  return "$rc"
}

# --- summary ----------------------------------------------------------------------------------

summary() {
  local line total=0 name seconds status
  echo
  echo "== gpu-check summary"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /' || true
  for line in "${STAGES[@]}"; do
    read -r name seconds status <<< "$line"
    printf '  %-10s %5d s  %s\n' "$name" "$seconds" "$status"
    [ "$name" = quickstart ] || total=$((total + seconds))
  done
  printf '  %-10s %5d s  (budget %d s, the quick start aside: %s)\n' total "$total" "$BUDGET_S" \
    "$([ "$total" -le "$BUDGET_S" ] && echo within || echo EXCEEDED)"
  if [ -f "$WORK/ctest.out" ]; then
    grep -E 'tests passed|tests failed' "$WORK/ctest.out" | tail -1 | sed 's/^/  tests: /' || true
    sed -n '/The following tests did not run/,/^$/p; /The following tests FAILED/,/^$/p' \
      "$WORK/ctest.out" | sed 's/^/  /'
  fi
}

# Prints the summary (also into $OUT/summary.txt) and exits with the given status.
finish() {
  local rc="$1"
  if [ -n "$OUT" ]; then summary | tee "$OUT/summary.txt"; else summary; fi
  exit "$rc"
}

main() {
  start_log
  machine_info
  point_egl_at_the_driver
  mkdir -p "$WORK"
  rm -f "$WORK/ctest.out"
  # A stage runs under no ||, && or if (scripts/stage.sh): its status is read from STAGE_RC.
  stage unpack unpack_debs
  if [ "$STAGE_RC" -ne 0 ]; then finish "$STAGE_RC"; fi
  stage python make_python_env
  if [ "$STAGE_RC" -ne 0 ]; then finish "$STAGE_RC"; fi
  stage configure configure
  if [ "$STAGE_RC" -ne 0 ]; then finish "$STAGE_RC"; fi
  if [ "$UNTIL" = configure ]; then finish 0; fi
  local rc=0
  stage build build_targets
  if [ "$STAGE_RC" -ne 0 ]; then rc=1; fi
  stage tests run_tests
  if [ "$STAGE_RC" -ne 0 ]; then rc=1; fi
  stage bench run_benchmarks
  if [ "$STAGE_RC" -ne 0 ]; then rc=1; fi
  stage quickstart run_quickstart
  if [ "$STAGE_RC" -ne 0 ]; then rc=1; fi
  finish "$rc"
}

main "$@"
