"""Warm-up deletion (MSER-5) and the one-run OBM interval on M/M/1 started empty.

For FIFO on M/M/1 (E[T] = 1 / (1 - load)) the sojourn time of job n is the
work it finds plus its size, so runs are simulated with Lindley's recursion
(`warmup.work_found`, the same series the sweep's cut is computed on) -- fast
enough for thousands of runs and 1M-job runs. Each run stands for a workload
point: its cut is the sweep's, the largest MSER-5 cut of `warmup.PILOTS`
independent pilot instances ("pilots"); for comparison, the MSER-5 cut of the
run's own series ("own"). Prints, per load and run length: the bias of the
run's mean sojourn with no cut, the pilots' cut and the own cut, and the
coverage of E[T] by the 95 % overlapping-batch-means interval (`stats.obm`)
for several numbers of batches. The sweep uses the pilots' cut and n/b =
stats.OBM_BATCHES.

    python benchmarks/steady_state.py                     # bias table + OBM at load 0.9 (~1 min)
    python benchmarks/steady_state.py --heavy             # + load 0.99, 1M jobs x 80 runs (~2 min more)
"""

from __future__ import annotations

import argparse

import numpy as np

from schedlab.platform.statistics.stats import OBM_BATCHES, mser5, obm
from schedlab.platform.statistics.warmup import PILOTS, work_found

SEED = 1997


def runs(rng, load: float, n: int, count: int):
    """(sojourn times, pilots' cut, own cut) per run."""

    def draw():
        gaps = rng.exponential(1.0 / load, n)
        submit = np.cumsum(gaps) - gaps[0]
        size = rng.exponential(1.0, n)
        return work_found(submit, size), size

    for _ in range(count):
        w, size = draw()
        pilots = max(mser5(draw()[0]) for _ in range(PILOTS))
        yield w + size, pilots, mser5(w)


def bias_table(load: float, sizes: list[int], count: int) -> None:
    et = 1.0 / (1.0 - load)
    print(f"load {load}: E[T] = {et:g}; {count} runs each, started empty (bias = mean over runs - E[T], ± 95 %)")
    half = lambda v: 1.96 * np.std(v, ddof=1) / np.sqrt(len(v))  # noqa: E731
    for n in sizes:
        raw, pil, own, dp, do = [], [], [], [], []
        for t, d_p, d_o in runs(np.random.default_rng([SEED, n]), load, n, count):
            raw.append(t.mean())
            pil.append(t[d_p:].mean())
            own.append(t[d_o:].mean())
            dp.append(d_p)
            do.append(d_o)
        print(
            f"  {n:>7d} jobs: no cut {np.mean(raw) - et:+.3f} ± {half(raw):.3f}   pilots' cut "
            f"{np.mean(pil) - et:+.3f} ± {half(pil):.3f} (mean {np.mean(dp):.0f} jobs)   own cut "
            f"{np.mean(own) - et:+.3f} ± {half(own):.3f} (mean {np.mean(do):.0f} jobs)"
        )


def obm_table(load: float, n: int, count: int) -> None:
    et = 1.0 / (1.0 - load)
    hits: dict[tuple[int, str], int] = {}
    width: dict[tuple[int, str], float] = {}
    for t, d_p, d_o in runs(np.random.default_rng([SEED, n, 1]), load, n, count):
        for m in sorted({4, 10, 20, OBM_BATCHES}):
            for how, d in (("no cut", 0), ("pilots' cut", d_p), ("own cut", d_o)):
                b = obm(t[d:], batches=m)
                hits[(m, how)] = hits.get((m, how), 0) + (abs(b.mean - et) <= b.halfwidth)
                width[(m, how)] = width.get((m, how), 0.0) + b.halfwidth / et / count
    print(f"load {load}, {n} jobs, {count} runs: coverage of E[T] by the 95 % OBM interval (mean half-width / E[T])")
    for (m, how), h in sorted(hits.items()):
        mark = "  <- the sweep's" if m == OBM_BATCHES and how == "pilots' cut" else ""
        print(f"  n/b = {m:>2d}, {how:12s}: {h / count:.3f} ({width[(m, how)]:.3f}){mark}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--heavy", action="store_true", help="also load 0.99 with 1M-job runs")
    args = ap.parse_args()
    bias_table(0.9, [200, 500, 1000, 2000, 5000], 2000)
    obm_table(0.9, 100_000, 300)
    if args.heavy:
        obm_table(0.99, 1_000_000, 80)


if __name__ == "__main__":
    main()
