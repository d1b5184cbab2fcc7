#!/usr/bin/env bash
# The main job, until the experiment engine exists: builds servelab, starts
# servelabd on a fresh state dir, submits the example specs and a pure
# concurrency delta, shows plan/status/list/summary, then stops the daemon.
#
#   deploy/demo.sh [BUILD_DIR]         (default: build)
#   SERVELAB_DEMO_STATE_DIR=DIR deploy/demo.sh   keep the state in DIR
#
# Honest scope: servelabd does not run experiments yet (the stage runner is
# not wired into the daemon), so experiments are frozen, planned and stored,
# and then stay QUEUED. Nothing is launched or loaded.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"

deploy/setup.sh "$BUILD_DIR"
BIN="$PWD/$BUILD_DIR/bin"

if [[ -n "${SERVELAB_DEMO_STATE_DIR:-}" ]]; then
  STATE_DIR="$SERVELAB_DEMO_STATE_DIR"
  CLEANUP_DIR=""
else
  CLEANUP_DIR="$(mktemp -d -t servelab-demo.XXXXXX)"
  STATE_DIR="$CLEANUP_DIR/state"
fi
LOG="${CLEANUP_DIR:-$STATE_DIR}/servelabd.log"
mkdir -p "$(dirname "$LOG")"

DAEMON_PID=""
cleanup() {
  if [[ -n "$DAEMON_PID" ]] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
  fi
  [[ -n "$CLEANUP_DIR" ]] && rm -rf "$CLEANUP_DIR"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "start servelabd (state dir $STATE_DIR, log $LOG)"
"$BIN/servelabd" --state-dir "$STATE_DIR" 2>"$LOG" &
DAEMON_PID=$!
for _ in $(seq 1 100); do
  [[ -f "$STATE_DIR/servelabd.addr" ]] && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$LOG"; echo "servelabd did not start" >&2; exit 1; }
  sleep 0.1
done
export SERVELAB_ADDR="$(cat "$STATE_DIR/servelabd.addr")"
echo "servelabd pid $DAEMON_PID listening on $SERVELAB_ADDR"
servelab() { "$BIN/servelab" "$@"; }

step "submit the example specs"
declare -A IDS
for spec in deploy/examples/*.yaml; do
  id="$(servelab -o json submit -f "$spec" | sed -n 's/^ *"id": "\(.*\)",$/\1/p' | head -1)"
  IDS["$(basename "$spec" .yaml)"]="$id"
  echo "$spec -> $id"
done
BASE="${IDS[16k-nocache]}"

step "plan a concurrency change on $BASE (stores nothing)"
run servelab plan --base "$BASE" --set workload.concurrency=96

step "submit it"
run servelab submit --base "$BASE" --set workload.concurrency=96

step "a bad delta is refused with the field path (and nothing is stored)"
run servelab submit --base "$BASE" --set workload.concurency=96 || echo "(exit code $?)"

step "status of $BASE"
run servelab status "$BASE"

step "list"
run servelab list

step "summary"
run servelab summary

step "stop servelabd (SIGTERM)"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" && echo "servelabd exited 0"
DAEMON_PID=""

cat <<'NOTE'

Note: servelabd does not run experiments yet (the stage runner of issue
"Experiment engine" is not wired into the daemon). It froze, planned and
stored every experiment above; they stay QUEUED and nothing was launched or
loaded. Restarting servelabd on the same state dir
finds them unchanged.
NOTE
