"""PSBS Fig. 3 (psbs_heatmap.toml): the heat maps, their table and the claims over the plane."""

from __future__ import annotations

import numpy as np

from schedlab.pipelines.base import FAILS, HOLDS, INCONCLUSIVE
from schedlab.pipelines.common import emax, every, judge, lookup, md_grid, spread, values, xs
from schedlab.plotting import save

PROPOSALS = ["SRPTE+PS", "SRPTE+LAS", "FSPE+PS", "FSPE+LAS"]


def grid(table, policy: str, shapes, sigmas) -> np.ndarray:
    out = np.full((len(shapes), len(sigmas)), np.nan)
    for i, sh in enumerate(shapes):
        for j, sg in enumerate(sigmas):
            row = lookup(table, policy, shape=sh, sigma=sg)
            if row is not None:
                out[i, j] = row["ratio_mean"]
    return out


def heatmap(data, path) -> list[str]:
    """Fig. 3 (a)–(f): heat map of MST / MST(PS) (log colour scale centred at 1) per policy."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    table, policies = data.table, data.fig["series"]
    shapes, sigmas = xs(table, "shape"), xs(table, "sigma")
    grids = {p: grid(table, p, shapes, sigmas) for p in policies}
    finite = np.concatenate([g[np.isfinite(g)] for g in grids.values()])
    span = max(abs(np.log10(finite.min())), abs(np.log10(finite.max())), 0.1)
    norm = LogNorm(vmin=10**-span, vmax=10**span)
    fig, axes = plt.subplots(2, 3, figsize=(12, 7), sharex=True, sharey=True)
    for ax, p, tag in zip(axes.flat, policies, "abcdef"):
        im = ax.imshow(grids[p], origin="lower", cmap="RdBu_r", norm=norm, aspect="auto")
        for i in range(len(shapes)):
            for j in range(len(sigmas)):
                if np.isfinite(grids[p][i, j]):
                    ax.text(j, i, f"{grids[p][i, j]:.2g}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(sigmas)), [f"{v:g}" for v in sigmas], fontsize=7)
        ax.set_yticks(range(len(shapes)), [f"{v:g}" for v in shapes], fontsize=7)
        ax.set_title(f"({tag}) {p}")
    for ax in axes[1]:
        ax.set_xlabel("sigma")
    for ax in axes[:, 0]:
        ax.set_ylabel("shape")
    fig.colorbar(im, ax=axes, label="MST / MST(PS)", shrink=0.8)
    save(fig, path)
    return list(policies)


def measured(data) -> str:
    return md_grid(data.table, ["shape", "sigma"], data.fig["series"], "ratio")


def _plane(data):
    shapes, sigmas = xs(data.table, "shape"), xs(data.table, "sigma")
    r = values(data.table)
    return (lambda p, sh, sg: r(p, shape=sh, sigma=sg)), shapes, sigmas, [(sh, sg) for sh in shapes for sg in sigmas]


def mostly_better(data, claim):
    r, _, _, cells = _plane(data)
    half = len(cells) / 2
    sure = {p: [judge(r(p, sh, sg), "<", 1) for sh, sg in cells] for p in PROPOSALS}
    wins = {p: o.count(HOLDS) for p, o in sure.items()}  # MST/PS < 1 over the whole interval
    may = {p: len(cells) - o.count(FAILS) for p, o in sure.items()}  # not surely >= 1
    outcome = every(HOLDS if wins[p] > half else FAILS if may[p] <= half else INCONCLUSIVE for p in PROPOSALS)
    return claim.verdict(
        outcome,
        ", ".join(f"{p} {wins[p]}/{len(cells)} (interval below 1; {may[p]} not surely above)" for p in PROPOSALS),
    )


def losses_only_extreme(data, claim):
    r, _, _, cells = _plane(data)
    losses = [(p, sh, sg) for p in PROPOSALS for sh, sg in cells if r(p, sh, sg) >= 1]
    ordinary = [(p, sh, sg) for p in PROPOSALS for sh, sg in cells if not (sh <= 0.25 and sg >= 1)]
    return claim.verdict(
        every(judge(r(p, sh, sg), "<", 1) for p, sh, sg in ordinary),
        "MST/PS ≥ 1 at "
        + (
            ", ".join(f"{p} (shape {sh:g}, sigma {sg:g}) {r(p, sh, sg):.2f}" for p, sh, sg in losses)
            if losses
            else "no cell"
        ),
    )


def insensitive(data, claim):
    r, shapes, sigmas, _ = _plane(data)
    flat = [sh for sh in shapes if sh > 0.5]
    if not flat or len(sigmas) < 2:
        return None
    var = {(p, sh): spread(r(p, sh, sg) for sg in sigmas) for p in data.fig["series"] for sh in flat}
    return claim.verdict(
        every(judge(v, "<=", claim.tolerance) for v in var.values()),
        "largest variation "
        + max((f"{v:.0%} ({p}, shape {sh:g})" for (p, sh), v in var.items()), key=lambda t: float(t.split("%")[0])),
    )


def skew_hurts_base(data, claim):
    r, shapes, sigmas, _ = _plane(data)
    worst = {p: emax(r(p, shapes[0], sg) for sg in sigmas) for p in data.fig["series"]}
    return claim.verdict(
        every(judge(worst[f"{b}+{x}"], "<", worst[b]) for b in ("SRPTE", "FSPE") for x in ("PS", "LAS")),
        ", ".join(f"{p} {v:.2f}" for p, v in worst.items()),
        s0=shapes[0],
    )
