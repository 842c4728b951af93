"""The set of row keys (config id, replication) a driver has on disk or
has accepted this run, in 8 bytes a key.

A configuration id is 16 hex digits (`plan.digest`): a 64-bit integer. A
Python set of ``(str, int)`` tuples costs about 200 bytes a key (the tuple,
the string, the hash slot): 2 GB at ten million rows, before any work. Here
each replication has a sorted ``uint64`` array of ids, and the keys added
since its last merge wait in a small Python set (merged into the array once
they are `MERGE_FRACTION` of it, so merging costs O(n) amortised per key).
An id that is not 16 hex digits (none that schedlab writes) is kept as it is,
in a set of its own, so the answer is always exact.

`from_columns` builds one from the ``config_id`` and ``replication``
columns of part files, a file at a time, without a Python object per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Pending keys of one replication are merged into its sorted array when they reach this fraction of it ...
MERGE_FRACTION = 0.125
#: ... or this many keys, whichever is larger.
MERGE_MIN = 65_536
#: Hex digits of a configuration id (lower case, as `plan.digest` writes them).
ID_DIGITS = 16
_HEX = frozenset("0123456789abcdef")
#: ASCII code -> its hex digit's value, and whether it is one (lower case).
_NIBBLE = np.zeros(256, dtype=np.uint8)
_NIBBLE[np.frombuffer(b"0123456789abcdef", np.uint8)] = np.arange(16, dtype=np.uint8)
_IS_HEX = np.zeros(256, dtype=bool)
_IS_HEX[np.frombuffer(b"0123456789abcdef", np.uint8)] = True


def id_number(config_id: str) -> int | None:
    """A configuration id as its 64-bit number; None when it is not 16 lower-case hex digits."""
    if len(config_id) != ID_DIGITS or not _HEX.issuperset(config_id):
        return None
    return int(config_id, 16)


def id_numbers(ids: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(uint64 numbers, mask of the ids that are 16 lower-case hex digits)
    of a string column, vectorised: the ids' bytes as a (rows, 16) array of
    digits, packed two a byte into 8 big-endian bytes a row."""
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    ids = ids.cast(pa.string())
    sized = pc.equal(pc.binary_length(ids), ID_DIGITS).fill_null(False)
    ok = sized.to_numpy(zero_copy_only=False).copy()
    numbers = np.zeros(len(ids), dtype=np.uint64)
    if ok.any():
        good = pc.filter(ids, sized)  # a fresh array: its data buffer is the ids back to back
        offsets = np.frombuffer(good.buffers()[1], np.int32, len(good) + 1)
        data = np.frombuffer(good.buffers()[2], np.uint8)[offsets[0] : offsets[-1]].reshape(len(good), ID_DIGITS)
        packed, hexes = _packed(data)
        ok[ok] = hexes
        numbers[ok] = packed
    return numbers, ok


def _packed(digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(uint64 numbers of the rows that are hex, mask of those rows) of a
    (rows, 16) array of id characters: packed two a byte into 8 big-endian bytes."""
    hexes = np.asarray(_IS_HEX[digits].all(axis=1), dtype=bool)
    nibbles = _NIBBLE[digits]
    packed = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
    return np.ascontiguousarray(packed[hexes]).view(">u8").ravel().astype(np.uint64), hexes


def _str_id_numbers(ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """`id_numbers` of Python strings. The usual ids (16 ASCII characters
    each) are read as bytes straight into numpy: pyarrow's conversion of a
    Python list would import pandas into the driver (about 40 MB, issue 42's
    driver memory); any other list goes through pyarrow as before."""
    if all(len(i) == ID_DIGITS for i in ids):
        try:
            data = "".join(ids).encode("ascii")
        except UnicodeEncodeError:
            data = b""
        if len(data) == ID_DIGITS * len(ids):
            packed, ok = _packed(np.frombuffer(data, np.uint8).reshape(len(ids), ID_DIGITS))
            numbers = np.zeros(len(ids), dtype=np.uint64)
            numbers[ok] = packed
            return numbers, ok
    return id_numbers(pa.array(ids, pa.string()))


class KeySet:
    """A set of (config id, replication) keys; see the module docstring."""

    def __init__(self) -> None:
        self._sorted: dict[int, np.ndarray] = {}
        self._pending: dict[int, set[int]] = {}
        self._other: set[tuple[str, int]] = set()
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        config_id, replication = key
        number = id_number(config_id)
        if number is None:
            return key in self._other
        replication = int(replication)
        if number in self._pending.get(replication, ()):
            return True
        array = self._sorted.get(replication)
        if array is None or not len(array):
            return False
        i = int(np.searchsorted(array, np.uint64(number)))
        return i < len(array) and int(array[i]) == number

    def add(self, key: tuple[str, int]) -> None:
        if key in self:
            return
        config_id, replication = key
        number = id_number(config_id)
        self._len += 1
        if number is None:
            self._other.add((config_id, int(replication)))
            return
        pending = self._pending.setdefault(int(replication), set())
        pending.add(number)
        if len(pending) >= max(MERGE_MIN, MERGE_FRACTION * len(self._sorted.get(int(replication), ()))):
            self._merge(int(replication))

    def add_absent(self, keys: Iterable[tuple[str, int]]) -> None:
        """Add distinct keys the caller has just found absent (`contains_many`): not looked up again."""
        for config_id, replication in keys:
            self._len += 1
            number = id_number(config_id)
            if number is None:
                self._other.add((config_id, int(replication)))
                continue
            pending = self._pending.setdefault(int(replication), set())
            pending.add(number)
            if len(pending) >= max(MERGE_MIN, MERGE_FRACTION * len(self._sorted.get(int(replication), ()))):
                self._merge(int(replication))

    def update(self, keys: Iterable[tuple[str, int]]) -> None:
        for key in keys:
            self.add(key)

    def __ior__(self, keys: Iterable[tuple[str, int]]) -> KeySet:
        if isinstance(keys, KeySet):
            for replication, array in keys._sorted.items():
                if replication in self._sorted or replication in self._pending:
                    self.add_numbers(array, replication)
                else:  # already sorted and unique, and never written in place: taken as it is, not sorted again
                    self._sorted[replication] = array
                    self._len += len(array)
            for replication, pending in keys._pending.items():
                self.add_numbers(np.fromiter(pending, np.uint64, len(pending)), replication)
            self.update(keys._other)
        else:
            self.update(keys)
        return self

    def add_numbers(self, numbers: np.ndarray, replication: int) -> None:
        """Add the ids ``numbers`` (uint64) of one replication, vectorised."""
        replication = int(replication)
        self._merge(replication)
        old = self._sorted.get(replication, np.empty(0, np.uint64))
        merged = np.union1d(old, numbers.astype(np.uint64, copy=False))
        self._len += len(merged) - len(old)
        self._sorted[replication] = merged

    def _merge(self, replication: int) -> None:
        """The pending keys of ``replication`` into its sorted array: O(n), no
        sort of the whole (`add` keeps pending keys out of the array)."""
        pending = self._pending.pop(replication, None)
        if pending:
            add = np.sort(np.fromiter(pending, np.uint64, len(pending)))
            old = self._sorted.get(replication, np.empty(0, np.uint64))
            self._sorted[replication] = np.insert(old, np.searchsorted(old, add), add)

    def contains_many(self, ids: Sequence[str], replications: Sequence[int] | np.ndarray) -> np.ndarray:
        """Which keys ``(ids[i], replications[i])`` are in the set, vectorised
        (the pending keys of a replication are looked up, not merged: a
        round asks this block by block while rows arrive)."""
        out = np.zeros(len(ids), dtype=bool)
        if not len(ids):
            return out
        numbers, good = _str_id_numbers(ids)
        reps = np.asarray(replications, dtype=np.int64)
        for replication in np.unique(reps).tolist():
            chosen = good & (reps == replication)
            if not chosen.any():
                continue
            wanted = numbers[chosen]
            hit = np.zeros(len(wanted), dtype=bool)
            array = self._sorted.get(replication)
            if array is not None and len(array):
                at = np.searchsorted(array, wanted)
                at[at == len(array)] = 0
                hit = array[at] == wanted
            pending = self._pending.get(replication)
            if pending:
                hit |= np.fromiter((n in pending for n in wanted.tolist()), bool, len(wanted))
            out[chosen] = hit
        for i in np.flatnonzero(~good).tolist():
            out[i] = (ids[i], int(reps[i])) in self._other
        return out

    def contains_numbers(self, numbers: np.ndarray, replication: int) -> np.ndarray:
        """Which ids ``numbers`` (uint64, as `id_number` reads them) of one
        replication are in the set, vectorised: `contains_many` without the
        ids' text (a plan that kept its ids as numbers, `plan.PlanIds`)."""
        replication = int(replication)
        hit = np.zeros(len(numbers), dtype=bool)
        array = self._sorted.get(replication)
        if array is not None and len(array) and len(numbers):
            at = np.searchsorted(array, numbers)
            at[at == len(array)] = 0
            hit = array[at] == numbers
        pending = self._pending.get(replication)
        if pending and len(numbers):
            hit |= np.fromiter((n in pending for n in numbers.tolist()), bool, len(numbers))
        return hit

    def __iter__(self) -> Iterator[tuple[str, int]]:
        for replication in sorted(set(self._sorted) | set(self._pending)):
            self._merge(replication)
            for number in self._sorted[replication].tolist():
                yield f"{number:016x}", replication
        yield from self._other

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (set, frozenset, KeySet)):
            return len(self) == len(other) and all(k in self for k in other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like set

    @classmethod
    def from_columns(cls, tables: Iterable[pa.Table]) -> KeySet:
        """The keys of tables with ``config_id`` and ``replication`` columns (a part file each)."""
        keys = cls()
        found: dict[int, list[np.ndarray]] = {}  # replication -> its ids, a file's worth each: one sort at the end
        for table in tables:
            numbers, ok = id_numbers(table["config_id"])
            reps = table["replication"].to_numpy()
            for replication in np.unique(reps[ok]).tolist() if ok.any() else []:
                found.setdefault(int(replication), []).append(numbers[ok & (reps == replication)])
            if not ok.all():
                bad = pc.filter(table.select(["config_id", "replication"]), pa.array(~ok))
                keys.update(zip(bad["config_id"].to_pylist(), bad["replication"].to_pylist(), strict=True))
        for replication, arrays in found.items():
            keys.add_numbers(np.concatenate(arrays), replication)
            arrays.clear()
        return keys
