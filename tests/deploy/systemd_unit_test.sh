#!/usr/bin/env bash
# Checks deploy/systemd/servelabd.service with the real tools:
#   1. `systemd-analyze verify` (Debian's systemd) prints nothing about a copy of
#      the unit whose ExecStart names the built servelabd, and it does warn about a
#      copy with KillMode=none, so the check itself is not vacuous here;
#   2. the properties that matter: KillMode=process (the serving instances survive a
#      daemon restart), Type=simple, Restart=on-failure, StateDirectory=servelab,
#      no TCP listener, and none of the options that delete what surviving
#      instances use or hide the accelerators;
#   3. every ExecStart flag appears in `servelabd --help`. Started with exactly
#      those arguments (%S → a temp dir), servelabd serves on the unix socket.
#      The documented health check, `servelab summary`, then prints "serving".
#   systemd_unit_test.sh UNIT_FILE SERVELABD SERVELAB
set -euo pipefail
UNIT="$1"
SERVELABD="$2"
SERVELAB="$3"
INSTALLED_BINARY=/usr/local/bin/servelabd

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

if ! command -v systemd-analyze >/dev/null; then
  echo "FAIL: systemd-analyze not found; install it: apt-get install -y --no-install-recommends systemd" \
       "(deploy/setup.sh installs it)" >&2
  exit 1
fi
echo "using $(systemd-analyze --version | head -1)"

WORK="$(mktemp -d -t servelab-systemd-test.XXXXXX)"
DAEMON_PID=""
cleanup() {
  if [[ -n "$DAEMON_PID" ]] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -KILL "$DAEMON_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The value of KEY= in [Service] (the last one wins, as in systemd).
service_value() {
  awk -v key="$1" '
    /^\[/ { in_service = ($0 == "[Service]") }
    in_service && index($0, key "=") == 1 { value = substr($0, length(key) + 2) }
    END { print value }' "$UNIT"
}

# --- 1. systemd-analyze verify -------------------------------------------------
verify_args=(--man=no --generators=no)
# Errors in units this one depends on (network.target, ...) belong to the host.
systemd-analyze --help | grep -q -- '--recursive-errors' && verify_args+=(--recursive-errors=no)

mkdir -p "$WORK/units/good" "$WORK/units/bad"
grep -q "^ExecStart=$INSTALLED_BINARY " "$UNIT" ||
  fail "ExecStart does not start with $INSTALLED_BINARY"
# verify checks that ExecStart's binary exists, so the copy names the built one.
sed "s|^ExecStart=$INSTALLED_BINARY |ExecStart=$SERVELABD |" "$UNIT" >"$WORK/units/good/servelabd.service"
sed 's/^KillMode=.*/KillMode=none/' "$WORK/units/good/servelabd.service" \
  >"$WORK/units/bad/servelabd.service"

verify() { systemd-analyze verify "${verify_args[@]}" "$1" 2>&1; }
if output="$(verify "$WORK/units/good/servelabd.service")"; then
  pass "systemd-analyze verify ${verify_args[*]} exits 0"
else
  fail "systemd-analyze verify exits non-zero"
fi
about_unit="$(grep -E 'servelabd|servelab-systemd-test' <<<"$output" || true)"
if [[ -n "$about_unit" ]]; then
  fail "systemd-analyze verify warns about the unit:"$'\n'"$about_unit"
else
  pass "systemd-analyze verify prints nothing about the unit"
fi
other="$(grep -vE 'servelabd|servelab-systemd-test' <<<"$output" || true)"
[[ -z "$other" ]] || echo "note: systemd-analyze verify says about the host:"$'\n'"$other"

bad_output="$(verify "$WORK/units/bad/servelabd.service" || true)"
if grep -q 'KillMode=none' <<<"$bad_output"; then
  pass "systemd-analyze verify does warn about a copy with KillMode=none"
else
  fail "systemd-analyze verify printed no warning for KillMode=none, so its silence proves nothing:"$'\n'"$bad_output"
fi

# --- 2. the properties that matter --------------------------------------------
expect() {
  local key="$1" want="$2" got
  got="$(service_value "$key")"
  if [[ "$got" == "$want" ]]; then pass "$key=$want"; else fail "$key is '$got', want '$want'"; fi
}
expect KillMode process
expect Type simple
expect Restart on-failure
expect StateDirectory servelab
expect StateDirectoryMode 0700
expect NoNewPrivileges yes
expect OOMPolicy continue

# Deleted when the unit stops or restarts, under the surviving instances
# (PrivateTmp, RuntimeDirectory, RemoveIPC; DynamicUser implies the first and
# the last), or hiding the accelerators' device nodes.
for key in PrivateTmp RuntimeDirectory DynamicUser RemoveIPC PrivateDevices DevicePolicy \
           DeviceAllow ProtectClock; do
  value="$(service_value "$key")"
  if [[ -z "$value" || "$value" == "no" ]]; then
    pass "no $key"
  else
    fail "$key=$value: breaks the surviving instances or hides the accelerators"
  fi
done

exec_start="$(service_value ExecStart)"
if grep -qE -- '--listen|--allow-remote|--metrics-listen' <<<"$exec_start"; then
  fail "ExecStart opens more than the default unix socket: $exec_start"
else
  pass "ExecStart listens only on the default unix socket"
fi

# --- 3. the ExecStart flags are servelabd's -------------------------------------
help="$("$SERVELABD" --help)"
read -r -a argv <<<"$exec_start"
for arg in "${argv[@]:1}"; do
  [[ "$arg" == --* ]] || continue
  flag="${arg%%=*}"
  if grep -qE -- "(^|[[:space:],])$flag([[:space:],=]|$)" <<<"$help"; then
    pass "servelabd --help lists $flag"
  else
    fail "ExecStart uses $flag, which servelabd --help does not list"
  fi
done

# Run exactly those arguments: %S is the state root, $SERVELABD_OPTS is empty.
STATE_ROOT="$WORK/var-lib"
mkdir -p "$STATE_ROOT"
daemon_args=()
for arg in "${argv[@]:1}"; do
  # shellcheck disable=SC2016  # the literal word of the unit, expanded by systemd
  [[ "$arg" == '$SERVELABD_OPTS' ]] && continue
  daemon_args+=("${arg//%S/$STATE_ROOT}")
done
STATE_DIR="$STATE_ROOT/servelab"
"$SERVELABD" "${daemon_args[@]}" 2>"$WORK/servelabd.log" &
DAEMON_PID=$!
# servelabd.addr is written once recovery is done and health is SERVING.
for _ in $(seq 1 200); do
  [[ -f "$STATE_DIR/servelabd.addr" ]] && break
  kill -0 "$DAEMON_PID" 2>/dev/null || break
  sleep 0.05
done
if [[ -f "$STATE_DIR/servelabd.addr" ]]; then
  addr="$(cat "$STATE_DIR/servelabd.addr")"
  if [[ "$addr" == "unix:$STATE_DIR/servelab.sock" ]]; then
    pass "servelabd ${daemon_args[*]} serves on $addr"
  else
    fail "servelabd serves on $addr, want unix:$STATE_DIR/servelab.sock"
  fi
  if summary="$("$SERVELAB" --addr "unix:$STATE_DIR/servelab.sock" summary)" &&
     grep -qE '^daemon: +serving' <<<"$summary"; then
    pass "servelab --addr unix:$STATE_DIR/servelab.sock summary: \"daemon: serving\""
  else
    fail "the health check does not report serving:"$'\n'"$summary"
  fi
  kill -TERM "$DAEMON_PID"
  if wait "$DAEMON_PID"; then pass "servelabd exits 0 on SIGTERM"; else fail "servelabd exits $? on SIGTERM"; fi
  DAEMON_PID=""
else
  fail "servelabd ${daemon_args[*]} exited or did not write servelabd.addr within 10 s:"$'\n'"$(cat "$WORK/servelabd.log")"
fi

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
