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

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import UserError
from schedlab.plotting import COLOURS
from schedlab.views.schedule import KIND_NAMES, LIFE, PAUSED, PENALTY, RESERVATION, RUN, Schedule

#: Above this many boxes in a panel's window the panel is a raster (module docstring).
MAX_DETAIL_BOXES = 6_000
#: The raster's size: time bins across, lanes (grouped when there are more) down.
RASTER_BINS = 1600
RASTER_LANES = 600
#: A step series with more points than this is drawn as its min and max per
#: time bin (``SERIES_BINS`` bins): peaks stay visible, the page stays small.
MAX_SERIES_POINTS = 20_000
SERIES_BINS = 4000
#: Numeric colour columns are cut into this many quantile bins (one trace each).
COLOR_BINS = 9
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
        raise UserError(f"--window {text!r}: expected START:END in seconds (e.g. 86400:172800)") from None
    if not sep or not (a < b) or not (math.isfinite(a) and math.isfinite(b)):
        raise UserError(f"--window {text!r}: expected START:END with START < END")
    if b <= lo or a >= hi:
        raise UserError(f"--window {text}: outside the run, which spans {lo:g}:{hi:g}")
    return a, b


def color_values(schedule: Schedule, column: str) -> tuple[np.ndarray, list[str], list[str]]:
    """(bin of every job row, the bins' colours, the bins' legend names) for
    colouring by ``column`` (a per-job column of the run)."""
    jobs = schedule.jobs
    if column not in jobs:
        raise UserError(f"--color-by {column!r}: not a job column; columns: {', '.join(sorted(jobs))}")
    values = np.asarray(jobs[column])
    if column == "job_id" or values.dtype.kind in "OUSb":
        if column == "job_id":
            codes = (np.arange(len(values)) % len(PALETTE)).astype(np.int64)
            return codes, PALETTE, [f"job rows ≡ {k} (mod {len(PALETTE)})" for k in range(len(PALETTE))]
        cats, codes = np.unique(values.astype(str), return_inverse=True)
        if len(cats) > MAX_CATEGORIES:
            codes = codes % MAX_CATEGORIES
            names = [f"{column} group {k}" for k in range(MAX_CATEGORIES)]
        else:
            names = [f"{column} = {c}" for c in cats]
        return codes.astype(np.int64), PALETTE[: len(names)], names
    v = values.astype(float)
    finite = np.isfinite(v)
    if not finite.any():
        return np.zeros(len(v), dtype=np.int64), [PALETTE[0]], [f"{column}: no finite value"]
    edges = np.unique(np.quantile(v[finite], np.linspace(0, 1, COLOR_BINS + 1)))
    if len(edges) < 2:
        return np.zeros(len(v), dtype=np.int64), [SEQUENTIAL[4]], [f"{column} = {edges[0]:.4g}"]
    codes = np.clip(np.searchsorted(edges, np.where(finite, v, edges[0]), side="right") - 1, 0, len(edges) - 2)
    k = len(edges) - 1
    colors = [SEQUENTIAL[round(i * (len(SEQUENTIAL) - 1) / max(k - 1, 1))] for i in range(k)]
    names = [f"{column} {edges[i]:.4g}..{edges[i + 1]:.4g}" for i in range(k)]
    return codes.astype(np.int64), colors, names


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


def _window_mask(boxes: dict[str, np.ndarray], window: tuple[float, float] | None) -> np.ndarray:
    if window is None:
        return np.ones(len(boxes["t0"]), dtype=bool)
    return (boxes["t1"] >= window[0]) & (boxes["t0"] <= window[1])


def build_figure(
    schedules: list[Schedule],
    *,
    window: tuple[float, float] | None = None,
    color_by: str = "job_id",
    title: str = "",
) -> tuple[Any, dict[str, Any]]:
    """The Plotly figure of one schedule, or two stacked on one time axis
    (``--vs``: then a last panel of each job's finish difference), and the
    page's job tables (for the hover panel)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows: list[tuple[int, Any, str]] = []  # (schedule index, panel or "series" or "diff", title)
    for k, s in enumerate(schedules):
        tag = f"{s.label}: " if len(schedules) > 1 else ""
        for each in s.panels:
            rows.append((k, each, tag + each.name))
        for name in s.series:
            rows.append((k, f"series:{name}", tag + name))
    if len(schedules) == 2:
        rows.append((1, "diff", f"finish difference per job: {schedules[1].label} minus {schedules[0].label}"))
    series_row = {(idx, p): r for r, (idx, p, _) in enumerate(rows, start=1) if isinstance(p, str)}
    heights = [3.0 if not isinstance(p, str) else 1.0 for _, p, _ in rows]
    fig = make_subplots(
        rows=len(rows),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.04 if len(rows) < 5 else 0.025,
        row_heights=heights,
        subplot_titles=[t for _, _, t in rows],
    )
    notes: list[str] = []
    needed: list[list[np.ndarray]] = [[] for _ in schedules]  # job rows the page can hover, per schedule
    for k, s in enumerate(schedules):
        codes, colors, names = color_values(s, color_by)
        shown_legend: set[int] = set()
        for r, (idx, panel, _) in enumerate(rows, start=1):
            if idx != k or isinstance(panel, str):
                continue
            pi = s.panels.index(panel)
            mask = (s.boxes["panel"] == pi) & _window_mask(s.boxes, window)
            box = {c: v[mask] for c, v in s.boxes.items()}
            needed[k].append(box["row"])
            if len(box["t0"]) > MAX_DETAIL_BOXES:
                _raster(fig, r, box, panel.lanes, codes, window or s.span(), k)
                notes.append(f"{len(box['t0']):,} boxes in '{panel.name}' drawn as a raster; --window shows boxes")
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
                        line=dict(color="rgba(0,0,0,0.35)", width=0.5),
                        name=names[c],
                        legendgroup=names[c],
                        showlegend=k == 0 and int(c) not in shown_legend,
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
                m = mark["panel"] == pi
                if window is not None:
                    m &= (mark["t"] >= window[0]) & (mark["t"] <= window[1])
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
            lo, hi = (0.0, float(panel.lanes)) if panel.lanes <= 2 else (-0.6, float(panel.lanes))
            if window is not None and panel.y_title == "job" and len(box["y0"]):
                lo, hi = float(box["y0"].min()) - 0.6, float(box["y1"].max()) + 0.6
            fig.update_yaxes(title_text=panel.y_title, range=[lo, hi], row=r, col=1)
        for name, (t, v) in s.series.items():
            r_series = series_row[(k, f"series:{name}")]
            if len(t) == 0:
                continue
            if window is not None:
                keep = (t >= window[0]) & (t <= window[1])
                first = max(int(np.argmax(keep)) - 1, 0) if keep.any() else 0
                keep[first] = True  # the value in force when the window opens
                t, v = t[keep], v[keep]
            if len(t) > MAX_SERIES_POINTS:
                x, low, high = envelope(t, v, SERIES_BINS)
                for y, part in ((high, "max"), (low, "min")):
                    fig.add_trace(
                        go.Scattergl(
                            x=x,
                            y=y,
                            mode="lines",
                            line=dict(shape="hv", width=1, color="#444"),
                            name=f"{name} ({part} per bin)",
                            showlegend=False,
                        ),
                        row=r_series,
                        col=1,
                    )
                notes.append(f"'{name}': min and max per 1/{SERIES_BINS} of the time axis")
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
        needed[1].append(rows_d)
        fig.add_trace(
            go.Scattergl(
                x=x,
                y=diff,
                mode="markers",
                marker=dict(size=4, color=np.where(diff > 0, "#d62728", "#2ca02c")),
                name="finish difference",
                customdata=rows_d,
                meta={"s": 1},
                hovertemplate="job row %{customdata}: %{y:+.4g} s<extra></extra>",
            ),
            row=len(rows),
            col=1,
        )
        fig.update_yaxes(title_text="later (+) / earlier (-) s", row=len(rows), col=1)
    tables = {
        str(k): _job_table(s, None if window is None else np.unique(np.concatenate([[], *needed[k]]).astype(np.int64)))
        for k, s in enumerate(schedules)
    }
    if window is not None:
        fig.update_xaxes(range=list(window))
    fig.update_xaxes(title_text="time (s)", row=len(rows), col=1)
    subtitle = "; ".join(notes)
    fig.update_layout(
        title=dict(text=title + (f"<br><sup>{subtitle}</sup>" if subtitle else "")),
        height=max(600, int(260 * sum(heights) / 2)),
        dragmode="pan",
        hovermode="closest",
        legend=dict(orientation="v"),
        template="plotly_white",
        margin=dict(l=70, r=20, t=80 if subtitle else 60, b=40),
    )
    return fig, tables


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
(function () {
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
})();
</script>
"""


def write_page(
    schedules: list[Schedule], out: Path, *, window: tuple[float, float] | None, color_by: str, title: str
) -> Path:
    """The self-contained HTML page (plotly.js inlined: it opens with no network)."""
    import plotly.io as pio

    fig, tables = build_figure(schedules, window=window, color_by=color_by, title=title)
    html = pio.to_html(
        fig,
        include_plotlyjs=True,
        full_html=True,
        config={"scrollZoom": True, "displaylogo": False, "responsive": True},
    )
    script = _SCRIPT % {
        "jobs": json.dumps(tables, allow_nan=False, separators=(",", ":")),
        "labels": json.dumps({str(k): s.label for k, s in enumerate(schedules)}),
    }
    html = html.replace("</body>", script + "</body>")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out
