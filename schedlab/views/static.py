"""The same views as a static figure for a paper: matplotlib, a vector PDF
and a 300-dpi PNG beside it (``schedlab.plotting.save``, the style of every
schedlab figure). Boxes are one ``PolyCollection`` per panel (fast for 10^5
boxes); the colours are the page's (``page.color_values``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.views.page import KIND_STYLE, _window_mask, color_title, color_values, default_color, time_unit
from schedlab.views.schedule import LIFE, RESERVATION, RUN, Panel, Schedule


def _rgba(text: str) -> tuple[float, float, float, float]:
    if text.startswith("#"):
        return tuple(int(text[i : i + 2], 16) / 255 for i in (1, 3, 5)) + (1.0,)  # type: ignore[return-value]
    parts = [float(x) for x in text[text.index("(") + 1 : -1].split(",")]
    return (parts[0] / 255, parts[1] / 255, parts[2] / 255, parts[3] if len(parts) > 3 else 1.0)


def write_static(
    schedules: list[Schedule], out: Path, *, window: tuple[float, float] | None, color_by: str | None, title: str
) -> list[Path]:
    """Draw every panel and series of ``schedules`` (stacked, one time
    axis) into ``out`` (.pdf, .svg or .png; the PNG goes beside a vector)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    from schedlab.plotting import save, style

    rows: list[tuple[Schedule, Panel | str]] = []
    for s in schedules:
        rows += [(s, p) for p in s.panels] + [(s, name) for name in s.series]
    heights = [3.0 if not isinstance(p, str) else 1.0 for _, p in rows]
    with style():
        fig, axes = plt.subplots(
            len(rows), 1, sharex=True, figsize=(10, 1.2 * sum(heights)), height_ratios=heights, squeeze=False
        )
        for ax, (s, panel) in zip(axes[:, 0], rows):
            tag = f"{s.label}: " if len(schedules) > 1 else ""
            if isinstance(panel, str):
                t, v = s.series[panel]
                if len(t):
                    ax.step(np.r_[t, t[-1]], np.r_[v, v[-1]], where="post", lw=0.8, color="#444")
                ax.set_ylabel(panel, fontsize=7)
                continue
            codes, colors, _ = color_values(s, color_by)
            p = s.panels.index(panel)
            mask = (s.boxes["panel"] == p) & _window_mask(s.boxes, window)
            b = {c: v[mask] for c, v in s.boxes.items()}
            verts = np.stack(
                [
                    np.column_stack([b["t0"], b["y0"]]),
                    np.column_stack([b["t1"], b["y0"]]),
                    np.column_stack([b["t1"], b["y1"]]),
                    np.column_stack([b["t0"], b["y1"]]),
                ],
                axis=1,
            )
            face = np.array([_rgba(colors[c]) for c in codes[b["row"]]]) if len(b["row"]) else np.zeros((0, 4))
            edge = np.tile((0.0, 0.0, 0.0, 0.3), (len(b["row"]), 1))
            for kind, (fill, line) in KIND_STYLE.items():
                k = b["kind"] == kind
                face[k] = _rgba(fill)
                edge[k] = _rgba(line)
            lw = np.where(b["kind"] == LIFE, 0.0, 0.2)
            res = b["kind"] == RESERVATION
            ax.add_collection(
                PolyCollection(verts[~res], facecolors=face[~res], edgecolors=edge[~res], linewidths=lw[~res])
            )
            if res.any():
                ax.add_collection(
                    PolyCollection(verts[res], facecolors="none", edgecolors="black", linewidths=0.6, linestyles=":")
                )
            ax.set_ylim(-0.6 if panel.y_title == "job" else 0.0, panel.lanes)
            if window is not None and panel.y_title == "job" and (b["kind"] == RUN).any():
                ax.set_ylim(float(b["y0"].min()) - 0.6, float(b["y1"].max()) + 0.6)
            ax.set_ylabel(panel.y_title)
            ax.set_title(tag + panel.name, fontsize=8)
            if ax is axes[0, 0]:  # what the colours mean, once
                from matplotlib.patches import Patch

                _, _, names = color_values(s, color_by)
                ax.legend(
                    handles=[Patch(facecolor=c, label=n) for c, n in zip(colors, names)],
                    title=color_title(s, color_by or default_color(s)),
                    fontsize=6,
                    title_fontsize=6,
                    loc="upper left",
                    bbox_to_anchor=(1.0, 1.0),
                )
        lo, hi = (
            window if window is not None else (min(s.span()[0] for s in schedules), max(s.span()[1] for s in schedules))
        )
        axes[-1, 0].set_xlim(lo, hi)
        axes[-1, 0].set_xlabel(f"time [{time_unit(schedules[0])}]")
        if title:
            fig.suptitle(title, fontsize=9)
        fig.tight_layout()
    return save(fig, out)
