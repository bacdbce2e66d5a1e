#!/usr/bin/env bash
# README command 2: installs what is missing, builds, and runs the whole test suite with ctest.
# Prints how long each stage took.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${ROBOLOOP_BUILD_DIR:-build}"

stage_start=$(date +%s)
bash scripts/install-deps.sh
install_s=$(( $(date +%s) - stage_start ))
echo "== install: ${install_s}s"

stage_start=$(date +%s)
bash scripts/build.sh
build_s=$(( $(date +%s) - stage_start ))
echo "== build: ${build_s}s"

stage_start=$(date +%s)
set +e
(cd "$BUILD_DIR" && ctest --output-on-failure --timeout 600 -j "${ROBOLOOP_TEST_JOBS:-2}")
tests_rc=$?
set -e
tests_s=$(( $(date +%s) - stage_start ))
echo "== tests: ${tests_s}s (exit ${tests_rc})"
echo "== total: install ${install_s}s, build ${build_s}s, tests ${tests_s}s"
exit "$tests_rc"
