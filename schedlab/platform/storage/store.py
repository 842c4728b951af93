"""Parquet results: the source of truth of a sweep, written only by the driver.

Layout of a results dir::

    manifest.json                          spec, spec hash, schedlab version, creation time, configs
    plan_ids.bin                           the plan's ids, kept for a resume (`planning.ids_file`)
    summary/policy=<p>/part-<batch>.parquet one row per (config id, replication)
    jobs/policy=<p>/part-<batch>.parquet    optional per-job rows
    series/policy=<p>/part-<batch>.parquet  sampled time series (engines that sample one)
    failures/part-<batch>.parquet           simulations that raised (config, replication, error)
    code/<sha256>/                          the source of the user code the rows came from
    superseded/<n>/                         rows of user code edited since (`ResultStore.supersede`),
                                            laid out as a results dir of their own

Partitions are hive-style (``policy=FSPE%2BPS`` is URI-quoted; polars and
pyarrow decode it), so ``pl.scan_parquet(..., hive_partitioning=True)`` gives
the policy back as a column.

Crash safety: every file is written under ``.tmp/`` and renamed into place
(atomic on one filesystem), and within a batch the per-job and series files of
a partition are renamed *before* its summary file. A summary file is therefore the commit
record of its partition's batch: on open, per-job files without their summary
twin are leftovers of a crash and are deleted, and the keys they held are
recomputed. Hence exactly one row per key whatever was killed when. Readers
(`scan`) never see such leftovers either: a per-job or series file counts only
when its summary twin exists.

One writer: the driver holds ``flock`` on ``.lock`` in the results dir for its
whole life (`ResultStore.lock`); a second driver on the same dir stops at once
with a `UserError`. The kernel releases the lock when the holder dies, SIGKILL
included, so there is never a stale lock to remove by hand.

Damage from outside (a truncated or garbage part file, a disk that filled up
while writing) is a `UserError` naming the file or the directory and what to
do -- never a polars traceback, and never rows dropped or recomputed silently.
A failed write rolls back what its batch had already published, so a batch is
all there or not there. The checks of part files are in `schedlab.platform.storage.damage`;
the comparison of an old manifest with a new one in `schedlab.platform.storage.manifest`
(both re-exported here).

Compaction (`schedlab.platform.storage.compact`) merges runs of consecutive batches of
a partition into one bigger batch with the same structure (a merged summary
file and its merged per-job and series twins, all of one new name), so the
twin rule above still holds. The swap of a group of old files for the merged
ones is journalled in ``compacting.json`` (``{"commit", "new", "old"}``,
paths relative to the results dir), and the merged *summary* file is its
commit record, as for a batch: while the journal exists, readers ignore the
``old`` files if the ``commit`` file exists and the ``new`` ones otherwise,
so every committed key is seen exactly once at every instant; on open, the
writer rolls a journalled compaction forward (commit present: the old files
are deleted) or back (absent: the new files are deleted), then deletes the
journal.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import os
import shutil
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from schedlab.errors import UserError
from schedlab.platform.planning import ids_file
from schedlab.platform.planning.ids_file import IDS_FILE, KeptIds
from schedlab.platform.storage.damage import _CHECKED as _CHECKED
from schedlab.platform.storage.damage import DAMAGED_ADVICE as DAMAGED_ADVICE
from schedlab.platform.storage.damage import _reason as _reason
from schedlab.platform.storage.damage import check_part_file as check_part_file
from schedlab.platform.storage.damage import collect_checked as collect_checked
from schedlab.platform.storage.damage import explain_read_error as explain_read_error
from schedlab.platform.storage.damage import part_schema as part_schema
from schedlab.platform.storage.durable import fsync_dir as _fsync_dir
from schedlab.platform.storage.keyset import KeySet
from schedlab.platform.storage.manifest import (
    CODE_DIGESTS,
    EVERY_ROW_CODE,
    SUPERSEDED,
    CodeChange,
    code_changes,
    manifest_text,
    read_lean,
    rerun_note,
    stale_digests,
    superseded_configs,
    superseded_entry,
)
from schedlab.platform.storage.manifest import GROWABLE as GROWABLE
from schedlab.platform.storage.manifest import _changed_code as _changed_code
from schedlab.platform.storage.manifest import _changed_inputs as _changed_inputs
from schedlab.platform.storage.manifest import _short as _short
from schedlab.platform.storage.manifest import fingerprint as fingerprint
from schedlab.platform.storage.manifest import grown_manifest as grown_manifest
from schedlab.platform.storage.manifest import spec_changes as spec_changes
from schedlab.platform.storage.part import Part, encode

if TYPE_CHECKING:
    from schedlab.usercode import CodeRef

SUMMARY, JOBS, SERIES, FAILURES = "summary", "jobs", "series", "failures"

#: Files fsynced at once when a flush publishes its parts (the disk merges them).
FSYNC_THREADS = 8

MANIFEST = "manifest.json"
#: Source of the user code that produced the rows: code/<sha256>/<relative path>.
CODE = "code"


LOCK = ".lock"
#: The journal of the compaction step under way (see the module docstring).
COMPACTING = "compacting.json"
#: How many times `ResultStore.files` lists a table again when a file it listed
#: vanished meanwhile (a compaction deleted it while this process was reading).
VANISHED_RETRIES = 5


class StoreWriteError(UserError):
    """Writing to the results dir failed (disk full, file size limit, not a
    directory, read-only, ...): nothing of the batch is visible."""


class LockedError(UserError):
    """Another live process holds the results dir's lock."""


def _same_head(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether two manifests say the same but for their configurations (an
    empty ``history`` is the same as none: the first write has none)."""

    def head(m: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in m.items() if k != "configs" and not (k == "history" and not v)}

    return head(new) == head(old)


def _partition(policy: str) -> str:
    return f"policy={quote(policy, safe='')}"


class ResultStore:
    #: The lock file's descriptor while `lock` holds it (set by `lock`, cleared by `unlock`).
    _lock_fd: int | None

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    # ---- manifest -------------------------------------------------------------------
    def read_manifest(self, lean: bool = False) -> dict[str, Any] | None:
        """The manifest; ``lean``: its ``configs`` read lazily (`manifest.read_lean`:
        16 bytes a configuration, what a resume of millions needs), where its layout allows."""
        path = self.root / MANIFEST
        if not path.exists():
            return None
        try:
            manifest: dict[str, Any] | None = read_lean(path) if lean else None
            if manifest is None:
                manifest = json.loads(path.read_text())
            assert manifest is not None  # json.loads of a manifest is a dict
            return manifest
        except (OSError, ValueError) as err:
            raise UserError(
                f"{path}: cannot read the manifest ({_reason(err)}); restore it from a backup, "
                f"or run with --fresh to discard the results dir"
            ) from None

    # ---- one writer -----------------------------------------------------------------
    def lock(self, what: str = "schedlab run", required: bool = True) -> None:
        """Take the results dir's lock for this object's life (until `unlock`
        or process death). Raises `LockedError` at once if a live process holds
        it. ``required=False`` (readers such as `schedlab track`): a dir where
        no lock file can be created (read-only) is used without one."""
        if getattr(self, "_lock_fd", None) is not None:
            return
        path = self.root / LOCK
        try:
            if required:
                self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            if not required:
                try:  # an existing lock file can still be locked read-only
                    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    return
            else:
                raise StoreWriteError(f"{path}: cannot create the lock file ({_reason(err)})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = ""
            try:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            except OSError:
                pass
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockedError(
                    f"{self.root}: in use by another process ({holder or 'unknown'}); only one `schedlab run` "
                    f"may write a results dir at a time: wait for it to end, or stop it"
                ) from None
            raise StoreWriteError(f"{path}: cannot lock ({_reason(err)})") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{what} pid {os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the holder's name is only for the message
        self._lock_fd = fd

    def unlock(self) -> None:
        fd = getattr(self, "_lock_fd", None)
        if fd is not None:
            self._lock_fd = None
            os.close(fd)  # closing the last descriptor releases the flock

    def prepare(
        self,
        manifest: dict[str, Any],
        fresh: bool,
        announce: Callable[[str], None] | None = None,
        ids_key: str | None = None,
    ) -> str | None:
        """Create or reopen the results dir for ``manifest``'s spec.

        Reopening with the same spec (a resume): the manifest is written
        again, grown by what the old one describes (`grown_manifest`) --
        unless it would be written identically: ``ids_key`` (the key of the
        plan ``manifest`` was made from, `plan.ids_key`) is the one the
        manifest on disk was written from (`ids_file.manifest_current`: its
        configurations are that plan's, first, then the same older ones)
        and every other field would stay as it is (`_same_head`). Then it is
        left as it is: writing ten million configurations again is most of
        a resume's cost.

        Reopening with a spec whose result-defining part changed:

        * no summary row on disk yet (e.g. the earlier run failed before its
          first commit): the new spec simply replaces the old one;
        * user code of a policy or a workload edited in place (its digest
          changed, `manifest.code_changes`): ``announce`` gets one line saying
          what will re-run and why, then the rows of that code's
          configurations move to ``superseded/<n>/`` (`supersede`; recorded in
          the manifest's ``superseded``), and the dir grows as below: every
          other row is kept, the edited code's configurations run again;
        * only fields in `GROWABLE` changed (policies, grid values,
          replications, ...): the dir grows -- rows of configurations still in
          the spec are kept and resumed, new ones are computed, rows of
          configurations no longer named stay on disk; returns one line
          saying what changed;
        * a metric's code edited, an input file (trace) whose content
          changed (``manifest["inputs"]``: path -> `fingerprint`), or a field
          that changes what every row means (seed, per_job, warmup, metrics,
          name, engine): an error naming the field(s), unless ``fresh`` (which
          discards the old results)."""
        try:
            existing = self.read_manifest(lean=True)
        except UserError:
            if not fresh:
                raise
            existing = None  # --fresh discards it anyway
        grew = None
        # rows an old spec computed (on disk, or some already moved aside by a run killed meanwhile)
        rows = existing is not None and not fresh and (self.has(SUMMARY) or self._moving(existing))
        if rows:
            assert existing is not None  # rows is only true when existing is not None
            changed_input = _changed_inputs(existing, manifest)
            if changed_input:
                raise UserError(
                    f"{self.root}: {changed_input}; run with --fresh to discard the old results, or set "
                    f"outputs.dir to keep both"
                )
        if existing is not None and existing.get("spec_hash") != manifest["spec_hash"] and not fresh:
            code = code_changes(existing, manifest)
            every_row = [c for c in code if c.field.startswith(EVERY_ROW_CODE)]
            changes = [c for c in spec_changes(existing, manifest) if not c.startswith("user_code:")]
            fixed = [c for c in changes if c.split(":", 1)[0] not in GROWABLE]
            if not rows:
                existing = None  # nothing computed under the old spec: the corrected spec takes its place
            elif every_row:
                raise UserError(
                    f"{self.root}: the code of {every_row[0].line()} changed since these results were written, "
                    f"and a metric's code changes every row; run with --fresh to discard the old results, or set "
                    f"outputs.dir to keep both"
                )
            elif fixed:
                raise UserError(
                    f"{self.root}: holds results of a different spec: {'; '.join(fixed)} -- this changes what "
                    f"every row on disk means; run with --fresh to discard them, or set outputs.dir to keep both"
                )
            else:
                assert existing is not None  # rows is only true when existing is not None
                entry = self.supersede(existing, manifest, code, announce) if code else None
                manifest = grown_manifest(existing, manifest)
                if entry is not None:
                    manifest["configs"] = {k: v for k, v in manifest["configs"].items() if k not in entry["configs"]}
                    manifest["superseded"] = [*manifest.get("superseded", []), entry]
                uses = {i.get("use") for i in (existing.get("user_code") or {}).values()}
                if uses != {i.get("use") for i in (manifest.get("user_code") or {}).values()}:
                    changes.append("user_code: ")  # code added or dropped (an edit is announced above)
                if changes:
                    grew = (
                        f"{self.root}: the spec grew ({'; '.join(c.split(':', 1)[0] for c in changes)} changed): "
                        f"rows on disk are kept, new configurations and replications are added"
                    )
                existing = None  # grown above
        if fresh:
            for name in (SUMMARY, JOBS, SERIES, FAILURES, CODE, SUPERSEDED, ".tmp", COMPACTING, MANIFEST, IDS_FILE):
                target = self.root / name
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
            existing = None
        if existing is not None:  # the same spec again (a resume)
            manifest = grown_manifest(existing, manifest)
            if (
                ids_key is not None
                and ids_file.manifest_current(self.root, ids_key, self.root / MANIFEST)
                and _same_head(manifest, existing)
            ):
                with self._writing(self.root):
                    self.clean()
                return grew
        with self._writing(self.root):
            self.root.mkdir(parents=True, exist_ok=True)
            self._atomic_chunks(self.root / MANIFEST, manifest_text(manifest))
            self.clean()
        return grew

    def keep_ids(self, key: str, ids: KeptIds, again: bool = False) -> None:
        """Keep the plan's ids (the plan of ``key``) beside the manifest as it
        is now (`ids_file`), unless the file there already holds them for it
        (``again``: written anyway, the plan hashed although the key matched:
        the file is torn or damaged). Only under the lock, after `prepare`."""
        if again or not ids_file.manifest_current(self.root, key, self.root / MANIFEST):
            with self._writing(self.root):
                self._atomic_chunks(self.root / IDS_FILE, ids_file.chunks(key, ids, self.root / MANIFEST))

    def supersede(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        changes: list[CodeChange],
        announce: Callable[[str], None] | None = None,
    ) -> dict[str, Any] | None:
        """Move the rows of configurations computed with code that has
        changed since (``changes``) out of the tables into
        ``superseded/<n>/`` -- kept, never mixed with the new code's rows --
        and return the manifest's record of the move (`superseded_entry`;
        None when no row or failure of that code is on disk).

        The configurations are those the old manifest lists with a stale
        digest and those whose summary rows carry one (``code_sha256``,
        ``workload_code_sha256``, ``engine_code_sha256``). A part file holding only such rows is
        renamed there; one that mixes them with other rows (a workload's
        code reaches every policy's partition; ``failures/`` is not
        partitioned) is split: the moved rows are written there first (once:
        a file already there is whole), then the file is rewritten in place
        with the other rows, untouched, per-job and series twins before their
        summary. The old manifest stays on disk until the caller writes the
        new one, so a run killed half-way moves the rest next time, into the
        same folder (``<n>`` counts the moves the old manifest records).
        Only under the lock."""
        stale = stale_digests(changes, new)
        moved = superseded_configs(old, stale)
        if self.has(SUMMARY):
            columns = self.scan().collect_schema().names()
            digests = [c for c in CODE_DIGESTS if c in columns]
            if digests:
                hit = pl.any_horizontal(pl.col(c).is_in(sorted(stale)) for c in digests)
                found = self.scan().filter(hit).select("config_id").unique().collect()["config_id"].to_list()
                moved.update({cid: (old.get("configs") or {}).get(cid, {}) for cid in found if cid not in moved})
        where = f"{SUPERSEDED}/{len(old.get('superseded') or []) + 1}"
        rerun = sum(
            1
            for c in (new.get("configs") or {}).values()
            if {c.get(k) for k in CODE_DIGESTS} & {ch.new for ch in changes}
        )
        self.clean()  # a compaction step under way is finished first: its journal names the files
        ids = pa.array(sorted(moved), pa.string())
        if announce is not None:
            announce(rerun_note(self.root, changes, rerun, self._count(ids), where if moved else None))
        if not moved:
            return None
        target = self.root / where
        with self._writing(target):
            if not (target / MANIFEST).exists():  # the old manifest, restricted to what moved there
                target.mkdir(parents=True, exist_ok=True)
                described = {**old, "configs": moved}
                self._atomic_chunks(target / MANIFEST, manifest_text(described))
            policies = {str(c["policy"]) for c in moved.values() if c.get("policy")}
            if self.has(SUMMARY):
                owners = self.scan().filter(pl.col("config_id").is_in(ids.to_pylist())).select("policy").unique()
                policies |= set(owners.collect()["policy"].to_list())
            for table in (JOBS, SERIES, SUMMARY, FAILURES):  # a policy's partition only when it has such rows
                folders = (
                    [self.root / FAILURES]
                    if table == FAILURES
                    else [self.root / table / _partition(p) for p in sorted(policies)]
                )
                for f in sorted(f for folder in folders for f in folder.glob("*.parquet")):
                    self._move_rows(f, ids, target / f.relative_to(self.root))
        return superseded_entry(changes, moved, where, ResultStore(target)._count(ids))

    def _moving(self, existing: dict[str, Any]) -> bool:
        """A move to ``superseded/`` began under ``existing`` (the manifest
        on disk) and was killed before the manifest recorded it: the rows
        an old spec computed are (partly) there, the move must finish."""
        return (self.root / SUPERSEDED / str(len(existing.get("superseded") or []) + 1)).is_dir()

    def _count(self, ids: pa.Array) -> int:
        """Summary rows of the configurations ``ids``."""
        if not self.has(SUMMARY) or len(ids) == 0:
            return 0
        return int(self.scan().filter(pl.col("config_id").is_in(ids.to_pylist())).select(pl.len()).collect().item())

    def _move_rows(self, f: Path, ids: pa.Array, dest: Path) -> int:
        """Move the rows of ``f`` whose config_id is in ``ids`` to ``dest``
        (see `supersede`); returns how many."""
        part = pq.ParquetFile(f)
        if "config_id" not in part.schema_arrow.names:
            return 0
        mask = pc.is_in(part.read(columns=["config_id"])["config_id"], value_set=ids)  # the ids first: cheap
        n = pc.sum(mask).as_py() or 0
        if n == 0:
            return 0
        if n == len(mask):
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, dest)
            return int(n)
        table = part.read()
        if not dest.exists():
            self._atomic_table(dest, table.filter(mask))
        self._atomic_table(f, table.filter(pc.invert(mask)))
        return int(n)

    def clean(self) -> int:
        """Delete crash leftovers: finish or roll back a compaction step that
        was under way (`resolve_compaction`), then temp files and per-job files
        whose summary twin never landed. Returns how many files were removed.
        Only under the lock."""
        removed = self.resolve_compaction()
        tmp = self.root / ".tmp"
        if tmp.exists():
            removed += sum(1 for _ in tmp.iterdir())
            shutil.rmtree(tmp)
        for table in (JOBS, SERIES):
            for f in (self.root / table).glob("*/part-*.parquet"):
                if not (self.root / SUMMARY / f.parent.name / f.name).exists():
                    f.unlink()
                    removed += 1
        return removed

    def tidy_tmp(self) -> None:
        """Remove ``.tmp/`` if it is empty (every write empties what it put
        there), so a finished run or compaction leaves none behind."""
        with contextlib.suppress(OSError):
            (self.root / ".tmp").rmdir()

    # ---- compaction journal (see the module docstring) ------------------------------
    def read_journal(self) -> dict[str, Any] | None:
        """The journal of a compaction step under way, or None."""
        path = self.root / COMPACTING
        try:
            journal = json.loads(path.read_text())
            if not (
                isinstance(journal, dict)
                and isinstance(journal.get("commit"), str)
                and isinstance(journal.get("new"), list)
                and isinstance(journal.get("old"), list)
            ):
                raise ValueError("not a compaction journal")
            return journal
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as err:
            raise UserError(
                f"{path}: cannot read the compaction journal ({_reason(err)}); it is written "
                f"atomically, so something else changed it: restore the results dir from a "
                f"backup"
            ) from None

    def _hidden(self) -> set[Path]:
        """The part files a compaction step under way hides from readers: its
        old files once its commit file exists, its new files before."""
        journal = self.read_journal()
        if journal is None:
            return set()
        committed = (self.root / journal["commit"]).exists()
        return {self.root / rel for rel in journal["old" if committed else "new"]}

    def resolve_compaction(self) -> int:
        """Finish (commit file present: delete the old files) or roll back
        (absent: delete the new files) a compaction step whose process died,
        then delete its journal. Idempotent; only under the lock. Returns
        how many part files were removed."""
        journal = self.read_journal()
        if journal is None:
            return 0
        committed = (self.root / journal["commit"]).exists()
        removed = 0
        for rel in journal["old" if committed else "new"]:
            try:
                (self.root / rel).unlink()
                removed += 1
            except FileNotFoundError:
                pass
        for rel in {str(Path(r).parent) for r in journal["old" if committed else "new"]}:
            _fsync_dir(self.root / rel)
        (self.root / COMPACTING).unlink()
        _fsync_dir(self.root)
        return removed

    def save_code(self, codes: Iterable[CodeRef]) -> None:
        """Keep the source of every piece of user code under
        ``code/<sha256>/``, once (content-addressed), so the results dir holds
        the exact code its rows came from (MLflow attaches it too)."""
        for code in codes:
            target = self.root / CODE / code.sha256
            if target.exists():
                continue
            staging = self.root / ".tmp" / f"code-{uuid.uuid4().hex}"
            with self._writing(target):
                for rel, data in code.sources().items():
                    (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                    (staging / rel).write_bytes(data)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging, target)  # the folder appears whole or not at all

    # ---- reading --------------------------------------------------------------------
    def has(self, table: str) -> bool:
        return any((self.root / table).glob("**/*.parquet"))

    def files(self, table: str = SUMMARY) -> list[Path]:
        """The committed part files of ``table``, each checked to be readable
        Parquet (its footer); a damaged one is a `UserError` naming it. Per-job
        and series files count only with their summary twin (see the module
        docstring)."""
        for attempt in range(VANISHED_RETRIES + 1):
            files = sorted((self.root / table).glob("**/*.parquet"))  # list first, then read the journal
            hidden = self._hidden()
            files = [f for f in files if f not in hidden]
            if table in (JOBS, SERIES):
                files = [f for f in files if (self.root / SUMMARY / f.parent.name / f.name).exists()]
            if attempt < VANISHED_RETRIES and not all(f.exists() for f in files):
                continue  # a compaction deleted a file between the listing and now: list again
            break
        for f in files:
            check_part_file(f)
        return files

    def scan(self, table: str = SUMMARY) -> pl.LazyFrame:
        """All committed rows of ``table``, in the files' order. Consecutive
        files of one partition and one schema are scanned together, and these
        runs concatenated diagonally with relaxed types, so batches whose
        columns differ (e.g. a per-class metric only some configurations
        have) still combine; the policy partition comes back as a column. (A scan per file made a long run's
        resume -- 7,000 one-row part files -- spend minutes in polars' plan.)"""
        files = self.files(table)
        if not files:
            raise UserError(f"{self.root}: no {table} rows yet")
        hive = table != FAILURES
        # runs of consecutive files of one partition and schema (their schemas were read and
        # cached by files()): the rows keep the files' order, which compaction keeps too
        runs = itertools.groupby(files, key=lambda f: (f.parent.name, str(part_schema(f))))
        scans = [pl.scan_parquet(list(run), hive_partitioning=hive) for _, run in runs]
        return pl.concat(scans, how="diagonal_relaxed")

    def done_keys(self) -> set[tuple[str, int]]:
        if not self.has(SUMMARY):
            return set()
        keys = collect_checked(
            self.scan().select("config_id", "replication"), self.files(SUMMARY), ["config_id", "replication"]
        )
        return set(zip(keys["config_id"].to_list(), keys["replication"].to_list()))

    def done_key_set(self) -> KeySet:
        """`done_keys` in 8 bytes a key (`keyset`): the ``config_id`` and
        ``replication`` columns read a part file at a time, never a Python
        object per row (a resume of ten million rows)."""
        files = self.files(SUMMARY) if self.has(SUMMARY) else []
        columns = ["config_id", "replication"]

        def tables() -> Iterator[pa.Table]:
            for f in files:
                try:
                    yield pq.read_table(f, columns=columns)
                except (pa.ArrowException, OSError, KeyError) as err:
                    raise explain_read_error([f], err, columns) from None

        return KeySet.from_columns(tables())

    # ---- writing --------------------------------------------------------------------
    def commit(
        self,
        summary: list[dict[str, Any]],
        jobs: list[tuple[str, pa.Table]],
        failures: list[dict[str, Any]],
        series: Sequence[tuple[str, pa.Table]] = (),
        parts: Sequence[Part] = (),
    ) -> None:
        """Write one batch atomically per partition (see the module docstring).

        ``summary`` rows carry a ``policy`` key (the partition); ``jobs`` and
        ``series`` are lists of (policy, table) pairs; ``parts`` (rows a
        worker encoded, `part.Part`) are written first, each a batch of its own."""
        if parts:
            publish(self, parts)
        batch = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        by_policy: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in summary:
            row = dict(row)
            by_policy[row.pop("policy")].append(row)
        extra: dict[tuple[str, str], list[pa.Table]] = defaultdict(list)
        for table_name, pairs in ((JOBS, jobs), (SERIES, series)):
            for policy, table in pairs:
                extra[(table_name, policy)].append(table)
        published: list[Path] = []  # per-job / series files of partitions whose summary has not landed yet
        try:
            with self._writing(self.root, rows=len(summary)):
                for policy, rows in by_policy.items():
                    part = _partition(policy)
                    for table_name in (JOBS, SERIES):
                        if extra.get((table_name, policy)):
                            path = self.root / table_name / part / batch
                            self._atomic_table(path, pa.concat_tables(extra[(table_name, policy)]))
                            published.append(path)
                    self._atomic_table(self.root / SUMMARY / part / batch, rows_table(rows))
                    published.clear()  # the partition's batch is committed
                if failures:
                    self._atomic_table(self.root / FAILURES / batch, rows_table(failures))
        except BaseException:
            for path in published:  # not committed: roll back (readers ignore them anyway)
                try:
                    path.unlink()
                except OSError:
                    pass
            raise

    @contextlib.contextmanager
    def _writing(self, where: Path, rows: int | None = None) -> Iterator[None]:
        """Turn an OS error while writing into one `StoreWriteError` line."""
        try:
            yield
        except OSError as err:
            lost = f"; the {rows} rows of this batch were not committed" if rows else ""
            raise StoreWriteError(
                f"{where}: cannot write results ({_reason(err)}){lost}; free space or fix the directory, "
                f"then run again to resume (committed rows are kept)"
            ) from None

    def _atomic_table(self, path: Path, table: pa.Table) -> None:
        tmp = self._tmp_path(path)
        try:
            pq.write_table(table, tmp)
            self._publish(tmp, path)
        except BaseException:
            _unlink_quietly(tmp)
            raise

    def _atomic_bytes(self, path: Path, data: bytes) -> None:
        self._atomic_chunks(path, iter((data,)))

    def _atomic_chunks(self, path: Path, chunks: Iterable[bytes]) -> None:
        """``path`` written whole or not at all from ``chunks`` (never all in memory at once)."""
        tmp = self._tmp_path(path)
        try:
            with open(tmp, "wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
            self._publish(tmp, path)
        except BaseException:
            _unlink_quietly(tmp)
            raise

    def _tmp_path(self, path: Path) -> Path:
        tmp_dir = self.root / ".tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        return tmp_dir / f"{uuid.uuid4().hex}-{path.name}"

    @staticmethod
    def _publish(tmp: Path, path: Path) -> None:
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, path)


def mixed_digests(lf: pl.LazyFrame) -> str | None:
    """A warning when the rows of one table come from different versions of
    an engine (``schedlab_digest``: the engine's and built-in policies'
    source), e.g. a sweep resumed after schedlab was upgraded; None if not."""
    if "schedlab_digest" not in lf.collect_schema().names():
        return None
    cols = ["engine", "schedlab_digest"]
    seen = lf.select(cols).unique().drop_nulls().collect()
    mixed = (
        seen.group_by("engine").agg(pl.col("schedlab_digest").sort()).filter(pl.col("schedlab_digest").list.len() > 1)
    )
    if mixed.is_empty():
        return None
    parts = [f"{r['engine']} engine: {', '.join(r['schedlab_digest'])}" for r in mixed.iter_rows(named=True)]
    return (
        "rows come from more than one version of schedlab's engine code (schedlab_digest "
        + "; ".join(parts)
        + "): results before and after an engine change are mixed; "
        "compare them per digest or rerun with --fresh"
    )


def failed_simulations(store: ResultStore) -> pl.DataFrame:
    """The simulations that failed and have no result since (a resumed sweep
    may have run one again): one row per (config_id, replication) of the
    ``failures`` table without a ``summary`` row, with its ``policy`` and its
    last ``error``. Empty when nothing failed."""
    if not store.has(FAILURES):
        columns = {"config_id": pl.String, "replication": pl.Int64, "policy": pl.String, "error": pl.String}
        return pl.DataFrame(schema=columns)
    failed = store.scan(FAILURES).select("config_id", "replication", "policy", "error").collect()
    failed = failed.with_columns(pl.col("replication").cast(pl.Int64)).unique(
        ["config_id", "replication"], keep="last", maintain_order=True
    )
    if store.has(SUMMARY):
        done = store.scan().select("config_id", pl.col("replication").cast(pl.Int64)).unique().collect()
        failed = failed.join(done, on=["config_id", "replication"], how="anti")
    return failed


def failures_note(store: ResultStore) -> str | None:
    """One line for `schedlab results` / `compare`: how many simulations
    failed (per policy), the first error, and where to look; None if none."""
    failed = failed_simulations(store)
    if failed.is_empty():
        return None
    per = failed.group_by("policy", maintain_order=True).len()
    policies = ", ".join(f"{r['policy']} {r['len']}" for r in per.iter_rows(named=True))
    many = failed.height != 1
    return (
        f"{failed.height} simulation{'s' if many else ''} failed and {'are' if many else 'is'} "
        f"missing from these figures ({policies}); first error: {failed['error'][0]}; "
        f'errors and tracebacks: {store.root / FAILURES} (schedlab.load(dir, "failures"))'
    )


def load(results_dir: str | Path, table: str = SUMMARY) -> pl.LazyFrame:
    """The rows of a results dir as a polars LazyFrame (``summary``, ``jobs``,
    ``series`` or ``failures``). A damaged part file is a `UserError` naming it."""
    return ResultStore(results_dir).scan(table)


def rows_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows as a table with every key any row has (``pa.Table.from_pylist``
    takes the columns of the first row only: a metric or a traceback that
    only later rows have would be dropped); a row without a key gets null.

    The types are pyarrow's inference from the Python values. A column whose
    values are all of one kind that polars types alike (`_PLAIN`: numbers,
    text, booleans, with nulls) is built by polars: pyarrow's conversion of
    Python values imports pandas (about 40 MB more in every process that
    encodes rows: issue 42's driver memory), polars' does not; it costs a
    few microseconds a row more (8-12 against 4.5-8.5, CPU, 500 summary rows,
    load 5-7). Any other column (numpy
    scalars, lists, a mix polars would coerce where pyarrow refuses) makes
    the whole table pyarrow's, as before."""
    keys = dict.fromkeys(k for row in rows for k in row)
    columns = {k: [row.get(k) for row in rows] for k in keys}
    wanted = [_plain_type(values) for values in columns.values()]
    if all(t is not None for t in wanted):
        try:
            table = pl.DataFrame(columns, strict=False).to_arrow()
        except (pl.exceptions.PolarsError, pa.ArrowException, OverflowError):  # pyarrow says what it says
            table = None
        if table is not None and [_NARROW.get(f.type, f.type) for f in table.schema] == wanted:
            return table.cast(pa.schema([pa.field(f.name, t) for f, t in zip(table.schema, wanted, strict=True)]))
    return pa.Table.from_pydict(columns)  # e.g. an int past int64, numpy scalars, lists: pyarrow's answer


#: The Python types of a column's values that polars types as pyarrow infers
#: them (`rows_table`), and that type: floats and ints (int64; double once a
#: float is there), text, booleans, each with nulls; nulls alone.
_PLAIN: dict[frozenset[type], pa.DataType] = {
    frozenset(kinds | extra): arrow
    for kinds, arrow in (
        ({float}, pa.float64()),
        ({int}, pa.int64()),
        ({float, int}, pa.float64()),
        ({str}, pa.string()),
        ({bool}, pa.bool_()),
    )
    for extra in ({type(None)}, set())
}
_PLAIN[frozenset({type(None)})] = pa.null()


def _plain_type(values: list[Any]) -> pa.DataType | None:
    """The type pyarrow infers for ``values`` when polars gives it too (`_PLAIN`), else None."""
    kinds = frozenset(map(type, values))
    arrow = _PLAIN.get(kinds)
    if arrow is not None and int in kinds and float in kinds:  # pyarrow refuses an int a double cannot hold exactly
        if not all(-_EXACT <= v <= _EXACT for v in values if type(v) is int):
            return None
    return arrow


#: The largest integer magnitude a double holds exactly (pyarrow's limit for an int in a double column).
_EXACT = 2**53
#: polars' Arrow types with 64-bit offsets -> the types pyarrow's inference gives.
_NARROW = {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


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
