"""What the engines' runaway guards cost on the reference loops (issue 26).

The compiled built-in paths carry no guard at all (they are trusted; the
wall-clock budget is a signal timer, free per event), so the only cost is in
the Python reference loops every user policy runs on: the queue loop's
same-instant counter (a store per event, a compare per internal event), the
batch loop's start counter and end-of-run check, DFRS's progress check at
each periodic instant. This benchmark times each reference loop as it is
now against the same loop at ``--base`` (a commit before the guards, loaded
from git into a module of its own) on the same workloads, both alternated
``--repeat`` times (best CPU time of each), and prints the ratio now /
before: a ratio within the run-to-run noise (a few %) is "costs nothing".
The batch loop changed for another reason after the guard went in (the
``BatchRun`` class of the Gymnasium environment), so its ratio measures both.

    python benchmarks/guard_overhead.py [--base 3b2e4bd] [--repeat 5] [--njobs 20000]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def module_at(rev: str, path: str, name: str):
    """The file ``path`` as it was at ``rev``, imported as module ``name``."""
    source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True)
    folder = Path(tempfile.mkdtemp(prefix="guard-base-"))
    target = folder / f"{name}.py"
    target.write_text(source.stdout)
    spec = importlib.util.spec_from_file_location(name, target)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def best(fn, repeat: int) -> float:
    """Best CPU seconds of ``repeat`` calls (CPU, not wall: on a shared machine
    the wall time measures the other processes as much as this one)."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="3b2e4bd", help="a commit without the guards")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--njobs", type=int, default=20_000)
    args = ap.parse_args()

    from schedlab.engines.batch.policies import BATCH_POLICIES
    from schedlab.engines.batch.sim import engine as batch_now
    from schedlab.engines.queue.policies import QUEUE_POLICIES
    from schedlab.engines.queue.sim import engine as queue_now
    from schedlab.workloads.lublin import lublin_workload
    from schedlab.workloads.synthetic import queue_workload

    queue_before = module_at(args.base, "schedlab/engines/queue/sim/engine.py", "queue_engine_before")
    batch_before = module_at(args.base, "schedlab/engines/batch/sim/engine.py", "batch_engine_before")

    jobs = queue_workload(np.random.default_rng(1), njobs=args.njobs, shape=0.25, load=0.9, sigma=0.5)
    cols = [jobs[c].to_numpy() for c in ("submit", "size", "estimate", "weight")]
    print(f"queue reference loop, {args.njobs} jobs (load 0.9, shape 0.25), best of {args.repeat}, base {args.base}")
    print(f"  {'policy':10s} {'before s':>9s} {'now s':>9s} {'now/before':>10s}  events")
    for name in ("FIFO", "PS", "LAS", "PSBS", "FSPE+PS"):
        cls = QUEUE_POLICIES[name]
        a, ev_a = queue_before.simulate(*cols, cls)
        b, ev_b = queue_now.simulate(*cols, cls)
        assert a.tobytes() == b.tobytes() and ev_a == ev_b, name  # the guard changes no result
        before = now = float("inf")
        for _ in range(args.repeat):  # alternated, so both see the same machine load
            before = min(before, best(lambda c=cls: queue_before.simulate(*cols, c), 1))
            now = min(now, best(lambda c=cls: queue_now.simulate(*cols, c), 1))
        print(f"  {name:10s} {before:9.3f} {now:9.3f} {now / before:10.3f}  {ev_b}")

    table = lublin_workload(np.random.default_rng(2), njobs=args.njobs, nodes=128)
    submit = table["submit"].to_numpy().astype(float)
    runtime = table["runtime"].to_numpy().astype(float)
    requested = table["requested_time"].to_numpy().astype(float)
    need = table["procs"].to_numpy().astype(np.int64)
    print(
        f"batch reference loop, {args.njobs} Lublin jobs on 128 processors (since {args.base} the loop also became "
        f"BatchRun, driven one instant at a time for the Gymnasium environment: the ratio is that and the guard)"
    )
    for name in ("FCFS", "EASY"):
        cls = BATCH_POLICIES[name]
        ra = batch_before.simulate_batch(submit, runtime, requested, need, 128, cls)
        rb = batch_now.simulate_batch(submit, runtime, requested, need, 128, cls)
        assert ra.start.tobytes() == rb.start.tobytes(), name
        before = now = float("inf")
        for _ in range(args.repeat):
            before = min(
                before, best(lambda c=cls: batch_before.simulate_batch(submit, runtime, requested, need, 128, c), 1)
            )
            now = min(now, best(lambda c=cls: batch_now.simulate_batch(submit, runtime, requested, need, 128, c), 1))
        print(f"  {name:10s} {before:9.3f} {now:9.3f} {now / before:10.3f}")

    from schedlab.engines.dfrs.policies import DFRS_POLICIES
    from schedlab.engines.dfrs.sim import events as dfrs_now

    dfrs_before = module_at(args.base, "schedlab/engines/dfrs/sim/events.py", "dfrs_events_before")
    rng = np.random.default_rng(3)
    n = max(50, args.njobs // 100)
    release = np.sort(rng.uniform(0, 50_000.0, n))
    processing = rng.exponential(2000.0, n)
    tasks = rng.integers(1, 9, n)
    cpu = rng.choice([0.25, 0.5, 1.0], n)
    mem = rng.choice([0.1, 0.25, 0.5], n)
    print(f"DFRS event loop, {n} jobs on 16 nodes (periodic policies: the guard is a check per periodic instant)")
    for name in ("GreedyPM*/per/OPT=MIN", "MCB8*/per/OPT=MIN"):
        cls = DFRS_POLICIES[name]

        def once(module, c=cls):
            return module.simulate_dfrs(release, processing, tasks, cpu, mem, 16, c(), penalty=300.0)

        ra, rb = once(dfrs_before), once(dfrs_now)
        assert ra.state.end.tobytes() == rb.state.end.tobytes() and ra.events == rb.events, name
        before = now = float("inf")
        for _ in range(args.repeat):
            before = min(before, best(lambda: once(dfrs_before), 1))
            now = min(now, best(lambda: once(dfrs_now), 1))
        print(f"  {name:22s} {before:9.3f} {now:9.3f} {now / before:10.3f}  {rb.events} events")


if __name__ == "__main__":
    main()
