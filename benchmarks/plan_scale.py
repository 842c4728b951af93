"""The driver's own cost of a sweep's plan, from 10^4 to 10^7 configurations,
without simulating (issue 42): what the driver holds and spends to plan,
write the manifest, hand every configuration out as tasks, and skip every
configuration of a finished sweep.

The sweeps are `sweep_scale`'s (FIFO on ``synthetic`` workloads of 50 jobs,
one replication, a grid of five workload parameters). Each size runs in a
fresh driver process, which takes the runner's own path (`runner._Sweep`)
but runs no task:

* ``plan``: `parse_spec` (the plan built and checked);
* ``prepare``: the results dir prepared (the manifest written) and the keys
  on disk read (none);
* ``hand out``: the round's counting pass and every task drawn from it
  (`TaskSizer.next_work`), each configuration made and checked against the
  done set as a real round does;
* ``resume``: every key of the plan put in the done set (as a finished
  sweep's part files would), then the round again: the configurations made,
  checked and all skipped;
* ``peak RSS``: the process's peak resident memory (ru_maxrss), and after
  each step;
* each step's CPU seconds too (``*_cpu`` in the JSON: the figure to compare
  on a loaded machine).

With ``--resume-killed`` each size is instead a killed sweep resumed by a
fresh driver, two processes: the first plans, prepares the results dir (the
manifest written, and what that checkout keeps beside it) and commits
summary rows for the first ``--share`` of the plan's configurations (as a
sweep killed part-way would have: one part file per 100,000 rows, a row
holding its key); the second, a new process, resumes it as `run_sweep` does
-- ``plan`` (`parse_spec`), ``prepare`` (`_Sweep.prepare`: the manifest
checked, grown or left, the keys on disk read) and ``skip`` (the round's
counting pass: what is on disk skipped) -- and prints each step's CPU
seconds, the resume's wall and the second process's peak RSS. Run it for
two checkouts alternately to compare them on a loaded machine.

Run it on two checkouts (``PYTHONPATH``) to compare them; the machine's load
average is printed with each row.

    python benchmarks/plan_scale.py [--sizes 1e4,1e5,1e6] [--resume-killed [--share 0.167] [--keep DIR]]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep_scale import spec_for  # noqa: E402 - the same sweeps as the growth table


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def child(n: int, out: Path) -> dict:
    import numpy as np

    from schedlab.platform.execution.backends import choose
    from schedlab.platform.execution.runner import _Sweep
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.platform.storage.keyset import id_number
    from schedlab.platform.storage.seam import open_store

    row: dict = {"configs": n, "start_gb": rss_gb()}
    t, c = time.perf_counter(), time.process_time()
    spec = parse_spec(spec_for(n, out, "local", 1), "benchmark")
    row["plan_s"], row["plan_cpu"], row["plan_gb"] = time.perf_counter() - t, time.process_time() - c, rss_gb()
    plan = spec.checked_plan[1] if spec.checked_plan is not None else None
    store = open_store(spec.results_dir())
    store.lock()
    sweep = _Sweep(spec, plan, store, time.monotonic(), choose(spec, None, "local"), None, None)
    t, c = time.perf_counter(), time.process_time()
    sweep.prepare(False)
    row["prepare_s"], row["prepare_cpu"], row["prepare_gb"] = time.perf_counter() - t, time.process_time() - c, rss_gb()
    t, c = time.perf_counter(), time.process_time()
    pending = sweep.round_work(plan.each_instance(range(1)))
    handed = 0
    while pending:
        work, _ = pending.next_work(1)
        handed += sum(len(todo) for _, todo in work)
    row["hand_out_s"], row["hand_out_gb"], row["handed"] = time.perf_counter() - t, rss_gb(), handed
    row["hand_out_cpu"] = time.process_time() - c
    numbers = np.fromiter((id_number(cid) for cid in plan.configs), dtype=np.uint64, count=len(plan.configs))
    sweep.sink.written.add_numbers(numbers, 0)  # every key on disk: a finished sweep
    del numbers
    t, c = time.perf_counter(), time.process_time()
    pending = sweep.round_work(plan.each_instance(range(1)))
    row["resume_s"], row["resume_cpu"], row["resume_gb"] = time.perf_counter() - t, time.process_time() - c, rss_gb()
    row["skipped"], row["left"] = sweep.report.rows_skipped, pending.remaining
    store.unlock()
    return row


#: Summary rows the first process of ``--resume-killed`` commits a batch at a time.
KILLED_BATCH = 100_000


def killed(n: int, out: Path, share: float) -> dict:
    """The first process of ``--resume-killed``: the results dir prepared,
    the first ``share`` of the plan's configurations committed."""
    from schedlab.platform.execution.backends import choose
    from schedlab.platform.execution.runner import _Sweep
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.platform.storage.seam import open_store

    t, c = time.perf_counter(), time.process_time()
    spec = parse_spec(spec_for(n, out, "local", 1), "benchmark")
    plan = spec.checked_plan[1] if spec.checked_plan is not None else None
    store = open_store(spec.results_dir())
    store.lock()
    sweep = _Sweep(spec, plan, store, time.monotonic(), choose(spec, None, "local"), None, None)
    sweep.prepare(False)
    written = int(n * share)
    batch: list[dict] = []
    for k, config in enumerate(plan.configs.values()):
        if k >= written:
            break
        batch.append({"config_id": config.config_id, "replication": 0, "policy": config.policy})
        if len(batch) == KILLED_BATCH:
            store.commit(batch, [], [])
            batch = []
    if batch:
        store.commit(batch, [], [])
    store.unlock()
    return {"on_disk": written, "first_s": time.perf_counter() - t, "first_cpu": time.process_time() - c}


def resumed(n: int, out: Path) -> dict:
    """The second process of ``--resume-killed``: the resume, step by step."""
    from schedlab.platform.execution.backends import choose
    from schedlab.platform.execution.runner import _Sweep
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.platform.storage.seam import open_store

    row: dict = {"configs": n, "start_gb": rss_gb()}
    t0, c0 = time.perf_counter(), time.process_time()
    spec = parse_spec(spec_for(n, out, "local", 1), "benchmark")
    row["plan_cpu"], row["plan_gb"] = time.process_time() - c0, rss_gb()
    plan = spec.checked_plan[1] if spec.checked_plan is not None else None
    store = open_store(spec.results_dir())
    store.lock()
    sweep = _Sweep(spec, plan, store, time.monotonic(), choose(spec, None, "local"), None, None)
    c = time.process_time()
    sweep.prepare(False)
    row["prepare_cpu"], row["prepare_gb"] = time.process_time() - c, rss_gb()
    c = time.process_time()
    pending = sweep.round_work(plan.each_instance(range(1)))
    row["skip_cpu"], row["skip_gb"] = time.process_time() - c, rss_gb()
    row["resume_s"], row["resume_cpu"] = time.perf_counter() - t0, time.process_time() - c0
    row["skipped"], row["left"], row["left_units"] = sweep.report.rows_skipped, sweep.counts["total"], pending.remaining
    row["ids_read"] = bool(getattr(plan, "ids_read", False))
    store.unlock()
    return row


def run(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"driver child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def resume_killed(sizes: list[int], share: float, keep: Path | None) -> None:
    """``--resume-killed``: each size killed, then resumed in a fresh process."""
    print(f"machine: {os.cpu_count()} CPUs; checkout {os.environ.get('PYTHONPATH', '(installed)')}")
    print(
        f"{'configs':>11} {'on disk':>9} {'plan cpu':>9} {'prepare cpu':>11} {'skip cpu':>9} "
        f"{'resume cpu':>10} {'wall s':>7} {'peak RSS':>9}  load"
    )
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="slresume-", dir=keep) as tmp:
            out = str(Path(tmp) / "out")
            first = run(["--killed", json.dumps([n, out, share])])
            row = {**first, **run(["--resumed", json.dumps([n, out])])}
        ok = row["skipped"] == first["on_disk"] and row["left"] == n - first["on_disk"]
        print(
            f"{n:>11,} {first['on_disk']:>9,} {row['plan_cpu']:>9.1f} {row['prepare_cpu']:>11.1f} "
            f"{row['skip_cpu']:>9.1f} {row['resume_cpu']:>10.1f} {row['resume_s']:>7.1f} {row['skip_gb']:>7.2f}GB  "
            f"{os.getloadavg()[0]:.1f}" + ("" if ok else "  CHECK FAILED"),
            json.dumps(row),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e4,1e5,1e6", help="configuration counts, comma-separated")
    parser.add_argument("--resume-killed", action="store_true", help="time a fresh process resuming a killed sweep")
    parser.add_argument("--share", type=float, default=0.167, help="share of a killed sweep on disk (--resume-killed)")
    parser.add_argument("--keep", type=Path, help="folder the results dirs are made in (default: the temp folder)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--killed", help=argparse.SUPPRESS)
    parser.add_argument("--resumed", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, out = json.loads(args.child)
        print(json.dumps(child(n, Path(out))))
        return
    if args.killed:
        n, out, share = json.loads(args.killed)
        print(json.dumps(killed(n, Path(out), share)))
        return
    if args.resumed:
        n, out = json.loads(args.resumed)
        print(json.dumps(resumed(n, Path(out))))
        return
    if args.resume_killed:
        resume_killed([int(float(x)) for x in args.sizes.split(",")], args.share, args.keep)
        return
    print(f"machine: {os.cpu_count()} CPUs; checkout {os.environ.get('PYTHONPATH', '(installed)')}")
    print(f"{'configs':>11} {'plan s':>8} {'prepare s':>9} {'hand out s':>10} {'resume s':>9} {'peak RSS':>9}  load")
    for text in args.sizes.split(","):
        n = int(float(text))
        with tempfile.TemporaryDirectory(prefix="slplan-") as tmp:
            proc = subprocess.run(
                [sys.executable, __file__, "--child", json.dumps([n, str(Path(tmp) / "out")])],
                capture_output=True,
                text=True,
            )
        if proc.returncode != 0:
            raise SystemExit(f"driver child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        ok = row["handed"] == n and row["skipped"] == n and row["left"] == 0
        print(
            f"{n:>11,} {row['plan_s']:>8.1f} {row['prepare_s']:>9.1f} {row['hand_out_s']:>10.1f} "
            f"{row['resume_s']:>9.1f} {row['resume_gb']:>7.2f}GB  {os.getloadavg()[0]:.1f}"
            + ("" if ok else "  CHECK FAILED"),
            json.dumps(row),
            flush=True,
        )


if __name__ == "__main__":
    main()
