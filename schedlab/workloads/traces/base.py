"""What every trace reader shares: the `Trace` it returns, line-error policy,
gzip reading that refuses truncated files, and the Parquet cache.

Canonical job-table columns (polars), used as each engine needs; a reader
fills what its format has and leaves the rest out:

=================  =======  ==================================================
job_id             Int64    unique, as in the trace when it has ids
submit             Float64  seconds (the trace's own origin; see transforms)
size               Float64  work for the queue engine (bytes, seconds, ...)
runtime            Float64  actual run time in seconds (HPC, Google)
requested_time     Float64  user's run-time estimate in seconds (SWF field 9)
procs              Int64    processors (SWF) / tasks
cpu, mem           Float64  resource requests, normalised (Google)
user               Int64    user id where known
=================  =======  ==================================================

Rows are sorted by submit time (stable: ties keep file order).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.errors import UserError

ON_BAD_LINE = ("error", "skip")


@dataclass
class Trace:
    """A parsed trace: the job table, metadata (header fields, source, reader
    options) and counts of what cleaning and skipping changed."""

    jobs: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


class BadLines:
    """Applies ``on_bad_line``: "error" raises one UserError naming file:line,
    "skip" counts the line (reported in ``Trace.counts['skipped_bad_lines']``)."""

    def __init__(self, path: str | Path, on_bad_line: str) -> None:
        if on_bad_line not in ON_BAD_LINE:
            raise UserError(f"on_bad_line: must be one of {', '.join(ON_BAD_LINE)}; got {on_bad_line!r}")
        self.path = str(path)
        self.skip = on_bad_line == "skip"
        self.skipped = 0
        self.first_skipped: str | None = None

    def __call__(self, lineno: int, message: str) -> None:
        where = f"{self.path}:{lineno}: {message}"
        if not self.skip:
            raise UserError(where)
        self.skipped += 1
        if self.first_skipped is None:
            self.first_skipped = where

    def report(self, problems: dict[int, str]) -> None:
        """Apply the policy to every {line: message}, in line order (so in
        "error" mode the first bad line of the file is the one named)."""
        for lineno in sorted(problems):
            self(lineno, problems[lineno])

    def nothing_valid(self, what: str) -> UserError:
        """The error for a file with no valid ``what`` lines (e.g. "job")."""
        if self.skipped:
            return UserError(
                f"{self.path}: no valid {what} lines; {self.skipped} bad lines skipped, the first: {self.first_skipped}"
            )
        return UserError(f"{self.path}: no {what} lines (empty file)")


def open_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, line without newline) for a plain or gzip text file.

    A truncated or corrupt gzip stream is a UserError naming the file (never a
    silently short trace); undecodable bytes are replaced, so a reader reports
    them as a malformed line."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a trace file")
    lineno = 0
    gz = False
    try:
        gz = _is_gzip(path)
        opener = gzip.open if gz else open
        # newline="\n": only LF ends a line, so line numbers agree with wc -l / sed -n
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="\n") as fh:
            for lineno, line in enumerate(fh, start=1):
                yield lineno, line.rstrip("\r\n")
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise UserError(f"{path}: corrupt or truncated gzip after line {lineno}: {err}") from None
    except OSError as err:
        what = "gzip stream" if gz else "file"
        raise UserError(f"{path}: cannot read the {what} after line {lineno}: {err.strerror or err}") from None


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def file_digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def cache_dir() -> Path:
    """``$SCHEDLAB_CACHE_DIR``, else ``~/.cache/schedlab/traces``."""
    env = os.environ.get("SCHEDLAB_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "schedlab" / "traces"


def cached(
    reader: str,
    version: int,
    paths: list[Path],
    options: dict[str, Any],
    parse: Callable[[], Trace],
    use_cache: bool = True,
) -> Trace:
    """Parse once, then read Parquet: keyed by (file content hash, reader,
    reader version, options). The cache is written atomically; a damaged cache
    entry is ignored and rebuilt."""
    if not use_cache:
        return parse()
    for p in paths:
        if not Path(p).exists():
            raise UserError(f"{p}: no such file")
        if Path(p).is_dir():
            raise UserError(f"{p}: is a directory, not a trace file")
    try:
        content = file_digest([Path(p) for p in paths])
    except OSError as err:
        raise UserError(f"{paths[0]}: cannot read: {err.strerror or err}") from None
    key_src = json.dumps(
        {"reader": reader, "version": version, "options": options, "content": content}, sort_keys=True, default=str
    )
    key = hashlib.sha256(key_src.encode()).hexdigest()[:24]
    root = cache_dir()
    table, meta_file = root / f"{reader}-{key}.parquet", root / f"{reader}-{key}.json"
    if table.exists() and meta_file.exists():
        try:
            info = json.loads(meta_file.read_text())
            # the key is the content, not the path: name the file asked for
            meta = {**info["meta"], "source": str(paths[0])}
            return Trace(pl.read_parquet(table), meta, info["counts"])
        except Exception:  # noqa: BLE001 - a damaged cache entry is rebuilt, never trusted
            pass
    trace = parse()
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        trace.jobs.write_parquet(tmp)
        os.replace(tmp, table)
        tmp.write_text(json.dumps({"meta": trace.meta, "counts": trace.counts}, default=str))
        os.replace(tmp, meta_file)
    except OSError:
        pass  # an unwritable cache only costs speed
    return trace


def merge_options(reader: str, defaults: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """The reader's defaults updated with ``options``; an unknown name is a
    UserError listing the allowed ones. Value checks stay with each reader."""
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise UserError(f"{unknown[0]}: unknown option for the {reader} reader; choose from: {', '.join(defaults)}")
    return {**defaults, **options}


def check_file(path: Path) -> None:
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a trace file")


def short(token: str) -> str:
    """A token as quoted in an error message (long ones cut)."""
    return repr(token if len(token) <= 40 else token[:40] + "...")


def read_file_trace(
    reader: str,
    version: int,
    path: str | Path,
    on_bad_line: str,
    use_cache: bool,
    opts: dict[str, Any],
    parse: Callable[[Path, str, dict[str, Any], dict[str, Any]], Trace],
) -> Trace:
    """The common ``read`` of a one-file reader: validate on_bad_line and the
    path before any cache lookup, then parse (or hit the cache), naming the
    file asked for in the metadata."""
    p = Path(path)
    BadLines(p, on_bad_line)  # validates on_bad_line
    check_file(p)
    all_opts = {"on_bad_line": on_bad_line, **opts}
    trace = cached(reader, version, [p], all_opts, lambda: parse(p, on_bad_line, opts, all_opts), use_cache)
    trace.meta["source"] = str(p)  # a cache hit may come from a copy elsewhere
    return trace


def min_bytes_options(reader: str, options: dict[str, Any]) -> dict[str, Any]:
    """Options of the web-proxy readers (squid, bu98): ``min_bytes`` (default
    1) drops responses smaller than that many bytes -- a zero-size request is
    no job for the queue engine."""
    out = merge_options(reader, {"min_bytes": 1}, options)
    value = out["min_bytes"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UserError(f"min_bytes: must be an integer >= 0 (bytes); got {value!r}")
    return out
