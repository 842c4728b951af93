"""Parquet results: the source of truth of a sweep, written only by the driver.

Layout of a results dir::

    manifest.json                          spec, spec hash, schedlab version, creation time, configs
    summary/policy=<p>/part-<batch>.parquet one row per (config id, replication)
    jobs/policy=<p>/part-<batch>.parquet    optional per-job rows
    series/policy=<p>/part-<batch>.parquet  sampled time series (engines that sample one)
    failures/part-<batch>.parquet           simulations that raised (config, replication, error)

Partitions are hive-style (``policy=FSPE%2BPS`` is URI-quoted; polars and
pyarrow decode it), so ``pl.scan_parquet(..., hive_partitioning=True)`` gives
the policy back as a column.

Crash safety: every file is written under ``.tmp/`` and renamed into place
(atomic on one filesystem), and within a batch the per-job and series files of
a partition are renamed *before* its summary file. A summary file is therefore the commit
record of its partition's batch: on open, per-job files without their summary
twin are leftovers of a crash and are deleted, and the keys they held are
recomputed. Hence exactly one row per key whatever was killed when.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from schedlab.errors import UserError

SUMMARY, JOBS, SERIES, FAILURES = "summary", "jobs", "series", "failures"
MANIFEST = "manifest.json"
#: Source of the user code that produced the rows: code/<sha256>/<relative path>.
CODE = "code"


def _changed_code(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Which user code changed between two manifests, said plainly (None if
    the difference is elsewhere in the spec)."""
    before = old.get("user_code") or {}
    after = new.get("user_code") or {}
    for field_, info in after.items():
        was = before.get(field_)
        if was is not None and was.get("use") == info["use"] and was.get("sha256") != info["sha256"]:
            return (f"the code of {field_} ({info['use']}) changed since these results were written "
                    f"(sha256 {was.get('sha256', '')[:12]} -> {info['sha256'][:12]})")
    return None


def _partition(policy: str) -> str:
    return f"policy={quote(policy, safe='')}"


class ResultStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    # ---- manifest -------------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any] | None:
        path = self.root / MANIFEST
        if not path.exists():
            return None
        return json.loads(path.read_text())

    def prepare(self, manifest: dict[str, Any], fresh: bool) -> None:
        """Create or reopen the results dir for ``manifest``'s spec.

        Reopening with a different result-defining spec is an error unless
        ``fresh`` (which discards the old results)."""
        existing = self.read_manifest()
        if existing is not None and existing.get("spec_hash") != manifest["spec_hash"] and not fresh:
            changed = _changed_code(existing, manifest)
            if changed:
                raise UserError(f"{self.root}: {changed}; run with --fresh to discard the old results, or set "
                                f"outputs.dir to keep both")
            raise UserError(
                f"{self.root}: holds results of a different spec (spec hash {existing.get('spec_hash')} "
                f"!= {manifest['spec_hash']}); run with --fresh to discard them, or set outputs.dir"
            )
        if fresh:
            for name in (SUMMARY, JOBS, SERIES, FAILURES, CODE, ".tmp", MANIFEST):
                target = self.root / name
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
            existing = None
        if existing is not None:
            manifest = {**manifest, "created": existing.get("created", manifest["created"])}
        self.root.mkdir(parents=True, exist_ok=True)
        self._atomic_bytes(self.root / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True).encode())
        self.clean()

    def clean(self) -> int:
        """Delete crash leftovers: temp files and per-job files whose summary
        twin never landed. Returns how many files were removed."""
        removed = 0
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

    def save_code(self, codes) -> None:
        """Keep the source of every piece of user code under
        ``code/<sha256>/``, once (content-addressed), so the results dir holds
        the exact code its rows came from (MLflow attaches it too)."""
        for code in codes:
            target = self.root / CODE / code.sha256
            if target.exists():
                continue
            staging = self.root / ".tmp" / f"code-{uuid.uuid4().hex}"
            for rel, data in code.sources().items():
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                (staging / rel).write_bytes(data)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging, target)  # the folder appears whole or not at all

    # ---- reading --------------------------------------------------------------------
    def has(self, table: str) -> bool:
        return any((self.root / table).glob("**/*.parquet"))

    def scan(self, table: str = SUMMARY) -> pl.LazyFrame:
        """All committed rows of ``table``. Files are scanned one by one and
        concatenated diagonally with relaxed types, so batches whose columns
        differ (e.g. a per-class metric only some configurations have) still
        combine; the policy partition comes back as a column."""
        files = sorted((self.root / table).glob("**/*.parquet"))
        if not files:
            raise UserError(f"{self.root}: no {table} rows yet")
        hive = table != FAILURES
        return pl.concat([pl.scan_parquet(f, hive_partitioning=hive) for f in files], how="diagonal_relaxed")

    def done_keys(self) -> set[tuple[str, int]]:
        if not self.has(SUMMARY):
            return set()
        keys = self.scan().select("config_id", "replication").collect()
        return set(zip(keys["config_id"].to_list(), keys["replication"].to_list()))

    # ---- writing --------------------------------------------------------------------
    def commit(self, summary: list[dict[str, Any]], jobs: list[tuple[str, pa.Table]], failures: list[dict[str, Any]],
               series: list[tuple[str, pa.Table]] = ()) -> None:
        """Write one batch atomically per partition (see the module docstring).

        ``summary`` rows carry a ``policy`` key (the partition); ``jobs`` and
        ``series`` are lists of (policy, table) pairs."""
        batch = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        by_policy: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in summary:
            row = dict(row)
            by_policy[row.pop("policy")].append(row)
        extra: dict[tuple[str, str], list[pa.Table]] = defaultdict(list)
        for table_name, pairs in ((JOBS, jobs), (SERIES, series)):
            for policy, table in pairs:
                extra[(table_name, policy)].append(table)
        for policy, rows in by_policy.items():
            part = _partition(policy)
            for table_name in (JOBS, SERIES):
                if extra.get((table_name, policy)):
                    self._atomic_table(self.root / table_name / part / batch, pa.concat_tables(extra[(table_name, policy)]))
            self._atomic_table(self.root / SUMMARY / part / batch, pa.Table.from_pylist(rows))
        if failures:
            self._atomic_table(self.root / FAILURES / batch, pa.Table.from_pylist(failures))

    def _atomic_table(self, path: Path, table: pa.Table) -> None:
        tmp = self._tmp_path(path)
        pq.write_table(table, tmp)
        self._publish(tmp, path)

    def _atomic_bytes(self, path: Path, data: bytes) -> None:
        tmp = self._tmp_path(path)
        tmp.write_bytes(data)
        self._publish(tmp, path)

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
    mixed = seen.group_by("engine").agg(pl.col("schedlab_digest").sort()).filter(pl.col("schedlab_digest").list.len() > 1)
    if mixed.is_empty():
        return None
    parts = [f"{r['engine']} engine: {', '.join(r['schedlab_digest'])}" for r in mixed.iter_rows(named=True)]
    return ("rows come from more than one version of schedlab's engine code (schedlab_digest "
            + "; ".join(parts) + "): results before and after an engine change are mixed; "
            "compare them per digest or rerun with --fresh")


def load(results_dir: str | Path, table: str = SUMMARY) -> pl.LazyFrame:
    """The rows of a results dir as a polars LazyFrame (``summary``, ``jobs``,
    ``series`` or ``failures``)."""
    return ResultStore(results_dir).scan(table)
