#!/usr/bin/env bash
# README command 1: installs what is missing, builds, and runs the default closed loop on
# embedded defaults. Until the pipeline runner exists, the default run is a registry round
# trip on a local store: register a file, list it, fetch it back and verify it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${ROBOLOOP_BUILD_DIR:-build}"
bash scripts/install-deps.sh
bash scripts/build.sh
exec "$BUILD_DIR/bin/roboloop" quickstart "$@"
