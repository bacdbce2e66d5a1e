#!/usr/bin/env bash
# Builds roboloop with sanitizers and runs tests under them (issue 25, req 2; docs/RELIABILITY.md).
#   bash scripts/sanitize.sh address [TEST...]        ASan+UBSan Clang build in build-asan/ (or
#                                                      $ROBOLOOP_ASAN_BUILD_DIR): the whole suite, then
#                                                      ctest (every test but the gpu label); or only the
#                                                      named test targets, run directly
#   bash scripts/sanitize.sh thread [TEST...]         TSan build of the concurrent parts (env pool,
#                                                      scheduler, registry group commit, eval fan-out,
#                                                      the training loaders' workers, the episode cache,
#                                                      frame codec, cancellation, gRPC server, SQLite
#                                                      checkpointer, run log, task registry)
#                                                      in build-tsan/, runs their test binaries (or the
#                                                      named test targets)
# Findings abort the test that hit them; suppressions live in scripts/sanitizers/, each with its reason.
# TSan needs absl and protobuf built with TSan too (with Debian's prebuilt ones it reports absl::Mutex-guarded
# accesses as races and protobuf's map fields change layout under TSan and crash): the thread build first builds
# Debian's own sources of both with TSan (scripts/sanitizers/tsan-deps.sh, once, cached outside the clone), compiles
# against them and runs with them first on the library path (docs/RELIABILITY.md, "Sanitizers").
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-address}"
shift || true
source scripts/venv.sh
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
supp="$PWD/scripts/sanitizers"

# Configures build dir $1 with sanitizers $2 (Release, line tables for readable reports); further arguments go
# to cmake.
configure() {
  local dir="$1" sanitizers="$2"
  shift 2
  if [ -f "$dir/build.ninja" ]; then return; fi
  local cuda_args=()
  local nvcc
  nvcc="$(roboloop_nvcc)"
  if [ -n "$nvcc" ]; then cuda_args=("-DCMAKE_CUDA_COMPILER=$nvcc"); fi
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-g1 \
    -DROBOLOOP_SANITIZE="$sanitizers" -DROBOLOOP_VENV="$ROBOLOOP_VENV" "${cuda_args[@]}" "$@"
}

# Runs the test binaries $2... of build dir $1 one after another; fails if any fails.
run_test_binaries() {
  local dir="$1" failed=0
  shift
  for t in "$@"; do
    echo "== $dir: $t"
    "$dir/tests/$t" || failed=1
  done
  return "$failed"
}

jobs="${ROBOLOOP_BUILD_JOBS:-$(nproc)}"
case "$kind" in
  address)
    # Clang, so that stack use after return is detected too: GCC 12's ASan places stack objects of 64-byte
    # alignment (the AVX-512 kernels' vector temporaries) on its fake stack misaligned, and their aligned loads
    # fault (GCC bug 110027; docs/RELIABILITY.md, "Sanitizers"). A folder configured with another compiler is
    # configured again.
    dir="${ROBOLOOP_ASAN_BUILD_DIR:-build-asan}"
    if [ -f "$dir/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$dir/CMakeCache.txt"; then
      echo "sanitize.sh: $dir was configured with another compiler; configuring it again with Clang"
      rm -rf "$dir"
    fi
    configure "$dir" "address,undefined" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
    # intercept_tls_get_addr=0: with it, LeakSanitizer's tracer scans a dynamic-TLS range it recorded for a worker
    # thread of LibTorch that is not mapped (0x20001bcf8, 4 GiB long, seen with LSAN_OPTIONS=verbosity=1:log_threads=1)
    # and dies of signal 11 as the process exits (docs/RELIABILITY.md, "Sanitizers").
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
    ASAN_OPTIONS+=":intercept_tls_get_addr=0"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
    if [ "$#" -eq 0 ]; then
      ninja -C "$dir" -j "$jobs"
      (cd "$dir" && ctest --output-on-failure --timeout 1200 -LE gpu -j "${ROBOLOOP_TEST_JOBS:-2}")
      exit
    fi
    ninja -C "$dir" -j "$jobs" "$@"
    run_test_binaries "$dir" "$@"
    ;;
  thread)
    tests=(sim_worker_pool_test pipeline_scheduler_test registry_concurrency_test eval_eval_service_test
      train_loader_test train_stream_loader_test data_episode_cache_test data_frame_codec_test data_run_ahead_test
      common_cancellation_test common_signal_cancellation_test common_grpc_server_test
      common_grpc_server_cancellation_test common_sqlite_checkpointer_test train_run_log_test sim_task_registry_test)
    if [ "$#" -gt 0 ]; then tests=("$@"); fi
    deps="$(bash scripts/sanitizers/tsan-deps.sh | tail -n 1)"
    configure build-tsan thread -DCMAKE_PREFIX_PATH="$deps"
    ninja -C build-tsan -j "$jobs" "${tests[@]}"
    export LD_LIBRARY_PATH="$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
    run_test_binaries build-tsan "${tests[@]}"
    ;;
  *)
    echo "usage: scripts/sanitize.sh address|thread [TEST...]" >&2
    exit 2
    ;;
esac
