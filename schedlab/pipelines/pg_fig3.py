"""Psychas & Ghaderi Fig. 3 (pg_fig3.toml): queue paths over time, their slopes and the claims on them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np

from schedlab.pipelines.common import OPS, look
from schedlab.plotting import save

DOC = tomllib.loads(Path(__file__).with_suffix(".toml").read_text())
POLICIES = DOC["figures"][0]["series"]
#: panel -> the sampled column plotted, and the pinned seed of its sweep
COLUMNS = {p["name"]: p["column"] for p in DOC["figures"][0]["panels"]}
SEEDS = {p["name"]: s["seed"] for p, s in zip(DOC["figures"][0]["panels"], DOC["sweeps"])}


def load_series(results_dir: Path, col: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """policy -> (t, value) of the first replication's sampled series, while
    jobs still arrive (t < slots; afterwards the queues only drain)."""
    import polars as pl

    from schedlab import load

    slots = float(load(results_dir).select(pl.col("slots").max()).collect().item())
    df = load(results_dir, "series").filter((pl.col("replication") == 0) & (pl.col("t") < slots)).collect()
    out = {}
    for p in POLICIES:
        sub = df.filter(pl.col("policy") == p).sort("t")
        if sub.height:
            out[p] = (sub["t"].to_numpy(), sub[col].to_numpy().astype(float))
    return out


def slope(t: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope (per slot) over the second half of the horizon."""
    half = t >= t[0] + (t[-1] - t[0]) / 2
    return float(np.polyfit(t[half], y[half], 1)[0])


def paths(dirs) -> dict[str, dict]:
    """Per panel tag: the series, each policy's slope and time average, the horizon."""
    out = {}
    for name, d in dirs.items():
        tag = name.removeprefix("pg-fig3")[0]
        series = load_series(d, COLUMNS[tag])
        out[tag] = {
            "series": series,
            "slope": {p: slope(t, y) for p, (t, y) in series.items()},
            "mean": {p: float(np.mean(y)) for p, (t, y) in series.items()},
            "horizon": max(float(t[-1]) for t, _ in series.values()),
        }
    return out


def plot(data, path: Path) -> list[str]:
    """Fig. 3 (a), (b): queue over time; returns the series plotted."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    names: list[str] = []
    for ax, panel in zip(axes, data.fig["panels"]):
        for p in [p for p in POLICIES if p in data.table[panel["name"]]["series"]]:
            t, y = data.table[panel["name"]]["series"][p]
            ax.plot(t, y, label=p, linewidth=1.1, **look(p), markevery=max(1, len(t) // 10), markersize=4)
            if p not in names:
                names.append(p)
        ax.set_xlabel("time slot")
        ax.set_ylabel(panel["ylabel"])
        ax.set_title(panel["title"], fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, path)
    return names


def measured(data) -> str:
    lines = ["| panel | series | " + " | ".join(POLICIES) + " |", "|" + "---|" * (len(POLICIES) + 2)]
    for tag, col in COLUMNS.items():
        d = data.table[tag]
        lines += [
            f"| ({tag}) | slope over 2nd half (per slot) | "
            + " | ".join(f"{d['slope'][p]:.2e}" for p in POLICIES)
            + " |",
            f"| ({tag}) | time-average `{col}` | " + " | ".join(f"{d['mean'][p]:.3g}" for p in POLICIES) + " |",
            f"| ({tag}) | `{col}` at the end (t ≈ {d['horizon']:.0f}) | "
            + " | ".join(f"{d['series'][p][1][-1]:.3g}" for p in POLICIES)
            + " |",
        ]
    lines += [
        "",
        "Replications per point: 1 (one sample path per policy, pinned seeds "
        + ", ".join(f"({t}) {s}" for t, s in SEEDS.items())
        + "; common random numbers across policies).",
    ]
    return "\n".join(lines)


def slope_vs(data, claim):
    """Each policy of ``quantity`` has a second-half slope ``comparison`` ``than`` in panel ``panel``."""
    slopes = data.table[claim.panel]["slope"]
    return claim.verdict(
        all(OPS[claim.comparison](slopes[p], claim.than) for p in claim.quantity.split(", ")),
        "slopes per slot: " + ", ".join(f"{p} {slopes[p]:.2e}" for p in POLICIES if p in slopes) + claim.note,
        seed=SEEDS[claim.panel],
    )


def longer_queues(data, claim):
    mb = data.table[claim.panel]["mean"]
    return claim.verdict(
        mb["BF-J/S"] > mb["VQS"] and mb["VQS-BF"] > mb["VQS"],
        "time-average queue (jobs): " + ", ".join(f"{p} {mb[p]:.3g}" for p in POLICIES),
    )
