"""A search's convergence figure: each trial's value and the best so far
against the trial number, with the final selection's candidates at their
trial numbers -- their means and intervals on the fresh instances -- so the
search's optimism (trial value vs fresh mean) is visible.
schedlab.plotting's style: a PDF and a 300-dpi PNG."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from schedlab.platform.planning.spec import SweepSpec
    from schedlab.platform.search.space import TrialRecord


def best_so_far(values: list[float | None], minimize: bool) -> list[float | None]:
    """The running best of ``values`` (None: a failed trial, skipped)."""
    out: list[float | None] = []
    best: float | None = None
    for v in values:
        if v is not None and (best is None or (v < best if minimize else v > best)):
            best = v
        out.append(best)
    return out


def convergence(spec: SweepSpec, recs: list[TrialRecord], doc: dict[str, Any] | None, path: str | Path) -> list[Path]:
    """Draw and save the figure; returns [PDF, PNG] (nothing when no trial completed)."""
    import matplotlib.pyplot as plt

    from schedlab.plotting import save, style

    search = spec.search
    if search is None or not any(r.value is not None for r in recs):
        return []
    minimize = search.direction == "minimize"
    xs = [r.number for r in recs]  # Optuna's trial numbers, as trials.json and MLflow give them
    ys = [r.value if r.state == "complete" else None for r in recs]
    with style():
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        done = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
        ax.plot([x for x, _ in done], [y for _, y in done], "o", ms=3, alpha=0.45, color="0.45", label="trial")
        best = best_so_far(ys, minimize)
        ax.step(xs, [b if b is not None else float("nan") for b in best], where="post", color="C0", label="best so far")
        if doc and doc.get("candidates"):
            for c in doc["candidates"]:
                win = doc.get("winner", {}).get("trial") == c["trial"]
                lo, hi, m = c.get("low"), c.get("high"), c.get("mean")
                if m is None:
                    continue
                err = None if lo is None or hi is None else [[m - lo], [hi - m]]
                ax.errorbar(
                    [c["trial"]],
                    [m],
                    yerr=err,
                    fmt="D" if win else "s",
                    ms=6 if win else 4,
                    color="C3" if win else "C1",
                    capsize=3,
                    label=None,
                )
            ax.plot(
                [],
                [],
                "s",
                color="C1",
                label=f"top {len(doc['candidates'])}: fresh instances ({doc['confidence']:.0%})",
            )
            ax.plot([], [], "D", color="C3", label="selected" + ("" if doc.get("conclusive") else " (not conclusive)"))
        ax.set_xlabel("trial")
        ax.set_ylabel(f"{search.metric} (mean over {search.replications} replications)")
        ax.set_title(f"{spec.name}: {search.sampler} search, {'minimize' if minimize else 'maximize'} {search.metric}")
        ax.legend(loc="best", fontsize="small")
        fig.tight_layout()
        return save(fig, path)
