"""The interactive page: one self-contained HTML file (plotly.js inlined, no
network), drawn with Plotly.

Why Plotly: its figures are data (one JSON document) that the same Python
builds for the page, and plotly.js ships inside the PyPI package, so
``include_plotlyjs=True`` inlines it and the page opens offline; numeric
arrays go into the page as base64 typed arrays (plotly.py's encoding), not
decimal text (docs/architecture.md, "Schedule views", has the measurements
behind the choices below).

How a box is drawn: the boxes of one colour are one SVG ``scatter`` trace of
closed rectangles separated by gaps (NaN), filled ``toself``; a second,
nearly invisible marker trace per panel puts one point at each box's centre
that carries the job's row, and the page's script shows that job's fields
(every per-job column) when the pointer is on it.

Big runs: with more than ``MAX_DETAIL_BOXES`` boxes in the window a panel is
drawn as a raster instead (``heatmap``: ``RASTER_LANES`` lanes at most x
``RASTER_BINS`` time bins; each cell shows the colour value of the job that
holds the cell's centre and hovers that job), so the page's size and the
browser's work are bounded whatever the trace; ``--window a:b`` brings the
job boxes back for any part of it.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import UserError
from schedlab.plotting import COLOURS
from schedlab.views.schedule import KIND_NAMES, LIFE, PAUSED, PENALTY, RESERVATION, RUN, Schedule

#: Above this many boxes in a panel's window the panel is a raster (module docstring).
MAX_DETAIL_BOXES = 6_000
#: Pixels between subplots: a subplot's one-line title fits there.
TITLE_GAP = 34
#: Up to this many job boxes in a panel are outlined.
OUTLINED_BOXES = 1_000
#: The raster's size: time bins across, lanes (grouped when there are more) down.
RASTER_BINS = 1600
RASTER_LANES = 600
#: A step series with more points than this is drawn as its min and max per
#: time bin (``SERIES_BINS`` bins): peaks stay visible, the page stays small.
MAX_SERIES_POINTS = 20_000
SERIES_BINS = 4000
#: gzip level of the page's payload: 6 compresses plotly.js to 1.5 MB in 0.7 s, 9 gains 1 %.
GZIP_LEVEL = 6
#: Numeric colour columns are cut into this many quantile bins (one trace each).
COLOR_BINS = 9
#: A numeric colour column whose positive values span this many decades gets decade classes.
LOG_CLASSES_DECADES = 2
#: A text column with at most this many values is coloured by category.
MAX_CATEGORIES = 12
#: plotting's ten colours (the figures' own, in their order), then two more for up to MAX_CATEGORIES values.
PALETTE = [*COLOURS, "#393b79", "#637939"]
SEQUENTIAL = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"]
KIND_STYLE = {
    LIFE: ("rgba(160,160,160,0.6)", "rgba(160,160,160,0.6)"),
    RESERVATION: ("rgba(0,0,0,0)", "rgba(0,0,0,0.9)"),
    PAUSED: ("rgba(214,39,40,0.35)", "rgba(214,39,40,0.8)"),
    PENALTY: ("rgba(255,127,14,0.55)", "rgba(120,60,0,0.9)"),
}


def parse_window(text: str | None, schedule: Schedule) -> tuple[float, float] | None:
    """``a:b`` (either side may be empty) inside the run's span, else a
    `UserError` naming the window and the span."""
    if text is None:
        return None
    a_text, sep, b_text = text.partition(":")
    lo, hi = schedule.span()
    try:
        a = float(a_text) if a_text.strip() else lo
        b = float(b_text) if b_text.strip() else hi
    except ValueError:
        raise UserError(f"--window {text!r}: expected START:END in {time_unit(schedule)} (e.g. 86400:172800)") from None
    if not sep or not (a < b) or not (math.isfinite(a) and math.isfinite(b)):
        raise UserError(f"--window {text!r}: expected START:END with START < END")
    if b <= lo or a >= hi:
        raise UserError(f"--window {text}: outside the run, which spans {lo:g}:{hi:g}")
    return a, b


def default_color(schedule: Schedule) -> str:
    """The job column a view colours by unless told: the engine's declaration
    (`docs_columns.UNITS`: size for the queue, width for batch and DFRS, demand for
    packing; the first resource's demand when there are several), else arrival order."""
    from schedlab.docs_columns import UNITS

    units = UNITS.get(schedule.engine)
    if units is None:
        return "job_id"
    if units.color_by in schedule.jobs:
        return units.color_by
    prefixed = [c for c in schedule.jobs if c.startswith(units.color_by + "_")]
    return prefixed[0] if prefixed else "job_id"


def color_title(schedule: Schedule, column: str) -> str:
    """The legend's title: what the colours mean ("colour: job size, quantile classes")."""
    from schedlab.docs_columns import UNITS

    units = UNITS.get(schedule.engine)
    what = units.color_meaning if units is not None and column == default_color(schedule) else column
    if column == "job_id":
        what = "arrival order (job_id)"
    values = np.asarray(schedule.jobs[column])
    if values.dtype.kind in "OUSb":
        how = "category"
    else:
        finite = values[np.isfinite(values.astype(float))].astype(float)
        wide = len(finite) and finite.min() > 0 and finite.max() / finite.min() >= 10**LOG_CLASSES_DECADES
        how = "decade classes" if wide else "quantile classes"
    return f"colour: {what}, {how}"


def time_unit(schedule: Schedule) -> str:
    """The run's unit of time (the engine's declaration: slots for packing, s for traces)."""
    from schedlab.docs_columns import time_unit as declared

    return schedule.time_unit or declared(schedule.engine)


def color_values(schedule: Schedule, column: str | None) -> tuple[np.ndarray, list[str], list[str]]:
    """(class of every job row, the classes' colours, the classes' legend names) for
    colouring by ``column`` (a per-job column of the run; None: `default_color`):
    numbers in quantile classes named by their range, text by category (the
    commonest ``MAX_CATEGORIES - 1`` by name, the rest "other")."""
    jobs = schedule.jobs
    column = column or default_color(schedule)
    if column not in jobs:
        raise UserError(f"--color-by {column!r}: not a job column; columns: {', '.join(sorted(jobs))}")
    values = np.asarray(jobs[column])
    if values.dtype.kind in "OUSb":
        cats, codes, counts = np.unique(values.astype(str), return_inverse=True, return_counts=True)
        if len(cats) > MAX_CATEGORIES:
            keep = np.sort(np.argsort(-counts, kind="stable")[: MAX_CATEGORIES - 1])
            remap = np.full(len(cats), MAX_CATEGORIES - 1)
            remap[keep] = np.arange(len(keep))
            codes = remap[codes]
            names = [f"{column} = {cats[i]}" for i in keep] + [f"{column}: {len(cats) - len(keep)} others"]
        else:
            names = [f"{column} = {c}" for c in cats]
        return codes.astype(np.int64), PALETTE[: len(names)], names
    v = values.astype(float)
    finite = np.isfinite(v)
    if not finite.any():
        return np.zeros(len(v), dtype=np.int64), [PALETTE[0]], [f"{column}: no finite value"]
    edges = class_edges(v[finite])
    if len(edges) < 2:
        return np.zeros(len(v), dtype=np.int64), [SEQUENTIAL[4]], [f"{column} = {edges[0]:.4g}"]
    codes = np.clip(np.searchsorted(edges, np.where(finite, v, edges[0]), side="right") - 1, 0, len(edges) - 2)
    k = len(edges) - 1
    colors = [SEQUENTIAL[round(i * (len(SEQUENTIAL) - 1) / max(k - 1, 1))] for i in range(k)]
    names = [f"{column} {edges[i]:.3g} to {edges[i + 1]:.3g}" for i in range(k)]
    return codes.astype(np.int64), colors, names


def class_edges(v: np.ndarray) -> np.ndarray:
    """Class bounds of a numeric colour column: whole decades (every second, third
    ... when there are more than ``COLOR_BINS``) when its positive values span
    ``LOG_CLASSES_DECADES`` or more (job sizes, widths: a class reads as "jobs of
    0.01 to 0.1"), else quantiles (as many jobs in each class)."""
    lo, hi = float(np.min(v)), float(np.max(v))
    if lo > 0 and hi / lo >= 10**LOG_CLASSES_DECADES:
        a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        step = max(1, math.ceil((b - a) / COLOR_BINS))
        powers = np.arange(a, b + step, step)
        return np.asarray(10.0 ** powers.astype(float))
    return np.unique(np.quantile(v, np.linspace(0, 1, COLOR_BINS + 1)))


def envelope(t: np.ndarray, v: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin starts, min, max) of the step function (t, v) over ``bins``
    equal bins of [t[0], t[-1]]: each bin's extremes over every value in
    force during it (the one carried in from before the bin included)."""
    edges = np.linspace(t[0], t[-1], bins + 1)
    first = np.maximum(np.searchsorted(t, edges[:-1], side="right") - 1, 0)
    # reduceat takes v[first[i]:first[i + 1]]; the value at first[i + 1] may start inside bin i too
    nxt = v[np.r_[first[1:], len(t) - 1]]
    low = np.minimum(np.minimum.reduceat(v, first), nxt)
    high = np.maximum(np.maximum.reduceat(v, first), nxt)
    return edges[:-1], low, high


def _rects(t0: np.ndarray, t1: np.ndarray, y0: np.ndarray, y1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x and y of closed rectangles, each followed by a gap (NaN)."""
    n = len(t0)
    nan = np.full(n, np.nan)
    x = np.column_stack([t0, t1, t1, t0, t0, nan]).ravel()
    y = np.column_stack([y0, y0, y1, y1, y0, nan]).ravel()
    return x, y


def _window_mask(boxes: dict[str, np.ndarray], window: Any) -> np.ndarray:
    """Boxes meeting ``window`` (one (a, b), a list of them, or None: every box)."""
    if window is None:
        return np.ones(len(boxes["t0"]), dtype=bool)
    windows = window if isinstance(window, list) else [window]
    mask = np.zeros(len(boxes["t0"]), dtype=bool)
    for a, b in windows:
        mask |= (boxes["t1"] >= a) & (boxes["t0"] <= b)
    return mask


@dataclass
class PageParts:
    """What a page draws: the Plotly figure, the job tables its hover shows, the
    notes under its title (what is drawn how, the series' percentiles) and the
    windows proposed for a job-level look (whole-run overviews only)."""

    fig: Any
    tables: dict[str, Any]
    notes: list[str]
    windows: list[tuple[float, float]]
    legend: str


def is_overview(schedules: list[Schedule], window: tuple[float, float] | None) -> bool:
    """A whole run with a panel too busy to read box by box (> ``MAX_DETAIL_BOXES``)."""
    if window is not None:
        return False
    return any(int(np.sum(s.boxes["panel"] == p)) > MAX_DETAIL_BOXES for s in schedules for p in range(len(s.panels)))


def build_figure(
    schedules: list[Schedule],
    *,
    window: tuple[float, float] | None = None,
    color_by: str | None = None,
    title: str = "",
) -> tuple[Any, dict[str, Any]]:
    """The Plotly figure of one schedule, or two stacked on one time axis
    (``--vs``: then a last panel of each job's finish difference), and the
    page's job tables (for the hover panel): `page_parts`' first two."""
    parts = page_parts(schedules, window=window, color_by=color_by, title=title)
    return parts.fig, parts.tables


def page_parts(
    schedules: list[Schedule],
    *,
    window: tuple[float, float] | None = None,
    color_by: str | None = None,
    title: str = "",
) -> PageParts:
    """Everything a page shows. A window, or a run small enough, is drawn job by
    job. A whole run too busy for that (`is_overview`) opens on aggregates that
    keep their meaning at any scale: per panel, the jobs in the system or the
    share of the resource held per colour class over time (`overview.class_load`);
    the job-level drawing follows, for the windows where the runs differ most
    (`overview.propose_windows`), one button away."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from schedlab.views import overview as ov

    column = color_by or default_color(schedules[0])
    overview = is_overview(schedules, window)
    windows = ov.propose_windows(schedules) if overview or window is None else []
    detail: Any = windows if overview else window
    unit = time_unit(schedules[0])
    rows: list[tuple[int, Any, str]] = []  # (schedule index, panel, "agg:<i>", "series:<name>" or "diff", title)
    for k, s in enumerate(schedules):
        tag = f"{s.label}: " if len(schedules) > 1 else ""
        if overview:
            for i, each in enumerate(s.panels):
                what = "jobs in the system" if ov.is_job_panel(s, i) else f"{each.name.split(':')[0]}: share held"
                rows.append((k, f"agg:{i}", f"{tag}{what} per colour class (whole run, time-averaged)"))
        # at job level: every panel, or in an overview the first (the others are its aggregates)
        for each in s.panels[:1] if overview else s.panels:
            rows.append((k, each, tag + each.name + (" (job level: the proposed windows)" if overview else "")))
        for name in s.series:
            rows.append((k, f"series:{name}", tag + name))
    if len(schedules) == 2:
        rows.append(
            (1, "diff", f"finish difference per job: {schedules[1].label} minus {schedules[0].label} (later +)")
        )
    row_of = {(idx, p): r for r, (idx, p, _) in enumerate(rows, start=1) if isinstance(p, str)}
    heights = [
        1.0 if str(p).startswith(("series:", "diff")) else 2.0 if isinstance(p, str) else 3.0 for _, p, _ in rows
    ]
    height = max(600, int(220 * sum(heights) / 2))
    fig = make_subplots(
        rows=len(rows),
        cols=1,
        shared_xaxes=True,
        # room for each subplot's title (TITLE_GAP px), at most a third of the page in all
        vertical_spacing=min(TITLE_GAP / height, 1 / (3 * max(len(rows) - 1, 1))),
        row_heights=heights,
        subplot_titles=[t for _, _, t in rows],
    )
    notes: list[str] = []
    needed: list[list[np.ndarray]] = [[] for _ in schedules]  # job rows the page can hover, per schedule
    job_rows: list[tuple[int, int, int]] = []  # (subplot row, schedule, panel) of job lanes
    shown_legend: set[int] = set()
    for k, s in enumerate(schedules):
        codes, colors, names = color_values(s, column)
        if overview:
            lo, hi = s.span()
            edges = np.linspace(lo, hi, ov.OVERVIEW_BINS + 1)
            mids = (edges[:-1] + edges[1:]) / 2
            for i in range(len(s.panels)):
                load, y_title = ov.class_load(s, i, codes, len(names), edges)
                r = row_of[(k, f"agg:{i}")]
                for c in range(len(names)):
                    if not load[c].any():
                        continue
                    fig.add_trace(
                        go.Scatter(
                            x=mids,
                            y=load[c].astype(np.float32),
                            mode="lines",
                            stackgroup=f"s{k}p{i}",
                            line=dict(width=0.5, color=colors[c]),
                            fillcolor=colors[c],
                            name=names[c],
                            legendgroup=names[c],
                            showlegend=c not in shown_legend,
                            hovertemplate=f"{names[c]}: %{{y:.3g}}<extra></extra>",
                        ),
                        row=r,
                        col=1,
                    )
                    shown_legend.add(c)
                fig.update_yaxes(title_text=y_title, rangemode="tozero", row=r, col=1)
        for r, (idx, panel, _) in enumerate(rows, start=1):
            if idx != k or isinstance(panel, str):
                continue
            pi = s.panels.index(panel)
            mask = (s.boxes["panel"] == pi) & _window_mask(s.boxes, detail)
            box = {c: v[mask] for c, v in s.boxes.items()}
            needed[k].append(box["row"])
            if panel.y_title == "job":
                job_rows.append((r, k, pi))
            if len(box["t0"]) > MAX_DETAIL_BOXES:
                _raster(fig, r, box, panel.lanes, codes, window or s.span(), k)
                notes.append(
                    f"{len(box['t0']):,} boxes in '{panel.name}' drawn as a raster (the colour of the job holding "
                    f"each cell); a narrower --window shows the boxes"
                )
                continue
            for kind in (LIFE, PAUSED, PENALTY, RESERVATION):
                sel = box["kind"] == kind
                if sel.any():
                    fill, line = KIND_STYLE[kind]
                    x, y = _rects(box["t0"][sel], box["t1"][sel], box["y0"][sel], box["y1"][sel])
                    fig.add_trace(
                        go.Scatter(
                            x=x,
                            y=y,
                            mode="lines",
                            fill="toself",
                            fillcolor=fill,
                            line=dict(color=line, width=1, dash="dot" if kind == RESERVATION else "solid"),
                            name=KIND_NAMES[kind],
                            legendgroup=KIND_NAMES[kind],
                            hoverinfo="skip",
                            showlegend=False,
                        ),
                        row=r,
                        col=1,
                    )
            run = box["kind"] == RUN
            rc = codes[box["row"][run]]
            for c in np.unique(rc):
                sel = rc == c
                x, y = _rects(box["t0"][run][sel], box["t1"][run][sel], box["y0"][run][sel], box["y1"][run][sel])
                fig.add_trace(
                    go.Scatter(
                        x=x,
                        y=y,
                        mode="lines",
                        fill="toself",
                        fillcolor=colors[c],
                        # outlines only while boxes are few: thousands of them turn a panel black
                        line=dict(color="rgba(0,0,0,0.35)", width=0.5 if run.sum() <= OUTLINED_BOXES else 0),
                        name=names[c],
                        legendgroup=names[c],
                        showlegend=int(c) not in shown_legend,
                        hoverinfo="skip",
                    ),
                    row=r,
                    col=1,
                )
                shown_legend.add(int(c))
            hov = box["kind"] != LIFE
            fig.add_trace(
                go.Scattergl(
                    x=(box["t0"][hov] + box["t1"][hov]) / 2,
                    y=(box["y0"][hov] + box["y1"][hov]) / 2,
                    mode="markers",
                    marker=dict(size=6, color="rgba(0,0,0,0.01)"),
                    customdata=box["row"][hov].astype(np.int32),
                    meta={"s": k},
                    hovertemplate="job row %{customdata}<extra></extra>",
                    showlegend=False,
                    name="jobs",
                ),
                row=r,
                col=1,
            )
            for name, mark in s.marks.items():
                m = (mark["panel"] == pi) & _window_mask({"t0": mark["t"], "t1": mark["t"]}, detail)
                if m.any():
                    fig.add_trace(
                        go.Scattergl(
                            x=mark["t"][m],
                            y=mark["row"][m].astype(float),
                            mode="markers",
                            marker=dict(symbol="x", size=7, color="black"),
                            name=name,
                            customdata=mark["row"][m].astype(np.int32),
                            meta={"s": k},
                            hovertemplate=f"{name} of job row %{{customdata}} at %{{x}}<extra></extra>",
                        ),
                        row=r,
                        col=1,
                    )
            lo, hi = (-0.6, float(panel.lanes)) if panel.y_title == "job" else (0.0, float(panel.lanes))
            if window is not None and panel.y_title == "job" and len(box["y0"]):
                lo, hi = float(box["y0"].min()) - 0.6, float(box["y1"].max()) + 0.6
            fig.update_yaxes(title_text=panel.y_title, range=[lo, hi], row=r, col=1)
        for name, (t, v) in s.series.items():
            r_series = row_of[(k, f"series:{name}")]
            if len(t) == 0:
                continue
            p50, p99 = ov.time_percentiles(t, v)
            tag = f"{s.label}: " if len(schedules) > 1 else ""
            if window is not None:
                keep = (t >= window[0]) & (t <= window[1])
                first = max(int(np.argmax(keep)) - 1, 0) if keep.any() else 0
                keep[first] = True  # the value in force when the window opens
                t, v = t[keep], v[keep]
            else:
                notes.append(f"{tag}{name} over the run: median {p50:.3g}, 99th percentile {p99:.3g} (of time)")
            bins = ov.OVERVIEW_BINS if overview else SERIES_BINS
            if len(t) > (2 * bins if overview else MAX_SERIES_POINTS):
                x, low, high = envelope(t, v, bins)
                fig.add_trace(
                    go.Scatter(
                        x=np.r_[x, x[::-1]].astype(np.float32 if overview else np.float64),
                        y=np.r_[high, low[::-1]].astype(np.float32),
                        mode="lines",
                        fill="toself",
                        fillcolor="rgba(68,68,68,0.6)",
                        line=dict(width=0.5, color="#444"),
                        name=f"{name} (min to max per bin)",
                        showlegend=False,
                        hoverinfo="skip",
                    ),
                    row=r_series,
                    col=1,
                )
                notes.append(f"{tag}{name}: the band is its min to max in each 1/{bins} of the time axis")
                continue
            fig.add_trace(
                go.Scattergl(
                    x=np.r_[t, t[-1]],
                    y=np.r_[v, v[-1]],
                    mode="lines",
                    line=dict(shape="hv", width=1, color="#444"),
                    name=name,
                    showlegend=False,
                ),
                row=r_series,
                col=1,
            )
    if len(schedules) == 2:
        a, b = schedules
        ends = "end" if "end" in a.jobs else "completion"
        x = np.asarray(a.jobs[ends], dtype=float)
        diff = np.asarray(b.jobs[ends], dtype=float) - x
        rows_d = np.arange(len(diff), dtype=np.int32)
        if window is not None:
            on = (x >= window[0]) & (x <= window[1])
            x, diff, rows_d = x[on], diff[on], rows_d[on]
        if not overview:
            needed[1].append(rows_d)
        fig.add_trace(
            go.Scattergl(
                x=x,
                y=diff,
                mode="markers",
                # later red, earlier or equal green: a 0/1 code on a two-colour scale (not a string per job)
                marker=dict(
                    size=4,
                    color=(diff > 0).astype(np.int8),
                    colorscale=[[0, "#2ca02c"], [1, "#d62728"]],
                    cmin=0,
                    cmax=1,
                ),
                name="finish difference",
                customdata=rows_d,
                meta={"s": 1},
                hovertemplate=f"job row %{{customdata}}: %{{y:+.4g}} {unit}<extra></extra>",
                showlegend=False,
            ),
            row=len(rows),
            col=1,
        )
        fig.update_yaxes(title_text=unit if len(unit) < 12 else "time", row=len(rows), col=1)
    tables = {
        str(k): _job_table(s, None if detail is None else np.unique(np.concatenate([[], *needed[k]]).astype(np.int64)))
        for k, s in enumerate(schedules)
    }
    if window is not None:
        fig.update_xaxes(range=list(window))
    fig.update_xaxes(title_text=f"time [{unit}]", row=len(rows), col=1)
    if overview and windows:
        fig.update_layout(updatemenus=[_window_buttons(windows, schedules, job_rows, len(rows))])
    legend = color_title(schedules[0], column)
    fig.update_layout(
        title=dict(text=title),
        height=height,
        dragmode="pan",
        hovermode="closest",
        legend=dict(orientation="v", title=dict(text=legend.replace(", ", "<br>", 1))),
        template="plotly_white",
        margin=dict(l=70, r=20, t=90 if overview and windows else 60, b=40),
    )
    return PageParts(fig, tables, notes, windows, legend)


def _window_buttons(
    windows: list[tuple[float, float]], schedules: list[Schedule], job_rows: list[tuple[int, int, int]], nrows: int
) -> dict[str, Any]:
    """Buttons over the figure: the whole run, and each proposed window (every
    time axis to it, the job lanes to the jobs drawn there)."""

    def axis(kind: str, r: int) -> str:
        return f"{kind}axis" if r == 1 else f"{kind}axis{r}"

    lo = min(s.span()[0] for s in schedules)
    hi = max(s.span()[1] for s in schedules)
    whole: dict[str, Any] = {f"{axis('x', r)}.range": [lo, hi] for r in range(1, nrows + 1)}
    for r, k, pi in job_rows:
        whole[f"{axis('y', r)}.range"] = [-0.6, float(schedules[k].panels[pi].lanes)]
    buttons = [dict(label="whole run", method="relayout", args=[whole])]
    for i, (a, b) in enumerate(windows, start=1):
        change: dict[str, Any] = {f"{axis('x', r)}.range": [a, b] for r in range(1, nrows + 1)}
        for r, k, pi in job_rows:
            box = schedules[k].boxes
            on = (box["panel"] == pi) & (box["t1"] >= a) & (box["t0"] <= b)
            if on.any():
                change[f"{axis('y', r)}.range"] = [float(box["y0"][on].min()) - 0.6, float(box["y1"][on].max()) + 0.6]
        buttons.append(dict(label=f"window {i}: {a:.6g} to {b:.6g}", method="relayout", args=[change]))
    return dict(
        type="buttons",
        direction="right",
        x=1.0,
        xanchor="right",
        y=1.0,
        yanchor="bottom",
        pad=dict(b=24),
        showactive=False,
        buttons=buttons,
    )


def _raster(fig: Any, r: int, box: dict[str, np.ndarray], lanes: float, codes: np.ndarray, span: Any, k: int) -> None:
    """A panel as a heatmap: each cell the colour code of the job holding its centre."""
    import plotly.graph_objects as go

    t_lo, t_hi = float(span[0]), float(span[1])
    nb = RASTER_BINS
    nl = int(min(max(math.ceil(lanes), 1), RASTER_LANES))
    scale = nl / max(lanes, 1e-12)
    width = (t_hi - t_lo) / nb if t_hi > t_lo else 1.0
    z = np.full((nl, nb), np.nan, dtype=np.float32)
    who = np.zeros((nl, nb), dtype=np.uint32)  # job row + 1; 0: no job (base64 of -1 would be all '/', escaped x6)
    centres = t_lo + (np.arange(nb) + 0.5) * width
    run = box["kind"] == RUN
    c0 = np.searchsorted(centres, box["t0"][run], side="left")
    c1 = np.searchsorted(centres, box["t1"][run], side="left")
    l0 = np.clip(np.floor(box["y0"][run] * scale + 1e-9).astype(np.int64), 0, nl - 1)
    l1 = np.clip(np.ceil(box["y1"][run] * scale - 1e-9).astype(np.int64), 1, nl)
    rows_ = box["row"][run]
    for a, b, y0, y1, row in zip(c0.tolist(), c1.tolist(), l0.tolist(), l1.tolist(), rows_.tolist()):
        if b > a:
            z[y0:y1, a:b] = codes[row]
            who[y0:y1, a:b] = row + 1
    fig.add_trace(
        go.Heatmap(
            z=z,
            x=centres,
            y=(np.arange(nl) + 0.5) / scale,
            customdata=who,
            meta={"s": k, "shift": 1},
            colorscale="Viridis",
            showscale=False,
            hovertemplate="job %{z}<extra></extra>",
            hoverongaps=False,
        ),
        row=r,
        col=1,
    )


def _job_table(s: Schedule, rows: np.ndarray | None) -> dict[str, Any]:
    """Per-job columns for the hover panel, as plain lists (NaN -> null), of
    ``rows`` (the jobs a windowed page draws) or of every job (None)."""
    out: dict[str, Any] = {}
    for name, col in s.jobs.items():
        arr = np.asarray(col) if rows is None else np.asarray(col)[rows]
        if arr.dtype.kind == "f":
            out[name] = [None if not math.isfinite(v) else float(f"{v:.10g}") for v in arr.tolist()]
        elif arr.dtype.kind in "iub":
            out[name] = arr.astype(np.int64).tolist()
        else:
            out[name] = [str(v) for v in arr.tolist()]
    return {"rows": None if rows is None else rows.tolist(), "cols": out}


_SCRIPT = """
<div id="job-info" style="position:fixed;right:12px;bottom:12px;max-width:420px;background:#fffffff0;
border:1px solid #999;padding:6px 10px;font:12px monospace;white-space:pre;display:none;z-index:10"></div>
<script>
window.schedlabHover = function () {
  var JOBS = %(jobs)s, LABELS = %(labels)s, INDEX = {};
  for (var s in JOBS) {  // a windowed page carries only its jobs: row -> position
    INDEX[s] = {};
    if (JOBS[s].rows !== null) JOBS[s].rows.forEach(function (r, i) { INDEX[s][r] = i; });
  }
  var gd = document.getElementsByClassName('plotly-graph-div')[0], box = document.getElementById('job-info');
  function show(s, row) {
    var t = JOBS[s], i = t.rows === null ? row : INDEX[s][row], lines = [LABELS[s], 'job row ' + row];
    if (i === undefined) return;
    for (var c in t.cols) { var v = t.cols[c][i]; lines.push(c + ': ' + (v === null ? 'NaN' : v)); }
    box.textContent = lines.join('\\n'); box.style.display = 'block';
  }
  gd.on('plotly_hover', function (ev) {
    var p = ev.points[0], meta = p.data.meta;
    if (!meta || p.customdata === undefined || p.customdata === null) return;
    var row = p.customdata - (meta.shift || 0);
    if (row < 0) return;
    show(String(meta.s), row);
  });
};
</script>
"""

#: The loader: plotly.js and the figure travel gzip-compressed in base64 (a 10,000-job
#: page would be 7 MB as plain text, plotly.js alone 4.8 MB); the browser inflates them
#: with its own DecompressionStream (no network), runs plotly.js, draws the figure and
#: then wires the hover panel.
_LOADER = """
<div id="plot" class="plotly-graph-div" style="height:%(height)dpx;width:100%%"></div>
<script>
(async function () {
  async function inflate(b64) {  // a data: URL is decoded natively, then gunzipped as a stream
    var packed = await (await fetch('data:application/gzip;base64,' + b64)).blob();
    return await new Response(packed.stream().pipeThrough(new DecompressionStream('gzip'))).blob();
  }
  var js = await inflate("%(plotly)s"), tag = document.createElement('script');
  tag.src = URL.createObjectURL(new Blob([js], {type: 'text/javascript'}));  // a script file: parsed off-thread
  await new Promise(function (done) { tag.onload = done; document.head.appendChild(tag); });
  var fig = JSON.parse(await (await inflate("%(figure)s")).text());
  var gd = document.getElementById('plot');
  await Plotly.newPlot(gd, fig.data, fig.layout, %(config)s);
  window.schedlabHover();
})();
</script>
"""


def _gz(data: bytes) -> str:
    """gzip (no timestamp: the same page gives the same bytes), then base64."""
    import base64
    import gzip

    return base64.b64encode(gzip.compress(data, GZIP_LEVEL, mtime=0)).decode("ascii")


@functools.lru_cache(maxsize=1)
def _plotly_gz() -> str:
    """plotly.js (the one plotly.py ships), compressed once per process."""
    from plotly.offline import get_plotlyjs

    return _gz(get_plotlyjs().encode())


def window_text(a: float, b: float) -> str:
    """A ``--window`` value that covers [a, b] (rounded outwards, 6 significant digits)."""

    def fmt(x: float, down: bool) -> str:
        if x == 0 or not math.isfinite(x):
            return f"{x:g}"
        q = 10.0 ** (math.floor(math.log10(abs(x))) - 5)
        return f"{(math.floor(x / q) if down else math.ceil(x / q)) * q:.6g}"

    return f"{fmt(a, True)}:{fmt(b, False)}"


_NOTES = """<div id="page-notes" style="font:13px sans-serif;margin:6px 70px 0 70px;max-width:calc(100%% - 140px);
overflow-wrap:anywhere">%s</div>"""


def notes_html(parts: PageParts, command: str | None) -> str:
    """The block above the plot: how to read it, the series' percentiles, and the
    proposed windows as ready-made ``--window`` commands."""
    import html

    items = [f"<b>{html.escape(parts.legend)}</b> (legend on the right; click an entry to hide it)"]
    items += [html.escape(n) for n in parts.notes]
    if parts.windows:
        how = "the buttons above the plot zoom to them" if parts.fig.layout.updatemenus else "a command per window"
        cmds = [
            f"<code>{html.escape(command + ' --window ' + window_text(a, b)) if command else window_text(a, b)}</code>"
            for a, b in parts.windows
        ]
        items.append(f"Where to look job by job ({how}): " + "; ".join(cmds))
    return _NOTES % "".join(f"<p style='margin:2px 0'>{x}</p>" for x in items)


def write_page(
    schedules: list[Schedule],
    out: Path,
    *,
    window: tuple[float, float] | None,
    color_by: str | None,
    title: str,
    command: str | None = None,
) -> Path:
    """The self-contained HTML page (plotly.js inlined: it opens with no network).
    ``command``: the ``schedlab view`` line that made it, without ``--window``
    (the proposed windows are written as it plus a ``--window``)."""
    import plotly.io as pio

    parts = page_parts(schedules, window=window, color_by=color_by, title=title)
    script = _SCRIPT % {
        "jobs": json.dumps(parts.tables, allow_nan=False, separators=(",", ":")),
        "labels": json.dumps({str(k): s.label for k, s in enumerate(schedules)}),
    }
    loader = _LOADER % {
        "height": int(parts.fig.layout.height),
        "plotly": _plotly_gz(),
        "figure": _gz(pio.to_json(parts.fig, validate=False).encode()),
        "config": json.dumps({"scrollZoom": True, "displaylogo": False, "responsive": True}),
    }
    import html as html_

    html = (
        f'<!DOCTYPE html>\n<html>\n<head><meta charset="utf-8"><title>{html_.escape(title)}</title></head>\n'
        f"<body>{notes_html(parts, command)}{loader}{script}</body>\n</html>\n"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out
