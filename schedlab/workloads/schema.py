"""The canonical job table the queue engine consumes, and its validation.

Every workload, generated or read from a user's file, ends up as a polars
DataFrame with exactly `QUEUE_COLUMNS`, in that order, with `QUEUE_SCHEMA`
dtypes. The engine trusts this table blindly, so everything that could make a
simulation silently wrong (a NaN size, unsorted arrivals, a repeated id) is
rejected here, with a message that points at the offending row of the user's
file.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from schedlab.errors import UserError
from schedlab.workloads.queue_columns import OPTIONAL_COLUMNS, QUEUE_COLUMNS, REQUIRED_COLUMNS

QUEUE_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "submit": pl.Float64(),
    "size": pl.Float64(),
    "estimate": pl.Float64(),
    "weight": pl.Float64(),
}

# Value checks that every row must pass: (column, predicate for a bad value,
# what the value must be). NaN compares False, so NaN rows are not flagged
# here; they are reported by the non-finite check instead.
_POSITIVE = [
    ("size", lambda v: v <= 0, "> 0"),
    ("estimate", lambda v: v <= 0, "> 0"),
    ("weight", lambda v: v <= 0, "> 0"),
    ("submit", lambda v: v < 0, ">= 0"),
]


def validate_queue_table(df: pl.DataFrame, source: str, line_offset: int | None) -> pl.DataFrame:
    """Check a user's job table and return it in canonical form.

    `source` names the table in messages (usually the file path). Rows are
    located as `source:LINE` with LINE = row index + `line_offset` (pass 2 for
    a CSV file with a header, so the header is line 1), or, when
    `line_offset` is None (Parquet, in-memory frames), as `source: row N`
    with N counted from 1.

    Required columns are job_id, submit and size. `estimate` defaults to the
    size (a perfect oracle) and `weight` to 1.0; other columns are dropped.
    String columns (a CSV read without type inference) are parsed here so a
    bad cell can be reported by line. All row checks run vectorised; when
    several rows are wrong, the earliest one is reported; on a tie, the check
    that runs first wins (unparsable or missing cells, then NaN/inf, value
    ranges, submit order, duplicate ids).
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        names = ", ".join(repr(c) for c in missing)
        raise UserError(
            f"{source}: missing required column{'s' if len(missing) > 1 else ''} {names} "
            f"(required: {', '.join(REQUIRED_COLUMNS)}; optional: {', '.join(OPTIONAL_COLUMNS)})"
        )
    if df.height == 0:
        raise UserError(f"{source}: the table has no jobs")

    present = [c for c in QUEUE_COLUMNS if c in df.columns]
    problems = _Problems(source, line_offset)
    parsed: dict[str, pl.Series] = {}
    for name in present:
        parsed[name] = _parse_column(df[name], QUEUE_SCHEMA[name], source, problems)

    values = {name: parsed[name].cast(pl.Float64).to_numpy() for name in present}
    for name in present:
        if name == "job_id":  # Int64: cannot be NaN or inf
            continue
        col = values[name]
        problems.add(np.isnan(col) & ~parsed[name].is_null().to_numpy(), _said(f"{name} is NaN"))
        problems.add(np.isinf(col), _with_value(f"{name} is {{}}", col))
    for name, is_bad, rule in _POSITIVE:
        if name in values:
            col = values[name]
            problems.add(is_bad(col), _with_value(f"{name} must be {rule}, got {{!r}}", col))

    submit = values["submit"]
    decreasing = np.zeros(df.height, dtype=bool)
    decreasing[1:] = submit[1:] < submit[:-1]
    problems.add(
        decreasing,
        lambda i: (
            f"submit {float(submit[i])!r} is smaller than the previous row's {float(submit[i - 1])!r} "
            "(rows must be sorted by submit time)"
        ),
    )

    ids = parsed["job_id"]
    repeated = (~ids.is_first_distinct() & ids.is_not_null()).to_numpy()
    problems.add(repeated, lambda i: _duplicate_message(ids, i, problems))

    problems.raise_first()

    if "estimate" not in parsed:
        parsed["estimate"] = parsed["size"].alias("estimate")
    if "weight" not in parsed:
        parsed["weight"] = pl.Series("weight", np.ones(df.height), dtype=pl.Float64)
    return pl.DataFrame([parsed[c].alias(c) for c in QUEUE_COLUMNS], schema=QUEUE_SCHEMA)


def _said(message: str) -> Callable[[int], str]:
    """A problem's message that does not depend on the row."""
    return lambda i: message


def _with_value(template: str, col: np.ndarray) -> Callable[[int], str]:
    """A problem's message showing the row's value (``template`` has one ``{}``)."""
    return lambda i: template.format(float(col[i]))


class _Problems:
    """Collects the first bad row of each check and raises the earliest one.

    Messages are built lazily (only for the row actually reported), so a
    clean table costs one `flatnonzero` per check and no string formatting.
    """

    def __init__(self, source: str, line_offset: int | None):
        self.source = source
        self.line_offset = line_offset
        self._first: list[tuple[int, int, Callable[[int], str]]] = []

    def add(self, mask: np.ndarray, message: Callable[[int], str]) -> None:
        hits = np.flatnonzero(mask)
        if hits.size:
            self._first.append((int(hits[0]), len(self._first), message))

    def where(self, row: int) -> str:
        if self.line_offset is None:
            return f"{self.source}: row {row + 1}"
        return f"{self.source}:{row + self.line_offset}"

    def raise_first(self) -> None:
        if self._first:
            row, _, message = min(self._first, key=lambda p: (p[0], p[1]))
            raise UserError(f"{self.where(row)}: {message(row)}")


def _parse_column(raw: pl.Series, dtype: pl.DataType, source: str, problems: _Problems) -> pl.Series:
    """Convert one user column to `dtype`, recording unparsable cells.

    Unparsable cells become null in the result (and are reported as not a
    number); genuinely empty cells stay null and are reported as missing.
    """
    name = raw.name
    integer = dtype == pl.Int64
    if raw.dtype == pl.String:
        text = raw.str.strip_chars()
        converted = text.cast(dtype, strict=False)
        unparsable = (converted.is_null() & text.is_not_null()).to_numpy()
        kind = "an integer" if integer else "a number"
        problems.add(unparsable, lambda i: f"{name} is not {kind}: {raw[i]!r}")
    elif raw.dtype.is_numeric():
        if integer and raw.dtype.is_float():
            as_float = raw.cast(pl.Float64).to_numpy()
            present = raw.is_not_null().to_numpy()
            with np.errstate(invalid="ignore"):
                not_integral = present & ~(np.isfinite(as_float) & (as_float == np.floor(as_float)))
            problems.add(not_integral, lambda i: f"{name} is not an integer: {raw[i]!r}")
            converted = raw.cast(dtype, strict=False)
            overflow = present & ~not_integral & converted.is_null().to_numpy()
            problems.add(overflow, lambda i: f"{name} does not fit in a 64-bit integer: {raw[i]!r}")
        else:
            converted = raw.cast(dtype, strict=False)
            overflow = (converted.is_null() & raw.is_not_null()).to_numpy()
            problems.add(overflow, lambda i: f"{name} does not fit in a 64-bit integer: {raw[i]!r}")
    else:
        raise UserError(f"{source}: column '{name}' has type {raw.dtype}, expected numbers")

    nulls = raw.is_null().to_numpy()
    problems.add(nulls, lambda i: f"missing value in column '{name}'")
    return converted


def _duplicate_message(ids: pl.Series, row: int, problems: _Problems) -> str:
    job_id = ids[row]
    first = int(np.flatnonzero((ids == job_id).to_numpy())[0])
    return f"duplicate job_id {job_id} (first used at {problems.where(first)})"
