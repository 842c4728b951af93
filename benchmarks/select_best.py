"""Ranking and selection (KN): probability of correct selection on normal
slippage problems, then a real select-best sweep of the 13 queue policies.

1. Normal outputs, variance 1, the best at delta = 1 sigma below the others
   (smaller is better), k = 5 and 10, independent (rho = 0) or correlated as
   common random numbers make them (rho = 0.5); n0 = 10, 1 - alpha = 0.95.
   Prints the PCS over the macro-replications and the average number of
   replications (all systems together, and per system).
2. `schedlab run` of a select-best spec: the 13 queue policies at one PSBS
   point (shape 1, sigma 0.5, load 0.9, 1,000 jobs), delta = 0.1 (MST units),
   n0 = 10, batches of 5 replications; prints what `schedlab results` shows
   (winner, elimination order with the replication count of each
   elimination, KN's constants).

    python benchmarks/select_best.py [--macro 1000] [--skip-sweep]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from schedlab.platform.statistics.selection import kn

QUEUE_13 = [
    "FIFO",
    "PS",
    "GPS",
    "LAS",
    "SRPT",
    "SRPTE",
    "SRPTE+PS",
    "SRPTE+LAS",
    "FSP",
    "FSPE",
    "FSPE+PS",
    "FSPE+LAS",
    "PSBS",
]


def trial(rng, k: int, rho: float, n0: int = 10) -> tuple[bool, int]:
    cov = np.full((k, k), rho) + np.eye(k) * (1 - rho)
    mean = np.zeros(k)
    mean[0] = -1.0
    have = np.empty((k, 0))
    names = [f"s{i}" for i in range(k)]
    while True:
        sel = kn({nm: have[i] for i, nm in enumerate(names)}, delta=1.0, confidence=0.95, n0=n0)
        if sel.done:
            return sel.winner == "s0", sum(sel.eliminated_at.get(nm, sel.r) for nm in names)
        have = np.hstack([have, rng.multivariate_normal(mean, cov, size=sel.need - have.shape[1]).T])


def normal_problems(macro: int) -> None:
    print(f"KN on normal slippage configurations (delta = 1 sigma, n0 = 10, 1-alpha = 0.95), {macro} macro-reps:")
    for k in (5, 10):
        for rho in (0.0, 0.5):
            rng = np.random.default_rng([2001, k, int(rho * 10)])
            res = [trial(rng, k, rho) for _ in range(macro)]
            pcs = np.mean([ok for ok, _ in res])
            reps = np.mean([n for _, n in res])
            print(
                f"  k = {k:2d}, rho = {rho}: PCS {pcs:.3f} (± {1.96 * np.sqrt(pcs * (1 - pcs) / macro):.3f}), "
                f"{reps:.1f} replications ({reps / k:.1f} per system)"
            )


SPEC = """\
name = "select-13"
engine = "queue"
seed = 5
policies = [{policies}]

[workload]
kind = "synthetic"
njobs = 1000
shape = 1.0
sigma = 0.5
load = 0.9

[replications]
mode = "select-best"
metric = "mst"
delta = 0.1
min = 10
max = 200
batch = 5

[outputs]
dir = "{out}"

[tracking]
enabled = false
"""


def sweep() -> None:
    from click.testing import CliRunner

    from schedlab.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "select.toml"
        spec.write_text(SPEC.format(policies=", ".join(f'"{p}"' for p in QUEUE_13), out=f"{tmp}/out"))
        started = time.perf_counter()
        run = CliRunner().invoke(main, ["run", str(spec), "--no-progress"])
        print(run.output.strip(), f"({time.perf_counter() - started:.0f} s)")
        out = CliRunner().invoke(main, ["results", f"{tmp}/out", "--by", "policy"])
        print(out.output)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--macro", type=int, default=1000)
    ap.add_argument("--skip-sweep", action="store_true")
    args = ap.parse_args()
    normal_problems(args.macro)
    if not args.skip_sweep:
        sweep()


if __name__ == "__main__":
    main()
