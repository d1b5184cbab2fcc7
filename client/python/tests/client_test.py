"""The servelab Python package against a real servelabd running servelab-sim.

WorkflowTest drives one daemon on tcp:127.0.0.1:0 through a base experiment,
a concurrency delta (followed on a Watch stream), a wait that times out and a
cancel, and refused inputs that must store nothing. AddressTest covers the
address rules and argument checks, which need no daemon. The tests of a class
run in the order of their names.
"""

import contextlib
import os
import sqlite3
import unittest
from unittest import mock

import grpc

import servelab
from servelab import experiment_pb2 as pb
from servelabd_process import QUICK_SPEC, ServelabdProcess

ADDRESS_ENV = ("SERVELAB_ADDR", "SERVELAB_STATE_DIR")


def stage(experiment, name):
    return next(s for s in experiment.stages if s.name == name)


class AddressTest(unittest.TestCase):
    def test_default_address_follows_the_cli_rules(self):
        cases = [
            ({"SERVELAB_ADDR": "tcp:127.0.0.1:7000", "SERVELAB_STATE_DIR": "/srv/lab"},
             "tcp:127.0.0.1:7000"),
            ({"SERVELAB_ADDR": "", "SERVELAB_STATE_DIR": "/srv/lab"},
             "unix:/srv/lab/servelab.sock"),
            ({"SERVELAB_STATE_DIR": "/srv/lab"}, "unix:/srv/lab/servelab.sock"),
            ({}, "unix:./.state/servelab.sock"),
        ]
        for env, want in cases:
            with self.subTest(env=env), mock.patch.dict(os.environ, env):
                for name in ADDRESS_ENV:
                    if name not in env:
                        os.environ.pop(name, None)
                self.assertEqual(servelab.default_address(), want)
                with servelab.connect() as lab:
                    self.assertEqual(lab.address, want)

    def test_grpc_target_strips_only_tcp(self):
        self.assertEqual(servelab.grpc_target("tcp:127.0.0.1:7000"), "127.0.0.1:7000")
        self.assertEqual(servelab.grpc_target("tcp:[::1]:7000"), "[::1]:7000")
        self.assertEqual(servelab.grpc_target("unix:/srv/lab/servelab.sock"),
                         "unix:/srv/lab/servelab.sock")

    def test_unreachable_daemon_is_unavailable(self):
        with servelab.connect("unix:/nonexistent/servelab.sock", unary_timeout=10) as lab:
            with self.assertRaises(servelab.ServelabError) as caught:
                lab.summary()
        self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertIn("cannot reach servelabd at unix:/nonexistent/servelab.sock",
                      caught.exception.message)
        self.assertTrue(str(caught.exception).startswith("UNAVAILABLE: "))

    def test_bad_arguments_fail_before_any_call(self):
        with servelab.connect("unix:/nonexistent/servelab.sock") as lab:
            with self.assertRaisesRegex(TypeError, "list of strings"):
                lab.submit_delta("exp-1", set="workload.concurrency=8")
            with self.assertRaisesRegex(TypeError, "exactly one"):
                lab.submit(QUICK_SPEC, spec_text="scenario: x")
            with self.assertRaisesRegex(TypeError, "exactly one"):
                lab.submit()


class WorkflowTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = ServelabdProcess(listen="tcp:127.0.0.1:0")
        cls.daemon.start()
        cls.lab = servelab.connect(cls.daemon.address)
        # Class cleanups run even when setUpClass fails after this point.
        cls.addClassCleanup(cls.lab.close)
        cls.addClassCleanup(cls.daemon.stop_and_check, cls.lab)
        cls.base = cls.lab.submit(QUICK_SPEC)

    def test_1_base_is_sent_then_done(self):
        base = self.base
        self.assertTrue(self.daemon.address.startswith("tcp:127.0.0.1:"))
        self.assertNotEqual(self.daemon.address, "tcp:127.0.0.1:0")
        self.assertEqual(base.id, "exp-1")
        self.assertEqual(base.base_id, "")
        self.assertEqual(base.state, pb.EXPERIMENT_STATE_QUEUED)
        self.assertEqual(base.spec.scenario, "8k-cache50")
        self.assertEqual(base.spec.workload.concurrency, 16)
        self.assertRegex(base.spec_sha256, "^[0-9a-f]{64}$")

        sent = self.lab.wait_until_sent(base.id, timeout=120)
        self.assertEqual(sent.state, pb.EXPERIMENT_STATE_RUNNING)
        self.assertEqual(stage(sent, pb.STAGE_FORMAL_LOAD).status, pb.STAGE_STATUS_RUNNING)
        self.assertEqual(sent.progress.formal_requests_planned, 96)
        self.assertGreater(sent.progress.formal_requests_sent, 0)
        self.assertLessEqual(sent.progress.formal_requests_sent, 96)
        # The sent count comes from the load's ticks, the exact first-request
        # time from its stored records, which may land a moment later.

        done = self.lab.wait_until_done(base.id, timeout=120)
        self.assertEqual(done.state, pb.EXPERIMENT_STATE_SUCCEEDED, done.blocker)
        self.assertTrue(done.progress.HasField("first_formal_request_at"))
        self.assertEqual(done.progress.formal_requests_sent, 96)
        self.assertEqual(done.progress.formal_requests_completed, 96)
        self.assertEqual(done.progress.formal_requests_failed, 0)
        self.assertEqual(done.result.whole.name, "whole")
        self.assertEqual(done.result.whole.requests_completed, 96)
        self.assertGreater(done.result.whole.output_tokens_per_second_per_device, 0)
        for s in done.stages:
            self.assertEqual(s.status, pb.STAGE_STATUS_SUCCEEDED, pb.StageName.Name(s.name))
        self.assertGreater(stage(done, pb.STAGE_LAUNCH_PREFILL).counters["pid"], 0)

        # A final experiment no longer changes: status reads what the stream ended with.
        self.assertEqual(self.lab.status(base.id), done)

    def test_2_concurrency_delta_on_a_watch_stream(self):
        base = self.lab.wait_until_done(self.base.id, timeout=120)
        delta = self.lab.submit_delta(base.id, set=["workload.concurrency=8"])
        self.assertEqual(delta.id, "exp-2")
        self.assertEqual(delta.base_id, base.id)
        self.assertEqual(delta.state, pb.EXPERIMENT_STATE_QUEUED)
        self.assertEqual(delta.spec.workload.concurrency, 8)
        self.assertNotEqual(delta.spec_sha256, base.spec_sha256)
        self.assertEqual([(c.path, c.old_value, c.new_value) for c in delta.changes],
                         [("workload.concurrency", "16", "8")])

        updates = list(self.lab.watch(delta.id, timeout=120))
        self.assertGreaterEqual(len(updates), 3)
        self.assertTrue(all(u.id == delta.id for u in updates))
        self.assertTrue(all(not servelab.is_final(u) for u in updates[:-1]))
        sent = [u.progress.formal_requests_sent for u in updates]
        self.assertEqual(sent, sorted(sent))
        # The stream showed the load in progress, not only its end.
        self.assertTrue(any(0 < n < 96 for n in sent), sent)
        last = updates[-1]
        self.assertEqual(last.state, pb.EXPERIMENT_STATE_SUCCEEDED, last.blocker)
        self.assertEqual(last.progress.formal_requests_completed, 96)
        for name in (pb.STAGE_LAUNCH_PREFILL, pb.STAGE_LAUNCH_DECODE, pb.STAGE_LAUNCH_ROUTER,
                     pb.STAGE_WARMUP, pb.STAGE_ROUTE_VERIFY):
            self.assertEqual(stage(last, name).status, pb.STAGE_STATUS_REUSED,
                             pb.StageName.Name(name))
        self.assertEqual(stage(last, pb.STAGE_FORMAL_LOAD).status, pb.STAGE_STATUS_SUCCEEDED)
        self.assertEqual(last.result.decision.baseline_experiment_id, base.id)

        summary = self.lab.summary()
        self.assertTrue(summary.serving)
        self.assertEqual(summary.experiments_by_state["succeeded"], 2)
        self.assertEqual(summary.hot_deployment.experiment_id, base.id)
        self.assertEqual(summary.next_step.action, servelab.service_pb2.NextStep.SUBMIT_DELTA)
        self.assertEqual(summary.next_step.experiment_id, delta.id)
        self.assertEqual([b.scenario for b in summary.best], ["8k-cache50"])

    def test_3_wait_times_out_then_cancel(self):
        self.lab.wait_until_done(self.base.id, timeout=120)
        long = self.lab.submit_delta(
            self.base.id, set=["workload.num_requests=2000", "workload.concurrency=2"])
        sent = self.lab.wait_until_sent(long.id, timeout=120)
        self.assertEqual(sent.state, pb.EXPERIMENT_STATE_RUNNING)
        self.assertGreater(sent.progress.formal_requests_sent, 0)
        self.assertLess(sent.progress.formal_requests_sent, 2000)

        with self.assertRaises(servelab.ServelabError) as caught:
            self.lab.wait_until_done(long.id, timeout=1)
        self.assertEqual(caught.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertIn(f'{long.id} did not reach "done" within 1s (state running, ',
                      caught.exception.message)

        self.lab.cancel(long.id)
        cancelled = self.lab.wait_until_done(long.id, timeout=120)
        self.assertEqual(cancelled.state, pb.EXPERIMENT_STATE_CANCELLED)
        self.assertLess(cancelled.progress.formal_requests_sent, 2000)

    def test_4_refused_inputs_store_nothing(self):
        stored = [e.id for e in self.lab.list_experiments()]
        self.assertEqual(self._stored_rows(), len(stored))

        refused = [
            (lambda: self.lab.submit_delta(self.base.id, set=["workload.concurrancy=8"]),
             grpc.StatusCode.INVALID_ARGUMENT,
             'unknown field "workload.concurrancy" (did you mean "workload.concurrency"?)'),
            (lambda: self.lab.submit_delta(self.base.id, set=["workload.concurrency=many"]),
             grpc.StatusCode.INVALID_ARGUMENT,
             'workload.concurrency: expected an integer, got "many"'),
            (lambda: self.lab.submit_delta("exp-999", set=["workload.concurrency=8"]),
             grpc.StatusCode.NOT_FOUND, 'experiment "exp-999" not found'),
            (lambda: self.lab.submit(spec_text="scenario: x\nworkload: {concurrancy: 3}\n",
                                     spec_name="inline.yaml"),
             grpc.StatusCode.INVALID_ARGUMENT,
             'inline.yaml: unknown field "workload.concurrancy"'),
            (lambda: self.lab.status("exp-999"), grpc.StatusCode.NOT_FOUND,
             'experiment "exp-999" not found'),
            (lambda: list(self.lab.watch("exp-999", timeout=30)), grpc.StatusCode.NOT_FOUND,
             'experiment "exp-999" not found'),
        ]
        for call, code, message in refused:
            with self.subTest(message=message):
                with self.assertRaises(servelab.ServelabError) as caught:
                    call()
                self.assertEqual(caught.exception.code, code)
                self.assertIn(message, caught.exception.message)

        # A plan-only submit answers with the plan and stores nothing either.
        plan = self.lab.submit_delta(self.base.id, set=["workload.concurrency=4"],
                                     validate_only=True)
        self.assertEqual(plan.id, "")
        self.assertEqual([(c.path, c.new_value) for c in plan.changes],
                         [("workload.concurrency", "4")])

        self.assertEqual([e.id for e in self.lab.list_experiments()], stored)
        self.assertEqual(self._stored_rows(), len(stored))
        self.assertEqual(sum(self.lab.summary().experiments_by_state.values()), len(stored))

    def _stored_rows(self):
        db = os.path.join(self.daemon.state_dir, "servelab.db")
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
            return connection.execute("SELECT count(*) FROM experiments").fetchone()[0]


if __name__ == "__main__":
    unittest.main()
