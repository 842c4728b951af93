"""What a results dir's manifest says about the rows on disk, compared with a
new run's: which user code, input file (trace) or spec field changed, which
changes only grow the dir (`GROWABLE`), the grown manifest, and the SHA-256
fingerprint of an input file. Pure functions of two manifests (dicts); the
store (`ResultStore.prepare`) decides what to do with their answers. And a
new run's manifest (`manifest_for`)."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
from collections import ChainMap
from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.platform.planning.plan import digest
from schedlab.version import __version__

if TYPE_CHECKING:
    from schedlab.platform.planning.plan import Config, FlatConfig, Plan
    from schedlab.platform.planning.spec import SweepSpec


@dataclass(frozen=True)
class CodeChange:
    """User code named by the same ``use`` in both manifests whose digest
    differs: an edit that changes what the code does (`schedlab.usercode`:
    comments, docstrings and formatting do not count)."""

    field: str  # the spec field in the new manifest, e.g. "policies[1].use"
    use: str  # as written in the spec, e.g. "pol.py:MyFIFO"
    old: str  # the digest the rows on disk were computed with
    new: str  # the digest of the code now

    def line(self) -> str:
        return f"{self.field} ({self.use}): sha256 {self.old[:12]} -> {self.new[:12]}"


def code_changes(old: dict[str, Any], new: dict[str, Any]) -> list[CodeChange]:
    """The user code whose digest changed between two manifests, matched by
    its ``use`` (not by field: adding a policy before it renumbers the field)."""
    before = {info.get("use"): info for info in (old.get("user_code") or {}).values()}
    out = []
    for field_, info in sorted((new.get("user_code") or {}).items()):
        was = before.get(info["use"])
        if was is not None and was.get("sha256") != info["sha256"]:
            out.append(CodeChange(field_, info["use"], str(was.get("sha256", "")), info["sha256"]))
    return out


def _changed_code(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Which user code changed between two manifests, said plainly (None if
    the difference is elsewhere in the spec)."""
    changes = code_changes(old, new)
    if not changes:
        return None
    c = changes[0]
    return (
        f"the code of {c.field} ({c.use}) changed since these results were written "
        f"(sha256 {c.old[:12]} -> {c.new[:12]})"
    )


#: Code whose edit changes every row (a metric runs on every configuration's
#: jobs): not re-run configuration by configuration, an error unless --fresh.
EVERY_ROW_CODE = ("metrics",)

#: Where rows of code that has changed since are moved: superseded/<n>/, laid
#: out as a results dir (summary/, jobs/, series/, failures/, manifest.json).
SUPERSEDED = "superseded"


def stale_digests(changes: list[CodeChange], new: dict[str, Any]) -> set[str]:
    """The digests of code that changed, except any the new spec still uses."""
    current = {info["sha256"] for info in (new.get("user_code") or {}).values()}
    return {c.old for c in changes} - current


#: The columns (and manifest config fields) holding the digest of user code a row was computed with.
CODE_DIGESTS = ("code_sha256", "workload_code_sha256", "engine_code_sha256")


def superseded_configs(old: dict[str, Any], stale: set[str]) -> dict[str, dict[str, Any]]:
    """The old manifest's configurations computed with ``stale`` code: their
    policy's, their workload's or their engine's digest (`CODE_DIGESTS`) is one of them."""
    return {cid: c for cid, c in (old.get("configs") or {}).items() if any(c.get(k) in stale for k in CODE_DIGESTS)}


def superseded_entry(
    changes: list[CodeChange], moved: dict[str, dict[str, Any]], where: str, rows: int
) -> dict[str, Any]:
    """What the manifest records of one move: the folder, why (each code
    change), the configurations moved (as the old manifest described them)
    and how many summary rows went there."""
    return {
        "dir": where,
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "code": [{"field": c.field, "use": c.use, "old": c.old, "new": c.new} for c in changes],
        "configs": moved,
        "rows": rows,
    }


def rerun_note(root: Path, changes: list[CodeChange], rerun: int, moved: int, where: str | None) -> str:
    """The line `schedlab run` prints before it starts: what will re-run and
    why, and where the old rows go (``where`` None: none are on disk)."""
    s = "s" if moved != 1 else ""
    gone = (
        f"the {moved} old row{s} of that code move to {root / where} (schedlab.load of that folder reads them)"
        if where is not None
        else "no row of the old code is on disk"
    )
    return (
        f"{root}: your code changed since these rows were written ({'; '.join(c.line() for c in changes)}): "
        f"its {rerun} configuration{'s' if rerun != 1 else ''} re-run; {gone}; every other row is kept"
    )


#: Result-defining spec fields that only add (or drop) configurations or
#: replications. A configuration id hashes everything that defines its
#: results (engine, policy and params, workload point, system, user code), so
#: rows of configurations that stay in a spec changed only here keep their
#: meaning: the results dir *grows* (resume) instead of needing --fresh.
GROWABLE = frozenset({"policies", "workload", "system", "replications", "user_code"})


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def spec_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The result-defining fields that differ between two manifests' specs,
    each as ``field: old -> new`` (a key absent on one side shows as
    ``(unset)``)."""
    before, after = old.get("spec") or {}, new.get("spec") or {}
    out = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            was = _short(before[key]) if key in before else "(unset)"
            now = _short(after[key]) if key in after else "(unset)"
            out.append(f"{key}: {was} -> {now}")
    return out


def grown_manifest(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` extended by what ``old`` describes of the rows already on disk:
    every configuration either spec named (rows of configurations the new
    spec dropped stay readable and tracked), the union of the parameter
    columns, the creation time, and the earlier specs in ``history`` (``old``
    itself joins it when its spec differs from ``new``'s)."""
    history = list(old.get("history", []))
    if old.get("spec_hash") != new.get("spec_hash"):
        history.append({k: old[k] for k in ("spec", "spec_hash", "created", "user_code") if k in old})
    return {
        **new,
        "created": old.get("created", new["created"]),
        # {**old, **new} without copying either (`ConfigEntries`): new's entry wins
        "configs": ChainMap(new["configs"], old.get("configs", {})),
        "param_columns": list(dict.fromkeys([*old.get("param_columns", []), *new["param_columns"]])),
        **(
            {"inputs": {**old.get("inputs", {}), **new.get("inputs", {})}}
            if old.get("inputs") or new.get("inputs")
            else {}
        ),
        "history": history,
        **({"superseded": old["superseded"]} if old.get("superseded") else {}),
    }


#: Configurations per chunk `manifest_text` yields (one line each).
TEXT_CHUNK_CONFIGS = 4096


def manifest_text(manifest: dict[str, Any]) -> Iterator[bytes]:
    """``manifest`` as the bytes of manifest.json, a chunk at a time: the
    keys indented as ``json.dumps(indent=2)`` lays them out, but each
    configuration on one line, encoded by json's C encoder (with ``indent``
    json falls back to its Python encoder and builds the whole text as a list
    of small strings: about 3 KB of driver memory per configuration at once,
    the peak of a big sweep's start). Parsed, it is the same document."""
    keys = sorted(manifest)
    yield b"{\n"
    for i, key in enumerate(keys):
        end = ",\n" if i < len(keys) - 1 else "\n"
        value = manifest[key]
        if key == "configs" and isinstance(value, Mapping):
            yield f"  {json.dumps(key)}: {{".encode()
            items = _config_items(value)
            sep = "\n"
            while block := list(itertools.islice(items, TEXT_CHUNK_CONFIGS)):
                yield "".join(
                    f"{sep if i == 0 else ',' + chr(10)}    {json.dumps(cid)}: {json.dumps(entry, sort_keys=True)}"
                    for i, (cid, entry) in enumerate(block)
                ).encode()
                sep = ",\n"
            yield f"\n  }}{end}".encode()
        else:
            text = json.dumps(value, indent=2, sort_keys=True).replace("\n", "\n  ")
            yield f"  {json.dumps(key)}: {text}{end}".encode()
    yield b"}\n"


def _config_items(configs: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``configs.items()`` in its own order, streamed: a plan's entries are
    made as they are written (`ConfigEntries`); a grown manifest's ChainMap
    (the new plan's entries first) gives each id once, its first map's entry,
    without a lookup into the plan's (the later maps are the old manifests'
    dicts, read from disk)."""
    if not isinstance(configs, ChainMap):
        yield from configs.items()
        return
    first, *rest = configs.maps
    known = getattr(first.plan.points, "ids", None) if isinstance(first, ConfigEntries) else None
    if known is not None and rest and all(isinstance(m, OnDiskConfigs) for m in rest):
        yield from _grown_items(first, known.configs, rest)
        return
    later = [dict(m) for m in rest]  # the old entries still to write: a copy, the manifest read is not changed
    for cid, entry in first.items():
        for m in later:
            m.pop(cid, None)
        yield cid, entry
    for i, m in enumerate(later):
        for cid, entry in m.items():
            if not any(cid in earlier for earlier in rest[:i]):
                yield cid, entry


def _grown_items(first: Mapping[str, Any], numbers: np.ndarray, rest: list[Any]) -> Iterator[tuple[str, Any]]:
    """`_config_items` of a new plan's entries (``first``, whose ids are
    ``numbers``) over manifests read lean (`OnDiskConfigs`), in the same
    order, without a copy of the old entries: each old manifest streamed,
    its ids already written (as numbers, sorted) skipped unparsed."""
    from schedlab.platform.storage.keyset import id_number

    yield from first.items()
    written = np.unique(numbers)
    for i, m in enumerate(rest):
        earlier = rest[:i]

        def seen(cid: str, written: np.ndarray = written, earlier: list[Any] = earlier) -> bool:
            number = id_number(cid)
            if number is None:  # not a plan's id (those are 16 hex digits): looked up in the maps before
                return any(cid in e for e in earlier)
            at = int(np.searchsorted(written, np.uint64(number)))
            return at < len(written) and int(written[at]) == number

        yield from m.items(skip=seen)
        written = np.union1d(written, m.ids())


def fingerprint(path: Path, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """SHA-256 of an input file (or of a folder's files: relative paths and
    contents), with its size and modification time; ``previous`` (the same
    path's fingerprint from the manifest) is reused when size and time are
    unchanged, so a multi-gigabyte trace is hashed once, not every run."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    stat = [
        (f.relative_to(path).as_posix() if path.is_dir() else "", f.stat().st_size, f.stat().st_mtime_ns) for f in files
    ]
    size, mtime = sum(s for _, s, _ in stat), max((m for _, _, m in stat), default=0)
    if previous and previous.get("size") == size and previous.get("mtime_ns") == mtime and previous.get("sha256"):
        return previous
    h = hashlib.sha256()
    for f, (rel, _, _) in zip(files, stat):
        h.update(rel.encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return {"sha256": h.hexdigest(), "size": size, "mtime_ns": mtime}


def _changed_inputs(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """An input file (a trace) that the rows on disk were computed from and
    that has changed since, said plainly (None if none)."""
    for path, info in (new.get("inputs") or {}).items():
        was = (old.get("inputs") or {}).get(path)
        if was is not None and was.get("sha256") != info.get("sha256"):
            return (
                f"workload.path: {path} changed since these rows were written (sha256 "
                f"{str(was.get('sha256'))[:12]} -> {str(info.get('sha256'))[:12]}): rows of the old and the new "
                f"file would mix"
            )
    return None


def input_files(plan: Plan) -> list[str]:
    """The files (or folders) the plan's workload points read: the ``path``
    of trace and file workloads, as the readers open them."""
    if "path" not in plan.param_columns:  # no point has one (a streamed plan's points not made to say so)
        return []
    paths = {str(p.params["path"]) for p in plan.points if isinstance(p.params.get("path"), str)}
    return sorted(x for x in paths if Path(x).exists())


class ConfigEntries(Mapping[str, dict[str, Any]]):
    """The manifest's ``configs`` of a plan: config id -> what the manifest
    says of it, streamed from the plan's points (``items()``: `manifest_text`
    writes them a chunk at a time), not half a kilobyte a configuration held
    from the plan to the end of the write. A lookup by id goes through the
    plan's configurations (`plan.PlanConfigs`)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.engine_code = {"engine_code_sha256": plan.code["engine"].sha256} if "engine" in plan.code else {}
        self._workload_code: dict[str, str] | None = None  # config id -> its point's code digest, for lookups

    def entry(self, c: Config, workload_sha256: str | None) -> dict[str, Any]:
        """What the manifest says of ``c`` (the digest of its point's code: ``workload_sha256``)."""
        return {
            "engine": c.engine,
            "policy": c.policy,
            "workload_kind": c.workload_kind,
            "params": c.flat_params(),
            **({"code_sha256": c.code.sha256} if c.code is not None else {}),
            **({"workload_code_sha256": workload_sha256} if workload_sha256 is not None else {}),
            **self.engine_code,
        }

    def flat_entry(self, f: FlatConfig) -> dict[str, Any]:
        """`entry` of a `plan.FlatConfig` (the same keys, in the same order)."""
        return {
            "engine": f.engine,
            "policy": f.policy,
            "workload_kind": f.workload_kind,
            "params": f.params,
            **({"code_sha256": f.code.sha256} if f.code is not None else {}),
            **({"workload_code_sha256": f.point_code.sha256} if f.point_code is not None else {}),
            **self.engine_code,
        }

    def __getitem__(self, cid: str) -> dict[str, Any]:
        c = self.plan.configs[cid]
        if self._workload_code is None:
            self._workload_code = {
                c.config_id: p.code.sha256 for p in self.plan.points if p.code is not None for c in p.configs
            }
        return self.entry(c, self._workload_code.get(cid))

    def __iter__(self) -> Iterator[str]:
        return iter(self.plan.configs)

    def __len__(self) -> int:
        return len(self.plan.configs)

    def items(self) -> ItemsView[str, dict[str, Any]]:
        return _EntryItems(self)


class _EntryItems(ItemsView[str, dict[str, Any]]):
    """`ConfigEntries.items`, streamed from the plan's points (no lookup per id)."""

    _mapping: ConfigEntries

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        entries = self._mapping
        flat = getattr(entries.plan.points, "flat_configs", None)
        if flat is not None:  # a streamed plan: no point made (`PlanPoints.flat_configs`)
            for f in flat():
                yield f.config_id, entries.flat_entry(f)
            return
        for p in entries.plan.points:
            for c in p.configs:
                yield c.config_id, entries.entry(c, p.code.sha256 if p.code is not None else None)


def manifest_for(spec: SweepSpec, plan: Plan, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The results dir's manifest for ``spec``; ``previous`` (the manifest on
    disk, if any) lets unchanged input files keep their fingerprint unhashed."""
    old_inputs = (previous or {}).get("inputs") or {}
    inputs = {x: fingerprint(Path(x), old_inputs.get(x)) for x in input_files(plan)}
    defining = spec.result_defining()
    if plan.code:  # user code is part of what defines the results (absent otherwise: old hashes hold)
        defining["user_code"] = {field_: code.sha256 for field_, code in sorted(plan.code.items())}
    return {
        "name": spec.name,
        "engine": plan.engine,  # the engine's name (a user engine's reference is in "spec")
        "description": spec.description or "",
        "spec": defining,
        "spec_hash": digest(defining),
        "schedlab_version": __version__,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "param_columns": plan.param_columns,
        **({"inputs": inputs} if inputs else {}),
        "configs": ConfigEntries(plan),
        **(
            {
                "user_code": {
                    field_: {
                        "use": code.ref,
                        "module": code.module,
                        "attr": code.attr,
                        "sha256": code.sha256,
                        "files": sorted(code.sources()),
                    }
                    for field_, code in sorted(plan.code.items())
                }
            }
            if plan.code
            else {}
        ),
    }


class OnDiskConfigs(Mapping[str, dict[str, Any]]):
    """The ``configs`` of a manifest.json that `manifest_text` wrote (one
    configuration a line, bytes ``start`` to ``stop`` of the file), read
    lazily (`read_lean`): nothing is read until asked; the first lookup,
    count or ``ids()`` indexes the lines -- the ids as sorted 64-bit numbers
    and each one's line offset, 16 bytes a configuration, instead of about
    1.7 KB of parsed entries (a resume of ten million configurations would
    hold 17 GB). A lookup reads its line; iterating streams the file. A
    resume that leaves the manifest as it is (`ResultStore.prepare`) never
    indexes it. Ids that are not 16 hex digits (none that schedlab writes)
    are held parsed."""

    def __init__(self, path: Path, start: int, stop: int) -> None:
        self.path, self.start, self.stop = path, start, stop
        self.stamp = _stamp(path)
        self._index: tuple[np.ndarray, np.ndarray, dict[str, dict[str, Any]]] | None = None

    def _open(self) -> Any:
        """The file, checked to be the one read (a manifest written since moved
        every line: reading it by these offsets would be wrong, not just stale)."""
        if _stamp(self.path) != self.stamp:
            raise RuntimeError(f"{self.path} changed since its configurations were read")
        return self.path.open("rb")

    def _indexed(self) -> tuple[np.ndarray, np.ndarray, dict[str, dict[str, Any]]]:
        """(sorted id numbers, their lines' offsets, the entries of other ids), made once."""
        if self._index is None:
            import array

            from schedlab.platform.storage.keyset import id_number

            numbers, offsets = array.array("Q"), array.array("q")
            others: dict[str, dict[str, Any]] = {}
            with self._open() as fh:
                fh.seek(self.start)
                at = self.start
                while at < self.stop:
                    line = fh.readline()
                    cid = _hex_id(line)
                    number = id_number(cid) if cid is not None else None
                    if number is None:
                        key, entry = _config_line(line)
                        others[key] = entry
                    else:
                        numbers.append(number)
                        offsets.append(at)
                    at += len(line)
            got, where = np.frombuffer(numbers, np.uint64), np.frombuffer(offsets, np.int64)
            order = np.argsort(got, kind="stable")
            self._index = (got[order], where[order], others)
        return self._index

    def ids(self) -> np.ndarray:
        """The 16-hex-digit ids as sorted 64-bit numbers (`keyset.id_number`)."""
        return self._indexed()[0]

    def _at(self, cid: str) -> int:
        """The line offset of ``cid``, or -1."""
        from schedlab.platform.storage.keyset import id_number

        numbers, offsets, _ = self._indexed()
        number = id_number(cid)
        if number is None or not len(numbers):
            return -1
        i = int(np.searchsorted(numbers, np.uint64(number)))
        return int(offsets[i]) if i < len(numbers) and int(numbers[i]) == number else -1

    def __contains__(self, cid: object) -> bool:
        return isinstance(cid, str) and (cid in self._indexed()[2] or self._at(cid) >= 0)

    def __getitem__(self, cid: str) -> dict[str, Any]:
        others = self._indexed()[2]
        if cid in others:
            return others[cid]
        at = self._at(cid)
        if at < 0:
            raise KeyError(cid)
        with self._open() as fh:
            fh.seek(at)
            return _config_line(fh.readline())[1]

    def entries(self, cids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The entries of ``cids`` that are here, found at once (their ids
        searched as one array) and read from the file mapped into memory, in
        file order: a block of lookups, not one open, seek and buffered read
        each (what tracking reads a block of configurations with)."""
        import mmap

        import pyarrow as pa

        from schedlab.platform.storage.keyset import id_numbers

        numbers, offsets, others = self._indexed()
        wanted = [cid for cid in cids]
        out = {cid: others[cid] for cid in wanted if cid in others}
        if not wanted or not len(numbers):
            return out
        asked, hexed = id_numbers(pa.array(wanted, pa.string()))
        at = np.minimum(np.searchsorted(numbers, asked), len(numbers) - 1)
        found = np.flatnonzero(hexed & (numbers[at] == asked))
        if not len(found):
            return out
        starts = offsets[at[found]]
        order = np.argsort(starts, kind="stable")
        with self._open() as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for i in order.tolist():
                start = int(starts[i])
                line = mm[start : mm.find(b"\n", start) + 1]
                cid, entry = _config_line(line)
                out[cid] = entry
        return out

    def stale(self) -> bool:
        """Whether manifest.json was written again since this was read (its
        lines are then not where this would look for them)."""
        try:
            return _stamp(self.path) != self.stamp
        except OSError:
            return True

    def values(self) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        """The entries in the file's order, streamed (not a lookup per id)."""
        for _, entry in self.items():
            yield entry

    def __len__(self) -> int:
        numbers, _, others = self._indexed()
        return len(numbers) + len(others)

    def __iter__(self) -> Iterator[str]:
        for cid, _ in self.items():
            yield cid

    def items(self, skip: Callable[[str], bool] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:  # type: ignore[override]
        """(id, entry) in the file's order, streamed; ``skip(id)``: not parsed nor yielded."""
        with self._open() as fh:
            fh.seek(self.start)
            at = self.start
            while at < self.stop:
                line = fh.readline()
                at += len(line)
                cid = _hex_id(line)
                if cid is None:
                    cid, entry = _config_line(line)
                    if skip is None or not skip(cid):
                        yield cid, entry
                elif skip is None or not skip(cid):
                    yield _config_line(line)


def _stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


#: The line of manifest.json that opens its configurations (`manifest_text`).
CONFIGS_LINE = b'  "configs": {\n'


def _hex_id(line: bytes) -> str | None:
    """The id of a configuration line whose id is 16 hex digits (``    "<id>": {...}``), else None."""
    if len(line) > 24 and line[21:24] == b'": ' and line[:5] == b'    "':
        cid = line[5:21].decode("ascii", "replace")
        if _HEX_DIGITS.issuperset(cid):
            return cid
    return None


_HEX_DIGITS = frozenset("0123456789abcdef")


def _config_line(line: bytes) -> tuple[str, dict[str, Any]]:
    """(id, entry) of one configuration line of manifest.json (`manifest_text`)."""
    parsed: dict[str, Any] = json.loads(b"{" + line.strip().rstrip(b",") + b"}")
    if len(parsed) != 1:
        raise ValueError("a configuration line holds more than one configuration")
    return next(iter(parsed.items()))


#: Bytes `read_lean` reads at a time (then on to the end of a line).
LEAN_BLOCK = 1 << 24


def read_lean(path: Path) -> dict[str, Any] | None:
    """manifest.json with its ``configs`` an `OnDiskConfigs`, when it is laid
    out as `manifest_text` writes it (each configuration on one line between
    the ``"configs": {`` line and the ``}`` that closes it); None otherwise
    (a manifest written whole by an older schedlab, or edited: read it with
    ``json.loads``). The configurations' lines are checked a block at a time
    by counting (a line opens with ``    "`` and ends with ``}``), not parsed:
    what a resume that leaves the manifest as it is reads of it. A
    malformed document raises ``ValueError``."""
    head: list[bytes] = []
    with path.open("rb") as fh:
        while True:
            line = fh.readline()
            if not line:
                return None
            head.append(line)
            if line == CONFIGS_LINE:
                break
        start = at = fh.tell()
        lines = opens = ends = 0
        last = b""
        while True:
            block = fh.read(LEAN_BLOCK)
            if not block:
                return None  # never closed
            if not block.endswith(b"\n"):
                block += fh.readline()
            close = 0 if block.startswith(b"  }") else block.find(b"\n  }") + 1
            body = block[:close] if close > 0 or block.startswith(b"  }") else block
            lines += body.count(b"\n")
            opens += body.count(b'\n    "') + body.startswith(b'    "')
            ends += body.count(b"},\n")
            last = body[-2:] if body else last
            if close > 0 or block.startswith(b"  }"):
                stop = at + close
                rest = block[close:] + fh.read()
                break
            at += len(block)
    if opens != lines or (lines and (ends != lines - 1 or last != b"}\n")):
        return None  # a configuration over several lines: not manifest_text's layout
    cut = rest.find(b"\n") + 1
    head[-1] = b'  "configs": {' + rest[:cut].lstrip()
    manifest: dict[str, Any] = json.loads(b"".join(head) + rest[cut:])
    manifest["configs"] = OnDiskConfigs(path, start, stop)
    return manifest
