#!/usr/bin/env bash
# Creates LeRobot's own virtual environment next to the project's (scripts/venv.sh), with the
# pins of python/lerobot-pins.txt: the LeRobot the slow test and the benchmark compare roboloop
# with. Its own environment because lerobot pins torch < 2.11. Idempotent: a stamp of the pins'
# hash skips pip when nothing changed. Called by scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
LEROBOT_VENV="$(dirname "$ROBOLOOP_VENV")/lerobot-venv"
stamp_text="$(sha256sum python/lerobot-pins.txt | cut -d' ' -f1)"
mkdir -p "$(dirname "$LEROBOT_VENV")"
exec 9>"$LEROBOT_VENV.lock"
flock 9
if [ -f "$LEROBOT_VENV/roboloop-stamp" ] && [ "$(cat "$LEROBOT_VENV/roboloop-stamp")" = "$stamp_text" ]; then
  echo "lerobot-venv: $LEROBOT_VENV up to date"
  exit 0
fi
if [ ! -x "$LEROBOT_VENV/bin/python" ]; then /usr/bin/python3 -m venv "$LEROBOT_VENV"; fi
echo "lerobot-venv: installing lerobot (pinned by python/lerobot-pins.txt) into $LEROBOT_VENV"
"$LEROBOT_VENV/bin/python" -m pip install -q --disable-pip-version-check -c python/lerobot-pins.txt lerobot
echo "$stamp_text" > "$LEROBOT_VENV/roboloop-stamp"
