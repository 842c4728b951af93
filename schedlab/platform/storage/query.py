"""The stored rows of one results dir, as `schedlab plot`, `schedlab results`
and `schedlab view` select them: `stored_rows` (the dir, its manifest, its
summary rows; a missing dir, a dir without a manifest or without rows is
one line saying so) and `filter_where` (``--where col=value``), whose
filters `where_pushdown` hands to the scan so that a big results dir (ten
million rows) is read only where ``--where`` keeps rows.

Below both the figures (``schedlab.plotting``) and the views
(``schedlab.views``), which read rows the same way; read through the
results-store seam (`schedlab.platform.storage.seam`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.errors import UserError

if TYPE_CHECKING:
    import polars as pl

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


def where_pushdown(schema: pl.Schema, where: dict[str, Any]) -> list[pl.Expr]:
    """The filters of ``where`` a scan can apply before reading (`filter_where`
    then runs on the rows they keep, and says what is wrong when none is
    kept): those of existing columns whose value has the column's kind."""
    out = []
    for col, value in where.items():
        if col not in schema.names():
            continue
        numeric = schema[col].is_numeric()
        if numeric:
            try:
                float(value)
            except (TypeError, ValueError):
                continue
        out.append(where_expr(col, value, numeric))
    return out


def filter_where(frame: pl.DataFrame, where: dict[str, Any], root: str | Path) -> pl.DataFrame:
    """The rows of ``frame`` where every ``col = value`` of ``where`` holds
    (``--where``): a numeric column equal within `WHERE_REL_TOL` relative, any other
    as text. A column that is not there, or a value no row has, is a
    `UserError` naming it and the values the column takes. The selector of
    ``schedlab plot`` and ``schedlab view``."""
    columns = frame.columns
    for col, value in where.items():
        if col not in columns:
            raise UserError(f"--where: {col!r} is not a column of {root}")
        numeric = frame.schema[col].is_numeric()
        if numeric:
            try:
                float(value)
            except (TypeError, ValueError):
                raise UserError(f"--where {col}={value}: {col} is numeric, {value!r} is not a number") from None
        kept = frame.filter(where_expr(col, value, numeric))
        if kept.height == 0:
            values = ", ".join(map(str, sorted(frame[col].unique().drop_nulls().to_list())))
            raise UserError(f"--where {col}={value}: no rows; {col} takes {values}")
        frame = kept
    return frame


def stored_rows(
    results_dir: str | Path, where: dict[str, Any] | None = None
) -> tuple[Path, dict[str, Any], pl.DataFrame]:
    """A results dir, its manifest and its summary rows (what `plot` and
    `schedlab view` read); a `UserError` naming the dir when it is missing, is
    not a results dir or holds no row yet. ``where``: only the rows its
    filters keep are read (`where_pushdown`; all of them when it keeps none,
    for `filter_where` to say why)."""
    from schedlab.platform.storage.seam import open_store

    root = Path(results_dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such results directory")
    store = open_store(root)
    manifest = store.read_manifest()
    if manifest is None:
        raise UserError(f"{root}: not a schedlab results dir (no manifest.json)")
    lf = store.scan()
    pushed = where_pushdown(lf.collect_schema(), where or {})
    frame = lf.filter(*pushed).collect() if pushed else lf.collect()
    if frame.height == 0 and pushed:
        frame = lf.collect()
    if frame.height == 0:
        raise UserError(f"{root}: no result rows yet")
    return root, manifest, frame


__all__ = ["WHERE_REL_TOL", "filter_where", "stored_rows", "where_expr", "where_pushdown"]
