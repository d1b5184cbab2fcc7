#!/usr/bin/env bash
# The main job: the story of docs/design.md §1 in about a minute, on the simulated
# engine (no accelerators needed).
#   1. a base experiment: fresh launch of prefill, decode and router, two
#      warmup rounds, route verification, cache seeding, the formal load;
#   2. a pure concurrency delta: reuses the hot deployment, starts its formal
#      load within milliseconds of the submit;
#   3. a decode expert-layout delta: relaunches decode only;
#   4. the summary handoff.
# Each step prints the plan and the time from submit to the first formal
# request.
#
#   deploy/demo.sh [BUILD_DIR]                    (default: build; builds only
#                                                 servelabd, servelab, servelab-sim)
#   SERVELAB_DEMO_STATE_DIR=DIR deploy/demo.sh    keep the state (and the hot deployment) in DIR
#   SERVELAB_DEMO_TIME_SCALE=0.05                 the sim's time scale (default 0.05: 20x faster)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"

# The packages as deploy/setup.sh installs them, but only the demo's own targets:
# a first run does not wait for the test binaries.
deploy/setup.sh --packages-only
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD_DIR" --target servelabd servelab servelab-sim -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
BIN="$(cd "$BUILD_DIR" && pwd)/bin"
SPEC="deploy/examples/pd-quick.yaml"
TIME_SCALE="${SERVELAB_DEMO_TIME_SCALE:-0.05}"

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
  if [[ -n "$CLEANUP_DIR" ]]; then
    # The serving instances outlive the daemon on purpose (the hot deployment
    # survives a restart); a throwaway demo stops them too.
    for f in "$STATE_DIR"/logs/*.pid; do [[ -f "$f" ]] && kill "$(cat "$f")" 2>/dev/null || true; done
    pkill -f "$BIN/servelab-sim" 2>/dev/null || true
    rm -rf "$CLEANUP_DIR"
  fi
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
servelab() { "$BIN/servelab" "$@"; }
json_field() { sed -n "s/^ *\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" | head -1; }

# What the status says about the wait for the first formal request.
report() {
  local id="$1"
  servelab status "$id" | sed -n '/^first request/p; /^changes/,/^spec sha256/p' | grep -v '^spec sha256'
}

step "start servelabd on the simulated engine (time scale $TIME_SCALE; state $STATE_DIR)"
"$BIN/servelabd" --state-dir "$STATE_DIR" --sim-time-scale "$TIME_SCALE" 2>"$LOG" &
DAEMON_PID=$!
for _ in $(seq 1 100); do
  [[ -f "$STATE_DIR/servelabd.addr" ]] && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$LOG"; echo "servelabd did not start" >&2; exit 1; }
  sleep 0.1
done
export SERVELAB_ADDR="$(cat "$STATE_DIR/servelabd.addr")"
echo "servelabd pid $DAEMON_PID listening on $SERVELAB_ADDR (log: $LOG)"

step "1. base experiment: $SPEC"
BASE="$(servelab -o json submit -f "$SPEC" | json_field id)"
echo "submitted $BASE"
run servelab wait "$BASE" --until done --timeout 5m
report "$BASE"

step "2. plan a pure concurrency change (stores nothing, runs nothing)"
run servelab plan --base "$BASE" --set workload.concurrency=8 | sed -n '/^plan/,/^spec/p' | grep -v '^spec'
C8="$(servelab -o json submit --base "$BASE" --set workload.concurrency=8 | json_field id)"
echo "submitted $C8"
run servelab wait "$C8" --until done --timeout 5m
report "$C8"

step "3. a new decode expert layout: only decode relaunches"
L="$(servelab -o json submit --base "$C8" \
      --set deployment.decode.expert_layout=deploy/examples/layouts/decode-layout-b.json | json_field id)"
echo "submitted $L"
run servelab wait "$L" --until done --timeout 5m
report "$L"

step "a bad delta is refused with the field path, and nothing is stored"
run servelab submit --base "$BASE" --set workload.concurency=96 || echo "(exit code $?)"

step "4. the handoff"
run servelab summary
run servelab list

step "stop servelabd (SIGTERM): the deployment stays hot for the next daemon"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" && echo "servelabd exited 0"
DAEMON_PID=""
