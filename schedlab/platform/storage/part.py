"""Parquet parts: rows encoded by the worker that computed them, written by the driver.

A sweep's driver is the only writer of a results dir (`store`), and at
cluster scale the Parquet *encoding* of millions of per-job rows a second is
more than one process can do. So a task encodes its own rows
(`schedlab.platform.execution.tasks.encode_result`): for each policy it ran,
one `Part` holding the Parquet bytes of its summary rows and, when there are
any, of its per-job and series rows, plus the row keys. The driver then only
writes those bytes and renames them into place (`store.publish`), each part
as its own batch (one new file name for the part's summary file and its
per-job and series twins), with the same order and the same commit-record
rule as `ResultStore.commit`: the per-job and series files land before the
summary file, which is the part's commit record. So every guarantee of the
store holds unchanged (one writer, a file size limit or a full disk hit the
driver, leftovers of a killed driver are deleted on open), and compaction
merges the many small batches at the end of the run.

The bytes travel as `pyarrow.Buffer` (pickled out of band by Ray: no copy
into the pickle stream). This module is the part itself and its encoding; it
imports nothing of the store, so the store and the workers both build on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


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
