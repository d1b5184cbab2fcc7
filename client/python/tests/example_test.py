"""examples/concurrency_sweep.py, run as a user runs it, against a real servelabd.

The printed table is checked against what the daemon stored for each
experiment.
"""

import os
import subprocess
import sys
import unittest

import servelab
from servelab import experiment_pb2 as pb
from servelabd_process import QUICK_SPEC, ServelabdProcess

PYTHON = os.environ.get("SERVELAB_PYTHON", sys.executable)
SWEEP = os.path.join(os.path.dirname(__file__), "..", "examples", "concurrency_sweep.py")


def run_sweep(*args):
    return subprocess.run([PYTHON, SWEEP, *args], capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)


def table_rows(stdout):
    """The table after the blank line: header, then rows of two-space-separated cells."""
    table = stdout.split("\n\n", 1)[1].strip().splitlines()
    return [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in table]


class HelpTest(unittest.TestCase):
    def test_help(self):
        r = run_sweep("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("usage: concurrency_sweep.py", r.stdout)
        for option in ("--addr", "-f SPEC", "--base ID", "--concurrency LIST", "--set",
                       "--timeout", "SERVELAB_ADDR"):
            self.assertIn(option, r.stdout)

    def test_bad_concurrency_is_a_usage_error(self):
        r = run_sweep("-f", QUICK_SPEC, "--concurrency", "4,x")
        self.assertEqual(r.returncode, 2)
        self.assertIn("expected integers like 4,8,32", r.stderr)

    def test_unreachable_daemon(self):
        r = run_sweep("--addr", "unix:/nonexistent/servelab.sock", "--base", "exp-1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("error: UNAVAILABLE: cannot reach servelabd at "
                      "unix:/nonexistent/servelab.sock", r.stderr)


class SweepTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = ServelabdProcess()
        cls.daemon.start()
        cls.lab = servelab.connect(cls.daemon.address)
        cls.addClassCleanup(cls.lab.close)
        cls.addClassCleanup(cls.daemon.stop_and_check, cls.lab)

    def test_1_sweep_prints_one_row_per_experiment(self):
        r = run_sweep("--addr", self.daemon.address, "-f", QUICK_SPEC, "--concurrency", "4,8",
                      "--timeout", "120")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("submitted base exp-1 (scenario 8k-cache50, concurrency 16)", r.stdout)
        self.assertIn("submitted exp-2: workload.concurrency=4", r.stdout)
        self.assertIn("submitted exp-3: workload.concurrency=8", r.stdout)

        header, *rows = table_rows(r.stdout)
        self.assertEqual(header[:4], ["experiment", "concurrency", "state", "sent/planned"])
        self.assertEqual([row[:4] for row in rows], [
            ["exp-1", "16", "succeeded", "96/96"],
            ["exp-2", "4", "succeeded", "96/96"],
            ["exp-3", "8", "succeeded", "96/96"],
        ])
        column = {name: i for i, name in enumerate(header)}
        for row in rows:
            stored = self.lab.status(row[0])
            self.assertEqual(stored.state, pb.EXPERIMENT_STATE_SUCCEEDED)
            self.assertEqual(row[column["tok/s/dev whole"]],
                             f"{stored.result.whole.output_tokens_per_second_per_device:.1f}")
            self.assertEqual(row[column["ttft p99"]],
                             f"{stored.result.whole.ttft.p99 * 1000:.1f} ms")
        self.assertEqual(rows[0][column["decision"]], "baseline")
        self.assertTrue(rows[1][column["decision"]].endswith("vs exp-1)"), rows[1])
        self.assertRegex(rows[1][column["decision"]], r"^(keep|discard) \(", rows[1])
        self.assertEqual([self.lab.status(i).base_id for i in ("exp-2", "exp-3")],
                         ["exp-1", "exp-1"])

    def test_2_unknown_base_is_not_found_and_submits_nothing(self):
        before = len(self.lab.list_experiments())
        r = run_sweep("--addr", self.daemon.address, "--base", "exp-404")
        self.assertEqual(r.returncode, 1)
        self.assertIn('error: NOT_FOUND: id: experiment "exp-404" not found', r.stderr)
        self.assertEqual(len(self.lab.list_experiments()), before)


if __name__ == "__main__":
    unittest.main()
