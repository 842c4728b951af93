"""The stored rows of one results dir, as `schedlab plot`, `schedlab results`
and `schedlab view` select them: `stored_rows` (the dir, its manifest, its
summary rows; a missing dir, a dir without a manifest or without rows is
one line saying so) and `filter_where` (``--where col=value``), whose
filters `where_pushdown` hands to the scan so that a big results dir (ten
million rows) is read only where ``--where`` keeps rows. `where_lazy` is
`filter_where` on a scan: the same rows and the same errors, the rows never
materialised (what `results`, `compare` and ``schedlab.load(where=...)``
read through); `row_count` counts a scan's rows, `distinct_counts` the
values of its columns.

Below both the figures (``schedlab.plotting``) and the views
(``schedlab.views``), which read rows the same way; read through the
results-store seam (`schedlab.platform.storage.seam`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from schedlab.errors import UserError

if TYPE_CHECKING:
    import polars as pl

    from schedlab.engines import Engine

#: ``--where col=value`` on a numeric column: equal within this much, relative (absolute below 1).
WHERE_REL_TOL = 1e-9


def where_expr(col: str, value: Any, numeric: bool) -> pl.Expr:
    """The row filter of one ``--where col=value`` (`filter_where`); a
    numeric column's ``value`` must be a number."""
    import polars as pl

    if numeric:
        v = float(value)
        return (pl.col(col).cast(pl.Float64) - v).abs() <= WHERE_REL_TOL * max(1.0, abs(v))
    return pl.col(col).cast(pl.String) == str(value)


def where_filter(
    schema: pl.Schema, col: str, value: Any, root: str | Path, option: str = "--where", list_columns: bool = False
) -> pl.Expr:
    """The filter of one ``col=value`` of ``option`` on rows of ``schema``
    (`where_expr`): a column that is not there, or a numeric column's value
    that is not a number, is a `UserError` naming it (with the columns listed
    when ``list_columns``: for ``schedlab.load(where=...)``, whose caller has
    not seen them). Every ``where`` reader checks its filters here."""
    names = schema.names()
    if col not in names:
        hint = f"; columns: {', '.join(names)}" if list_columns else ""
        raise UserError(f"{option}: {col!r} is not a column of {root}{hint}")
    numeric = schema[col].is_numeric()
    if numeric:
        try:
            float(value)
        except (TypeError, ValueError):
            raise UserError(f"{option} {col}={value}: {col} is numeric, {value!r} is not a number") from None
    return where_expr(col, value, numeric)


def where_pushdown(schema: pl.Schema, where: dict[str, Any]) -> list[pl.Expr]:
    """The filters of ``where`` a scan can apply before reading (`filter_where`
    then runs on the rows they keep, and says what is wrong when none is
    kept): those of existing columns whose value has the column's kind."""
    out = []
    for col, value in where.items():
        try:
            out.append(where_filter(schema, col, value, ""))
        except UserError:
            continue
    return out


def filter_where(frame: pl.DataFrame, where: dict[str, Any], root: str | Path) -> pl.DataFrame:
    """The rows of ``frame`` where every ``col = value`` of ``where`` holds
    (``--where``): a numeric column equal within `WHERE_REL_TOL` relative, any other
    as text. A column that is not there, or a value no row has, is a
    `UserError` naming it and the values the column takes. The selector of
    ``schedlab plot`` and ``schedlab view``."""
    for col, value in where.items():
        kept = frame.filter(where_filter(frame.schema, col, value, root))
        if kept.height == 0:
            values = ", ".join(map(str, sorted(frame[col].unique().drop_nulls().to_list())))
            raise UserError(f"--where {col}={value}: no rows; {col} takes {values}")
        frame = kept
    return frame


def where_exprs(schema: pl.Schema, where: dict[str, Any], root: str | Path) -> list[pl.Expr]:
    """The filters of ``where`` (`where_expr`, as ``--where`` reads them) for
    rows of ``schema``, checked against it alone: a column that is not there
    or a numeric column's value that is not a number is a `UserError` naming
    it. What ``schedlab.load(where=...)`` applies in its scan (no row is read
    to check that a value is taken)."""
    return [where_filter(schema, col, value, root, "where", list_columns=True) for col, value in where.items()]


def headline_metric(root: str | Path, manifest: dict[str, Any], lf: pl.LazyFrame) -> str:
    """The metric `results` and `compare` report when ``--metric`` is not
    given: the first headline metric (``Engine.headline``, as MLflow's parent
    run shows them) of the engine the rows name in their ``engine`` column --
    a built-in, or your own engine, loaded from the copy of its code the
    results dir keeps (``code/<sha256>/``). Rows of engines whose headline
    metrics differ, an engine that declares none or one whose declaration
    cannot be found are a `UserError` asking for ``--metric``."""
    import polars as pl

    from schedlab.engines import known_engines

    if "engine" in lf.collect_schema().names():
        engines = lf.select(pl.col("engine").unique().drop_nulls()).collect(engine=COUNT_ENGINE)
        names = sorted(engines.to_series().to_list())
    else:
        names = [str(manifest.get("engine") or "")]
    heads: dict[str, str] = {}
    for name in names:
        engine = known_engines().get(name) or stored_engine(Path(root), manifest, name)
        if engine is None:
            raise UserError(
                f"--metric: the rows are of engine {name!r}, whose declaration is not in {root}/code/; "
                f"name the metric with --metric"
            )
        if not engine.headline:
            raise UserError(f"--metric: engine {name!r} declares no headline metric; name the metric with --metric")
        heads[name] = engine.headline[0]
    if len(set(heads.values())) > 1:
        mixed = ", ".join(f"{name} ({metric})" for name, metric in heads.items())
        raise UserError(
            f"--metric: {root} holds rows of engines with different headline metrics: {mixed}; "
            f"name the metric with --metric"
        )
    if not heads:
        raise UserError(f"--metric: the rows of {root} name no engine; name the metric with --metric")
    return next(iter(heads.values()))


def stored_engine(root: Path, manifest: dict[str, Any], name: str) -> Engine | None:
    """Your own engine ``name``, declared by the code the results dir keeps
    under ``code/<sha256>/`` (the manifest's ``user_code.engine``), loaded;
    None when the rows' engine is not the manifest's or the copy is absent."""
    from schedlab.engines import spec_engine
    from schedlab.platform.storage.store import CODE

    info = (manifest.get("user_code") or {}).get("engine")
    if not info or manifest.get("engine") != name:
        return None
    folder = root.resolve() / CODE / str(info.get("sha256"))
    module, files = str(info.get("module", "")), set(info.get("files") or [])
    base = module.replace(".", "/")
    rel = next((f for f in (f"{base}.py", f"{base}/__init__.py") if f in files and (folder / f).is_file()), None)
    if rel is None:
        return None
    engine, _ = spec_engine(f"{folder / rel}:{info.get('attr')}", folder, f"{root}/manifest.json: engine")
    return engine if engine.name == name else None


def row_count(lf: pl.LazyFrame) -> int:
    """How many rows ``lf`` has (a scan reads only what its filters need)."""
    import polars as pl

    return int(lf.select(pl.len()).collect(engine=COUNT_ENGINE).item())


def where_lazy(lf: pl.LazyFrame, where: dict[str, Any], root: str | Path) -> pl.LazyFrame:
    """`filter_where` on a scan: the rows of ``lf`` where every ``col =
    value`` of ``where`` holds, as a LazyFrame, with `filter_where`'s errors
    in its order (a column that is not there, a numeric column's value that
    is not a number, a value no row has: checked one ``--where`` after the
    other). Costs one count of the filtered rows; only when that is zero or a
    ``--where`` is bad does it count step by step to say which."""
    if not where:
        return lf
    schema = lf.collect_schema()
    try:
        exprs = [where_filter(schema, col, value, root) for col, value in where.items()]
    except UserError:
        exprs = []  # a bad --where: the loop below raises its error, in filter_where's order
    if exprs:
        kept = lf.filter(*exprs)
        if row_count(kept) > 0:
            return kept
    for col, value in where.items():  # something is wrong: find the first --where that says what, as filter_where does
        kept = lf.filter(where_filter(schema, col, value, root))
        if row_count(kept) == 0:
            taken = lf.select(pl_unique(col)).collect(engine=COUNT_ENGINE).to_series()
            values = ", ".join(map(str, sorted(taken.to_list())))
            raise UserError(f"--where {col}={value}: no rows; {col} takes {values}")
        lf = kept
    return lf


#: The polars engine of the reads whose answer is a count or a set of values (exact whichever engine
#: runs them): streaming, so a scan of 10^7 rows is read in batches, never held whole.
COUNT_ENGINE: Final = "streaming"


def distinct_counts(frame: pl.DataFrame | pl.LazyFrame, columns: list[str]) -> dict[str, int]:
    """How many distinct values (null one of them) each of ``columns`` takes
    among ``frame``'s rows: one pass over those columns of a scan."""
    return counts_of(frame, columns)[1]


def counts_of(frame: pl.DataFrame | pl.LazyFrame, columns: list[str]) -> tuple[int, dict[str, int]]:
    """How many rows ``frame`` has, and `distinct_counts` of ``columns``: one pass."""
    import polars as pl

    row = frame.lazy().select([pl.len(), *(pl.col(c).n_unique() for c in columns)]).collect(engine=COUNT_ENGINE).row(0)
    return int(row[0]), dict(zip(columns, (int(n) for n in row[1:])))


def varying_of(frame: pl.DataFrame | pl.LazyFrame, columns: list[str]) -> tuple[int, dict[str, bool]]:
    """How many rows ``frame`` has and, per column of ``columns``, whether it
    takes more than one value (null one of them, NaN one): ``counts_of(...)[1][c]
    > 1``, read from each column's min, max, null and NaN counts in one
    streaming pass that holds no set of values (`counts_of`'s distinct counts
    of ten parameter columns held 1 GB on 10^7 rows). A column whose values
    have no order (a list, a struct) is counted (`counts_of`)."""
    import polars as pl

    lf = frame.lazy()
    schema = lf.collect_schema()
    ordered = [c for c in columns if _ordered(schema[c])]
    exprs: list[pl.Expr] = [pl.len().alias("_rows")]
    for i, c in enumerate(ordered):
        col = pl.col(c)
        nan = col.is_nan().sum() if schema[c].is_float() else pl.lit(0, pl.UInt32)
        exprs += [col.min().alias(f"_min{i}"), col.max().alias(f"_max{i}")]
        exprs += [col.null_count().alias(f"_null{i}"), nan.alias(f"_nan{i}")]
    row = lf.select(exprs).collect(engine=COUNT_ENGINE).row(0, named=True)
    rows = int(row["_rows"])
    out: dict[str, bool] = {}
    for i, c in enumerate(ordered):
        nulls, nans = int(row[f"_null{i}"]), int(row[f"_nan{i}"])
        others = rows - nulls - nans > 0  # values neither null nor NaN: what min and max look at
        kinds = (nulls > 0) + (nans > 0) + others
        out[c] = kinds > 1 or (others and row[f"_min{i}"] != row[f"_max{i}"])
    rest = [c for c in columns if c not in out]
    if rest:
        out |= {c: n > 1 for c, n in counts_of(lf, rest)[1].items()}
    return rows, {c: out[c] for c in columns}


#: Values of an integer column told apart per `repeats` group: each a bit of an Int64 sum (< 2^63 below 2^32 rows).
REPEAT_BITS = 32


def repeats(lf: pl.LazyFrame, by: list[str], column: str) -> tuple[pl.DataFrame, bool]:
    """The groups of ``by`` among ``lf``'s rows (one row each) and whether one
    of them holds a value of the integer ``column`` (a replication) twice:
    ``len > n_unique`` of some group, without the sets of values a distinct
    count holds (0.6 GB for 10^5 groups of 100 replications). The rows are
    grouped by ``by`` and ``value // REPEAT_BITS`` and 2^(value % REPEAT_BITS)
    summed: a sum of powers of two has as many one bits as terms exactly when
    no two are equal (no carry). Nulls or negative values: counted as distinct
    values instead."""
    import polars as pl

    col = pl.col(column)
    chunk = (col // REPEAT_BITS).alias("_chunk")
    bit = pl.lit(2, pl.Int64).pow(col % REPEAT_BITS)
    parts = (
        lf.group_by([*by, chunk])
        .agg(
            col.count().alias("_n"), bit.sum().alias("_bits"), col.null_count().alias("_null"), col.min().alias("_min")
        )
        .collect(engine=COUNT_ENGINE)
    )
    groups = parts.select(by).unique()
    lowest = parts["_min"].min()
    if parts.height and (parts["_null"].sum() > 0 or (lowest is not None and lowest < 0)):  # type: ignore[operator]
        counted = lf.group_by(by).agg(pl.len(), col.n_unique().alias("_distinct")).collect(engine=COUNT_ENGINE)
        return groups, bool((counted["len"] > counted["_distinct"]).any())
    return groups, bool((parts["_bits"].bitwise_count_ones().cast(pl.Int64) != parts["_n"].cast(pl.Int64)).any())


def _ordered(dtype: pl.DataType) -> bool:
    """Whether min and max tell the values of ``dtype`` apart (numbers, text, booleans, dates and times)."""
    import polars as pl

    return dtype.is_numeric() or dtype.is_temporal() or dtype in (pl.String, pl.Boolean)


def pl_unique(col: str) -> pl.Expr:
    """The distinct non-null values of ``col`` (in no particular order)."""
    import polars as pl

    return pl.col(col).unique().drop_nulls()


def stored_scan(results_dir: str | Path) -> tuple[Path, dict[str, Any], pl.LazyFrame]:
    """A results dir, its manifest and a scan of its summary rows; a
    `UserError` naming the dir when it is missing or is not a results dir."""
    from schedlab.platform.storage.seam import open_store

    root = Path(results_dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such results directory")
    store = open_store(root)
    manifest = store.read_manifest(lean=True)  # its configurations are not read here: not parsed (issue #42)
    if manifest is None:
        raise UserError(f"{root}: not a schedlab results dir (no manifest.json)")
    return root, manifest, store.scan()


def stored_rows(
    results_dir: str | Path, where: dict[str, Any] | None = None
) -> tuple[Path, dict[str, Any], pl.DataFrame]:
    """A results dir, its manifest and its summary rows (what `plot` and
    `schedlab view` read); a `UserError` naming the dir when it is missing, is
    not a results dir or holds no row yet. ``where``: only the rows its
    filters keep are read (`scan_rows`)."""
    root, manifest, lf = stored_scan(results_dir)
    return root, manifest, scan_rows(root, lf, where)


def scan_rows(
    root: str | Path, lf: pl.LazyFrame, where: dict[str, Any] | None = None, columns: list[str] | None = None
) -> pl.DataFrame:
    """The rows of the scan ``lf`` of ``root``: with ``where``, only those its
    filters keep are read (`where_pushdown`; all of them when it keeps none,
    for `filter_where` to say why); with ``columns``, only these columns
    (those the scan has, in its order, the ``where`` columns with them). No
    row at all is a `UserError` naming the dir."""
    if columns is not None:
        wanted = set(columns) | set(where or {})
        lf = lf.select([c for c in lf.collect_schema().names() if c in wanted])
    pushed = where_pushdown(lf.collect_schema(), where or {})
    frame = lf.filter(*pushed).collect() if pushed else lf.collect()
    if frame.height == 0 and pushed:
        frame = lf.collect()
    if frame.height == 0:
        raise UserError(f"{root}: no result rows yet")
    return frame


__all__ = [
    "COUNT_ENGINE",
    "WHERE_REL_TOL",
    "counts_of",
    "distinct_counts",
    "filter_where",
    "headline_metric",
    "pl_unique",
    "row_count",
    "scan_rows",
    "stored_rows",
    "stored_scan",
    "where_expr",
    "where_filter",
    "where_exprs",
    "where_lazy",
    "where_pushdown",
    "varying_of",
    "repeats",
    "REPEAT_BITS",
]
