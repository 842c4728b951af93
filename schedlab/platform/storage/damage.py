"""Damaged part files: damage from outside (a truncated or garbage Parquet
file) becomes a `UserError` naming the file and what to do, never a polars
traceback. Footers are checked once per file version (`part_schema`); data
pages that do not decode are traced to their file after the fact
(`collect_checked`, `explain_read_error`). `_reason` turns any OS or Arrow
error into the short text these messages (and the store's) end with."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from schedlab.errors import UserError

#: What to do about a damaged part file (the end of its error message).
DAMAGED_ADVICE = (
    "move it out of the results dir (the next `schedlab run` then recomputes the rows it held) "
    "or restore it from a backup"
)


_CHECKED: dict[tuple[str, int, int], pa.Schema] = {}  # (path, size, mtime_ns) of files whose footer was read
#: The distinct schemas of `_CHECKED`, by their serialized bytes: the files of a results dir share
#: a handful of schemas, and one Arrow schema of a summary's 30-odd columns holds about 15 KB (all
#: told), so a schema per file made the cache grow with the sweep (2,220 files: 34 MB).
_SCHEMAS: dict[bytes, pa.Schema] = {}
#: `_CHECKED` is emptied when it reaches this many files (and `_SCHEMAS` with it): a bound, not a size
#: any results dir reaches (an entry is now a key and a shared schema, about 0.3 KB).
CHECKED_FILES = 100_000


def check_part_file(path: Path) -> None:
    """Raise a `UserError` naming ``path`` unless its Parquet footer reads."""
    part_schema(path)


def part_schema(path: Path) -> pa.Schema:
    """The Arrow schema in ``path``'s footer (read once per file version; files
    with equal schemas share one object, `_SCHEMAS`); a `UserError` naming
    ``path`` if the footer does not read."""
    try:
        st = path.stat()
    except OSError as err:
        raise UserError(f"{path}: cannot read ({_reason(err)})") from None
    key = (str(path), st.st_size, st.st_mtime_ns)
    schema = _CHECKED.get(key)
    if schema is not None:
        return schema
    try:
        schema = pq.read_metadata(path).schema.to_arrow_schema()
    except Exception as err:  # ArrowInvalid (truncated, garbage), OSError
        raise UserError(f"{path}: damaged Parquet part file ({_reason(err)}); {DAMAGED_ADVICE}") from None
    if len(_CHECKED) > CHECKED_FILES:
        _CHECKED.clear()
        _SCHEMAS.clear()
    schema = _SCHEMAS.setdefault(schema.serialize().to_pybytes(), schema)  # equal schemas: one object
    _CHECKED[key] = schema
    return schema


def collect_checked(lf: pl.LazyFrame, files: list[Path], columns: list[str] | None = None) -> pl.DataFrame:
    """``lf.collect()``; if polars cannot decode a file whose footer was fine
    (damaged data pages), a `UserError` naming that file."""
    try:
        return lf.collect()
    except (pl.exceptions.PolarsError, OSError) as err:
        raise explain_read_error(files, err, columns) from None


def explain_read_error(files: list[Path], err: BaseException, columns: list[str] | None = None) -> UserError:
    """The `UserError` for a failed read of ``files``: names the first file
    that does not decode (reading each in full), else the error itself."""
    for f in files:
        try:
            names = pq.read_schema(f).names
            pq.read_table(f, columns=None if columns is None else [c for c in columns if c in names])
        except Exception as bad:  # noqa: BLE001
            return UserError(f"{f}: damaged Parquet part file ({_reason(bad)}); {DAMAGED_ADVICE}")
    where = files[0].parent.parent if files else "the results dir"
    return UserError(f"cannot read the rows of {where}: {_reason(err)}")


def _reason(err: BaseException) -> str:
    code = re.search(r"\[errno (\d+)\]", str(err))  # pyarrow's OSError: "... Detail: [errno 27] File too large"
    if code:
        return os.strerror(int(code.group(1)))
    if isinstance(err, OSError) and err.strerror:
        return f"{err.strerror}" + (f": {err.filename}" if err.filename else "")
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:300]
