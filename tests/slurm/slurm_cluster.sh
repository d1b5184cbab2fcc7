#!/usr/bin/env bash
# A throwaway single-node Slurm cluster in one directory, for tests of the
# Slurm placement (issue 12). Nothing outside DIR is read or written: munged
# gets its own key, socket, pid and log; slurmctld and slurmd read DIR/slurm.conf
# (-f) and listen on loopback ports; clients find it through SLURM_CONF.
#
#   tests/slurm/slurm_cluster.sh start DIR   # prints SLURM_CONF=DIR/slurm.conf
#   SLURM_CONF=DIR/slurm.conf srun ...
#   tests/slurm/slurm_cluster.sh stop DIR    # cancels jobs, stops every daemon
#   tests/slurm/slurm_cluster.sh stop-controller DIR   # slurmctld only: clients
#   tests/slurm/slurm_cluster.sh start-controller DIR  # get "Unable to contact"; the
#                                  # restarted one recovers jobs from its state dir
#
# Ports: SLURMCTLD_PORT and SLURMD_PORT when set, else free ones. The node is
# NodeName=localhost with CPUs=$(nproc) and 16 GPUs (gres gpu:16) backed by
# 16 character devices DIR/dev/gpuN (/dev/null's numbers), because gres/gpu
# drops GPUs that have no File= and then drains the node.
#
# Exit codes of start: 0 ready; 77 this machine cannot run it (not root, a
# binary missing: the reason is on stderr, tests skip); 1 it should have
# started but did not (the logs' tails are on stderr).
set -euo pipefail
# The daemons live in sbin, which a non-login PATH often lacks.
export PATH="$PATH:/usr/sbin:/sbin"

readonly kSkip=77
readonly kReadyTimeout=60  # seconds for the node to become idle

usage() {
  echo "usage: $0 start|stop|stop-controller|start-controller DIR" >&2
  exit 2
}

skip() {
  echo "slurm_cluster: cannot run here: $*" >&2
  exit "$kSkip"
}

fail() {
  echo "slurm_cluster: $*" >&2
  local log
  for log in "$dir"/munge/munged.log "$dir"/log/slurmctld.log "$dir"/log/slurmd.log; do
    [[ -f "$log" ]] && { echo "--- tail of $log" >&2; tail -n 15 "$log" >&2; }
  done
  # A half-started cluster is stopped: start never leaves daemons behind.
  [[ "$starting" -eq 1 ]] && stop
  exit 1
}

# A loopback TCP port nothing listens on, from /proc/net/tcp{,6} (hex ports).
free_port() {
  local port hex
  for _ in $(seq 200); do
    port=$((20000 + RANDOM % 40000))
    printf -v hex '%04X' "$port"
    if ! awk 'NR > 1 { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null |
      grep -qx "$hex"; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

check_prerequisites() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (slurmd must start job steps as their user)"
  local tool
  for tool in munged mungekey slurmctld slurmd slurmstepd sinfo scontrol squeue scancel srun \
    salloc mknod; do
    command -v "$tool" >/dev/null || skip "$tool not found (apt-get install slurm-wlm munge)"
  done
}

# Device files for gres.conf; regular files if this container forbids mknod
# (slurmd then logs "not a valid character or block device" but counts them).
make_gpu_files() {
  mkdir -p "$dir/dev"
  local i
  for i in $(seq 0 15); do
    rm -f "$dir/dev/gpu$i"
    mknod "$dir/dev/gpu$i" c 1 3 2>/dev/null || : >"$dir/dev/gpu$i"
  done
}

write_config() {
  local ctld_port=$1 slurmd_port=$2
  cat >"$dir/slurm.conf" <<EOF
# Written by tests/slurm/slurm_cluster.sh; everything lives in $dir.
ClusterName=servelabtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge-run/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
GresTypes=gpu
ReturnToService=2
KillWait=5
# Bounds each of slurmstepd's retried messages to an srun that is gone.
MessageTimeout=3
MinJobAge=5
InactiveLimit=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 Gres=gpu:16 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  echo "NodeName=localhost Name=gpu File=$dir/dev/gpu[0-15]" >"$dir/gres.conf"
}

# munged checks that every directory up to its socket is searchable by all
# and that the key is private, hence two directories.
start_munge() {
  mkdir -m 700 "$dir/munge"
  mkdir -m 755 "$dir/munge-run"
  mungekey --create --keyfile="$dir/munge/munge.key" 2>/dev/null ||
    { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none &&
      chmod 600 "$dir/munge/munge.key"; }
  munged --force --socket="$dir/munge-run/munge.sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge-run/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" || fail "munged did not start"
}

wait_node_idle() {
  local state=""
  for _ in $(seq $((kReadyTimeout * 5))); do
    state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
    [[ "$state" == "idle" ]] && return 0
    sleep 0.2
  done
  fail "node localhost is \"$state\", not idle, after ${kReadyTimeout}s"
}

start() {
  check_prerequisites
  starting=1
  [[ -e "$dir/slurm.conf" ]] && fail "$dir already holds a cluster (stop it first)"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # munged's socket must be reachable by every user, through DIR too.
  chmod 711 "$dir"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
  local ctld_port=${SLURMCTLD_PORT:-$(free_port)} slurmd_port=${SLURMD_PORT:-$(free_port)}
  [[ "$ctld_port" != "$slurmd_port" ]] || slurmd_port=$(free_port)
  make_gpu_files
  write_config "$ctld_port" "$slurmd_port"
  export SLURM_CONF="$dir/slurm.conf"
  start_munge
  # Both daemonize and write their pid files; stdin from /dev/null and their
  # own output into DIR so that a caller capturing ours is not held open.
  slurmctld -f "$SLURM_CONF" </dev/null >>"$dir/log/daemons.out" 2>&1 ||
    fail "slurmctld did not start"
  slurmd -f "$SLURM_CONF" -N localhost </dev/null >>"$dir/log/daemons.out" 2>&1 ||
    fail "slurmd did not start"
  wait_node_idle
  starting=0
  echo "SLURM_CONF=$SLURM_CONF"
}

# A zombie counts as gone: it is only waiting for its parent to reap it.
pid_alive() {
  [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null || return 1
  [[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != "Z" ]]
}

# SIGTERM, then SIGKILL after ~5 s, to the pid in a pid file.
stop_pidfile() {
  local file=$1 pid
  [[ -f "$file" ]] || return 0
  pid=$(cat "$file" 2>/dev/null || true)
  pid_alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    pid_alive "$pid" || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# Ends every job while slurmctld still runs, so that slurmstepd and the tasks
# end the Slurm way instead of being orphaned by a stopped slurmd.
cancel_jobs() {
  pid_alive "$(cat "$dir/run/slurmctld.pid" 2>/dev/null || true)" || return 0
  local jobs
  jobs=$(squeue -h -o %A 2>/dev/null || true)
  [[ -z "$jobs" ]] && return 0
  # shellcheck disable=SC2086  # one argument per job id
  scancel $jobs 2>/dev/null || true
  for _ in $(seq 100); do
    [[ -z "$(squeue -h -o %A 2>/dev/null || true)" ]] && return 0
    sleep 0.2
  done
}

# What is left that belongs to this cluster: processes whose cwd, executable
# or an open file is inside DIR (slurmstepd keeps the slurmd log open), or
# whose environment points SLURM_CONF here (tasks of steps, srun, salloc).
# This script and its ancestors (the test that runs it) are never candidates.
leftover_pids() {
  local keep=" $$ $BASHPID " p=$$ proc pid link
  while [[ "$p" -gt 1 ]]; do
    p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null || echo 1)
    keep+="$p "
  done
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [[ "$keep" == *" $pid "* ]] && continue
    if { tr '\0' '\n' <"$proc/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$dir/slurm.conf"; then
      echo "$pid"
      continue
    fi
    for link in "$proc/cwd" "$proc/exe" "$proc"/fd/*; do
      if [[ "$(readlink "$link" 2>/dev/null || true)" == "$dir"/* ]]; then
        echo "$pid"
        break
      fi
    done
  done
}

stop() {
  [[ -d "$dir" ]] || return 0
  dir=$(cd "$dir" && pwd)
  export SLURM_CONF="$dir/slurm.conf"
  [[ -f "$SLURM_CONF" ]] || return 0
  cancel_jobs
  stop_pidfile "$dir/run/slurmd.pid"
  stop_pidfile "$dir/run/slurmctld.pid"
  stop_pidfile "$dir/munge-run/munged.pid"
  # SIGKILL takes effect asynchronously, and a dying slurmstepd may still
  # fork: kill again until none is left, so that the caller sees none.
  local pids
  for _ in $(seq 50); do
    pids=$(leftover_pids)
    [[ -z "$pids" ]] && return 0
    echo "slurm_cluster: killing leftovers: ${pids//$'\n'/ }" >&2
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1
  done
  echo "slurm_cluster: leftovers survive SIGKILL: ${pids//$'\n'/ }" >&2
}

stop_controller() {
  dir=$(cd "$dir" && pwd)
  stop_pidfile "$dir/run/slurmctld.pid"
}

start_controller() {
  dir=$(cd "$dir" && pwd)
  export SLURM_CONF="$dir/slurm.conf"
  slurmctld -f "$SLURM_CONF" </dev/null >>"$dir/log/daemons.out" 2>&1 ||
    fail "slurmctld did not start"
  for _ in $(seq $((kReadyTimeout * 5))); do
    sinfo -h >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  fail "slurmctld does not answer after ${kReadyTimeout}s"
}

[[ $# -eq 2 ]] || usage
dir=$2
starting=0
case "$1" in
  start) start ;;
  stop) stop ;;
  stop-controller) stop_controller ;;
  start-controller) start_controller ;;
  *) usage ;;
esac
