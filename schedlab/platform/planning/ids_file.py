"""The checking pass's ids (`plan.PlanIds`) kept beside a results dir's
manifest, in ``plan_ids.bin``: a resume of an unchanged sweep reads them
instead of hashing every configuration again (issue 42: about 31 µs a
configuration, five CPU minutes of a 10^7 resume).

The file is trusted only for the plan it was made from and only whole: its
header names the plan's key (`plan.ids_key`: everything a configuration id
is a function of) and the SHA-256 of the arrays that follow; another key, a
file shorter or longer than its header says (torn), a checksum that does not
match (damaged) or a header that does not parse, and `read` answers None:
the plan hashes as before, and the run writes the file again. The store
writes it atomically (`chunks`, a temporary file renamed into place) after
the manifest, naming the manifest's stamp then (inode, size, modification
time): a resume whose key matches and whose manifest still has that stamp
knows the manifest on disk was written from this very plan
(`manifest_current`), so it need not write it again.

Layout: `MAGIC`, the header's length (8 bytes, little-endian), the header
(JSON), then the point ids, the configuration ids (little-endian uint64),
and, when some point's draw id is not its point id, the draw ids (uint64)
and the flags saying which (one byte a point).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: The file's name in the results dir.
IDS_FILE = "plan_ids.bin"
#: Its first bytes (the format's version is in them: another version is another file).
MAGIC = b"schedlab plan ids 1\n"
#: A header longer than this is not one `chunks` made (read no further).
MAX_HEADER = 1 << 20
#: Bytes hashed at a time (the arrays are hashed in place, never copied whole).
HASH_BLOCK = 1 << 24


@dataclass(frozen=True)
class KeptIds:
    """What `read` gives back: the arrays of `plan.PlanIds` and what else the
    checking pass found (the parameter columns, in order of first appearance)."""

    points: np.ndarray
    configs: np.ndarray
    draws: np.ndarray | None
    drawn: np.ndarray | None
    columns: list[str]


@functools.cache
def source_digest() -> str:
    """SHA-256 of schedlab's own source (every ``.py`` file of the package:
    its path and its bytes), once a process: part of what every id is a
    function of (`plan.ids_key`), so ids kept by another schedlab are not
    read by this one."""
    root = Path(__file__).resolve().parents[2]  # the schedlab package
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def stamp(path: Path) -> list[int] | None:
    """(inode, size, modification time in ns) of ``path``, None if absent: a
    file replaced by a rename, or written since, has another stamp."""
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _arrays(ids: KeptIds) -> list[np.ndarray]:
    out = [ids.points, ids.configs]
    if ids.draws is not None and ids.drawn is not None:
        out += [ids.draws, ids.drawn]
    return [np.ascontiguousarray(a.astype("<u8" if a.dtype != np.bool_ else np.uint8, copy=False)) for a in out]


def _checksum(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        raw = a.view(np.uint8)
        for at in range(0, len(raw), HASH_BLOCK):
            h.update(raw[at : at + HASH_BLOCK].data)
    return h.hexdigest()


def chunks(key: str, ids: KeptIds, manifest: Path) -> Iterator[bytes]:
    """The bytes of the `IDS_FILE` keeping ``ids`` (the plan of ``key``) and
    naming ``manifest``'s stamp now, a block at a time: what the store writes
    atomically (`ResultStore.keep_ids`: a reader sees the old file or the
    new, whole)."""
    arrays = _arrays(ids)
    header = json.dumps(
        {
            "key": key,
            "points": len(ids.points),
            "configs": len(ids.configs),
            "draws": len(arrays) > 2,
            "columns": ids.columns,
            "manifest": stamp(manifest),
            "sha256": _checksum(arrays),
        },
        sort_keys=True,
    ).encode()
    yield MAGIC + struct.pack("<Q", len(header)) + header
    for a in arrays:
        raw = a.view(np.uint8)
        for at in range(0, len(raw), HASH_BLOCK):
            yield raw[at : at + HASH_BLOCK].tobytes()


def header(root: Path) -> dict[str, Any] | None:
    """The header of ``root``'s `IDS_FILE`, None if absent or not one `chunks` made."""
    try:
        with (root / IDS_FILE).open("rb") as fh:
            return _header(fh)
    except OSError:
        return None


def _header(fh: Any) -> dict[str, Any] | None:
    if fh.read(len(MAGIC)) != MAGIC:
        return None
    raw = fh.read(8)
    if len(raw) != 8:
        return None
    (size,) = struct.unpack("<Q", raw)
    if size > MAX_HEADER:
        return None
    try:
        parsed = json.loads(fh.read(size))
    except ValueError:
        return None
    needed = {"key": str, "points": int, "configs": int, "draws": bool, "columns": list, "sha256": str}
    if not isinstance(parsed, dict) or not all(isinstance(parsed.get(k), t) for k, t in needed.items()):
        return None
    return parsed


def read(root: Path, key: str) -> KeptIds | None:
    """The ids kept in ``root`` for the plan of ``key``; None when there are
    none, they are another plan's, or the file is torn or damaged."""
    path = root / IDS_FILE
    try:
        with path.open("rb") as fh:
            head = _header(fh)
            if head is None or head["key"] != key:
                return None
            n, m, draws = head["points"], head["configs"], head["draws"]
            body = 8 * (n + m) + (9 * n if draws else 0)
            if os.fstat(fh.fileno()).st_size != fh.tell() + body:  # torn (or grown): not what `chunks` made
                return None
            points = np.fromfile(fh, dtype="<u8", count=n)
            configs = np.fromfile(fh, dtype="<u8", count=m)
            drawn_ids = np.fromfile(fh, dtype="<u8", count=n) if draws else None
            flags = np.fromfile(fh, dtype=np.uint8, count=n) if draws else None
    except (OSError, ValueError):
        return None
    arrays = [a for a in (points, configs, drawn_ids, flags) if a is not None]
    if _checksum(arrays) != head["sha256"]:
        return None
    return KeptIds(
        points.astype(np.uint64, copy=False),
        configs.astype(np.uint64, copy=False),
        drawn_ids.astype(np.uint64, copy=False) if drawn_ids is not None else None,
        flags.astype(np.bool_) if flags is not None else None,
        [str(c) for c in head["columns"]],
    )


def manifest_current(root: Path, key: str, manifest: Path) -> bool:
    """Whether ``manifest`` was written from the plan of ``key`` and not
    since: the kept ids are that plan's and name its stamp as it is now."""
    head = header(root)
    now = stamp(manifest)
    return head is not None and head["key"] == key and now is not None and head.get("manifest") == now
