"""PSBS Fig. 9 (psbs_weights.toml): MST per weight class, its table and claims."""

from __future__ import annotations

from schedlab.pipelines.common import POSITIVE_FLOOR, estimate, every, judge, lookup, row_at, spread, xs
from schedlab.plotting import save

POLICIES = ["PSBS", "GPS"]
CLASSES = [1, 2, 3, 4, 5]
METRICS = [f"mst_class_{c}" for c in CLASSES]


def plot(data, path) -> list[str]:
    """Fig. 9 (a)–(c): MST (log) per weight class, PSBS solid / GPS dashed, one colour per beta."""
    import matplotlib.pyplot as plt

    from schedlab.plotting import errorbar

    table = data.table
    shapes, betas = xs(table, "shape"), xs(table, "beta")
    fig, axes = plt.subplots(1, len(shapes), figsize=(4 * len(shapes), 3.8), squeeze=False)
    series: list[str] = []
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, shape, tag in zip(axes[0], shapes, "abc"):
        for i, beta in enumerate(betas):
            for p, style in zip(POLICIES, ("-", "--")):
                row = lookup(table, p, shape=shape, beta=beta)
                if row is None:
                    continue
                # MST on a log axis: the log-transformed interval, never at or below 0
                errorbar(
                    ax,
                    CLASSES,
                    [row[f"{m}_mean"] for m in METRICS],
                    [row[f"{m}_ci95"] for m in METRICS],
                    POSITIVE_FLOOR,
                    linestyle=style,
                    color=colours[i % len(colours)],
                    marker="*" if p == "PSBS" else "o",
                    capsize=2,
                    label=f"{p}, β={beta:g}",
                )
                if p not in series:
                    series.append(p)
        ax.set_yscale("log")
        ax.set_xticks(CLASSES)
        ax.set_xlabel("weight class")
        ax.set_title(f"({tag}) shape = {shape:g}")
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("MST")
    axes[0][0].legend(fontsize=7, ncol=2)
    save(fig, path)
    return series


def _v(data):
    t = data.table
    return (lambda p, sh, b, m: estimate(row_at(t, p, shape=sh, beta=b), m)), xs(t, "shape"), xs(t, "beta")


def psbs_beats_gps(data, claim):
    v, shapes, betas = _v(data)
    outcome = {
        (sh, b, c): judge(v("PSBS", sh, b, f"mst_class_{c}"), "<", v("GPS", sh, b, f"mst_class_{c}"))
        for sh in shapes
        for b in betas
        for c in CLASSES
    }
    bad = [cell for cell, o in outcome.items() if o != "holds"]
    n = len(shapes) * len(betas) * len(CLASSES)
    return claim.verdict(
        every(outcome.values()),
        f"PSBS's interval below GPS's in {n - len(bad)} of {n} (shape, beta, class) cells; overall MST PSBS/GPS "
        + ", ".join(
            f"shape {sh:g} β {b:g}: {v('PSBS', sh, b, 'mst') / v('GPS', sh, b, 'mst'):.2f}"
            for sh in shapes
            for b in betas
        )
        + (f"; not shown lower at {bad}" if bad else ""),
    )


def uniform_at_beta_0(data, claim):
    v, shapes, betas = _v(data)
    if 0.0 not in betas:
        return None
    spreads = {sh: spread(v("PSBS", sh, 0.0, m) for m in METRICS) for sh in shapes}
    return claim.verdict(
        every(judge(s, "<=", claim.tolerance) for s in spreads.values()),
        ", ".join(f"shape {sh:g}: spread {s:.1%}" for sh, s in spreads.items()),
    )


def beta_trade_off(data, claim):
    v, shapes, betas = _v(data)
    ok = every(
        every(
            [
                judge(v("PSBS", sh, b1, "mst_class_1"), "<", v("PSBS", sh, b0, "mst_class_1")),
                judge(v("PSBS", sh, b1, "mst_class_5"), ">", v("PSBS", sh, b0, "mst_class_5")),
            ]
        )
        for sh in shapes
        for b0, b1 in zip(betas, betas[1:])
    )
    return claim.verdict(
        ok,
        "; ".join(
            f"shape {sh:g}: class 1 "
            + " → ".join(f"{v('PSBS', sh, b, 'mst_class_1'):.2f}" for b in betas)
            + ", class 5 "
            + " → ".join(f"{v('PSBS', sh, b, 'mst_class_5'):.2f}" for b in betas)
            for sh in shapes
        ),
    )


def uneven_with_skew(data, claim):
    v, shapes, betas = _v(data)
    if not (0.25 in shapes and 4.0 in shapes and 0.0 in betas and 2.0 in betas):
        return None

    def gain_loss(sh):
        return (
            v("PSBS", sh, 0.0, "mst_class_1") - v("PSBS", sh, 2.0, "mst_class_1"),
            v("PSBS", sh, 2.0, "mst_class_5") - v("PSBS", sh, 0.0, "mst_class_5"),
        )

    (g25, l25), (g4, l4) = gain_loss(0.25), gain_loss(4.0)
    return claim.verdict(
        every([judge(g25, "<", l25), judge(g25 / l25, "<", g4 / l4)]),
        f"beta 0 → 2, PSBS: shape 0.25 gain {g25:.3f} vs loss {l25:.3f} (ratio {g25 / l25:.2f}); "
        f"shape 4 gain {g4:.3f} vs loss {l4:.3f} (ratio {g4 / l4:.2f})",
    )
