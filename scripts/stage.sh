# shellcheck shell=bash
# Sourced by scripts/gpu-check.sh (and its test, tests/scripts/gpu_check_stage_test.sh): the
# stage runner.

STAGES=()  # "name seconds status", in order

# Runs the command "$@" (a stage function) as the stage `name` in a subshell that stops at its
# first failing command, prints and records the stage's time and status, and sets STAGE_RC to
# the stage's exit status: 0, or that of its first failing command, which is printed as
# "gpu-check: <name>: failed at line <n>: <command> (exit <status>)" and named in the status
# ("failed (exit <status>) at: <command>"). Commands whose failure a stage expects (tested by
# if, ||, && or !) do not stop it. Returns 0 itself.
# Not called under ||, && or if: there bash ignores `set -e`, in subshells too.
stage() {
  local name="$1" start=$SECONDS failure
  shift
  echo "== gpu-check: $name"
  failure="$(mktemp)"
  set +e
  (
    set -eE
    # The stage's name and file are fixed now: a stage function's own locals may reuse the names.
    # shellcheck disable=SC2064
    trap "stage_failed \"\$?\" \"\$LINENO\" \"\$BASH_COMMAND\" $(printf '%q %q' "$name" "$failure")" ERR
    "$@"
  )
  STAGE_RC=$?
  set -e
  local status=ok
  if [ "$STAGE_RC" -ne 0 ]; then
    status="failed (exit $STAGE_RC)"
    if [ -s "$failure" ]; then status="$status at: $(cat "$failure")"; fi
  fi
  rm -f "$failure"
  STAGES+=("$name $((SECONDS - start)) $status")
  echo "== gpu-check: $name: $((SECONDS - start)) s, $status"
}

# The ERR trap of a stage: reports the first failing command (later ones, as the failure
# unwinds through the stage's functions, are not the cause) into the file $5. A stage that
# returns a status it collected (`return "$rc"`) has reported its failures itself.
stage_failed() {
  local rc="$1" line="$2" command="${3%%$'\n'*}" name="$4" file="$5"
  if [ -s "$file" ]; then return 0; fi
  case "$command" in return*) return 0 ;; esac
  echo "$command" > "$file"
  echo "gpu-check: $name: failed at line $line: $command (exit $rc)" >&2
}
