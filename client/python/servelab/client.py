"""The servelabd client: one gRPC channel and the calls of the ServeLab service.

    import servelab
    with servelab.connect() as lab:   # the CLI's address rules
        base = lab.submit("deploy/examples/pd-quick.yaml")
        delta = lab.submit_delta(base.id, set=["workload.concurrency=8"])
        lab.wait_until_sent(delta.id, timeout=600)
        done = lab.wait_until_done(delta.id, timeout=600)
        print(servelab.state_label(done.state), done.result.whole.output_tokens_per_second)

Calls return the API's own messages (servelab.v1.experiment_pb2.Experiment,
servelab.v1.service_pb2.Summary). A call the daemon refuses, or one that cannot
reach it, raises ServelabError with the gRPC status code and message. A Client
is safe to use from several threads (grpc channels are); close() it, or use it
as a context manager, when done.
"""

import contextlib
import datetime
import os

import grpc

try:
    from servelab.v1 import experiment_pb2, service_pb2, service_pb2_grpc
except ImportError as e:
    raise ImportError(
        "servelab: the generated stubs (servelab/v1/*_pb2.py) are not importable: build the "
        "CMake target servelab_python_stubs and put BUILD_DIR/client/python/gen on PYTHONPATH "
        f"({e})") from e

# Unary calls are short; a wedged daemon should not hang a script forever.
UNARY_TIMEOUT_SECONDS = 30.0

FINAL_STATES = frozenset({
    experiment_pb2.EXPERIMENT_STATE_SUCCEEDED,
    experiment_pb2.EXPERIMENT_STATE_FAILED,
    experiment_pb2.EXPERIMENT_STATE_CANCELLED,
})


class ServelabError(Exception):
    """A refused or failed call: `code` is a grpc.StatusCode, `message` the daemon's text.

    INVALID_ARGUMENT names the field path at fault, NOT_FOUND the id or file,
    FAILED_PRECONDITION the state that forbids the call, UNAVAILABLE an
    unreachable daemon, DEADLINE_EXCEEDED a timeout (also a wait's timeout).
    """

    def __init__(self, code, message):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


def default_address():
    """The CLI's default address.

    $SERVELAB_ADDR, else unix:$SERVELAB_STATE_DIR/servelab.sock when that is
    set, else unix:./.state/servelab.sock.
    """
    addr = os.environ.get("SERVELAB_ADDR", "")
    if addr:
        return addr
    state_dir = os.environ.get("SERVELAB_STATE_DIR", "")
    if state_dir:
        return f"unix:{state_dir}/servelab.sock"
    return "unix:./.state/servelab.sock"


def grpc_target(address):
    """The gRPC target of a servelab address: tcp:HOST:PORT -> HOST:PORT; unix:PATH as is."""
    return address[len("tcp:"):] if address.startswith("tcp:") else address


def is_final(experiment):
    return experiment.state in FINAL_STATES


def state_label(state):
    """EXPERIMENT_STATE_RUNNING -> "running", as the CLI prints states."""
    return experiment_pb2.ExperimentState.Name(state).removeprefix("EXPERIMENT_STATE_").lower()


def _seconds(timeout):
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return timeout


def _string_list(name, values):
    # A bare string would otherwise be sent one character per entry.
    if isinstance(values, str):
        raise TypeError(f"{name} takes a list of strings, not a string: {name}=[{values!r}]")
    return list(values)


class Client:
    """A connection to one servelabd. See the module docstring."""

    def __init__(self, address=None, unary_timeout=UNARY_TIMEOUT_SECONDS):
        self.address = address or default_address()
        self._unary_timeout = unary_timeout
        self._channel = grpc.insecure_channel(grpc_target(self.address))
        self._stub = service_pb2_grpc.ServeLabStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def submit(self, spec_file=None, spec_text=None, set=(), unset=(), base_dir=None,
               spec_name=None, validate_only=False):
        """Freezes a full spec (a YAML/JSON file, or its text) plus a delta, and queues it.

        Relative paths in a spec file resolve against the file's directory; in
        spec_text against base_dir (default: the current directory). With
        validate_only the daemon freezes and plans, stores nothing, and the
        returned experiment has no id. Returns the stored Experiment.
        """
        if (spec_file is None) == (spec_text is None):
            raise TypeError("submit takes exactly one of spec_file and spec_text")
        request = service_pb2.SubmitExperimentRequest(validate_only=validate_only)
        if spec_file is not None:
            spec_file = os.fspath(spec_file)
            with open(spec_file, encoding="utf-8") as f:
                request.spec_text = f.read()
            request.base_dir = base_dir or os.path.dirname(os.path.abspath(spec_file))
            request.spec_name = spec_name or spec_file
        else:
            request.spec_text = spec_text
            request.base_dir = base_dir or os.getcwd()
            request.spec_name = spec_name or "<spec_text>"
        request.set.extend(_string_list("set", set))
        request.unset.extend(_string_list("unset", unset))
        return self._unary(self._stub.SubmitExperiment, request).experiment

    def submit_delta(self, base_id, set=(), unset=(), base_dir=None, validate_only=False):
        """Applies `set` (PATH=VALUE, in order) and `unset` (PATH) to base_id's frozen spec.

        Relative file paths in values resolve against base_dir (default: the
        current directory). Returns the stored Experiment; its `changes` list
        every field that differs from the base.
        """
        request = service_pb2.SubmitExperimentRequest(
            base_id=base_id, base_dir=base_dir or os.getcwd(), validate_only=validate_only)
        request.set.extend(_string_list("set", set))
        request.unset.extend(_string_list("unset", unset))
        return self._unary(self._stub.SubmitExperiment, request).experiment

    def status(self, experiment_id):
        """The whole Experiment: state, stages, plan, progress, result."""
        return self._unary(self._stub.GetExperiment,
                           service_pb2.GetExperimentRequest(id=experiment_id))

    def list_experiments(self, scenario="", state=experiment_pb2.EXPERIMENT_STATE_UNSPECIFIED):
        """Experiments oldest first, optionally of one scenario and/or one ExperimentState.

        The daemon answers a page per call; this follows next_page_token to the end.
        """
        request = service_pb2.ListExperimentsRequest(scenario=scenario, state=state)
        experiments = []
        while True:
            page = self._unary(self._stub.ListExperiments, request)
            experiments.extend(page.experiments)
            if not page.next_page_token:
                return experiments
            request.page_token = page.next_page_token

    def cancel(self, experiment_id):
        """Cancels a queued or running experiment; returns it (final once the load has ended)."""
        return self._unary(self._stub.CancelExperiment,
                           service_pb2.CancelExperimentRequest(id=experiment_id))

    def summary(self):
        """The handoff: lane, queue, hot deployment, best per scenario, next_step."""
        return self._unary(self._stub.GetSummary, service_pb2.GetSummaryRequest())

    def watch(self, experiment_id, timeout=None):
        """Yields the experiment now, then after every change, until it is final.

        timeout (seconds or a timedelta) bounds the whole stream; past it the
        iteration raises ServelabError(DEADLINE_EXCEEDED). Leaving the loop
        early cancels the stream.
        """
        call = self._stub.WatchExperiment(service_pb2.WatchExperimentRequest(id=experiment_id),
                                          timeout=_seconds(timeout))
        try:
            for experiment in call:
                yield experiment
        except grpc.RpcError as e:
            raise self._error(e) from None
        finally:
            call.cancel()

    def wait_until_sent(self, experiment_id, timeout=None):
        """Returns the experiment once a formal request went out, or once it is final.

        A final experiment may have sent none: check progress.formal_requests_sent.
        Raises ServelabError(DEADLINE_EXCEEDED) after timeout seconds.
        """
        return self._wait(experiment_id, "sent", timeout,
                          lambda e: e.progress.formal_requests_sent > 0 or is_final(e))

    def wait_until_done(self, experiment_id, timeout=None):
        """Returns the experiment once it is final (succeeded, failed or cancelled).

        Raises ServelabError(DEADLINE_EXCEEDED) after timeout seconds.
        """
        return self._wait(experiment_id, "done", timeout, is_final)

    def _wait(self, experiment_id, until, timeout, reached):
        last = None
        try:
            with contextlib.closing(self.watch(experiment_id, timeout=timeout)) as updates:
                for experiment in updates:
                    last = experiment
                    if reached(experiment):
                        return experiment
        except ServelabError as e:
            if e.code != grpc.StatusCode.DEADLINE_EXCEEDED or last is None:
                raise
            raise ServelabError(
                e.code,
                f"{experiment_id} did not reach \"{until}\" within {_seconds(timeout):g}s "
                f"(state {state_label(last.state)}, {last.progress.formal_requests_sent}/"
                f"{last.progress.formal_requests_planned} formal requests sent)") from None
        # The daemon ends a watch with OK only at a final state, so this is a
        # stream that broke without a status.
        raise ServelabError(grpc.StatusCode.UNKNOWN,
                            f"the watch of {experiment_id} ended before it reached \"{until}\"")

    def _unary(self, method, request):
        try:
            return method(request, timeout=self._unary_timeout)
        except grpc.RpcError as e:
            raise self._error(e) from None

    def _error(self, rpc_error):
        code, message = rpc_error.code(), rpc_error.details() or ""
        if code == grpc.StatusCode.UNAVAILABLE and not message.startswith("servelabd"):
            message = (f"cannot reach servelabd at {self.address} (is it running? start it with "
                       f"`servelabd --state-dir DIR`): {message}")
        return ServelabError(code, message)


def connect(address=None, unary_timeout=UNARY_TIMEOUT_SECONDS):
    """A Client of the daemon at `address` (unix:PATH or tcp:HOST:PORT; default_address()).

    Connecting is lazy: an unreachable daemon shows as ServelabError(UNAVAILABLE)
    on the first call.
    """
    return Client(address, unary_timeout=unary_timeout)
