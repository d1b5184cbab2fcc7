#!/usr/bin/python3
"""Concurrency sweep: one base experiment, then one delta per concurrency value.

Every delta changes only workload.concurrency, so servelabd reuses the running
deployment (no relaunch, no warmup) and runs just cache reset, seeding and the
formal load. All deltas are submitted up front: the daemon queues them and
prepares the next one while the current load runs. The table at the end has
one row per experiment; "submit->first req" is the time from submit to the
first formal request, so for a queued delta it includes the wait in the queue.

    PYTHONPATH=client/python:build/client/python/gen /usr/bin/python3 \\
        client/python/examples/concurrency_sweep.py -f deploy/examples/pd-quick.yaml \\
        --concurrency 4,8,32

Exit status: 0 when every experiment succeeded, 1 when one did not or a call
failed (printed as `error: CODE: message`), 2 on bad arguments.
"""

import argparse
import sys

import servelab

_COLUMNS = ("experiment", "concurrency", "state", "sent/planned", "submit->first req",
            "tok/s/dev whole", "tok/s/dev steady", "ttft p99", "tpot p99", "decision")


def _concurrency_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 4,8,32, got {text!r}") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive integers like 4,8,32, got {text!r}")
    return values


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Submit a base experiment (-f SPEC) or take a stored one (--base ID), then "
                    "one delta per --concurrency value against it; wait until each is done and "
                    "print a table of the results.",
        epilog="Address: --addr, else $SERVELAB_ADDR, else unix:$SERVELAB_STATE_DIR/servelab.sock "
               "when SERVELAB_STATE_DIR is set, else unix:./.state/servelab.sock. Forms: "
               "unix:PATH, tcp:HOST:PORT.")
    parser.add_argument("--addr", help="servelabd address (see below)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("-f", "--file", metavar="SPEC", help="base spec, YAML or JSON")
    source.add_argument("--base", metavar="ID", help="a stored experiment to use as the base")
    parser.add_argument("--concurrency", type=_concurrency_list, default=[4, 8, 32],
                        metavar="LIST", help="comma-separated values (default: 4,8,32)")
    parser.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                        help="with -f: applied to the base spec; with --base: added to every "
                             "delta (repeatable)")
    parser.add_argument("--timeout", type=float, default=1800, metavar="SECONDS",
                        help="give up waiting for an experiment after this long (default: 1800)")
    return parser.parse_args(argv)


def _ms(value_seconds):
    return f"{value_seconds * 1000:.1f} ms"


def row(experiment):
    progress = experiment.progress
    result = experiment.result
    succeeded = experiment.state == servelab.experiment_pb2.EXPERIMENT_STATE_SUCCEEDED
    decision = result.decision
    if not succeeded:
        verdict = servelab.experiment_pb2.FailureClass.Name(experiment.failure_class) \
            if experiment.failure_class else "-"
    elif decision.baseline_experiment_id:
        label = servelab.result_pb2.Verdict.Name(decision.verdict).removeprefix("VERDICT_").lower()
        verdict = (f"{label} ({decision.delta_fraction * 100:+.2f}% vs "
                   f"{decision.baseline_experiment_id})")
    else:
        verdict = "baseline"
    delay = (_ms(progress.first_formal_request_delay.ToNanoseconds() / 1e9)
             if progress.HasField("first_formal_request_delay") else "-")
    return (
        experiment.id,
        str(experiment.spec.workload.concurrency),
        servelab.state_label(experiment.state),
        f"{progress.formal_requests_sent}/{progress.formal_requests_planned}",
        delay,
        f"{result.whole.output_tokens_per_second_per_device:.1f}" if succeeded else "-",
        f"{result.steady.output_tokens_per_second_per_device:.1f}" if succeeded else "-",
        _ms(result.whole.ttft.p99) if succeeded else "-",
        _ms(result.whole.tpot.p99) if succeeded else "-",
        verdict,
    )


def format_table(rows):
    widths = [max(len(r[i]) for r in (_COLUMNS, *rows)) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip()
             for r in (_COLUMNS, *rows)]
    return "\n".join(lines)


def sweep(lab, args):
    if args.file:
        base = lab.submit(args.file, set=args.set)
        print(f"submitted base {base.id} (scenario {base.spec.scenario}, concurrency "
              f"{base.spec.workload.concurrency})", flush=True)
        delta_sets = []
    else:
        base = lab.status(args.base)
        delta_sets = args.set
    deltas = []
    for concurrency in args.concurrency:
        delta = lab.submit_delta(base.id, set=[*delta_sets, f"workload.concurrency={concurrency}"])
        print(f"submitted {delta.id}: workload.concurrency={concurrency}", flush=True)
        deltas.append(delta)
    finished = []
    for experiment in [base, *deltas]:
        done = lab.wait_until_done(experiment.id, timeout=args.timeout)
        print(f"{done.id}: {servelab.state_label(done.state)}", flush=True)
        finished.append(done)
    print()
    print(format_table([row(e) for e in finished]))
    return all(e.state == servelab.experiment_pb2.EXPERIMENT_STATE_SUCCEEDED for e in finished)


def main(argv):
    args = parse_args(argv)
    try:
        with servelab.connect(args.addr) as lab:
            return 0 if sweep(lab, args) else 1
    except servelab.ServelabError as e:
        print(f"error: {e.code.name}: {e.message}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
