"""Reading a big result: ``schedlab results``, ``compare``, ``plot`` and
``schedlab.load`` on 10^6 and 10^7 summary rows (a benchmark: prints figures,
asserts nothing; issue #42 asks for <= 10 s each, in bounded memory).

The results dir is written directly, not simulated: a real sweep of a few
configurations (2 policies, 2 loads, one replication) gives the manifest's
form and the summary's schema; then the grid is widened to ``--configs``
configurations (2 policies x 10 loads x 50 shapes x configs/1000 sigmas) of
``--reps`` replications each (default 10,000 and 100,000 configurations x
100 = 10^6 and 10^7 rows), the manifest written by the store
(`ResultStore.prepare`) and the rows published through the store's own write
path (`store.publish` of `part.Part`\\ s, one Parquet file per policy and
chunk), metric values drawn from a fixed seed. ``--store DIR`` keeps the
results dirs there (``DIR/<configs>x<reps>``) and reuses them in later runs.

Each command then runs as a fresh process (``python -m schedlab.cli``),
timed end to end (wall, and CPU: user + system of every thread, which a
loaded machine does not inflate) with its peak RSS (from the child's rusage). With ``--old
CHECKOUT`` (e.g. a worktree of the commit before the lazy reads) every
command runs from that checkout too, old and new alternating, and the table
says whether their outputs are identical. The last lines put each command's
new peak RSS at the largest size against `MEMORY_BUDGET_GB` and against its
peak at the smallest: memory that does not grow with the rows read. The
machine is shared: the load average is printed.

    python benchmarks/big_results.py [--configs 10000,100000] [--reps 100] [--store DIR] [--old CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE_SPEC = """
name = "{name}"
engine = "queue"
seed = 1
policies = ["FIFO", "PS"]

[workload]
kind = "synthetic"
njobs = 20
load = [0.5, 0.9]

[replications]
n = 1

[outputs]
dir = "{out}"
per_job = false
"""
LOADS = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
SHAPES = [round(0.25 + 0.05 * i, 2) for i in range(50)]
#: Configurations per published chunk (times the replications: the rows of one file per policy).
CHUNK_CONFIGS = 5_000
METRICS = ("mst", "slowdown_mean", "slowdown_p50", "slowdown_p99", "slowdown_max", "makespan", "events")


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def template(work: Path) -> Path:
    """A real sweep's results dir (4 configurations)."""
    out = work / "template"
    spec = work / "template.toml"
    spec.write_text(TEMPLATE_SPEC.format(name="big", out=out))
    subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "run", str(spec), "--no-tracking", "--no-progress"],
        env=env(),
        check=True,
        capture_output=True,
    )
    return out


def write_big(work: Path, configs: int, reps: int) -> Path:
    """The widened results dir of ``configs`` x ``reps`` summary rows."""
    import numpy as np
    import polars as pl

    from schedlab.platform.storage.part import Part, encode
    from schedlab.platform.storage.store import SUMMARY, ResultStore, publish

    base = template(work)
    manifest = json.loads((base / "manifest.json").read_text())
    row = pl.read_parquet(base / "summary", hive_partitioning=True).drop("policy").row(0, named=True)
    first = next(iter(manifest["configs"].values()))
    sigmas = [round(0.1 + 0.01 * i, 2) for i in range(max(1, configs // (2 * len(LOADS) * len(SHAPES))))]
    points = [(load, shape, sigma) for sigma in sigmas for shape in SHAPES for load in LOADS]
    ids: list[tuple[str, str, tuple[float, float, float]]] = []  # (config id, policy, point)
    for i, point in enumerate(points):
        for j, policy in enumerate(("FIFO", "PS")):
            ids.append((f"{2 * i + j:016x}", policy, point))
    manifest["configs"] = {
        cid: {**first, "policy": policy, "params": {**first["params"], "load": p[0], "shape": p[1], "sigma": p[2]}}
        for cid, policy, p in ids
    }
    manifest["name"] = f"big{len(ids)}"
    out = work / "big"
    store = ResultStore(out)
    store.prepare(manifest, fresh=True)
    rng = np.random.default_rng(1)
    for start in range(0, len(ids), CHUNK_CONFIGS):
        chunk = ids[start : start + CHUNK_CONFIGS]
        parts = []
        for policy in ("FIFO", "PS"):
            mine = [(cid, p) for cid, pol, p in chunk if pol == policy]
            n = len(mine) * reps
            cols = {k: [v] * 1 for k, v in row.items() if k not in METRICS}
            frame = pl.DataFrame(cols).select(pl.all().repeat_by(n).explode())
            frame = frame.with_columns(
                pl.Series("config_id", [cid for cid, _ in mine]).repeat_by(reps).explode(),
                pl.Series("replication", list(range(reps)) * len(mine), dtype=pl.Int64),
                pl.Series("load", [p[0] for _, p in mine]).repeat_by(reps).explode(),
                pl.Series("shape", [p[1] for _, p in mine]).repeat_by(reps).explode(),
                pl.Series("sigma", [p[2] for _, p in mine]).repeat_by(reps).explode(),
                *(pl.Series(m, rng.lognormal(0.0, 1.0, n)) for m in METRICS),
            )
            frame = frame.select([c for c in dict.fromkeys([*row, *METRICS]) if c in frame.columns])
            parts.append(Part(policy, [], {SUMMARY: encode(frame.to_arrow())}))
        publish(store, parts)
    return out


#: Peak RSS (GB) a read of 10^7 rows should stay within (issue #42: bounded memory); printed against, not asserted.
MEMORY_BUDGET_GB = 1.5
#: Marks a results dir whose writing finished (a later run reuses it).
DONE_MARK = "benchmark-complete"


def commands(big: Path, work: Path) -> dict[str, list[str]]:
    """Label -> argv of each read (the interpreter and ``-m schedlab.cli`` included)."""
    cli = [sys.executable, "-m", "schedlab.cli"]
    load_code = (
        "import polars as pl, schedlab, sys; "
        "print(schedlab.load(sys.argv[1]).group_by('policy').agg(pl.col('mst').mean()).collect().sort('policy'))"
    )
    load_where_code = (
        "import polars as pl, schedlab, sys; "
        "f = schedlab.load(sys.argv[1], columns=['policy', 'load', 'mst'], where={'shape': 0.25, 'sigma': 0.1}); "
        "print(f.group_by('policy', 'load').agg(pl.len()).collect().height)"
    )
    return {
        "results --where load=0.9 --where shape=0.25 --csv": [
            *cli,
            "results",
            str(big),
            "--where",
            "load=0.9",
            "--where",
            "shape=0.25",
            "--csv",
        ],
        "results --by policy,load": [*cli, "results", str(big), "--by", "policy,load"],
        "compare --baseline FIFO --by load": [*cli, "compare", str(big), "--baseline", "FIFO", "--by", "load"],
        "compare --baseline FIFO --by load --ratio": [
            *cli,
            "compare",
            str(big),
            "--baseline",
            "FIFO",
            "--by",
            "load",
            "--ratio",
        ],
        "plot --x load --y mst (shape, sigma held)": [
            *cli,
            "plot",
            str(big),
            "--x",
            "load",
            "--y",
            "mst",
            "--where",
            "shape=0.25",
            "--where",
            "sigma=0.1",
            "--out",
            str(work / "fig.pdf"),
        ],
        "schedlab.load(...).group_by(policy)": [sys.executable, "-c", load_code, str(big)],
        "schedlab.load(columns=, where=) (new only)": [sys.executable, "-c", load_where_code, str(big)],
    }


def measure(argv: list[str], checkout: Path) -> tuple[float, float, float, bool, str]:
    """(wall s, CPU s, peak RSS GB, ok, stdout) of ``argv`` run from ``checkout``; the CPU
    time (user + system, every thread) is what a loaded machine does not inflate."""
    # RUSAGE_CHILDREN's peak is the largest child so far: a fresh interpreter per command keeps them apart
    wrapper = [
        sys.executable,
        "-c",
        "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); "
        "sys.exit(r.returncode)",
        *argv,
    ]
    t1 = time.perf_counter()
    # run in the checkout: ``python -m`` and ``-c`` put the working directory first on sys.path, before PYTHONPATH
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run(wrapper, env=env, cwd=checkout, capture_output=True, text=True)
    took = time.perf_counter() - t1
    rss, cpu = out.stderr.strip().splitlines()[-1].split()
    if out.returncode != 0:
        print(f"  ({checkout.name}: FAILED: {out.stderr.strip()[-300:]})", flush=True)
    return took, float(cpu), int(rss) / 1e6, out.returncode == 0, out.stdout


def results_dir(root: Path, configs: int, reps: int) -> Path:
    """The results dir of ``configs`` x ``reps`` rows under ``root``, written unless a finished one is there."""
    work = root / f"{configs}x{reps}"
    big = work / "big"
    if (work / DONE_MARK).exists():
        return big
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    write_big(work, configs, reps)
    (work / DONE_MARK).write_text("")
    print(f"wrote {configs * reps:,} summary rows in {time.perf_counter() - t0:.0f} s -> {big}", flush=True)
    return big


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default="10000,100000", help="comma-separated sizes (configurations)")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--store", type=Path, help="keep the results dirs here and reuse them (default: a temporary dir)")
    ap.add_argument("--old", type=Path, help="a checkout of the code to compare with (run alternately with this one)")
    ap.add_argument("--only", help="run only the commands whose label contains this text")
    args = ap.parse_args()
    root = args.store or Path(tempfile.mkdtemp(prefix="schedlab-bench-big-"))
    root.mkdir(parents=True, exist_ok=True)
    checkouts = {"new": ROOT, **({"old": args.old.resolve()} if args.old else {})}
    peaks: dict[tuple[str, int], float] = {}
    try:
        sizes = [int(c) for c in args.configs.split(",")]
        cols = " | ".join(f"{k} wall s | {k} CPU s | {k} peak GB" for k in checkouts)
        print(f"| rows | command | {cols} | same output |")
        print(f"|---|---|{'---|---|---|' * len(checkouts)}---|")
        for configs in sizes:
            big = results_dir(root, configs, args.reps)
            rows = configs * args.reps
            for label, argv in commands(big, root / f"{configs}x{args.reps}").items():
                if args.only and args.only not in label:
                    continue
                cells, outputs = [], []
                for name, checkout in checkouts.items():  # old and new alternate, command by command
                    if name == "old" and "new only" in label:
                        cells.append("– | – | –")
                        continue
                    took, cpu, peak, ok, stdout = measure(argv, checkout)
                    cells.append(f"{took:.1f} | {cpu:.1f} | {peak:.2f}" if ok else "failed | – | –")
                    outputs.append(stdout)
                    if name == "new":
                        peaks[(label, rows)] = peak
                same = "–" if len(outputs) < 2 else ("yes" if outputs[0] == outputs[1] else "NO")
                print(
                    f"| {rows:,} | {label} | {' | '.join(cells)} | {same} | (load average {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
        small, large = min(sizes) * args.reps, max(sizes) * args.reps
        for label in dict.fromkeys(label for label, _ in peaks):
            if (label, large) in peaks:
                top = peaks[(label, large)]
                growth = f", x{top / peaks[(label, small)]:.1f} of its peak at {small:,}" if small != large else ""
                verdict = "within" if top <= MEMORY_BUDGET_GB else "OVER"
                print(f"{label}: new peak {top:.2f} GB at {large:,} rows, {verdict} {MEMORY_BUDGET_GB} GB{growth}")
    finally:
        if args.store is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
