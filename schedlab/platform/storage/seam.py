"""The results-store seam: what the rest of schedlab asks of a results dir.

A results dir is read and written through one interface, `ResultsStore`:
its rows (a lazy scan per table), its manifest (read; written by `prepare`),
the parts the workers encoded (published by `commit`), the move of rows of
edited code (`supersede`) and the one-writer lock. Its only implementation
today is the local Parquet store (`schedlab.platform.storage.store.ResultStore`);
a store on another filesystem would be a second one, picked by `open_store`.

Every module outside the storage room opens a results dir with `open_store`
and reads a manifest with `read_manifest`; none builds the local store or
reads ``manifest.json`` itself (``tests/test_store_seam.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from schedlab.platform.planning.ids_file import KeptIds
    from schedlab.platform.storage.compact import CompactReport
    from schedlab.platform.storage.keyset import KeySet
    from schedlab.platform.storage.manifest import CodeChange
    from schedlab.platform.storage.part import Part
    from schedlab.usercode import CodeRef


class ResultsStore(Protocol):
    """A sweep's results: rows per table, the manifest that says what they
    mean, and the one writer that adds to them."""

    root: Path

    # ---- the manifest ------------------------------------------------------------------
    def read_manifest(self, lean: bool = False) -> dict[str, Any] | None:
        """The manifest, or None before the first run wrote one; an unreadable one is a `UserError`.
        ``lean``: its ``configs`` may be a mapping read from disk on demand (a resume of millions)."""
        ...

    def prepare(
        self,
        manifest: dict[str, Any],
        fresh: bool,
        announce: Callable[[str], None] | None = None,
        ids_key: str | None = None,
    ) -> str | None:
        """Create or reopen the store for ``manifest`` (written here, unless a resume of the plan of
        ``ids_key`` would write it again identically); a line saying what grew, or None."""
        ...

    def keep_ids(self, key: str, ids: KeptIds, again: bool = False) -> None:
        """Keep the plan's ids beside the manifest, for a resume (`schedlab.platform.planning.ids_file`)."""
        ...

    def supersede(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        changes: list[CodeChange],
        announce: Callable[[str], None] | None = None,
    ) -> dict[str, Any] | None:
        """Move the rows of edited code aside; the manifest's record of the move, or None."""
        ...

    # ---- one writer -------------------------------------------------------------------
    def lock(self, what: str = "schedlab run", required: bool = True) -> None:
        """Hold the store's one-writer lock for this process's life (``what`` names the holder)."""
        ...

    def unlock(self) -> None: ...

    def tidy_tmp(self) -> None:
        """Remove what the store keeps only while writing, once nothing is being written."""
        ...

    def save_code(self, codes: Iterable[CodeRef]) -> None:
        """Keep the source of the user code the rows came from, beside them."""
        ...

    # ---- rows -------------------------------------------------------------------------
    def has(self, table: str) -> bool:
        """Whether ``table`` has any file."""
        ...

    def files(self, table: str = "summary") -> list[Path]:
        """The committed files of ``table`` (what a damage check reads)."""
        ...

    def scan(self, table: str = "summary") -> pl.LazyFrame:
        """The committed rows of ``table`` (summary, jobs, series, failures), lazily."""
        ...

    def done_keys(self) -> set[tuple[str, int]]:
        """(config id, replication) of every committed summary row."""
        ...

    def done_key_set(self) -> KeySet:
        """`done_keys` in 8 bytes a key (`schedlab.platform.storage.keyset`): what a
        resume of millions of rows checks its work against."""
        ...

    def commit(
        self,
        summary: list[dict[str, Any]],
        jobs: list[tuple[str, pa.Table]],
        failures: list[dict[str, Any]],
        series: Sequence[tuple[str, pa.Table]] = (),
        parts: Sequence[Part] = (),
    ) -> None:
        """Add one batch of rows, and publish the workers' encoded ``parts``, atomically."""
        ...


def open_store(path: str | Path) -> ResultsStore:
    """The results store at ``path`` (today always the local Parquet store)."""
    from schedlab.platform.storage.store import ResultStore

    return ResultStore(path)


def compact_store(store: ResultsStore) -> CompactReport:
    """Merge the store's small part files (the writer holds its lock):
    `schedlab.platform.storage.compact.compact_locked` on the local store."""
    from schedlab.platform.storage.compact import compact_locked
    from schedlab.platform.storage.store import ResultStore

    if not isinstance(store, ResultStore):
        raise TypeError(f"compaction is the local Parquet store's; got {type(store).__name__}")
    return compact_locked(store)


def read_manifest(path: str | Path, lean: bool = False) -> dict[str, Any] | None:
    """The manifest of the results dir at ``path``, or None where no run wrote
    one (not a results dir yet); an unreadable one is a `UserError` naming it.
    ``lean``: its ``configs`` may be a mapping read from disk on demand
    (`ResultsStore.read_manifest`)."""
    return open_store(path).read_manifest(lean=lean)


def require_manifest(path: str | Path, lean: bool = False) -> dict[str, Any]:
    """`read_manifest`, where a missing manifest is a `UserError` naming it too."""
    from schedlab.errors import UserError

    manifest = read_manifest(path, lean)
    if manifest is None:
        raise UserError(f"{manifest_path(path)}: not found (is {path} a sweep results dir?)")
    return manifest


def manifest_path(path: str | Path) -> Path:
    """Where the manifest of the results dir at ``path`` is (for messages that name it)."""
    from schedlab.platform.storage.store import MANIFEST

    return Path(path) / MANIFEST


def is_results_dir(path: str | Path) -> bool:
    """Whether a run has written a manifest at ``path`` (without reading it)."""
    return manifest_path(path).is_file()


__all__ = [
    "ResultsStore",
    "compact_store",
    "is_results_dir",
    "manifest_path",
    "open_store",
    "read_manifest",
    "require_manifest",
]
