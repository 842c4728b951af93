"""Reading and writing job tables as CSV or Parquet files.

A CSV is read with every column as a string, so that type inference can
never guess a column's type from its first rows and then fail (or silently
turn a column into text) further down; parsing happens in
`validate_queue_table`, which can then name the exact line of a bad cell.
Line numbers assume one record per physical line (no quoted newlines), which
holds for any table of numbers.
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path
from typing import BinaryIO, cast

import polars as pl

from schedlab.errors import UserError
from schedlab.workloads.schema import QUEUE_COLUMNS, validate_queue_table

CSV_SUFFIXES = (".csv", ".csv.gz")
PARQUET_SUFFIXES = (".parquet",)
ALLOWED_SUFFIXES = CSV_SUFFIXES + PARQUET_SUFFIXES

# With a header on line 1, data row 0 is on line 2.
_CSV_LINE_OFFSET = 2


def check_path(path: object, spec_dir: str | Path | None = None) -> None:
    """A workload's input (a ``file`` table, a ``trace`` file or folder)
    must exist. A relative path is read from the current directory (where
    schedlab runs; the repository's specs say ``../shared/data/...`` from the
    repository root), not from the spec's folder -- the path is part of the
    configuration id, so its meaning cannot change -- and the message says
    the absolute path it tried, what it was resolved against, and whether the
    path exists relative to the spec's folder instead. Non-strings are left
    to the kind's own check."""
    if not isinstance(path, str):
        return
    if not path.strip():
        raise UserError(f"path: must name a file or folder; got {path!r}")
    given = Path(path).expanduser()
    if given.exists():
        return
    if given.is_absolute():
        raise UserError(f"path: no such file or folder: {given}")
    cwd = Path.cwd()
    msg = (
        f"path: no such file or folder: {path!r} resolved against the current directory {cwd} "
        f"is {(cwd / given).resolve()}"
    )
    if spec_dir is not None:
        beside = (Path(spec_dir) / given).resolve()
        if beside.exists() and beside != (cwd / given).resolve():
            msg += (
                f"; relative to the spec's folder it would be {beside}, which exists (workload paths are "
                f"relative to the current directory: run schedlab from the folder the path starts from, or "
                f"give an absolute path)"
            )
    raise UserError(msg)


def read_job_table(path: str | Path) -> pl.DataFrame:
    """Read a job table from `.csv`, `.csv.gz` or `.parquet` and validate it.

    Returns the canonical table (see `schema.QUEUE_COLUMNS`). Every problem
    with the file raises `UserError` naming the file, and the line (CSV) or
    row (Parquet) when one is to blame.
    """
    path = Path(path)
    kind = _kind(path)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if not path.is_file():
        raise UserError(f"{path}: not a file")
    if kind == "csv":
        return validate_queue_table(_read_csv_as_text(path), str(path), _CSV_LINE_OFFSET)
    return validate_queue_table(_read_parquet(path), str(path), None)


def write_job_table(df: pl.DataFrame, path: str | Path) -> None:
    """Write `df` to `.csv`, `.csv.gz` or `.parquet`, chosen by the suffix.

    Floats are written in shortest round-trip form, so reading the file back
    gives bit-identical values. Extra columns (e.g. `weight_class` of a
    generated workload) are written too; `read_job_table` ignores them.
    """
    path = Path(path)
    kind = _kind(path)
    try:
        if kind == "parquet":
            df.write_parquet(path)
        elif path.name.lower().endswith(".gz"):
            with gzip.open(path, "wb") as f:
                df.write_csv(cast(BinaryIO, f))  # a GzipFile is a binary file object
        else:
            df.write_csv(path)
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    raise UserError(f"{path}: unsupported file type (expected one of: {', '.join(ALLOWED_SUFFIXES)})")


def _read_csv_as_text(path: Path) -> pl.DataFrame:
    try:
        df = pl.read_csv(path, infer_schema=False)
    except pl.exceptions.NoDataError:
        raise UserError(f"{path}: the file is empty (expected a header line)") from None
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise UserError(_explain_csv_failure(path, exc)) from None
    for name in QUEUE_COLUMNS:
        if any(c.startswith(f"{name}_duplicated_") for c in df.columns):
            raise UserError(f"{path}:1: column '{name}' appears more than once in the header")
    return df


def _read_parquet(path: Path) -> pl.DataFrame:
    try:
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise UserError(f"{path}: not a readable Parquet file ({_first_line(exc)})") from None


def _explain_csv_failure(path: Path, exc: Exception) -> str:
    """Find the line polars choked on; polars' own messages carry no line number.

    Runs only after a failed read, so a plain scan of the file is fine here.
    The two failures polars reports for a table of numbers are invalid UTF-8
    and a row with more fields than the header.
    """
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            width = None
            for lineno, raw in enumerate(f, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    return f"{path}:{lineno}: not valid UTF-8 text"
                fields = next(csv.reader(io.StringIO(text)), [])
                if width is None:
                    width = len(fields)
                elif len(fields) > width:
                    return f"{path}:{lineno}: {len(fields)} fields, but the header has {width}"
    except (OSError, EOFError, gzip.BadGzipFile) as scan_exc:
        return f"{path}: cannot read the file ({_first_line(scan_exc)})"
    return f"{path}: not a readable CSV file ({_first_line(exc)})"


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
