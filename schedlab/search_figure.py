"""A search's convergence figure: the metric against each searched parameter
(one panel each: where the good settings are) and against the trial number
(how the search got there), with the final selection's candidates -- their
means and intervals on the fresh instances, at their parameter values and
trial numbers -- so the search's optimism (trial value vs fresh mean) is
visible, the best-so-far line drawn through the last trial and the
baseline's fresh mean (the spec's ``[search.select] baseline``, if any) as a
horizontal line in every panel. The numbers drawn are written beside it as
a CSV (one row per trial). schedlab.plotting's style: a PDF and a 300-dpi PNG."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from schedlab.platform.planning.spec import SweepSpec
    from schedlab.platform.search.space import TrialRecord

#: Panels per row of the figure (the searched parameters, then the trial panel).
PANELS_PER_ROW = 3
#: Width and height of one panel, inches.
PANEL_SIZE = (4.2, 3.6)


def best_so_far(values: list[float | None], minimize: bool) -> list[float | None]:
    """The running best of ``values`` (None: a failed trial, skipped)."""
    out: list[float | None] = []
    best: float | None = None
    for v in values:
        if v is not None and (best is None or (v < best if minimize else v > best)):
            best = v
        out.append(best)
    return out


def _label(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _position(choices: list[Any] | None, v: Any) -> float:
    """Where a parameter's value goes on its axis: itself, or a categorical
    choice's index (the axis then names the choices)."""
    if choices is None:
        return float(v)
    return float(choices.index(v)) if v in choices else math.nan


def _candidates(ax: Axes, doc: dict[str, Any], x_of: Any) -> None:
    winner = (doc.get("winner") or {}).get("trial")
    for c in doc.get("candidates") or []:
        lo, hi, m = c.get("low"), c.get("high"), c.get("mean")
        if m is None:
            continue
        err = None if lo is None or hi is None else [[m - lo], [hi - m]]
        win = c["trial"] == winner
        ax.errorbar(
            [x_of(c)],
            [m],
            yerr=err,
            fmt="D" if win else "s",
            ms=6 if win else 4,
            color="C3" if win else "C1",
            capsize=3,
            zorder=3,
        )


def _baseline(ax: Axes, doc: dict[str, Any] | None) -> None:
    b = (doc or {}).get("baseline") or {}
    if b.get("mean") is not None:
        ax.axhline(b["mean"], color="C2", ls="--", lw=1.2, zorder=1)


def convergence_figure(spec: SweepSpec, recs: list[TrialRecord], doc: dict[str, Any] | None) -> Figure | None:
    """The figure (see the module docstring), not saved; None when no trial completed.
    Its axes: one per searched parameter (x label: its name), then the trial axis."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    from schedlab.platform.search.space import distributions

    search = spec.search
    if search is None or not any(r.value is not None for r in recs):
        return None
    minimize = search.direction == "minimize"
    dists = distributions(spec)
    names = list(dists)
    k = len(names) + 1
    cols = min(k, PANELS_PER_ROW)
    rows = math.ceil(k / cols)
    fig, grid = plt.subplots(
        rows, cols, figsize=(PANEL_SIZE[0] * cols, PANEL_SIZE[1] * rows + 0.6), sharey=True, squeeze=False
    )
    axes = [a for row in grid for a in row]
    for extra in axes[k:]:
        extra.remove()
    done = [r for r in recs if r.state == "complete" and r.value is not None]
    base = (doc or {}).get("baseline") or {}
    for ax, name in zip(axes, names, strict=False):
        d = dists[name]
        choices = list(d.choices) if isinstance(d, CategoricalDistribution) else None
        x = [_position(choices, r.params.get(name)) for r in done]
        ax.scatter(x, [r.value for r in done], c=[r.number for r in done], cmap="viridis", s=14, alpha=0.8, zorder=2)
        if doc:
            _candidates(ax, doc, lambda c, n=name, ch=choices: _position(ch, c["params"].get(n)))
        _baseline(ax, doc)
        if base.get("mean") is not None and name in (base.get("params") or {}):
            ax.plot([_position(choices, base["params"][name])], [base["mean"]], "*", color="C2", ms=10, zorder=3)
        if choices is not None:
            ax.set_xticks(range(len(choices)), [_label(c) for c in choices])
        elif isinstance(d, (FloatDistribution, IntDistribution)) and d.log:
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # a range within a decade or two:
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # 0.02, 0.05, 0.1, ... as numbers
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(name + (" (log scale)" if getattr(d, "log", False) else ""))
    ax = axes[len(names)]
    xs = [r.number for r in recs]  # Optuna's trial numbers, as trials.json and MLflow give them
    ys = [r.value if r.state == "complete" else None for r in recs]
    ax.scatter([r.number for r in done], [r.value for r in done], c=[r.number for r in done], cmap="viridis", s=14)
    best = best_so_far(ys, minimize)
    bx = [x for x, b in zip(xs, best, strict=True) if b is not None]
    by = [b for b in best if b is not None]
    ax.step(bx + [bx[-1] + 0.5], by + [by[-1]], where="post", color="C0", lw=1.5, zorder=2)  # through the last trial
    if doc:
        _candidates(ax, doc, lambda c: c["trial"])
    _baseline(ax, doc)
    ax.set_xlabel("trial")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    grid[0][0].set_ylabel(f"{search.metric}\n(trial: mean of {search.replications} replications)")
    if rows > 1:
        grid[1][0].set_ylabel(grid[0][0].get_ylabel())
    handles = [
        plt.Line2D([], [], ls="", marker="o", color="C0", alpha=0.6, label="trial (colour: trial number)"),
        plt.Line2D([], [], color="C0", label="best so far"),
    ]
    if doc and doc.get("candidates"):
        handles += [
            plt.Line2D(
                [],
                [],
                ls="",
                marker="s",
                color="C1",
                label=f"top {len(doc['candidates'])}: fresh instances ({doc['confidence']:.0%})",
            ),
            plt.Line2D(
                [],
                [],
                ls="",
                marker="D",
                color="C3",
                label="selected" + ("" if doc.get("conclusive") else " (not conclusive)"),
            ),
        ]
    if base.get("mean") is not None:
        bp = ", ".join(f"{n}={_label(v)}" for n, v in base["params"].items())
        handles.append(plt.Line2D([], [], ls="--", marker="*", color="C2", label=f"baseline {bp}: fresh instances"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 3), fontsize="small", frameon=False)
    fig.suptitle(f"{spec.name}: {search.sampler} search, {'minimize' if minimize else 'maximize'} {search.metric}")
    fig.tight_layout(rect=(0, 0.1 if len(handles) > 3 else 0.06, 1, 1))
    return fig


def write_csv(spec: SweepSpec, recs: list[TrialRecord], path: str | Path) -> Path:
    """The figure's numbers, one row per trial: trial, state, each searched
    parameter, value, best so far."""
    from schedlab.platform.search.space import distributions

    search = spec.search
    minimize = search is None or search.direction == "minimize"
    names = list(distributions(spec))
    best = best_so_far([r.value if r.state == "complete" else None for r in recs], minimize)
    path = Path(path)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["trial", "state", *names, "value", "best_so_far"])
        for r, b in zip(recs, best, strict=True):
            value = r.value if r.state == "complete" else None
            w.writerow(
                [
                    r.number,
                    r.state,
                    *(r.params.get(n, "") for n in names),
                    "" if value is None else repr(value),
                    "" if b is None else repr(b),
                ]
            )
    return path


def convergence(spec: SweepSpec, recs: list[TrialRecord], doc: dict[str, Any] | None, path: str | Path) -> list[Path]:
    """Draw and save the figure and its CSV (``convergence.csv`` beside it);
    returns [PDF, PNG] (nothing when no trial completed)."""
    from schedlab.plotting import save, style

    with style():
        fig = convergence_figure(spec, recs, doc)
        if fig is None:
            return []
        write_csv(spec, recs, Path(path).with_suffix(".csv"))
        return save(fig, path)
