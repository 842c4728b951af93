"""Figures a paper can use: one style, vector + 300-dpi PNG, intervals on the right scale.

Shared by the pipelines (``schedlab.pipelines.common``) and ``schedlab plot``
(`plot`, a figure for any sweep), so every figure schedlab writes looks the
same and obeys the same rules:

* **Files**: `save` writes the file asked for in any format matplotlib
  writes (`file_types`) and its companion beside it, same stem: a PNG at
  `PNG_DPI` beside a vector file (PDF, SVG, EPS, ...), a PDF beside a bitmap
  (PNG, JPEG, TIFF, ...). Journals want vector art; slides and report.md
  want a bitmap. The PDF carries no creation date, so the same data gives
  the same bytes.
* **Lines**: one colour and one marker per policy (`line_style`), from its
  place in a fixed order (the sweep's policy order for `plot`, every
  registered policy for the pipelines), so a policy looks the same in every
  figure of a results dir whatever subset a figure shows.
* **Labels**: an axis is labelled with the column's documented meaning and
  unit (`schedlab.docs_columns`, what docs/columns.md says), the parameters
  held fixed go in the caption under the figure.
* **Style**: `STYLE` (rcParams), applied with `style()` around figure
  creation *and* saving (matplotlib reads most rcParams when an artist is
  made). Sizes are in points at print size: a 6-inch-wide figure is a
  full-width figure in a two-column paper, so 8-9 pt text stays legible.
* **Intervals**: a 95 % t interval of a mean is symmetric on the scale the
  mean was computed on. On a log axis, or for a quantity with a hard floor
  (MST / optimal >= 1, degradation from a lower bound >= 1, any positive
  metric >= 0), the symmetric interval can cross the floor when n is small,
  drawing impossible values. `floor_interval` computes the interval on the
  log scale of (value - floor) instead (the log-transformed interval, by the
  delta method: se(log(m - f)) ~ se(m) / (m - f)), which keeps the point the
  arithmetic mean -- the number the tables report -- and can never reach the
  floor. It agrees with the symmetric interval to first order when the
  half-width is small against m - f. A ratio of two policies under common
  random numbers uses the paired geometric-mean ratio instead
  (`schedlab.platform.statistics.compare`), whose interval is built on the log ratios.

Import-light: matplotlib and polars are imported inside the functions, so the
CLI can import this module's name without paying for them.
"""

from __future__ import annotations

import contextlib
import math
import re
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.errors import UserError

if TYPE_CHECKING:
    import polars as pl

    from schedlab.engines.declare import Column

#: Bitmap resolution: 300 dpi is the usual minimum for line art in print.
PNG_DPI = 300
#: Formats written as pixels: a PDF goes beside them (every other format is vector: a PNG goes beside).
BITMAP_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".gif", ".avif", ".raw", ".rgba")
#: A log y axis is chosen automatically when the positive values plotted span
#: at least this many decades: below that a linear axis reads more easily.
LOG_DECADES = 2.0
#: A swept parameter (the x axis) is drawn on a log axis when its positive
#: values span at least this many decades: a decade or more is how sweeps
#: over shape (0.125-4), sigma or scale factors are laid out, in geometric steps.
LOG_DECADES_X = 1.0
#: The colours and markers of `line_style`, in order (matplotlib's tab10 and 13 markers: a
#: (colour, marker) pair is unique for the first 130 names of an order).
COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
MARKER_CYCLE = ("o", "s", "^", "D", "v", "*", "x", "P", "<", ">", "p", "h", "X")
LINESTYLES = ("-", "--", ":", "-.")

STYLE: dict[Any, Any] = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.which": "major",
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.2,
    "lines.markersize": 5,
    "errorbar.capsize": 2,
    "savefig.dpi": PNG_DPI,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.02,
    # TrueType (Type 42) fonts in PDF/PS: publishers reject Type 3 fonts.
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    # Text stays text in SVG (editable, searchable).
    "svg.fonttype": "none",
    "svg.hashsalt": "schedlab",  # deterministic SVG ids
}


@contextlib.contextmanager
def style() -> Iterator[None]:
    """`STYLE` in force (headless Agg backend) for the figures made and saved inside."""
    import matplotlib

    matplotlib.use("Agg")
    with matplotlib.rc_context(STYLE):
        yield


def file_types() -> dict[str, str]:
    """The formats matplotlib writes here: {".pdf": "Portable Document Format", ...}."""
    from matplotlib.backend_bases import FigureCanvasBase

    return {f".{k}": v for k, v in FigureCanvasBase.get_supported_filetypes().items()}


def save(fig, path: str | Path) -> list[Path]:
    """Write ``fig`` to ``path`` in the format its extension names (any of
    `file_types`: .pdf, .svg, .eps, .png, .jpg, .tiff, ...) and its companion
    beside it: a `PNG_DPI` PNG beside a vector file, a PDF beside a bitmap
    (the pipelines pass their figure's .png: the PDF goes beside it); close
    it. Returns [vector, bitmap]. PDF, SVG and PNG carry no dates, so their
    bytes are a function of the figure. An unknown extension, or a format
    this machine cannot write (.pgf needs LaTeX), is a `UserError` naming
    the file."""
    import matplotlib.pyplot as plt

    path = Path(path)
    types = file_types()
    suffix = path.suffix.lower()
    if suffix not in types:
        plt.close(fig)
        raise UserError(f"{path}: unknown figure format {path.suffix or '(none)'!r}; write one of {', '.join(types)}")
    if suffix in BITMAP_SUFFIXES:
        vector, bitmap = path.with_suffix(".pdf"), path
    else:
        vector, bitmap = path, path.with_suffix(".png")
    vector.parent.mkdir(parents=True, exist_ok=True)
    meta = {".pdf": {"Creator": "schedlab", "CreationDate": None}, ".svg": {"Date": None}}
    try:
        with style():
            fig.savefig(vector, **({"metadata": meta[vector.suffix.lower()]} if vector.suffix.lower() in meta else {}))
            extra = {"metadata": {"Software": "schedlab"}} if bitmap.suffix.lower() == ".png" else {}
            fig.savefig(bitmap, dpi=PNG_DPI, **extra)
    except (RuntimeError, OSError, ValueError) as err:
        raise UserError(f"{path}: cannot write this figure format here ({err})") from None
    finally:
        plt.close(fig)
    return [vector, bitmap]


def line_style(name: str, order: Sequence[str]) -> dict[str, Any]:
    """Colour and marker of a line named ``name`` (a policy, or
    ``Policy[param=v]``: the policy's colour and marker): its place in
    ``order`` (the sweep's policies, in the spec's order), or for a name not
    in it, after them in the order of a SHA-256 of the name -- so the same
    policy gets the same look in every figure, whatever subset a figure draws."""
    import hashlib

    base = name.split("[", 1)[0]
    if base in order:
        i = list(order).index(base)
    else:
        i = len(order) + int(hashlib.sha256(base.encode()).hexdigest()[:8], 16) % 997
    return {"color": COLOURS[i % len(COLOURS)], "marker": MARKER_CYCLE[i % len(MARKER_CYCLE)]}


def registered_policies() -> list[str]:
    """Every built-in policy name, engine by engine in the registry's order: the order that
    gives the pipelines' figures their colours (`line_style`)."""
    from schedlab.engines import ENGINES

    return [p for engine in ENGINES.values() for p in engine.policies]


# --------------------------------------------------------------------------- intervals


def floor_interval(mean: float | None, halfwidth: float | None, floor: float | None) -> tuple[float, float]:
    """(low, high) of a 95 % interval of ``mean`` drawn as an error bar.

    ``floor`` None: the symmetric t interval mean -+ halfwidth (a linear
    axis, a quantity without a floor). Otherwise the log-transformed interval
    of ``mean - floor`` (module docstring): floor + (m - f) / k .. floor +
    (m - f) k with k = exp(halfwidth / (m - f)), which stays above the floor.
    No interval (n < 2: halfwidth null or NaN) gives (mean, mean). A mean at
    the floor (every replication at it, or rounding in the last digit below
    it) has nothing to transform: (mean, mean) with zero spread, and the
    symmetric interval clipped at the floor otherwise -- the only clipping."""
    if mean is None or mean != mean:
        return (math.nan, math.nan)
    if halfwidth is None or halfwidth != halfwidth:
        return (mean, mean)
    if floor is None:
        return (mean - halfwidth, mean + halfwidth)
    excess = mean - floor
    if excess <= 0.0:
        return (mean, mean) if halfwidth == 0.0 else (max(floor, mean - halfwidth), mean + halfwidth)
    k = math.exp(min(halfwidth / excess, 700.0))  # 700: exp stays finite
    return (floor + excess / k, floor + excess * k)


#: Fewer replications than this and a point's 95 % interval is not drawn: a t interval
#: of 2 values has t = 12.7, a bar that swamps the figure and says little.
MIN_BAR_N = 3
#: The plotted range a bar is measured against is at least this fraction of the largest
#: |mean| (a factor 1 + this on a log axis): lines of nearly equal means keep their bars.
MIN_PLOTTED_SPAN = 0.5
#: Why a point's interval was left out, as the caption says it (`bar_caption`).
FEW, WIDE = "few", "wide"


def unreadable_bar(low: float, high: float, n: int | None, plotted: tuple[float, float], logy: bool) -> str | None:
    """Why the interval (low, high) of a point would swamp its figure: `FEW` (n below
    `MIN_BAR_N`), `WIDE` (wider than ``plotted``, the range the means span on the y
    scale drawn); None when it can be drawn. Such a point is drawn hollow, without
    its bar, and the caption says why (`bar_caption`); its interval stays in the CSV."""
    if n is not None and n < MIN_BAR_N and low == low and high == high and high > low:
        return FEW
    if not (low == low and high == high) or high <= low:
        return None
    a, b = plotted
    if not (a == a and b == b):
        return None
    if logy:
        if low <= 0 or a <= 0:
            return WIDE
        width, span = math.log(high / low), max(math.log(b / a), math.log(1.0 + MIN_PLOTTED_SPAN))
    else:
        width, span = high - low, max(b - a, MIN_PLOTTED_SPAN * max(abs(a), abs(b)))
    return WIDE if span > 0 and width > span else None


def bar_caption(dropped: dict[str, int]) -> str:
    """The caption's sentence for the points drawn hollow (`unreadable_bar`), '' when none."""
    parts = []
    if dropped.get(FEW):
        parts.append(f"{dropped[FEW]} from fewer than {MIN_BAR_N} replications")
    if dropped.get(WIDE):
        parts.append(f"{dropped[WIDE]} wider than the range the means span")
    if not parts:
        return ""
    return f"Hollow markers: no interval drawn ({'; '.join(parts)}): such a bar would swamp the figure."


def errorbar(
    ax, x: Sequence, mean: Sequence[float], halfwidth: Sequence[float | None], floor: float | None = None, **kwargs
) -> list[tuple[float, float]]:
    """``ax.errorbar`` with the bars of `floor_interval` (asymmetric when a
    floor is given); returns the (low, high) drawn, point by point."""
    bounds = [floor_interval(m, h, floor) for m, h in zip(mean, halfwidth)]
    yerr = [
        [max(m - lo, 0.0) for m, (lo, _) in zip(mean, bounds)],
        [max(hi - m, 0.0) for m, (_, hi) in zip(mean, bounds)],
    ]
    ax.errorbar(list(x), list(mean), yerr=yerr, **kwargs)
    return bounds


def readable_errorbar(
    ax,
    x: Sequence,
    mean: Sequence[float],
    low: Sequence[float],
    high: Sequence[float],
    n: Sequence[int | None],
    plotted: tuple[float, float],
    logy: bool,
    dropped: dict[str, int],
    **kwargs,
) -> None:
    """One line with its 95 % intervals (low, high), except the points whose bar would
    swamp the figure (`unreadable_bar`): those are drawn hollow, without a bar, and
    counted in ``dropped`` for the caption (`bar_caption`)."""
    why = [unreadable_bar(lo, hi, k, plotted, logy) for lo, hi, k in zip(low, high, n)]
    yerr = [
        [max(m - lo, 0.0) if lo == lo and w is None else 0.0 for m, lo, w in zip(mean, low, why)],
        [max(hi - m, 0.0) if hi == hi and w is None else 0.0 for m, hi, w in zip(mean, high, why)],
    ]
    ax.errorbar(list(x), list(mean), yerr=yerr, **kwargs)
    hollow = [i for i, w in enumerate(why) if w is not None]
    for i in hollow:
        dropped[str(why[i])] = dropped.get(str(why[i]), 0) + 1
    if hollow:
        colour = kwargs.get("color")
        ax.plot(
            [list(x)[i] for i in hollow],
            [list(mean)[i] for i in hollow],
            linestyle="none",
            marker=kwargs.get("marker", "o"),
            markersize=kwargs.get("markersize", 5) + 1,
            markerfacecolor="white",
            markeredgecolor=colour,
            zorder=3,
        )


def plotted_range(values: Sequence[float], logy: bool) -> tuple[float, float]:
    """The range the means span (positive ones on a log axis): what a bar may not exceed."""
    vals = [float(v) for v in values if v is not None and v == v and (v > 0 or not logy)]
    return (min(vals), max(vals)) if vals else (math.nan, math.nan)


def column_label(
    name: str, engine: str | None = None, workload_kind: str | None = None, declared: Sequence[Column] = ()
) -> str:
    """An axis label for a result column, in one line: its documented meaning and unit
    (``declared``: the columns your own engine declares, first; then
    `schedlab.docs_columns`: a metric of ``engine`` or any engine, a workload or
    [system] parameter), the unit as this engine on this workload kind has it
    (`docs_columns.figure_unit`: "mean sojourn time [s]" on a trace, "[slots]" for
    packing, an offered load as a fraction of the machine for batch), e.g. "mean
    sojourn time [time units of the workload]"; the column name for a column nobody
    documented (your own metric)."""
    from schedlab import docs_columns as dc

    columns = list(declared)
    columns += [c for e, cols in dc.METRICS.items() if engine in (None, e) for c in cols]
    kinds = [workload_kind] if workload_kind in dc.WORKLOAD else []
    if engine is not None:
        from schedlab.engines import ENGINES

        if engine in ENGINES:
            kinds += [k for k in ENGINES[engine].workload_kinds if k not in kinds]
    kinds += [k for k in dc.WORKLOAD if k not in kinds]
    columns += [dc.Column(k, "", unit, meaning) for kind in kinds for k, (unit, meaning) in dc.WORKLOAD[kind].items()]
    for c in columns:
        if c.name == name:
            unit = dc.figure_unit(c, engine, workload_kind)
            return f"{c.meaning}" + ("" if unit in ("-", "") else f" [{unit}]")
    return name


def spans_decades(values: Sequence[float], decades: float = LOG_DECADES) -> bool:
    """True when every value is positive and max / min >= 10 ** decades."""
    vals = [float(v) for v in values if v is not None and v == v]
    return bool(vals) and min(vals) > 0 and max(vals) / min(vals) >= 10**decades


# --------------------------------------------------------------------------- a figure for any sweep

#: Columns of a results dir that are bookkeeping, never an axis or a metric.
_BOOKKEEPING = (
    "config_id",
    "replication",
    "seed",
    "engine",
    "workload_kind",
    "schedlab_version",
    "schedlab_digest",
    "sim_seconds",
)
_SCALES = ("auto", "on", "off")


@dataclass
class PlotResult:
    """What `plot` wrote: the vector figure, the bitmap beside it (a PNG
    unless ``--out`` named another bitmap format) and a CSV of every drawn
    point (the numbers behind the figure: mean or ratio, the interval drawn,
    n), plus the same table in memory, the axis scales and the caption (the
    parameters held fixed, the replications, the interval)."""

    vector: Path
    png: Path
    csv: Path
    table: Any  # polars DataFrame, the CSV's rows
    logx: bool
    logy: bool
    caption: str = ""

    @property
    def paths(self) -> list[Path]:
        return [self.vector, self.png, self.csv]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name)


def _check_scale(option: str, value: str) -> None:
    if value not in _SCALES:
        raise UserError(f"{option}: {value!r} is not one of {', '.join(_SCALES)}")


def parameter_columns(frame: pl.DataFrame | pl.LazyFrame, manifest: dict[str, Any]) -> list[str]:
    """The sweep's parameter columns (the manifest's ``param_columns``) that ``frame`` has."""
    import polars as pl

    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    return [c for c in (manifest.get("param_columns") or []) if c in names]


def swept(frame: pl.DataFrame | pl.LazyFrame, manifest: dict[str, Any]) -> list[str]:
    """The parameters that take more than one value among ``frame``'s rows
    (after ``--where``): with the policy, what tells one configuration from
    another. `plot` never averages over them (each must be an axis, a line,
    a panel or held fixed), and ``schedlab results`` shows one row per
    policy and combination of them unless ``--by`` says what to pool. A
    LazyFrame (a scan) is read one column pass, not materialised."""
    from schedlab.platform.storage.query import varying_of

    _, several = varying_of(frame, parameter_columns(frame, manifest))
    return [c for c, more in several.items() if more]


def plot(
    results_dir: str | Path,
    x: str,
    y: str,
    by: str = "policy",
    ratio_to: str | None = None,
    facet: str | None = None,
    out: str | Path | None = None,
    logx: str = "auto",
    logy: str = "auto",
    where: dict[str, Any] | None = None,
) -> PlotResult:
    """Draw ``y`` against ``x`` for a sweep's results dir: one line per
    value of ``by``, one panel per value of ``facet``, means with 95 %
    intervals over the replications; returns a `PlotResult`.

    What is averaged: the replications of one configuration, nothing else.
    Every parameter column that is not ``x``, ``by`` or ``facet`` must take a
    single value within each drawn point; if one varies (a sweep over shape
    and sigma plotted against shape alone), averaging over it would mix
    workloads into a mean no one asked for, so it is an error naming the
    column and its values: add it as ``facet`` or ``by``, or hold it with
    ``where={col: value}`` (``--where col=value``). With ``by="policy"``, a
    policy parameter the sweep grids (``policy_beta``) becomes part of the
    line's label (``PSBS[beta=2]``), as in ``schedlab compare``.

    Intervals: on a linear axis the symmetric Student-t interval; on a log
    axis the log-transformed interval of `floor_interval` with floor 0 (it
    cannot reach 0). With ``ratio_to``, y is the paired geometric-mean ratio
    of each policy to that policy (pairs: the same configuration's
    replication, common random numbers), its interval the t interval of the
    mean log ratio transformed back -- `schedlab.compare(..., ratio=True)`
    exactly -- drawn with a reference line at 1; it is never below 0.

    Axes: ``logx`` "auto" (log when the swept values are positive and span
    >= `LOG_DECADES_X` decades), ``logy`` "auto" (>= `LOG_DECADES` decades:
    the means, and with ``ratio_to`` also the interval bounds), "on" or
    "off". Labels: the columns' documented meaning and unit
    (`column_label`); the caption under the figure names every parameter
    held fixed, the replications per point and the interval. Lines: one
    colour and marker per policy across every figure of the results dir
    (`line_style`, in the spec's policy order). ``out``: any format
    matplotlib writes (`file_types`: .pdf, .svg, .png, .jpg, ...; default
    ``DIR/plots/<y>-vs-<x>.pdf``, with ``-over-<policy>`` and
    ``-per-<facet>`` when used); its companion (`save`) and a CSV of the
    drawn points go beside it. Bad input is a `UserError` naming the option."""
    import polars as pl

    from schedlab.platform.storage.query import filter_where, scan_rows, stored_scan

    root, manifest, lf = stored_scan(results_dir)
    schema = lf.collect_schema()
    params = parameter_columns(lf, manifest)
    # --where read in the scan, and only the columns the figure reads (10^7 rows of 30 columns: issue #42)
    axes = [c for c in (x, by, facet, y) if c is not None]
    frame = scan_rows(root, lf, where, columns=[*params, "policy", "replication", *axes])
    _check_scale("--logx", logx)
    _check_scale("--logy", logy)
    columns = schema.names()
    for option, col in (("--x", x), ("--by", by), ("--facet", facet)):
        if col is not None and col not in columns:
            raise UserError(
                f"{option}: {col!r} is not a column of {root}; parameters: {', '.join(params + ['policy'])}"
            )
        if col in _BOOKKEEPING or col == y:
            raise UserError(f"{option}: {col!r} cannot be an axis of this figure")
    metrics = [
        c for c in columns if c not in params and c not in _BOOKKEEPING and c != "policy" and schema[c].is_numeric()
    ]
    if y not in metrics:
        raise UserError(f"--y: {y!r} is not a metric column of {root}; metrics: {', '.join(metrics)}")
    axes_cols = [c for c in (x, by, facet) if c is not None]
    if len(set(axes_cols)) != len(axes_cols):
        raise UserError(f"--x, --by and --facet must be different columns (got {', '.join(axes_cols)})")
    for col in where or {}:
        if col in axes_cols:
            raise UserError(f"--where: {col!r} is already an axis of the figure")
    frame = filter_where(frame, where or {}, root)
    if ratio_to is not None and by != "policy":
        raise UserError("--ratio-to compares policies: use it with --by policy")

    # Line labels: the by column, or the policy with its gridded parameters.
    from schedlab.platform.statistics.compare import arm_labels

    varying = swept(frame, manifest)
    pparams = [c for c in varying if c.startswith("policy_") and c not in axes_cols] if by == "policy" else []
    label = arm_labels(frame, pparams) if by == "policy" else frame[by].cast(pl.String)
    frame = frame.with_columns(label.alias("_line"))
    cells = ([facet] if facet else []) + [x]
    group = cells + ["_line"]
    for col in params + ([] if by == "policy" else ["policy"]):
        if col in axes_cols or col in pparams:
            continue
        spread = frame.group_by(group).agg(pl.col(col).n_unique().alias("k")).filter(pl.col("k") > 1)
        if spread.height:
            values = ", ".join(map(str, sorted(frame[col].unique().drop_nulls().to_list())))
            raise UserError(
                f"{col} varies within a plotted point ({values}); add --facet {col} or --by {col}, "
                f"or hold it with --where {col}=VALUE"
            )
    if not frame.schema[x].is_numeric() and frame.schema[x] != pl.String:
        raise UserError(f"--x: {x!r} is neither numeric nor text")

    if ratio_to is None:
        table = _means(frame, group, y)
        method = "mean over replications; 95 % Student-t interval"
    else:
        table = _ratios(frame, cells, y, ratio_to, root)
        method = (
            f"paired geometric-mean ratio to {ratio_to} (pairs: same configuration and replication); "
            f"95 % t interval of the mean log ratio, transformed back"
        )

    numeric_x = frame.schema[x].is_numeric()
    use_logx = numeric_x and _decide("--logx", logx, table[x].to_list(), x, LOG_DECADES_X)
    # auto log y: from the means, and for ratios also the paired bounds (they
    # do not depend on the axis, and the axis must show the bars drawn)
    yvals = table["value"].to_list() + (table["low"].to_list() + table["high"].to_list() if ratio_to else [])
    use_logy = _decide("--logy", logy, yvals, y)
    if ratio_to is None:
        # the interval drawn: log-transformed on a log axis (floor 0), symmetric on a linear one
        bounds = [
            floor_interval(m, h, 0.0 if use_logy else None)
            for m, h in zip(table["value"].to_list(), table["halfwidth"].to_list())
        ]
        table = table.with_columns(
            pl.Series("low", [b[0] for b in bounds], dtype=pl.Float64),
            pl.Series("high", [b[1] for b in bounds], dtype=pl.Float64),
        )
        method += " on the log scale (log-transformed, floor 0)" if use_logy else " (symmetric)"
    table = table.with_columns(pl.lit(method).alias("method"))

    if out is None:
        stem = f"{y}" + (f"-over-{ratio_to}" if ratio_to else "") + f"-vs-{x}" + (f"-per-{facet}" if facet else "")
        vector = root / "plots" / f"{_safe(stem)}.pdf"
    else:
        vector = Path(out)
        if vector.suffix.lower() not in file_types():
            raise UserError(
                f"--out {vector}: unknown figure format {vector.suffix or '(none)'!r}; write one of "
                f"{', '.join(file_types())}"
            )
    xlabel, ylabel = axis_labels(root, manifest, x, y, ratio_to)
    caption = _caption(frame, params, axes_cols + pparams, table, method)
    spec_policies = [
        p if isinstance(p, str) else p.get("name", "") for p in (manifest.get("spec") or {}).get("policies", [])
    ]
    order = spec_policies if by == "policy" else [str(v) for v in sorted(frame[by].unique().drop_nulls().to_list())]
    with style():
        dropped: dict[str, int] = {}
        fig = _draw(
            table, x, by, facet, xlabel, ylabel, use_logx, use_logy, numeric_x, ratio_to is not None, order, dropped
        )
        caption = " ".join(t for t in (caption, bar_caption(dropped)) if t)
        add_caption(fig, caption)
        vector, png = save(fig, vector)
    csv = (vector if vector.suffix.lower() not in BITMAP_SUFFIXES else png).with_suffix(".csv")
    table.write_csv(csv)
    return PlotResult(vector, png, csv, table, use_logx, use_logy, caption)


#: Caption text size (points) and its characters per inch of figure width (for wrapping).
CAPTION_SIZE = 7
CAPTION_CHARS_PER_INCH = 15


def axis_labels(root: Path, manifest: dict[str, Any], x: str, y: str, ratio_to: str | None) -> tuple[str, str]:
    """(x label, y label) of a figure of the results dir ``root``, one line
    each (how points and intervals are made is the caption's): `column_label`
    with the engine and workload kind of the sweep, and, for your own engine,
    the metric columns it declares (loaded from the copy of its code the
    results dir keeps), so its axes read like a built-in engine's."""
    from schedlab.engines import known_engines
    from schedlab.platform.storage.query import stored_engine

    engine = str(manifest.get("engine") or "") or None
    kind = str((manifest.get("spec") or {}).get("workload", {}).get("kind") or "") or None
    declared: tuple[Column, ...] = ()
    if engine is not None and engine not in known_engines():
        own = stored_engine(root, manifest, engine)
        declared = own.metrics if own is not None else ()
    what = column_label(y, engine, kind, declared)
    ylabel = f"{what.split(' [')[0]} / {ratio_to}" if ratio_to else what
    return column_label(x, engine, kind, declared), ylabel


def add_caption(fig, text: str) -> None:
    """``text`` under the figure's bottom-left panel, below its x label, wrapped to the figure's
    width (the saved figure's tight bounding box takes it in)."""
    visible = [a for a in fig.axes if a.get_visible()]
    ax = min(visible, key=lambda a: (a.get_position().y0, a.get_position().x0))
    width = int(fig.get_size_inches()[0] * CAPTION_CHARS_PER_INCH)
    ax.annotate(
        textwrap.fill(text, width),
        xy=(0.0, 0.0),
        xycoords=("axes fraction", ax.xaxis.label),
        xytext=(0, -6),
        textcoords="offset points",
        ha="left",
        va="top",
        fontsize=CAPTION_SIZE,
        annotation_clip=False,
    )


def _caption(frame, params: list[str], shown: list[str], table, method: str) -> str:
    """The parameters every plotted row shares ("fixed: njobs = 5000, load = 0.9"), the
    replications per point and how the interval is made."""
    fixed = []
    for col in params:
        if col in shown:
            continue
        values = frame[col].unique().to_list()
        if len(values) == 1 and values[0] is not None:
            v = values[0]
            fixed.append(f"{col} = {v:g}" if isinstance(v, float) else f"{col} = {v}")
    reps = sorted(set(table["n"].to_list()))
    n = f"{reps[0]}" if len(reps) == 1 else f"{reps[0]}-{reps[-1]}"
    return (f"Fixed: {', '.join(fixed)}. " if fixed else "") + f"{n} replications per point; {method}."


def _decide(option: str, mode: str, values: list, col: str, decades: float = LOG_DECADES) -> bool:
    """Whether an axis is logarithmic: ``mode`` on/off, or auto (`spans_decades` of ``decades``)."""
    if mode == "off":
        return False
    if mode == "on":
        bad = [v for v in values if v is None or v != v or v <= 0]
        if bad:
            raise UserError(f"{option} on: {col} has values <= 0 (e.g. {bad[0]}), which a log axis cannot show")
        return True
    return spans_decades(values, decades)


def _means(frame, group: list[str], y: str):
    """Mean, 95 % t half-width and n per drawn point (`stats.summarize`)."""
    import polars as pl

    from schedlab.platform.statistics.stats import summarize

    clean = frame.filter(pl.col(y).is_not_null() & pl.col(y).cast(pl.Float64).is_not_nan())
    t = summarize(clean.with_columns(pl.col(y).cast(pl.Float64)), group, [y])
    return t.rename({"_line": "line", f"{y}_mean": "value", f"{y}_ci95": "halfwidth"}).select(
        [c for c in group if c != "_line"] + ["line", "n", "value", "halfwidth"]
    )


def _ratios(frame, cells: list[str], y: str, baseline: str, root: Path):
    """Paired geometric-mean ratios to ``baseline`` per cell and line
    (`compare.paired_stats`, the computation behind `schedlab compare`)."""
    import polars as pl

    from schedlab.platform.statistics.compare import paired_stats

    if baseline not in frame["policy"].unique().to_list():
        policies = ", ".join(dict.fromkeys(frame["policy"].to_list()))
        raise UserError(f"--ratio-to: {baseline!r} is not a policy of {root}; policies: {policies}")
    base = frame.filter(pl.col("policy") == baseline)["_line"].unique().to_list()
    if len(base) > 1:
        raise UserError(
            f"--ratio-to: {baseline!r} has {len(base)} parameter settings ({', '.join(sorted(base))}); "
            f"hold its parameters with --where"
        )
    data = frame.select(cells + ["replication", "_line", pl.col(y).cast(pl.Float64)])
    t = paired_stats(data, cells, ["replication"], "_line", y, base[0], ratio=True)
    return t.rename({"_line": "line", "estimate": "value", "ci_low": "low", "ci_high": "high"}).select(
        cells + ["line", "n", "value", "halfwidth", "low", "high"]
    )


def _draw(
    table,
    x: str,
    by: str,
    facet: str | None,
    xlabel: str,
    ylabel: str,
    logx: bool,
    logy: bool,
    numeric_x: bool,
    ratio: bool,
    order: list[str],
    dropped: dict[str, int],
):
    """The figure (``dropped``: the points drawn without their bar, `readable_errorbar`):
    a row (wrapped at 4) of panels sharing the y axis, a line's look from
    `line_style` in ``order``; variants of one policy (``PSBS[beta=2]``) differ by line style."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    panels = sorted(table[facet].unique().to_list()) if facet else [None]
    ncols = min(len(panels), 4)
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.0 + 3.6 * ncols, 3.2 * nrows), sharey=True, squeeze=False)
    xs_all = sorted(table[x].unique().to_list())
    position = {v: i for i, v in enumerate(xs_all)}
    rank = {p: i for i, p in enumerate(order)}
    lines = sorted(table["line"].unique().to_list(), key=lambda n: (rank.get(str(n).split("[", 1)[0], len(rank)), n))
    variant = {name: [n for n in lines if n.split("[", 1)[0] == name.split("[", 1)[0]].index(name) for name in lines}
    plotted = plotted_range(table["value"].to_list(), logy)  # the panels share y
    for k, (ax, panel) in enumerate(zip(axes.flat, panels)):
        sub = table if panel is None else table.filter(table[facet] == panel)
        for name in lines:
            s = sub.filter(sub["line"] == name).sort(x)
            if s.height == 0:
                continue
            xv = s[x].to_list() if numeric_x else [position[v] for v in s[x].to_list()]
            mean, low, high = s["value"].to_list(), s["low"].to_list(), s["high"].to_list()
            readable_errorbar(
                ax,
                xv,
                mean,
                low,
                high,
                s["n"].to_list(),
                plotted,
                logy,
                dropped,
                label=f"{name}" if by == "policy" else f"{by} = {name}",
                linestyle=LINESTYLES[variant[name] % len(LINESTYLES)],
                **line_style(str(name), order),
            )
        if ratio:
            ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
        if logx:
            ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        if numeric_x and logx or not numeric_x:
            ticks = xs_all if numeric_x else list(range(len(xs_all)))
            ax.set_xticks(ticks, [f"{v:g}" if numeric_x else str(v) for v in xs_all])
            if logx:
                ax.xaxis.set_minor_locator(NullLocator())  # only the swept values are labelled
        ax.set_xlabel(xlabel)
        if panel is not None:
            ax.set_title(f"{facet} = {panel:g}" if isinstance(panel, float) else f"{facet} = {panel}")
        if k % ncols == 0:
            ax.set_ylabel(ylabel)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    axes[0][0].legend()
    fit_label(axes[0][0])
    return fig


#: The smallest size (points) `fit_label` shrinks an axis label to.
MIN_LABEL_SIZE = 6.0


def fit_label(ax) -> None:
    """Shrink ``ax``'s y label (one line) until it is no taller than the axes, down to
    `MIN_LABEL_SIZE`: a label longer than its axis runs past the figure's top and
    leaves an empty band there."""
    label = ax.yaxis.label
    renderer = ax.figure.canvas.get_renderer()
    height = ax.get_window_extent(renderer).height
    size = float(label.get_fontsize())
    while size > MIN_LABEL_SIZE and label.get_window_extent(renderer).height > height:
        size = max(MIN_LABEL_SIZE, size - 0.5)
        label.set_fontsize(size)
