"""A search against a known answer: Tetris's epsilon (the weight of its SRTF
score against packing alignment), fairness 1, on two resources
(examples/mygenerators.py:two_resource, 10 servers, load 1.1), metric the
mean wait. The answer comes from a dense grid (log-spaced epsilon) with many
replications; the search (Optuna TPE, trials in parallel batches on Ray,
then KN on fresh instances) must find a setting whose mean on the grid's
instances lies within the grid optimum's 95 % interval, with at most a fifth
of the grid's simulations. Prints both.

    PYTHONPATH=. python benchmarks/search.py            # grid 24 x 40, search 20 trials x 5
    PYTHONPATH=. python benchmarks/search.py --quick    # grid 12 x 15, search 6 x 3 (what the test runs)
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
GENERATOR = str(REPO / "examples" / "mygenerators.py") + ":two_resource"
METRIC = "wait_mean"
#: The searched range of epsilon (log scale) and the grid's.
LOW, HIGH = 0.01, 30.0


def base(name: str, out: Path) -> dict[str, Any]:
    return {
        "name": name,
        "engine": "packing",
        "seed": 3,
        "policies": [{"name": "Tetris", "params": {"fairness": 1.0}}],
        "workload": {"use": GENERATOR, "njobs": 400, "servers": 10, "load": 1.1, "correlation": -0.5},
        "system": {"servers": 10, "capacity": 1.0, "epoch": 0},
        "outputs": {"dir": str(out)},
        "tracking": {"enabled": False},
    }


def grid_spec(out: Path, points: int, n: int) -> dict[str, Any]:
    spec = base("search-bench", out / "grid")
    eps = [float(x) for x in np.geomspace(LOW, HIGH, points)]
    spec["policies"] = [{"name": "Tetris", "params": {"fairness": 1.0, "epsilon": eps}}]
    spec["replications"] = {"n": n}
    return spec


def search_spec(out: Path, trials: int, parallel: int, reps: int, top: int, select_reps: int, n0: int, delta: float):
    spec = base("search-bench", out / "search")
    spec["search"] = {
        "sampler": "tpe",
        "metric": METRIC,
        "trials": trials,
        "parallel": parallel,
        "replications": reps,
        "params": {"epsilon": {"low": LOW, "high": HIGH, "log": True}},
        "select": {"top": top, "replications": select_reps, "n0": n0, "delta": delta},
    }
    return spec


def t_interval(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    from scipy import stats

    m = float(x.mean())
    h = float(stats.t.ppf(0.5 + confidence / 2, x.size - 1)) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return m, m - h, m + h


def known_answer(out: Path, *, quick: bool) -> dict[str, Any]:
    """Run the grid, the search and the winner on the grid's instances; return the figures."""
    import polars as pl

    import schedlab
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.platform.sweep import run_sweep
    from schedlab.search_figure import convergence

    points, n = (12, 15) if quick else (24, 40)
    trials, parallel, reps = (6, 3, 3) if quick else (20, 4, 5)
    top, select_reps, n0 = (2, 8, 4) if quick else (3, 30, 10)
    delta = 0.02
    t0 = time.monotonic()
    run_sweep(parse_spec(grid_spec(out, points, n), "grid"))
    grid_wall = time.monotonic() - t0
    rows = schedlab.load(out / "grid").collect()
    by = rows.group_by("policy_epsilon").agg(pl.col(METRIC).sort_by("replication")).sort("policy_epsilon")
    cells = {float(e): np.asarray(v, dtype=float) for e, v in by.iter_rows()}
    best_eps = min(cells, key=lambda e: float(cells[e].mean()))
    best = t_interval(cells[best_eps])
    t0 = time.monotonic()
    search = parse_spec(search_spec(out, trials, parallel, reps, top, select_reps, n0, delta), "search")
    report = run_sweep(search, draw=convergence)
    search_wall = time.monotonic() - t0
    doc = report.selection or {}
    winner = doc["winner"]["params"]["epsilon"]
    search_sims = schedlab.load(out / "search").select(pl.len()).collect().item()
    check = base("search-bench", out / "check")
    check["policies"] = [{"name": "Tetris", "params": {"fairness": 1.0, "epsilon": winner}}]
    check["replications"] = {"n": n}
    run_sweep(parse_spec(check, "check"))
    won = schedlab.load(out / "check").collect().sort("replication")[METRIC].to_numpy()
    return {
        "grid": {"points": points, "replications": n, "simulations": points * n, "wall": grid_wall},
        "grid_optimum": {"epsilon": best_eps, "mean": best[0], "low": best[1], "high": best[2]},
        "search": {
            "trials": trials,
            "parallel": parallel,
            "replications": reps,
            "simulations": search_sims,
            "wall": search_wall,
            "winner": winner,
            "conclusive": doc.get("conclusive"),
        },
        "winner_on_grid_instances": float(won.mean()),
        "within": bool(best[1] <= float(won.mean()) <= best[2]),
        "no_worse": bool(float(won.mean()) <= best[2]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="search-bench-") as tmp:
        f = known_answer(args.out or Path(tmp), quick=args.quick)
    g, o, s = f["grid"], f["grid_optimum"], f["search"]
    print(
        f"grid:   {g['points']} epsilons x {g['replications']} replications = {g['simulations']} simulations "
        f"({g['wall']:.1f} s wall); optimum epsilon = {o['epsilon']:.4g}: {METRIC} {o['mean']:.5g} "
        f"[{o['low']:.5g}, {o['high']:.5g}] (95 %)"
    )
    print(
        f"search: {s['trials']} trials x {s['replications']} replications (TPE, {s['parallel']} at a time) + KN: "
        f"{s['simulations']} simulations ({s['wall']:.1f} s wall); winner epsilon = {s['winner']:.4g} "
        f"({'conclusive' if s['conclusive'] else 'not conclusive'})"
    )
    print(
        f"winner on the grid's {g['replications']} instances: {METRIC} {f['winner_on_grid_instances']:.5g} -> "
        f"{'within' if f['within'] else ('better than' if f['no_worse'] else 'OUTSIDE')} the grid optimum's "
        f"95 % interval; simulations {s['simulations']} / {g['simulations']} = "
        f"{s['simulations'] / g['simulations']:.2f} of the grid's (target <= 0.20)"
    )


if __name__ == "__main__":
    main()
