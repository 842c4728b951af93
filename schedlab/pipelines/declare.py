"""A pipeline as data: ``<name>.toml`` beside its (optional) module.

Most of a paper figure is data: its sweeps, the series it plots and the
claims the paper makes. A pipeline's TOML file states all three, and
`Declared` is the pipeline it declares; code is left only for what one
figure alone needs (a heat map, an ECDF, a claim no comparison below states),
in the module of the same name, referred to by function name.

Sweeps (``[[sweeps]]``): plain sweep specs, with ``{scale}`` in the name,
``"$var"`` wherever a value depends on the scale and ``"{data}/..."`` for a
trace below the data root (``"{agent}/agent.py:Agent"``: the trained agent's
folder; `inputs`); ``[scales.<scale>]`` gives
the vars (and may ``merge`` a table into every sweep); ``[every_sweep]``:
what the sweeps share, each sweep merged over it. Figures
(``[[figures]]``): key, title, png, paper_says; ``table`` (an aggregation:
``metric``, ``keys``, ``ratio_to`` for per-replication ratios to a policy,
``columns`` for derived columns in SQL), ``plot`` (the vocabulary of
`schedlab plot`: x, y, the ``series`` drawn by policy, ``logx``, ``yscale``,
a ``reference`` line, the ``floor`` of the quantity, plus layout) and
``panels`` (one per ``where`` facet or per ``sweep``, with a ``title`` and
the ``caption`` of its table in the report); ``measured`` (else a table per
panel): ``{keys, columns, labels}``, a row per row of the table (`md_sorted`);
or a function name of the module for any of table, plot and measured.
Claims (a figure's ``claims``): rows of `Claim`, checked by `Claim.compare`,
by a claim kind of `KINDS` or by the module function they name.
docs/architecture.md ("Pipelines") has a whole example.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import UserError
from schedlab.pipelines import inputs
from schedlab.pipelines.base import (
    INCONCLUSIVE,
    OUTCOMES,
    WINDOW_COLUMNS,
    Check,
    FigureReport,
    Straddle,
    deep_merge,
)
from schedlab.pipelines.common import (
    OPS,
    Estimate,
    absolute,
    bounds,
    emax,
    estimate,
    every,
    interval_text,
    judge,
    judgments,
    line_figure,
    md_sorted,
    md_table,
    paired_estimate,
    paired_ratios,
    relative_to,
    row_at,
    values,
    where,
    xs,
)
from schedlab.pipelines.common import (
    spread as spread_of,
)


@dataclass
class FigureData:
    """What a figure's checks and functions see: the figure's table (None when
    each panel has its own), the panels' tables by name, the results dirs."""

    table: Any
    tables: dict[str, Any]
    dirs: dict[str, Path]
    fig: dict[str, Any] = field(default_factory=dict)  # the figure's TOML table
    #: what several of the figure's checks need, computed by the first and kept for the others
    memo: dict[str, Any] = field(default_factory=dict)

    @property
    def results_dir(self) -> Path:
        (d,) = self.dirs.values()
        return d


@dataclass(frozen=True)
class Claim:
    """One row of a figure's claims table.

    ``says``: the claim as report.md states it (format fields: ``tolerance``
    and whatever a check function supplies); ``quantity``: the series
    compared, ``"A"`` or ``"A / B"`` (policies); ``comparison``: one of
    `OPS`; ``than``: the bound (a number), widened by the relative
    ``tolerance``: ``A op B x than x (1 + tolerance)``, at every point of the
    panel ``panel`` whose columns satisfy ``where`` ({column: {op: value}}).
    The detail lists ``shown`` (default: the quantity) per point, as
    ``label: point, point`` with ``point`` a format of ``x`` and ``value``.
    ``only``: ``"first"`` or ``"last"`` compares at that point of the grid only
    (``{lo}`` in ``says``: the first point compared).
    ``quantity`` may list several ``"A / B"``, all compared; the detail then
    has no label (``label = ""``), its points joined by ``sep`` (``empty``
    when the grid has none), and ``point`` may name a policy's value
    (``"{PSBS:.2f}"``).
    ``check``: instead of the comparison, a claim kind of `KINDS` or a
    function of the pipeline's module, ``(data, claim) -> Check | None``
    (None: the claim does not apply to this grid), for a claim the
    comparison cannot state. The kinds:

    * ``spread``: the policies of ``quantity`` (``"A, B, C"``) at the point
      ``at`` ({column: value}) are within ``tolerance`` of each other
      (max / min - 1); a value missing from the grid: the claim does not
      apply, or with ``at_else = "middle"`` the grid's middle value.
    * ``gap_grows``: the largest ``"A / B"`` over x is larger in the last
      panel (each a ``where`` facet, in order of growing skew) than in the first."""

    says: str
    quantity: str = ""
    comparison: str = ""
    than: float = 1.0
    tolerance: float = 0.0
    where: dict[str, dict[str, float]] = field(default_factory=dict)
    panel: str | None = None
    shown: str | None = None
    label: str | None = None
    point: str = "{x:g}: {value:.3f}"
    check: str | None = None
    only: str = ""
    sep: str = ", "
    empty: str = ""
    at: dict[str, float] = field(default_factory=dict)
    at_else: str = ""
    note: str = ""  # appended to a check function's detail (a remark of the paper's)
    #: a claim the paper draws from one sample path: it holds when the 95 % interval of the share of
    #: sample paths (replications) satisfying it lies above ``share`` (`common.share`), fails below
    share: float | None = None
    #: the policies the claim reads (its quantity's, and the ratio's baseline): ``--decide`` grows only
    #: their configurations of the sweeps the claim reads (empty: every policy, the whole sweeps)
    policies: list[str] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)  # more format fields of ``says`` (e.g. a panel's title)

    def verdict(self, outcome: str | bool, detail: str, **fields: Any) -> Check:
        """The `Check` of this claim: ``says`` formatted with ``tolerance``, the
        ``than``, the ``bound`` than x (1 + tolerance), and ``fields``.
        ``outcome``: one of `OUTCOMES`, read from intervals (`common.judge`).
        A bool -- what the means alone say -- is not a verdict: it gives
        *inconclusive*, the detail saying what the means suggest."""
        if isinstance(outcome, bool) or outcome not in OUTCOMES:
            said = "hold" if outcome else "not hold"
            detail = f"{detail} (means only, no interval behind this claim: they suggest it does {said})"
            outcome = INCONCLUSIVE
        return Check(
            self.says.format(
                **{
                    "tolerance": self.tolerance,
                    "than": self.than,
                    "bound": self.than * (1 + self.tolerance),
                    **self.fields,
                    **fields,
                }
            ),
            str(outcome),
            detail,
        )

    def compare(self, data: FigureData, x: str, y: str) -> Check | None:
        """The generic check: the comparison at every point of the panel's
        column ``x`` that ``where`` keeps, a policy's value the mean of ``y``
        there with its 95 % interval, and ``"A / B"`` the paired interval of
        the ratio of the two policies (`paired_ratios`, same replication or
        trace window) when ``y`` is the figure's metric or its ratio to a
        policy."""
        table = data.tables[self.panel] if self.panel else data.table
        points = sorted(
            v for v in set(table[x].to_list()) if all(OPS[op](v, bound) for op, bound in self.where.get(x, {}).items())
        )
        points = {"": points, "first": points[:1], "last": points[-1:]}[self.only]
        if self.only and not points:
            return None  # no point of the grid to compare at: the claim does not apply
        mean = lambda policy, at: estimate(row_at(table, policy, **{x: at}), y)  # noqa: E731
        return self.at_points(points, mean, self._paired(data, x, y), **({"lo": points[0]} if points else {}))

    def _paired(self, data: FigureData, x: str, y: str) -> Callable[[str, str, Any], Estimate] | None:
        """``ratio(A, B, at)``: the paired interval of A / B at a point of
        ``x``, from the results dir's rows; None when ``y`` is not the
        figure's metric or its ratio to a policy (a derived column)."""
        how = data.fig.get("table")
        if not isinstance(how, dict) or how.get("columns") or y not in ("ratio", how.get("metric")):
            return None
        # a claim of one panel names it (``panel``), or is checked on each panel in turn (``claims_per_panel``:
        # the panel's name is a format field): either way its pairs come from that panel's own sweep
        name = self.panel or self.fields.get("panel")
        panel: dict[str, Any] = (
            next((p for p in data.fig.get("panels", []) if p.get("name") == name), {}) if name else {}
        )
        results = (
            next((d for n, d in data.dirs.items() if n.startswith(panel["sweep"])), None)
            if panel.get("sweep")
            else next(iter(data.dirs.values()), None)
        )
        if results is None:
            return None
        conditions = {**(panel.get("where") or {})}
        cache: dict[tuple[str, str], Any] = {}

        def ratio(a: str, b: str, at: Any) -> Estimate:
            if (a, b) not in cache:
                from schedlab import load

                rows = load(results).collect()
                pair = ["replication"] + [c for c in WINDOW_COLUMNS if c in rows.columns and c not in how["keys"]]
                cache[(a, b)] = paired_ratios(rows, how["metric"], a, b, how["keys"], pair)
            return paired_estimate(cache[(a, b)], **{**conditions, x: at})

        return ratio

    def at_points(
        self,
        points: list[Any],
        term: Callable[[str, Any], Any],
        ratio: Callable[[str, str, Any], Estimate] | None = None,
        **fields: Any,
    ) -> Check:
        """The comparison at every point of ``points``, ``term(name, point)``
        the value of a name (a policy, or what a module names: a group's
        lowest, a period) at a point, an `Estimate` with its interval: each
        ``"A / B"`` (or ``"A"``: B = 1) of ``quantity``, A ``comparison`` B x
        ``than`` x (1 + ``tolerance``), judged on the intervals
        (`common.judge`: holds / fails / inconclusive); ``ratio(A, B,
        point)`` gives the paired interval of A / B when the rows are at
        hand (else the quotient of the two estimates). The detail formats
        ``point`` at each point with x, a and b (the first quantity's
        terms), r = a / b, value (``shown``'s value) and any term or ``"A /
        B"`` by name, then the interval of each quantity compared; the
        points joined by ``sep``, after ``label: `` (default ``shown``; ""
        for none), or ``empty`` when there is none. ``fields``: more format
        fields of ``says``."""

        def value(expr: str, at: Any) -> Any:
            """A name's value, or the quotient of two (as displayed: of their means)."""
            a, _, b = expr.partition(" / ")
            return term(a, at) / term(b, at) if b else term(a, at)

        def judged(expr: str, at: Any) -> Any:
            """What the verdict reads: the paired interval of a ratio when there is one, else `value`."""
            a, _, b = expr.partition(" / ")
            paired = ratio(a, b, at) if b and ratio is not None else None
            return paired if paired is not None and not math.isnan(paired) else value(expr, at)

        quantities = [q.partition(" / ")[::2] for q in self.quantity.split(", ")]
        shown = self.shown or self.quantity

        class Fields(dict):  # a point's format fields (the docstring's)
            def __missing__(self, key: str) -> Any:
                return value(shown if key == "value" else key, self["x"])

        bound = self.than * (1 + self.tolerance)

        def compared(lhs: str, rhs: str, at: Any) -> tuple[Any, str]:
            """(the value compared with the bound, its outcome)."""
            v = judged(f"{lhs} / {rhs}", at) if rhs else term(lhs, at)
            return v, judge(v, self.comparison, bound)

        def point(at: Any) -> str:
            lhs, rhs = quantities[0]
            a, b = term(lhs, at), term(rhs, at) if rhs else 1.0
            text = self.point.format_map(Fields(x=at, a=a, b=b, r=a / b if b else float("nan")))
            intervals = [
                f"{lhs}{' / ' + rhs if rhs else ''} {interval_text(compared(lhs, rhs, at)[0])}"
                for lhs, rhs in quantities
            ]
            return f"{text} ({'; '.join(intervals)})"

        outcome = every(compared(lhs, rhs, at)[1] for lhs, rhs in quantities for at in points)
        head = "" if self.label == "" else f"{self.label or shown}: "
        return self.verdict(outcome, head + self.sep.join(point(at) for at in points) or self.empty, **fields)


def spread(data: FigureData, claim: Claim) -> Check | None:
    """The ``spread`` claim kind (`Claim`)."""
    point = {}
    for col, v in claim.at.items():
        grid = xs(data.table, col)
        if v not in grid and claim.at_else != "middle":
            return None
        point[col] = v if v in grid else grid[len(grid) // 2]
    r = values(data.table, data.fig["plot"]["y"])
    vals = {p: r(p, **point) for p in claim.quantity.split(", ")}
    gap = spread_of(vals.values())
    detail = ", ".join(f"{p} {interval_text(v)}" for p, v in vals.items()) + f" (spread {gap:.1%}"
    detail += f", between {gap.low:.1%} and {gap.high:.1%})" if math.isfinite(gap.high) else ", no interval)"
    return claim.verdict(judge(gap, "<=", claim.tolerance), detail, **point)


def gap_grows(data: FigureData, claim: Claim) -> Check:
    """The ``gap_grows`` claim kind (`Claim`)."""
    a, b = claim.quantity.split(" / ")
    r, x = values(data.table, data.fig["plot"]["y"]), data.fig["plot"]["x"]
    facets = [next(iter(p["where"].items())) for p in data.fig["panels"]]
    gap = {f: emax(r(a, **{f[0]: f[1], x: s}) / r(b, **{f[0]: f[1], x: s}) for s in xs(data.table, x)) for f in facets}
    detail = ", ".join(f"{col} {v:g}: max {a}/{b} {interval_text(g, '.2f')}" for (col, v), g in gap.items())
    return claim.verdict(judge(gap[facets[-1]], ">", gap[facets[0]]), detail)


#: the claim kinds a claim row's ``check`` may name besides its module's functions
KINDS: dict[str, Callable[[FigureData, Claim], Check | None]] = {"spread": spread, "gap_grows": gap_grows}


def _substitute(value: Any, scale: str, env: dict[str, Any], place: str) -> Any:
    """``value`` with every ``"$var"`` replaced by the scale's value (``place``: where, for errors)
    and every ``"{data}/..."`` (``"{agent}/..."``) path put below its folder (`inputs.substitute`)."""
    if isinstance(value, dict):
        return {k: _substitute(v, scale, env, f"{place}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, scale, env, place) for v in value]
    if isinstance(value, str) and value.startswith("$"):
        if value[1:] not in env:
            raise UserError(f"{place}: {value} has no value at scale {scale!r}")
        return copy.deepcopy(env[value[1:]])
    if isinstance(value, str):
        return inputs.substitute(value)
    return value


def sweep_specs(doc: dict[str, Any], scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    """The pipeline's sweep spec dicts at ``scale``, ``overrides`` merged in."""
    env = dict(doc["scales"][scale])
    merge = env.pop("merge", {})
    out = []
    for i, sweep in enumerate(doc["sweeps"]):
        spec = _substitute(deep_merge(doc.get("every_sweep", {}), sweep), scale, env, f"{doc['name']}.sweeps[{i}]")
        spec["name"] = spec["name"].format(scale=scale)
        out.append(deep_merge(deep_merge(spec, merge), overrides))
    return out


def aggregate(how: dict[str, Any], results_dir: Path):
    """A table from ``how``: ratios to a policy per replication (`relative_to`)
    or means (`absolute`), then any derived ``columns`` (SQL expressions)."""
    import polars as pl

    if "ratio_to" in how:
        table = relative_to(results_dir, how["metric"], how["ratio_to"], how["keys"])
    else:
        table = absolute(results_dir, how["metric"], how["keys"])
    return table.with_columns([pl.sql_expr(c) for c in how.get("columns", [])])


class Declared:
    """A pipeline, read from its TOML file (and module, if any): its name, the
    paper and figure it reproduces, its sweep `specs` at a scale and its
    `report` (figures and report sections from the finished results dirs)."""

    def __init__(self, path: Path, module: Any = None):
        self.path = path
        self.module = module
        try:
            self.doc = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as err:
            raise UserError(f"{path}: {err}") from None
        missing = [k for k in ("name", "paper", "figure", "description") if not isinstance(self.doc.get(k), str)]
        if missing:
            raise UserError(f"{path}: {missing[0]!r} must be given, as a string")
        self.name: str = self.doc["name"]
        self.paper: str = self.doc["paper"]
        self.figure: str = self.doc["figure"]  # the paper's figures or tables it reproduces ("Figs. 7–8")
        self.description: str = self.doc["description"]
        known = {f.name for f in dataclasses.fields(Claim)} - {"fields"}
        for i, fig in enumerate(self.doc.get("figures", [])):
            for j, row in enumerate(fig.get("claims", [])):
                place = f"{path}: figures[{i}].claims[{j}]"
                if set(row) - known:
                    raise UserError(
                        f"{place}: unknown field {sorted(set(row) - known)[0]!r}; fields: {', '.join(sorted(known))}"
                    )
                if "check" not in row and row.get("comparison") not in OPS:
                    raise UserError(f"{place}: comparison must be one of {', '.join(OPS)} (or name a check function)")
                if row.get("only", "") not in ("", "first", "last"):
                    raise UserError(f'{place}: only must be "first" or "last"')
                if "policies" in row:
                    check_policies(row["policies"], f"{place}.policies", declared_policies(self.doc), fig)

    def fn(self, name: str) -> Callable:
        if (self.module is None or not hasattr(self.module, name)) and name in KINDS:
            return KINDS[name]
        if self.module is None or not hasattr(self.module, name):
            raise UserError(f"{self.path}: no function {name!r} in the pipeline's module")
        return getattr(self.module, name)

    def specs(self, scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
        """The sweep spec dicts at ``scale`` (names unique per scale), ``overrides`` merged in."""
        if self.module is not None and hasattr(self.module, "specs"):
            return self.module.specs(self.doc, scale, overrides)
        return sweep_specs(self.doc, scale, overrides)

    def data(self, fig: dict[str, Any], dirs: dict[str, Path]) -> FigureData:
        """The figure's tables: one for the figure, or one per panel with a ``sweep``."""
        how = fig.get("table")
        if isinstance(how, str):
            return FigureData(self.fn(how)(dirs), {}, dirs, fig)
        if not isinstance(how, dict):
            raise UserError(f"{self.path}: figure {fig.get('key', '')!r}: `table` must be a table or a function name")
        tables = {}
        for p in fig.get("panels", []):
            if "sweep" in p:
                d = next(d for n, d in dirs.items() if n.startswith(p["sweep"]))
                tables[p["name"]] = aggregate({**how, **p.get("table", {})}, d)
        table = None if tables else aggregate(how, next(iter(dirs.values())))
        return FigureData(table, tables, dirs, fig)

    def draw(self, fig: dict[str, Any], data: FigureData, png: Path) -> list[str]:
        """Draw a figure of the pipeline from its data; returns the series plotted."""
        if isinstance(fig["plot"], str):
            return self.fn(fig["plot"])(data, png)
        return line_figure(
            [(data.tables[p["name"]] if "sweep" in p else data.table, panel_table(data, p), p) for p in fig["panels"]],
            fig["plot"],
            png,
        )

    def figure_report(self, fig: dict[str, Any], dirs: dict[str, Path], out_dir: Path) -> FigureReport:
        data = self.data(fig, dirs)
        png = out_dir / fig["png"]
        plot = fig["plot"]
        series = self.draw(fig, data, png)
        if isinstance(fig.get("measured"), str):
            body = self.fn(fig["measured"])(data)
        elif "measured" in fig:
            body = md_sorted(data.table, **fig["measured"])
        else:
            body = "\n\n".join(
                f"{p['caption']}:\n\n"
                + md_table(
                    panel_table(data, p), p["x"] if "x" in p else plot["x"], plot["series"], plot["y"], p.get("x_label")
                )
                for p in fig["panels"]
            )
        intro = fig.get("measured_intro")
        checks = self.checks(fig, data)
        says = fig["paper_says"]
        if "paper_says_fields" in fig:  # a module function of the data: the setting the text names
            says = says.format(**self.fn(fig["paper_says_fields"])(data))
        return FigureReport(
            key=fig["key"],
            title=fig["title"],
            png=png,
            series=series,
            paper_says=says,
            measured=f"{intro}\n\n{body}" if intro else body,
            checks=checks,
        )

    def checks(self, fig: dict[str, Any], data: FigureData, **fields: Any) -> list[Check]:
        """The figure's claims table checked on its data (``fields``: more format fields of the claims);
        with ``claims_per_panel``, on each panel's own table in turn (``{panel}`` in ``says``: its name)."""
        if fig.get("claims_per_panel"):
            one = {**fig, "claims_per_panel": False}
            return [
                c
                for p in fig["panels"]
                for c in self.checks(one, FigureData(data.tables[p["name"]], {}, data.dirs, fig), panel=p["name"])
            ]
        out: list[Check] = []
        for row in fig.get("claims", []):
            claim = Claim(**row, fields=fields)
            panel: dict[str, Any] = (
                next((p for p in fig.get("panels", []) if p.get("name") == claim.panel), {}) if claim.panel else {}
            )
            with judgments() as judged:
                if claim.check:
                    found = self.fn(claim.check)(data, claim)
                else:
                    found = claim.compare(data, panel.get("x") or fig["plot"]["x"], fig["plot"]["y"])
            # the sweeps a claim reads (what --decide grows and counts): its panel's, else the figure's
            # ``reads`` (name prefixes), else every sweep of the pipeline
            reads = (panel["sweep"],) if panel.get("sweep") else tuple(fig.get("reads", ()))
            for c in [found] if isinstance(found, Check) else (found or []):
                c.reads = c.reads or reads
                c.policies = c.policies or tuple(claim.policies)
                if c.outcome == INCONCLUSIVE and c.straddle is None:
                    c.straddle = closest_call(judged)
                out.append(c)
        return out

    def report(self, dirs: dict[str, Path], out_dir: Path) -> list[FigureReport]:
        """The figure reports ({spec name: results dir} in; PNG and PDF written to ``out_dir``)."""
        if self.module is not None and hasattr(self.module, "report"):
            return self.module.report(self, dirs, out_dir)
        return [self.figure_report(fig, dirs, out_dir) for fig in self.doc["figures"]]


def declared_policies(doc: dict[str, Any]) -> list[str] | None:
    """The policy names a pipeline's sweeps declare (``[every_sweep]``, each sweep, and any
    ``"$var"`` of them at every scale), in order; None when its TOML names none (specs a
    module builds)."""

    def names(value: Any) -> list[str]:
        if isinstance(value, str) and value.startswith("$"):
            return [n for sc in doc.get("scales", {}).values() for n in names(sc.get(value[1:]))]
        if isinstance(value, list):
            return [p if isinstance(p, str) else p.get("name", "") for p in value if isinstance(p, str | dict)]
        return []

    found = names(doc.get("every_sweep", {}).get("policies"))
    for sweep in doc.get("sweeps", []):
        found += names(sweep.get("policies"))
    return list(dict.fromkeys(found)) or None


def check_policies(value: Any, place: str, known: list[str] | None, fig: dict[str, Any]) -> None:
    """A claim's ``policies``: a non-empty list of the sweeps' policy names, with the baseline
    of the figure's ratios (``table.ratio_to``) among them -- a ratio reads its baseline too."""
    if not isinstance(value, list) or not value or not all(isinstance(p, str) for p in value):
        raise UserError(f"{place}: must be a non-empty list of policy names")
    if known is not None:
        unknown = [p for p in value if p not in known]
        if unknown:
            raise UserError(f"{place}: {unknown[0]!r} is not a policy of the pipeline's sweeps ({', '.join(known)})")
    table = fig.get("table")
    baseline = table.get("ratio_to") if isinstance(table, dict) else None
    if baseline is not None and baseline not in value:
        raise UserError(f"{place}: the figure's ratios are to {baseline!r}, which the claim reads too: add it")


def closest_call(judged: list[tuple[Any, str, Any, str]]) -> Straddle | None:
    """The inconclusive comparison of a claim furthest from being decided (the
    largest predicted replications, `Straddle.predicted`), as an interval
    around a bound: ``a`` against a number is itself; two intervals are
    compared as their difference against 0. None when nothing was judged
    inconclusive (a claim that had no interval at all, `Claim.verdict`)."""
    calls = []
    for a, _op, b, outcome in judged:
        if outcome != INCONCLUSIVE:
            continue
        (alo, ahi), (blo, bhi) = bounds(a), bounds(b)
        if blo == bhi:
            calls.append(Straddle(float(a), alo, ahi, blo))
        else:
            calls.append(Straddle(float(a) - float(b), alo - bhi, ahi - blo, 0.0))
    calls = [c for c in calls if not any(math.isnan(v) for v in (c.value, c.low, c.high, c.bound))]
    return max(calls, key=lambda c: c.predicted(1), default=None)


def panel_table(data: FigureData, panel: dict[str, Any]):
    """A panel's rows: its own sweep's table, or the figure's table where ``where`` holds."""
    return where(data.tables[panel["name"]] if "sweep" in panel else data.table, panel.get("where", {}))
