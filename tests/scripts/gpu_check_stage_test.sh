#!/usr/bin/env bash
# The stage runner of scripts/gpu-check.sh (scripts/stage.sh): a stage stops at its first failing
# command, even inside a function it calls, and reports that command and its status; a failure
# the stage tests for does not stop it; a stage that fails does not stop the script.
set -euo pipefail
# shellcheck source=scripts/stage.sh
source "$(dirname "$0")/../../scripts/stage.sh"

failures=0
check() {
  local what="$1" expected="$2" actual="$3"
  if [ "$expected" != "$actual" ]; then
    echo "FAIL: $what: expected '$expected', got '$actual'" >&2
    failures=$((failures + 1))
  fi
}

ran_after_failure=no
helper_that_fails_early() {
  # shellcheck disable=SC2034  # a stage function's local of the runner's names must not matter
  local name=shadowing failure=shadowing
  false
  ran_after_failure=yes
}
stage_with_early_failure() {
  helper_that_fails_early
  echo "the stage went on" >&2
  true
}
stage_with_expected_failures() {
  if false; then :; fi
  false || true
  ! false
}
stage_exiting_with() {
  (exit "$1")
}

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
stage early stage_with_early_failure > "$log" 2>&1
output="$(cat "$log")"
check "early failure: status" 1 "$STAGE_RC"
check "early failure: recorded" "failed (exit 1) at: false" "$(cut -d' ' -f3- <<< "${STAGES[-1]}")"
check "early failure: later commands ran" no "$ran_after_failure"
check "early failure: the stage went on" "" "$(grep -o 'the stage went on' <<< "$output" || true)"
check "early failure: reported" "gpu-check: early: failed at line" \
  "$(grep -o 'gpu-check: early: failed at line' <<< "$output" || true)"

stage expected stage_with_expected_failures >/dev/null 2>&1
check "expected failures: status" 0 "$STAGE_RC"
check "expected failures: recorded" "ok" "$(cut -d' ' -f3- <<< "${STAGES[-1]}")"

stage exits stage_exiting_with 3 >/dev/null 2>&1
check "exit status kept" 3 "$STAGE_RC"
check "stages recorded" "early expected exits" "$(for s in "${STAGES[@]}"; do echo -n "${s%% *} "; done | sed 's/ $//')"

# gpu-check.sh itself calls no stage where bash would ignore `set -e` in it.
check "gpu-check.sh: stages under || or &&" "" \
  "$(grep -nE '^[[:space:]]*stage [^;]*(\|\||&&)' "$(dirname "$0")/../../scripts/gpu-check.sh" || true)"

if [ "$failures" -gt 0 ]; then exit 1; fi
echo "gpu-check stage runner: all checks passed"
