"""A real servelabd, on servelab-sim, in a temp state directory: the Python tests' fixture.

    daemon = ServelabdProcess(listen="tcp:127.0.0.1:0")
    daemon.start()                      # waits for STATE_DIR/servelabd.addr
    lab = servelab.connect(daemon.address)
    ...
    exit_code, survivors = daemon.stop(lab)   # expect 0 and []; or stop_and_check(lab)

It mirrors tests/workflow/daemon_fixture.cc: servelabd from $SERVELAB_BIN_DIR
(its servelab-sim beside it), --sim-time-scale 0.05, the address read from
the file the daemon writes once it serves. The serving instances a daemon
launches outlive it by design (the deployment stays hot for the next daemon),
so stop() also kills every process the daemon started and waits until each is
gone. Single-threaded.
"""

import os
import signal
import subprocess
import tempfile
import time

BIN_DIR = os.environ.get("SERVELAB_BIN_DIR", "")
SOURCE_DIR = os.environ.get(
    "SERVELAB_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
QUICK_SPEC = os.path.join(SOURCE_DIR, "deploy", "examples", "pd-quick.yaml")


def wait_for(condition, timeout, interval=0.02):
    """Polls condition() until it is true or `timeout` seconds pass; returns whether it held."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def _process_state(pid):
    """The /proc state letter of pid ("R", "S", "Z", ...), or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # "pid (comm) S ppid ...": comm may hold spaces and parentheses.
    return stat[stat.rindex(")") + 2]


def alive(pid):
    return pid > 0 and _process_state(pid) not in (None, "Z")


def children_of(parent_pid):
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == parent_pid:
            pids.append(int(entry))
    return pids


def instance_pids(experiment):
    """Pids a launch stage reported: "pid", and "rank<r>_pid" per extra DP rank."""
    return {int(value) for stage in experiment.stages
            for key, value in stage.counters.items() if key.endswith("pid")}


class ServelabdProcess:
    def __init__(self, listen=None, flags=("--sim-time-scale", "0.05")):
        if not BIN_DIR:
            raise RuntimeError("set SERVELAB_BIN_DIR to the build's bin/ (ctest does)")
        self.listen = listen
        self.flags = list(flags)
        self.process = None
        self.address = None
        self._tmp = None
        self._pids = set()

    @property
    def dir(self):
        return self._tmp.name

    @property
    def state_dir(self):
        return os.path.join(self._tmp.name, "state")

    @property
    def log_path(self):
        return os.path.join(self._tmp.name, "servelabd.log")

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def start(self, timeout=30):
        self._tmp = tempfile.TemporaryDirectory(prefix="servelab-py-")
        argv = [os.path.join(BIN_DIR, "servelabd"), "--state-dir", self.state_dir]
        if self.listen:
            argv += ["--listen", self.listen]
        argv += self.flags
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT)
        addr_file = os.path.join(self.state_dir, "servelabd.addr")
        # The daemon writes the file once it serves (store open, recovery done).
        if not wait_for(lambda: os.path.exists(addr_file) or self.process.poll() is not None,
                        timeout) or not os.path.exists(addr_file):
            self.process.kill()
            exit_code = self.process.wait()
            log = self.log()
            self.process = None
            self._tmp.cleanup()
            raise RuntimeError(f"servelabd did not start (exit code {exit_code}):\n{log}")
        with open(addr_file, encoding="utf-8") as f:
            self.address = f.read().strip()
        return self.address

    def remember(self, experiment):
        self._pids |= instance_pids(experiment)

    def stop(self, client=None, timeout=30):
        """SIGTERM (exit code returned), then kill what it launched.

        `client`, when given, lists every experiment first so that every
        launch stage's pids are known. Returns (exit_code, survivors): the pids
        still alive 10 s after SIGKILL (expected: none).
        """
        if self.process is None:
            return None, []
        if client is not None and self.process.poll() is None:
            # A daemon that does not answer must still be stopped; its
            # children are found below.
            try:
                for experiment in client.list_experiments():
                    self.remember(experiment)
            except Exception:  # pylint: disable=broad-except
                pass
        # Launches still running have children not yet in any stage.
        self._pids |= set(children_of(self.process.pid))
        self.process.send_signal(signal.SIGTERM)
        try:
            exit_code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            exit_code = None
        for pid in self._pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for(lambda: not any(alive(pid) for pid in self._pids), 10)
        survivors = sorted(pid for pid in self._pids if alive(pid))
        self.process = None
        self._tmp.cleanup()
        return exit_code, survivors

    def stop_and_check(self, client=None):
        """stop(), raising AssertionError unless the daemon exited 0 and nothing survived."""
        exit_code, survivors = self.stop(client)
        if exit_code != 0 or survivors:
            raise AssertionError(f"servelabd exited {exit_code}; still alive: {survivors}")
