"""Parquet parts: rows encoded by the worker that computed them, written by the driver.

A sweep's driver is the only writer of a results dir (`store`), and at
cluster scale the Parquet *encoding* of millions of per-job rows a second is
more than one process can do. So a task encodes its own rows: for each policy
it ran, one `Part` holding the Parquet bytes of its summary rows and, when
there are any, of its per-job and series rows, plus the row keys. The driver
then only writes those bytes and renames them into place, each part as its
own batch (one new file name for the part's summary file and its per-job and
series twins), with the same order and the same commit-record rule as
`ResultStore.commit`: the per-job and series files land before the summary
file, which is the part's commit record. So every guarantee of the store
holds unchanged (one writer, a file size limit or a full disk hit the driver,
leftovers of a killed driver are deleted on open), and compaction merges the
many small batches at the end of the run.

The bytes travel as `pyarrow.Buffer` (pickled out of band by Ray: no copy
into the pickle stream).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from schedlab.platform.storage.store import JOBS, SERIES, SUMMARY, ResultStore, _partition, _unlink_quietly

if TYPE_CHECKING:
    from schedlab.platform.execution.tasks import TaskResult

#: Files fsynced at once when a flush publishes its parts (the disk merges them).
FSYNC_THREADS = 8


@dataclass
class Part:
    """One policy's rows of one task: with per-job or series rows, all of
    them Parquet-encoded (``files``: table name -> bytes, a batch of its
    own); summary rows alone stay a small Arrow ``table``, which the driver
    merges with the other tasks' of the same policy into one file per commit
    (fewer, bigger files: no twin to pair it with)."""

    policy: str
    keys: list[tuple[str, int]]  # (config id, replication) of the summary rows, in order
    files: dict[str, Any]
    job_rows: int = 0
    table: pa.Table | None = None

    def nbytes(self) -> int:
        if self.table is not None:
            return int(self.table.nbytes)
        return sum(b.size if isinstance(b, pa.Buffer) else len(b) for b in self.files.values())


def encode(table: pa.Table) -> pa.Buffer:
    """``table`` as the bytes of a Parquet file (the store's writer settings)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue()


def decode(data: pa.Buffer | bytes) -> pa.Table:
    return pq.read_table(pa.BufferReader(data))


def encode_result(result: TaskResult) -> None:
    """Turn a `tasks.TaskResult`'s rows into one `Part` per policy (in place:
    its summary, jobs and series lists are emptied)."""
    from schedlab.platform.storage.store import _rows_table

    by_policy: dict[str, list[dict[str, Any]]] = {}
    for row in result.summary:
        row = dict(row)
        by_policy.setdefault(row.pop("policy"), []).append(row)
    extra: dict[tuple[str, str], list[pa.Table]] = {}
    for name, pairs in ((JOBS, result.jobs), (SERIES, result.series)):
        for policy, table in pairs:
            extra.setdefault((name, policy), []).append(table)
    for policy, rows in by_policy.items():
        keys = [(r["config_id"], r["replication"]) for r in rows]
        summary = _rows_table(rows)
        if not any(extra.get((name, policy)) for name in (JOBS, SERIES)):
            result.parts.append(Part(policy, keys, {}, 0, summary))
            continue
        files = {SUMMARY: encode(summary)}
        job_rows = 0
        for name in (JOBS, SERIES):
            tables = extra.get((name, policy))
            if tables:
                table = pa.concat_tables(tables)
                job_rows += table.num_rows
                files[name] = encode(table)
        result.parts.append(Part(policy, keys, files, job_rows))
    result.summary, result.jobs, result.series = [], [], []


def keep_only(part: Part, accepted: set[tuple[str, int]]) -> Part | None:
    """``part`` restricted to the rows whose key is in ``accepted`` (a retried
    task delivered twice: one row per key). The whole part, or None, when
    all or none of its keys are accepted (the usual cases: no decoding)."""
    keep = [k for k in part.keys if k in accepted]
    if len(keep) == len(part.keys):
        return part
    if not keep:
        return None
    import pyarrow.compute as pc

    wanted = pa.array([f"{c}\0{r}" for c, r in keep], pa.string())

    def only(table: pa.Table) -> pa.Table:
        label = pc.binary_join_element_wise(table["config_id"], pc.cast(table["replication"], pa.string()), "\0")
        return table.filter(pc.is_in(label, value_set=wanted))

    if part.table is not None:
        return Part(part.policy, keep, {}, 0, only(part.table))
    files, job_rows = {}, 0
    for name, data in part.files.items():
        table = only(decode(data))
        files[name] = encode(table)
        if name != SUMMARY:
            job_rows += table.num_rows
    return Part(part.policy, keep, files, job_rows)


def publish(store: ResultStore, parts: Sequence[Part]) -> None:
    """Write each part as its own batch: per-job and series files first, the
    summary file (the commit record) last; the files of a part whose summary
    did not land are removed again; summary-only parts of one policy are
    merged into one file. Every file's bytes are written to
    ``.tmp/`` and fsynced (concurrently: `FSYNC_THREADS`) before the first
    rename, as `ResultStore.commit` fsyncs before renaming; a write error is
    a `StoreWriteError` naming the results dir (parts already renamed into
    place stay: each is whole)."""
    rows = sum(len(p.keys) for p in parts)
    merged: dict[str, list[pa.Table]] = {}  # summary-only parts: one file per policy
    for p in parts:
        if p.table is not None:
            merged.setdefault(p.policy, []).append(p.table)
    parts = [p for p in parts if p.table is None] + [
        Part(policy, [], {SUMMARY: encode(pa.concat_tables(tables, promote_options="permissive"))})
        for policy, tables in merged.items()
    ]
    staged: list[tuple[str, list[tuple[Path, Path]]]] = []  # per part: [(tmp, final)], summary last
    published: list[Path] = []
    try:
        with store._writing(store.root, rows=rows):
            for part in parts:
                batch = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
                where = _partition(part.policy)
                moves: list[tuple[Path, Path]] = []
                staged.append((where, moves))  # before writing: a failed write's temp file is removed too
                for name in (JOBS, SERIES, SUMMARY):
                    data = part.files.get(name)
                    if data is not None:
                        final = store.root / name / where / batch
                        tmp = store._tmp_path(final)
                        moves.append((tmp, final))
                        with open(tmp, "wb") as fh:
                            fh.write(memoryview(data) if isinstance(data, pa.Buffer) else data)
            tmps = [tmp for _, moves in staged for tmp, _ in moves]
            with ThreadPoolExecutor(min(FSYNC_THREADS, max(1, len(tmps)))) as pool:
                list(pool.map(_fsync, tmps))
            dirs: set[Path] = set()
            for _, moves in staged:
                for tmp, final in moves:
                    if final.parent not in dirs and not final.parent.is_dir():
                        final.parent.mkdir(parents=True, exist_ok=True)
                    dirs.add(final.parent)
                    os.replace(tmp, final)
                    published.append(final)
                published.clear()  # the part's summary file landed: committed
    except BaseException:
        for path in published:
            _unlink_quietly(path)
        for _, moves in staged:
            for tmp, _ in moves:
                _unlink_quietly(tmp)
        raise


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
