"""Warm-up deletion (MSER-5) and the one-run OBM interval on M/M/1 started empty.

For FIFO on M/M/1 (E[T] = 1 / (1 - load)) the sojourn time of job n is the
work it finds plus its size, so runs are simulated with Lindley's recursion
(`warmup.work_found`, the same series the sweep's cut is computed on) -- fast
enough for thousands of runs and 1M-job runs. Prints, per load and run
length: the bias of the run's mean sojourn without and with the MSER-5 cut,
the mean cut, and the coverage of E[T] by the 95 % overlapping-batch-means
interval (`stats.obm`) for several numbers of batches, with and without the
cut. The sweep uses n/b = stats.OBM_BATCHES.

    python benchmarks/steady_state.py                     # bias table + OBM at load 0.9 (~1 min)
    python benchmarks/steady_state.py --heavy             # + load 0.99, 1M jobs x 80 runs (~2 min more)
"""

from __future__ import annotations

import argparse

import numpy as np

from schedlab.platform.stats import OBM_BATCHES, mser5, obm
from schedlab.platform.warmup import work_found

SEED = 1997


def runs(rng, load: float, n: int, count: int):
    for _ in range(count):
        gaps = rng.exponential(1.0 / load, n)
        submit = np.cumsum(gaps) - gaps[0]
        size = rng.exponential(1.0, n)
        w = work_found(submit, size)
        yield w + size, mser5(w)


def bias_table(load: float, sizes: list[int], count: int) -> None:
    et = 1.0 / (1.0 - load)
    print(f"load {load}: E[T] = {et:g}; {count} runs each, started empty (bias = mean over runs - E[T], ± 95 %)")
    for n in sizes:
        raw, cut, ds = [], [], []
        for t, d in runs(np.random.default_rng([SEED, n]), load, n, count):
            raw.append(t.mean())
            cut.append(t[d:].mean())
            ds.append(d)
        raw, cut = np.asarray(raw), np.asarray(cut)
        half = lambda v: 1.96 * v.std(ddof=1) / np.sqrt(v.size)  # noqa: E731
        print(f"  {n:>8d} jobs: untruncated {raw.mean() - et:+.3f} ± {half(raw):.3f}   MSER-5 {cut.mean() - et:+.3f} "
              f"± {half(cut):.3f}   mean cut {np.mean(ds):.0f} jobs")


def obm_table(load: float, n: int, count: int) -> None:
    et = 1.0 / (1.0 - load)
    hits: dict[tuple[int, bool], int] = {}
    width: dict[tuple[int, bool], float] = {}
    for t, d in runs(np.random.default_rng([SEED, n, 1]), load, n, count):
        for m in sorted({4, 5, 10, 20, OBM_BATCHES}):
            for with_cut in (False, True):
                b = obm(t[d:] if with_cut else t, batches=m)
                hits[(m, with_cut)] = hits.get((m, with_cut), 0) + (abs(b.mean - et) <= b.halfwidth)
                width[(m, with_cut)] = width.get((m, with_cut), 0.0) + b.halfwidth / et / count
    print(f"load {load}, {n} jobs, {count} runs: coverage of E[T] by the 95 % OBM interval (mean half-width / E[T])")
    for (m, with_cut), h in sorted(hits.items()):
        mark = "  <- the sweep's n/b" if m == OBM_BATCHES else ""
        print(f"  n/b = {m:>2d} {'after the MSER-5 cut' if with_cut else 'whole run          '}: "
              f"{h / count:.3f} ({width[(m, with_cut)]:.3f}){mark}")


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
