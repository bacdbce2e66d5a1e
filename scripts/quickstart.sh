#!/usr/bin/env bash
# README command 1: installs what is missing, builds, and runs the default closed loop
# (configs/pipelines/quickstart.yaml) on embedded services under ./.roboloop. Extra arguments
# go to `roboloop run` (e.g. --root DIR, --set train.steps=500).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${ROBOLOOP_BUILD_DIR:-build}"
bash scripts/install-deps.sh
bash scripts/build.sh
exec "$BUILD_DIR/bin/roboloop" run configs/pipelines/quickstart.yaml "$@"
