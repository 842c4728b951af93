"""Psychas & Ghaderi Fig. 3 (pg_fig3.toml): queue paths over time, their slopes and the claims on them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np

from schedlab.pipelines.common import OPS, interval_text, judge, look, share
from schedlab.plotting import save

DOC = tomllib.loads(Path(__file__).with_suffix(".toml").read_text())
POLICIES = DOC["figures"][0]["series"]
#: panel -> the sampled column plotted, and the pinned seed of its sweep
COLUMNS = {p["name"]: p["column"] for p in DOC["figures"][0]["panels"]}
SEEDS = {p["name"]: s["seed"] for p, s in zip(DOC["figures"][0]["panels"], DOC["sweeps"])}


def load_series(results_dir: Path, col: str) -> dict[int, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """replication -> policy -> (t, value) of its sampled series, while jobs
    still arrive (t < slots; afterwards the queues only drain). Each
    replication is one sample path (common random numbers across policies)."""
    import polars as pl

    from schedlab import load

    slots = float(load(results_dir).select(pl.col("slots").max()).collect().item())
    df = load(results_dir, "series").filter(pl.col("t") < slots).collect()
    out: dict[int, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for r in sorted(set(df["replication"].to_list())):
        for p in POLICIES:
            sub = df.filter((pl.col("replication") == r) & (pl.col("policy") == p)).sort("t")
            if sub.height:
                out.setdefault(int(r), {})[p] = (sub["t"].to_numpy(), sub[col].to_numpy().astype(float))
    return out


def slope(t: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope (per slot) over the second half of the horizon."""
    half = t >= t[0] + (t[-1] - t[0]) / 2
    return float(np.polyfit(t[half], y[half], 1)[0])


def paths(dirs) -> dict[str, dict]:
    """Per panel tag: the first sample path's series (plotted), each path's
    slope and time average per policy (replication -> policy -> value), the horizon."""
    out = {}
    for name, d in dirs.items():
        tag = name.removeprefix("pg-fig3")[0]
        by_path = load_series(d, COLUMNS[tag])
        first = by_path[min(by_path)]
        out[tag] = {
            "series": first,
            "slopes": {r: {p: slope(t, y) for p, (t, y) in s.items()} for r, s in by_path.items()},
            "means": {r: {p: float(np.mean(y)) for p, (t, y) in s.items()} for r, s in by_path.items()},
            "horizon": max(float(t[-1]) for t, _ in first.values()),
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


def _median(d: dict, per: str, p: str) -> float:
    return float(np.median([v[p] for v in d[per].values()]))


def measured(data) -> str:
    lines = ["| panel | series | " + " | ".join(POLICIES) + " |", "|" + "---|" * (len(POLICIES) + 2)]
    for tag, col in COLUMNS.items():
        d = data.table[tag]
        n = len(d["slopes"])
        lines += [
            f"| ({tag}) | median slope over 2nd half (per slot), {n} paths | "
            + " | ".join(f"{_median(d, 'slopes', p):.2e}" for p in POLICIES)
            + " |",
            f"| ({tag}) | median time-average `{col}`, {n} paths | "
            + " | ".join(f"{_median(d, 'means', p):.3g}" for p in POLICIES)
            + " |",
            f"| ({tag}) | `{col}` at the end of the first path (t ≈ {d['horizon']:.0f}) | "
            + " | ".join(f"{d['series'][p][1][-1]:.3g}" for p in POLICIES)
            + " |",
        ]
    n = min(len(data.table[tag]["slopes"]) for tag in COLUMNS)
    lines += [
        "",
        f"Replications per point: {n}, each one sample path per policy (seeds "
        + ", ".join(f"({t}) {s}" for t, s in SEEDS.items())
        + "; common random numbers across policies); the figure draws the first. A claim is judged on the "
        "share of paths on which it holds, with its exact (Clopper-Pearson) 95 % interval.",
    ]
    return "\n".join(lines)


def on_paths(claim, holds: dict[int, bool], detail: str):
    """The verdict of a claim checked on each sample path: the share of paths
    where it holds (`common.share`), judged against the claim's ``share``."""
    k, n = sum(holds.values()), len(holds)
    found = share(k, n)
    return claim.verdict(
        judge(found, ">", claim.share),
        f"holds on {k} of {n} sample paths (share {interval_text(found, '.2f')}, needs above {claim.share:g}); "
        + detail,
        share=claim.share,
        paths=n,
    )


def slope_vs(data, claim):
    """Each policy of ``quantity`` has a second-half slope ``comparison``
    ``than`` in panel ``panel``, in more than a share ``share`` of the paths."""
    d = data.table[claim.panel]
    holds = {
        r: all(OPS[claim.comparison](s[p], claim.than) for p in claim.quantity.split(", "))
        for r, s in d["slopes"].items()
    }
    median = ", ".join(f"{p} {_median(d, 'slopes', p):.2e}" for p in POLICIES)
    return on_paths(claim, holds, f"median slopes per slot: {median}{claim.note}")


def longer_queues(data, claim):
    """BF-J/S's and VQS-BF's time-average queue above VQS's, in more than a share ``share`` of the paths."""
    d = data.table[claim.panel]
    holds = {r: m["BF-J/S"] > m["VQS"] and m["VQS-BF"] > m["VQS"] for r, m in d["means"].items()}
    median = ", ".join(f"{p} {_median(d, 'means', p):.3g}" for p in POLICIES)
    return on_paths(claim, holds, f"median time-average queue (jobs): {median}")
