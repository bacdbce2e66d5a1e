#!/usr/bin/env bash
# Fuzzes every parser of user input (tests/fuzz; docs/RELIABILITY.md, "Fuzzing"): configures a
# Clang build with ROBOLOOP_FUZZ=ON in ./build-fuzz (or $ROBOLOOP_FUZZ_BUILD_DIR; never ./build),
# builds the fuzz targets and runs each with libFuzzer for SECONDS (default 60), one after the
# other, on a fresh copy of its seed corpus tests/fuzz/corpus/<target>/. Prints per target the
# executions, execs/s, coverage (cov: edges, ft: features) and findings, whose inputs stay in
# <build>/fuzz/findings/<target>/ (logs in <build>/fuzz/logs/). $ROBOLOOP_FUZZ_TARGETS (names
# separated by spaces) runs only those targets. Exit status 1 when anything was found.
#
#   scripts/fuzz.sh            # 60 s per target
#   ROBOLOOP_FUZZ_TARGETS="protocol reference" nice -n 5 scripts/fuzz.sh 180
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS]  (SECONDS: a positive whole number, got '$seconds')" >&2
  exit 2
fi
build="${ROBOLOOP_FUZZ_BUILD_DIR:-build-fuzz}"
all_targets=(reference checkpoint_manifest registry_service safetensors protocol hdf5_validation yaml_task
  service_config pipeline_spec sim_service train_service eval_service)
read -r -a targets <<< "${ROBOLOOP_FUZZ_TARGETS:-${all_targets[*]}}"
for target in "${targets[@]}"; do
  if [ ! -d "tests/fuzz/corpus/$target" ]; then
    echo "scripts/fuzz.sh: unknown target '$target' (known: ${all_targets[*]})" >&2
    exit 2
  fi
done

if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^ROBOLOOP_FUZZ:BOOL=ON$' "$build/CMakeCache.txt"; then
  echo "scripts/fuzz.sh: $build is not a ROBOLOOP_FUZZ=ON build; pick another ROBOLOOP_FUZZ_BUILD_DIR" >&2
  exit 2
fi
ROBOLOOP_BUILD_DIR="$build" ROBOLOOP_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DROBOLOOP_FUZZ=ON" bash scripts/build.sh "${targets[@]/#/fuzz_}"

export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp}"
# A huge malloc returns null, as without ASan: libhdf5 asks for sizes read from corrupt files and
# handles null; a huge `new` (our code, the STL) is still reported by ASan, a finding.
export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1}"
summary=()
found=0
for target in "${targets[@]}"; do
  work="$build/fuzz/corpus/$target"
  findings="$build/fuzz/findings/$target"
  log="$build/fuzz/logs/$target.log"
  rm -rf "$work" "$findings"
  mkdir -p "$work" "$findings" "$(dirname "$log")"
  cp tests/fuzz/corpus/"$target"/* "$work"/
  echo "== $target: ${seconds}s (log $log)"
  # Keep going after a finding (-fork with -ignore_crashes) so one run reports them all.
  "$build/tests/fuzz/fuzz_$target" "$work" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -print_final_stats=1 \
    -artifact_prefix="$findings/" > "$log" 2>&1 || true
  # Fork mode's status lines: "#<execs>: cov: <edges> ft: <features> corp: ... exec/s ...".
  last="$(awk '/^#[0-9]+: cov: / {line = $0} END {print line}' "$log")"
  execs="$(awk '{sub(/^#/, "", $1); sub(/:$/, "", $1); print $1 + 0}' <<< "${last:-#0:}")"
  coverage="$(awk '{print $2, $3, $4, $5}' <<< "$last")"
  n_findings="$(find "$findings" -type f | wc -l)"
  found=$((found + n_findings))
  summary+=("$(printf '%-20s %10s execs %8s execs/s  %-24s %s findings' "$target" "$execs" \
    "$((execs / seconds))" "${coverage:-cov: ?}" "$n_findings")")
done
echo "== summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
if [ "$found" -gt 0 ]; then
  echo "findings: $build/fuzz/findings/ (rerun one: $build/tests/fuzz/fuzz_<target> <file>)"
  exit 1
fi
