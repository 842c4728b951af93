"""SWIM Facebook Hadoop workloads (FB-2009, FB-2010 ``.tsv`` / ``.tsv.gz``).

Format (see ``shared/data/swim-facebook/PROVENANCE.md``): tab-separated, no
header, one job per line, sorted by submit time::

    1 job name (job0, job1, ...)   2 submit time (s)   3 gap to previous submit (s)
    4 map input bytes              5 shuffle bytes     6 reduce output bytes
    7-9 ``withInputPaths`` files only: input path, then two empty fields

A file has either 6 or 9 fields on every line (the first line decides).

Output columns: ``job_id`` (Int64: N from ``jobN`` or a plain integer name;
file order 0, 1, ... if some name is neither or ids repeat, see
``meta['job_id_from']``), ``name`` (the original job name), ``submit``
(Float64, seconds), ``size`` (Float64), ``input_bytes``, ``shuffle_bytes``,
``output_bytes`` (Int64) and, for ``withInputPaths`` files, ``input_path``.

Job size (option ``size``):

* ``"bytes"`` (default) -- input + shuffle + output bytes: the PSBS paper's
  definition (Dell'Amico et al., sec. 6.8, "the number of bytes handled by
  each job (summing input, intermediate output and final output)"). On
  FB-2010_samples_24_times_1hr_0 this gives 24,442 jobs, mean 76.10e9 B and
  max 85.21e12 B, the paper's "76.1 GiB / 85.2 TiB" read as decimal units.
* ``"weighted"`` -- input + output + (1 + r) x shuffle with
  ``r = disk_network_ratio`` (default 4): the formula of the same authors'
  earlier simulator (github:bigfootproject/schedsim, ``swim_parser.py``,
  ``m + (1 + d_over_n) * s + r`` with d/n = aggregate disk speed over network
  speed, default 4). Input and output are read/written once on local disks;
  each shuffle byte is written to disk by the mapper *and* crosses the network
  to a reducer, which is r times slower than disk, so it costs 1 + r disk-byte
  equivalents. As r -> 0 (infinitely fast network) the size tends to the
  plain sum. r must be > 0.

Option ``min_size`` (default 0): jobs whose size is below it are dropped
(``min_size=1`` drops the zero-byte jobs -- 127 in FB-2010 -- which the queue
engine rejects). ``counts``: ``lines``, ``jobs``, ``skipped_bad_lines``,
``zero_size`` (zero-size jobs read, kept or not) and ``dropped_min_size``.
"""

from __future__ import annotations

import math
import re
from array import array
from pathlib import Path
from typing import Any

import polars as pl

from schedlab.errors import UserError
from schedlab.workloads.traces.base import ON_BAD_LINE, BadLines, Trace, cached, open_lines

NAME = "swim"
VERSION = 1

SIZES = ("bytes", "weighted")
DEFAULT_DISK_NETWORK_RATIO = 4.0
_OPTIONS = ("size", "disk_network_ratio", "min_size")
_FIELDS_PLAIN = 6
_FIELDS_WITH_PATHS = 9
_JOB_NAME = re.compile(r"(?:job)?([0-9]+)\Z")


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserError(f"{where}: must be a finite number; got {value!r}")
    return float(value)


def _check_options(on_bad_line: str, options: dict[str, Any]) -> dict[str, Any]:
    if on_bad_line not in ON_BAD_LINE:
        raise UserError(f"on_bad_line: must be one of {', '.join(ON_BAD_LINE)}; got {on_bad_line!r}")
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise UserError(f"{unknown[0]}: unknown option of the {NAME} reader; known: {', '.join(_OPTIONS)}")
    size = options.get("size", "bytes")
    if size not in SIZES:
        raise UserError(f"size: must be one of {', '.join(SIZES)}; got {size!r}")
    ratio = options.get("disk_network_ratio")
    if ratio is not None:
        if size != "weighted":
            raise UserError('disk_network_ratio: only used with size="weighted"')
        ratio = _number(ratio, "disk_network_ratio")
        if ratio <= 0:
            raise UserError(f"disk_network_ratio: must be > 0; got {ratio:g}")
    elif size == "weighted":
        ratio = DEFAULT_DISK_NETWORK_RATIO
    min_size = _number(options.get("min_size", 0), "min_size")
    if min_size < 0:
        raise UserError(f"min_size: must be >= 0; got {min_size:g}")
    return {"size": size, "disk_network_ratio": ratio, "min_size": min_size, "on_bad_line": on_bad_line}


def read(path: str | Path, *, on_bad_line: str = "error", use_cache: bool = True, **options: Any) -> Trace:
    """Read one SWIM ``.tsv``/``.tsv.gz`` file (see the module docstring)."""
    opts = _check_options(on_bad_line, options)
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a SWIM .tsv file")

    def parse() -> Trace:
        return _parse(path, opts)

    trace = cached(NAME, VERSION, [path], opts, parse, use_cache)
    trace.meta["source"] = str(path)  # the cache is keyed by content: it may hold another path
    return trace


def _parse(path: Path, opts: dict[str, Any]) -> Trace:
    bad = BadLines(path, opts["on_bad_line"])
    names: list[str] = []
    paths: list[str] = []
    submit = array("d")
    inp, shuf, out = array("q"), array("q"), array("q")
    nfields = 0
    lines = 0
    for lineno, line in open_lines(path):
        lines = lineno
        fields = line.split("\t")
        if not nfields and len(fields) in (_FIELDS_PLAIN, _FIELDS_WITH_PATHS):
            nfields = len(fields)  # the first well-formed line fixes the variant
        if len(fields) != (nfields or _FIELDS_PLAIN):
            expected = nfields or f"{_FIELDS_PLAIN} or {_FIELDS_WITH_PATHS}"
            bad(lineno, f"expected {expected} tab-separated fields, got {len(fields)}")
            continue
        name = fields[0]
        if not name:
            bad(lineno, "field 1 (job name): empty")
            continue
        try:
            t = float(fields[1])
        except ValueError:
            bad(lineno, f"field 2 (submit time): not a number: {fields[1]!r}")
            continue
        if not (t >= 0 and math.isfinite(t)):
            bad(lineno, f"field 2 (submit time): must be a finite number >= 0; got {fields[1]!r}")
            continue
        try:
            float(fields[2])
        except ValueError:
            bad(lineno, f"field 3 (inter-submit gap): not a number: {fields[2]!r}")
            continue
        amounts = []
        for col, label in ((3, "input bytes"), (4, "shuffle bytes"), (5, "output bytes")):
            text = fields[col].strip()
            if not text.isdecimal() or not text.isascii():
                bad(lineno, f"field {col + 1} ({label}): must be a non-negative integer; got {fields[col]!r}")
                break
            value = int(text)
            if value >= 1 << 62:  # three of them must still sum within Int64
                bad(lineno, f"field {col + 1} ({label}): too large: {text}")
                break
            amounts.append(value)
        if len(amounts) != 3:
            continue
        names.append(name)
        submit.append(t)
        inp.append(amounts[0])
        shuf.append(amounts[1])
        out.append(amounts[2])
        if nfields == _FIELDS_WITH_PATHS:
            paths.append(fields[6])
    if lines == 0:
        raise UserError(f"{path}: empty file (no jobs)")
    if not names:
        raise UserError(f"{path}: no valid job lines ({bad.skipped} bad lines skipped; first: {bad.first_skipped})")

    job_id, id_from = _job_ids(names)
    columns: dict[str, Any] = {
        "job_id": pl.Series("job_id", job_id, dtype=pl.Int64),
        "name": pl.Series("name", names, dtype=pl.Utf8),
        "submit": pl.Series("submit", submit, dtype=pl.Float64),
        "input_bytes": pl.Series("input_bytes", inp, dtype=pl.Int64),
        "shuffle_bytes": pl.Series("shuffle_bytes", shuf, dtype=pl.Int64),
        "output_bytes": pl.Series("output_bytes", out, dtype=pl.Int64),
    }
    if nfields == _FIELDS_WITH_PATHS:
        columns["input_path"] = pl.Series("input_path", paths, dtype=pl.Utf8)
    df = pl.DataFrame(columns)
    byte_sum = pl.col("input_bytes").cast(pl.Float64) + pl.col("output_bytes").cast(pl.Float64)
    if opts["size"] == "bytes":
        size = byte_sum + pl.col("shuffle_bytes").cast(pl.Float64)
    else:
        size = byte_sum + (1.0 + opts["disk_network_ratio"]) * pl.col("shuffle_bytes").cast(pl.Float64)
    df = df.with_columns(size.alias("size")).select(
        "job_id", "submit", "size", *[c for c in df.columns if c not in ("job_id", "submit")]
    )
    zero = int((df["size"] == 0).sum())
    read_jobs = df.height
    if opts["min_size"] > 0:
        df = df.filter(pl.col("size") >= opts["min_size"])
    if df.height == 0:
        raise UserError(f"{path}: no jobs left: all {read_jobs} have size < min_size={opts['min_size']:g}")
    df = df.sort("submit", maintain_order=True)

    counts = {
        "lines": lines,
        "jobs": df.height,
        "skipped_bad_lines": bad.skipped,
        "zero_size": zero,
        "dropped_min_size": read_jobs - df.height,
    }
    meta = {
        "reader": NAME,
        "source": str(path),
        "options": opts,
        "fields_per_line": nfields,
        "job_id_from": id_from,
        "size_formula": ("input + shuffle + output" if opts["size"] == "bytes"
                         else f"input + output + (1 + {opts['disk_network_ratio']:g}) * shuffle"),
        "size_unit": "bytes",
        "first_skipped_bad_line": bad.first_skipped,
    }
    return Trace(df, meta, counts)


def _job_ids(names: list[str]) -> tuple[list[int], str]:
    """N from every ``jobN`` (or plain N) name when all names have one and they
    are unique; otherwise the file order 0, 1, ..."""
    ids = []
    for name in names:
        m = _JOB_NAME.match(name)
        if m is None or len(m.group(1)) > 18:  # must fit Int64
            return list(range(len(names))), "file_order"
        ids.append(int(m.group(1)))
    if len(set(ids)) != len(ids):
        return list(range(len(names))), "file_order"
    return ids, "name"
