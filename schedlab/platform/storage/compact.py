"""Compaction of a results dir: many small part files -> few large ones.

A sweep commits a batch every couple of seconds per policy partition
(`runner.FLUSH_SECONDS`), so a long sweep leaves thousands of small Parquet
files, slow to list, open and scan. Compaction replaces each run of
consecutive batches of a partition by *one bigger batch of the same
structure*: a merged summary file and, if the batches had them, its merged
per-job and series twins, all under one new name. A merged batch is
therefore paired with its twins exactly as a committed batch is
(`store`'s module docstring), and the rows keep their order: the merged
file's name sorts where the batches it replaces sorted (``<base of the
last one>_c<random>.parquet``), and their rows are copied in that order.
``failures/`` part files are merged the same way (one table, no twins).

A batch with a file of `LARGE_FILE_BYTES` or more (in practice a task's
per-job rows) is left as it is: scanning it costs about what scanning it
merged would, and merging it would re-encode every one of its rows in the
driver (seconds per million per-job rows: 3.9 of a 1 M-row sweep's 12.8 s
with an 8 MiB limit); it closes the group before it.
A group of batches closes when adding the next batch would take one of its
tables past `MAX_FILE_BYTES` (on-disk size of the inputs), or when the next
batch's columns do not fit the group's (same name with another non-null
type): batches are only merged where a plain concatenation gives exactly the
rows the readers' diagonal concatenation gives, so `schedlab.load`, the
statistics and MLflow's values and rows digests do not change.

Protocol for one group (under the results dir's lock, one step at a time):

1. each merged table is streamed (`ROW_GROUP_ROWS` rows at a time, never a
   whole table in memory) into ``.tmp/``, fsynced, and its row count checked
   against the sum of the inputs';
2. the journal ``compacting.json`` is written atomically: ``new`` (the merged
   files' final paths, the summary last), ``commit`` (the merged summary file
   -- for failures the merged failures file) and ``old`` (the files replaced);
3. the merged per-job and series files are renamed into place (readers do not
   count them: no summary twin yet, and the journal hides them);
4. the merged summary file is renamed into place: the commit point. From here
   readers count the new files and the journal hides the old ones;
5. the old files are deleted, then the journal.

At every instant each committed key is therefore visible exactly once to
`ResultStore.files` (and so to `schedlab.load`, `done_keys`, resume and
MLflow tracking); a process killed anywhere leaves a state that the next
writer's open (`ResultStore.clean`, also run first by every compaction) rolls
forward (commit file present) or back (absent). Leftovers in ``.tmp/`` are
deleted by the same open; an empty ``.tmp/`` is removed at the end.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schedlab.errors import UserError
from schedlab.platform.storage.durable import fsync_dir
from schedlab.platform.storage.store import (
    COMPACTING,
    DAMAGED_ADVICE,
    FAILURES,
    JOBS,
    SERIES,
    SUMMARY,
    ResultStore,
    _reason,
    _unlink_quietly,
    part_schema,
)

#: A merged part file stops growing at about this size: a group of batches
#: closes before the on-disk size of one of its tables' inputs exceeds it.
MAX_FILE_BYTES = 128 * 1024 * 1024
#: A batch with a file of at least this size is never merged (see the module docstring):
#: about 18k per-job rows of the queue engine, a few simulations' worth; from about
#: this size a scan of the file costs reading its bytes more than opening it.
LARGE_FILE_BYTES = 1024 * 1024
#: Rows per row group of a merged file; also the most rows of one table held
#: in memory while merging (plus one input row group). It sets the merge's peak
#: memory, which is the driver's at the end of a large sweep: the rows are held
#: as the small input files' batches, and Arrow's allocator keeps about twice
#: their bytes resident. A summary of the queue engine (31 columns, 309 bytes a
#: row) merged from 2,220 files of 450 rows (10^6 rows): the compaction's peak
#: 152 MB above the process's at 128 Ki rows, 106 MB at 64 Ki, 76 MB at 32 Ki.
#: 64 Ki rows still make large row groups (a scan reads few of them).
ROW_GROUP_ROWS = 64 * 1024
#: The tables compacted, in the order their merged files are renamed into place
#: (per-job and series before their summary twin, as in a commit).
TABLES = (JOBS, SERIES, SUMMARY, FAILURES)
#: Suffix that marks a merged part file's name (after the base of the last batch it holds).
MERGED = "_c"


@dataclass
class CompactReport:
    """Part files per table before and after a compaction."""

    root: str
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    groups: int = 0  # merged files written (summary and failures files; twins not counted)

    @property
    def files_before(self) -> int:
        return sum(self.before.values())

    @property
    def files_after(self) -> int:
        return sum(self.after.values())

    def line(self) -> str:
        tables = ", ".join(
            f"{t} {self.before.get(t, 0)} -> {self.after.get(t, 0)}"
            for t in (SUMMARY, JOBS, SERIES, FAILURES)
            if self.before.get(t) or self.after.get(t)
        )
        what = f" ({tables})" if self.groups else " (nothing to merge)"
        return f"compacted {self.root}: {self.files_before} -> {self.files_after} part files{what}"


@dataclass
class _Batch:
    """One summary file with its twins (or one failures file): the unit that is merged."""

    name: str
    files: dict[str, Path]  # table -> path
    sizes: dict[str, int]
    schemas: dict[str, pa.Schema]


def count_files(store: ResultStore) -> dict[str, int]:
    """Committed part files per table (as readers count them)."""
    return {t: len(store.files(t)) for t in TABLES}


def compact(
    results_dir: str | Path, max_bytes: int = MAX_FILE_BYTES, large_bytes: int = LARGE_FILE_BYTES
) -> CompactReport:
    """Compact a results dir (`schedlab compact DIR`): takes its lock (a
    `LockedError` if a run holds it), then `compact_locked`."""
    store = ResultStore(results_dir)
    if not store.root.is_dir() or store.read_manifest() is None:
        raise UserError(f"{store.root}: not a schedlab results dir (no manifest.json)")
    store.lock("schedlab compact")
    try:
        return compact_locked(store, max_bytes, large_bytes)
    finally:
        store.unlock()


def compact_locked(
    store: ResultStore, max_bytes: int = MAX_FILE_BYTES, large_bytes: int = LARGE_FILE_BYTES
) -> CompactReport:
    """Merge the small part files of every partition of ``store`` (whose
    lock the caller holds); see the module docstring."""
    with store._writing(store.root):
        store.clean()  # a compaction step or a batch a dead process left half done
    report = CompactReport(str(store.root), before=count_files(store))
    try:
        partitions: dict[str, list[Path]] = defaultdict(list)
        for s in store.files(SUMMARY):
            if s.parent.parent == store.root / SUMMARY:  # summary/policy=<p>/part-*.parquet
                partitions[s.parent.name].append(s)
        for part, summaries in sorted(partitions.items()):
            batches = [
                _batch(store, s.name, {t: store.root / t / part / s.name for t in (JOBS, SERIES, SUMMARY)})
                for s in summaries
            ]
            for group in plan_groups(batches, max_bytes, large_bytes):
                _merge_group(store, group, part, SUMMARY)
                report.groups += 1
        failures = [
            _batch(store, f.name, {FAILURES: f}) for f in store.files(FAILURES) if f.parent == store.root / FAILURES
        ]
        for group in plan_groups(failures, max_bytes, large_bytes):
            _merge_group(store, group, None, FAILURES)
            report.groups += 1
    finally:
        store.tidy_tmp()
    report.after = count_files(store)
    return report


def _batch(store: ResultStore, name: str, candidates: dict[str, Path]) -> _Batch:
    """The batch of ``candidates`` that exist. Its schemas are the footers'
    as `part_schema` read them (once per file, one object per distinct
    schema): a compaction holds every batch of the dir at once, and a schema
    of its own per file grew with the sweep (10 KB each)."""
    files = {t: p for t, p in candidates.items() if p.exists()}
    sizes, schemas = {}, {}
    for table, path in files.items():
        schemas[table] = part_schema(path)  # a damaged footer: a UserError naming the file
        try:
            sizes[table] = path.stat().st_size
        except OSError as err:
            raise UserError(f"{path}: cannot read ({_reason(err)})") from None
    return _Batch(name, files, sizes, schemas)


def _fits(schemas: dict[str, pa.Schema], batch: _Batch) -> bool:
    """Whether ``batch``'s columns can join a group whose tables have
    ``schemas``: a column both have must have the same type, or be all-null
    (Arrow's null type) on one side."""
    for table, schema in batch.schemas.items():
        mine = schemas.get(table)
        if mine is None:
            continue
        for f in schema:
            i = mine.get_field_index(f.name)
            if i < 0:
                continue
            other = mine.field(i).type
            if other != f.type and not pa.types.is_null(other) and not pa.types.is_null(f.type):
                return False
    return True


def _union(a: pa.Schema | None, b: pa.Schema) -> pa.Schema:
    """Columns in order of first appearance, each with its first non-null
    type; nullable unless both sides have the same non-nullable field."""
    if a is None:
        return b
    if a.equals(b, check_metadata=False):
        return a
    fields = {f.name: f for f in a}
    for f in b:
        have = fields.get(f.name)
        if have is None or (pa.types.is_null(have.type) and not pa.types.is_null(f.type)):
            fields[f.name] = f
    mine, theirs = {f.name: f for f in a}, {f.name: f for f in b}
    same = {n for n in mine if n in theirs and mine[n].equals(theirs[n])}
    return pa.schema([f if f.name in same else f.with_nullable(True) for f in fields.values()], metadata=a.metadata)


def plan_groups(batches: list[_Batch], max_bytes: int, large_bytes: int = LARGE_FILE_BYTES) -> list[list[_Batch]]:
    """Runs of consecutive batches to merge (only runs of two or more): a run
    closes before a table's inputs would exceed ``max_bytes`` or a batch's
    columns do not fit (`_fits`), and before a batch with a file of
    ``large_bytes`` or more, which stays alone."""
    groups: list[list[_Batch]] = []
    current: list[_Batch] = []
    sizes: Counter[str] = Counter()
    schemas: dict[str, pa.Schema] = {}
    for b in batches:
        if any(size >= large_bytes for size in b.sizes.values()):
            groups.append(current)
            current, sizes, schemas = [], Counter(), {}
            continue
        if current and (any(sizes[t] + b.sizes[t] > max_bytes for t in b.sizes) or not _fits(schemas, b)):
            groups.append(current)
            current, sizes, schemas = [], Counter(), {}
        current.append(b)
        sizes.update(b.sizes)
        for table, schema in b.schemas.items():
            schemas[table] = _union(schemas.get(table), schema)
    if current:
        groups.append(current)
    return [g for g in groups if len(g) > 1]


def merged_name(last: str) -> str:
    """The name of a merged file whose last batch is ``last``: it sorts right
    after ``last`` and before any later batch (whose base differs within the
    fixed-width ``part-<ns>-<hex>`` base), and never collides."""
    base = last[: -len(".parquet")].split(MERGED, 1)[0]
    return f"{base}{MERGED}{uuid.uuid4().hex[:8]}.parquet"


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns in its order: missing ones all null,
    null-typed ones given the group's type (`_fits` allows nothing else)."""
    arrays = []
    for f in schema:
        i = batch.schema.get_field_index(f.name)
        if i < 0:
            arrays.append(pa.nulls(batch.num_rows, f.type))
        else:
            col = batch.column(i)
            arrays.append(col if col.type == f.type else col.cast(f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def merge_files(paths: Iterable[Path], schema: pa.Schema, out: Path) -> int:
    """Stream ``paths`` in order into one Parquet file ``out`` with ``schema``,
    in row groups of `ROW_GROUP_ROWS`; returns the rows written."""
    written = 0
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    with pq.ParquetWriter(out, schema) as writer:
        for path in paths:
            try:
                reader = pq.ParquetFile(path)
                batches = reader.iter_batches(batch_size=ROW_GROUP_ROWS, use_threads=False)
                for batch in batches:
                    pending.append(_conform(batch, schema))
                    pending_rows += batch.num_rows
                    if pending_rows >= ROW_GROUP_ROWS:
                        table = pa.Table.from_batches(pending, schema)
                        full = table.num_rows - table.num_rows % ROW_GROUP_ROWS
                        writer.write_table(table.slice(0, full), row_group_size=ROW_GROUP_ROWS)
                        written += full
                        rest = table.slice(full)
                        pending, pending_rows = rest.to_batches(), rest.num_rows
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as err:
                raise UserError(f"{path}: damaged Parquet part file ({_reason(err)}); {DAMAGED_ADVICE}") from None
        if pending_rows or not written:
            writer.write_table(pa.Table.from_batches(pending, schema), row_group_size=ROW_GROUP_ROWS)
            written += pending_rows
    return written


def _merge_group(store: ResultStore, group: list[_Batch], part: str | None, commit_table: str) -> None:
    """Steps 1-5 of the module docstring for one group."""
    name = merged_name(group[-1].name)
    tables = [t for t in TABLES if any(t in b.files for b in group)]
    final = {t: (store.root / t / part / name) if part is not None else (store.root / t / name) for t in tables}
    staged: dict[str, Path] = {}
    journal = False
    try:
        with store._writing(store.root):
            for table in tables:  # 1. merged files under .tmp/
                inputs = [b.files[table] for b in group if table in b.files]
                schema = None
                for b in group:
                    if table in b.schemas:
                        schema = _union(schema, b.schemas[table])
                tmp = staged[table] = store._tmp_path(final[table])
                rows = merge_files(inputs, schema, tmp)
                expected = sum(pq.read_metadata(p).num_rows for p in inputs)
                got = pq.read_metadata(tmp).num_rows
                if rows != expected or got != expected:
                    raise RuntimeError(f"compaction of {inputs[0].parent}: {got} rows written for {expected} read")
                with open(tmp, "rb") as fh:
                    os.fsync(fh.fileno())
            # 2. the journal: the merged commit file is the commit record
            old = [b.files[t] for t in tables if t != commit_table for b in group if t in b.files]
            old += [b.files[commit_table] for b in group]
            entry = {
                "commit": _rel(store, final[commit_table]),
                "new": [_rel(store, final[t]) for t in tables if t != commit_table]
                + [_rel(store, final[commit_table])],
                "old": [_rel(store, p) for p in old],
            }
            store._atomic_bytes(store.root / COMPACTING, json.dumps(entry, indent=1).encode())
            journal = True
            fsync_dir(store.root)
            for table in [t for t in tables if t != commit_table] + [commit_table]:  # 3. twins, 4. commit
                os.replace(staged.pop(table), final[table])
                fsync_dir(final[table].parent)
            for path in old:  # 5. the old files, then the journal
                path.unlink()
            for d in {p.parent for p in old}:
                fsync_dir(d)
            (store.root / COMPACTING).unlink()
            journal = False
            fsync_dir(store.root)
    except BaseException:
        for tmp in staged.values():
            _unlink_quietly(tmp)
        if journal:  # finish or roll back now rather than at the next open, if the disk lets us
            try:
                store.resolve_compaction()
            except (OSError, UserError):
                pass
        raise


def _rel(store: ResultStore, path: Path) -> str:
    return path.relative_to(store.root).as_posix()
