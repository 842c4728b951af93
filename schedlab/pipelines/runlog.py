"""What a pipeline run cost, and where it ran: one JSON line per invocation.

A paper-scale pipeline may run for hours across sessions and machines,
resuming each time (rows on disk are never recomputed), so its cost is the
sum over invocations, not the wall of the last one. `run_pipeline` appends
one record per invocation to ``OUT/runs.jsonl``: when it started, its wall
and CPU seconds (the driver's own and its waited-for children's; Ray's
workers are not children, so the simulations' own time is summed from the
rows' ``sim_seconds`` when a page is drawn), rows new and resumed, failures,
the scale and overrides, the command line, the commit and the machine. The
reproduction pages (`pages`) read it back.

Paper-scale runs span sessions, and a session ends its processes with
SIGTERM, or worse. SIGTERM is handled as Ctrl-C while the invocation runs
(`platform.execution.interrupts`): its rows so far are committed and its
record says ``interrupted`` and ``ended_by``. Against SIGKILL and power loss,
the invocation keeps an open record (`OPEN_FILE`: started, command, commit,
machine, the rows on disk in its sweeps at its start) with a heartbeat
refreshed from the progress path (`Invocation.beat`); `finish` replaces it by
the line. The next invocation into the dir finds an open record whose
process is gone (the dir's lock, `LOCK_FILE`, is free) and appends it first
(`settle_killed`): ``ended_by`` "unknown (no end recorded)", its wall and
driver CPU up to its last heartbeat (``wall_is_lower_bound``), its rows new
counted on disk. Two invocations into one dir at once: the second stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

RUNS_FILE = "runs.jsonl"
#: The record of the invocation running now, rewritten at each heartbeat and replaced by its line in
#: `RUNS_FILE` when it ends; one left behind is a run killed outright (SIGKILL, power loss): `settle_killed`.
OPEN_FILE = "runs.open.json"
#: Locked (flock) by the invocation running: a second one into the same dir stops (`hold`).
LOCK_FILE = "runs.lock"
#: The open record's heartbeat: at most this often in a long run ...
HEARTBEAT_SECONDS = 60.0
#: ... and, younger, after each doubling of the run's age from this: a run killed in its first minute
#: is recorded with at least half its wall.
FIRST_HEARTBEAT_SECONDS = 1.0
#: What a killed invocation's record says ended it.
NO_END = "unknown (no end recorded)"


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def commit_of(where: Path) -> str | None:
    """The git commit of the checkout holding ``where`` (with ``+dirty`` when it
    has uncommitted changes to tracked files), or None outside a checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def _is_cli(argv0: str) -> bool:
    """Whether this process is the ``schedlab`` command (the script, or ``python -m schedlab.cli``)."""
    path = Path(argv0)
    return path.name == "schedlab" or path.parts[-3:] == ("schedlab", "cli", "__main__.py")


def machine() -> dict[str, Any]:
    """Cores, memory, processor model, OS and Python of this machine."""
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "cores": os.cpu_count(),
        "memory_bytes": mem,
        "processor": model or platform.processor() or None,
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
    }


def rows_on_disk(results_dir: Path) -> int:
    """Summary rows committed in a results dir (0 when it has none yet)."""
    import polars as pl

    from schedlab import load
    from schedlab.platform.storage.seam import is_results_dir

    if not is_results_dir(results_dir):
        return 0
    try:
        return int(load(results_dir).select(pl.len()).collect().item())
    except Exception:  # noqa: BLE001 - a count for the record, never a reason to fail
        return 0


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _write_durably(path: Path, text: str) -> None:
    """``path`` replaced by ``text`` whole (a temporary file, flushed to disk, renamed over it)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _append(out_dir: Path, record: dict[str, Any]) -> None:
    with open(out_dir / RUNS_FILE, "a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")


@dataclass
class Invocation:
    """One `run_pipeline` call, started now: `open` takes the output dir and
    writes its open record, `beat` refreshes it, `finish` appends its record."""

    out_dir: Path
    scale: str
    overrides: dict[str, Any]
    started_wall: float
    started_mono: float
    started_cpu: float
    #: The output dir's lock while this invocation holds it (`open` .. `finish`).
    lock: IO[str] | None = None
    #: The open record (`OPEN_FILE`) as last written, and when (monotonic).
    open_record: dict[str, Any] = field(default_factory=dict)
    last_beat: float = 0.0

    @classmethod
    def start(cls, out_dir: Path, scale: str, overrides: dict[str, Any] | None) -> Invocation:
        return cls(Path(out_dir), scale, dict(overrides or {}), time.time(), time.monotonic(), cpu_seconds())

    def _provenance(self) -> dict[str, Any]:
        import schedlab

        return {
            "started": _utc(self.started_wall),
            "scale": self.scale,
            "overrides": self.overrides,
            "command": " ".join(["schedlab", *sys.argv[1:]]) if _is_cli(sys.argv[0]) else None,
            "cwd": os.getcwd(),
            "schedlab_version": schedlab.__version__,
            "commit": commit_of(Path(schedlab.__file__).parent),
            "machine": machine(),
        }

    def open(self, results_dirs: list[Path]) -> int:
        """Take the output dir (`LOCK_FILE`; UserError, exit 2, when another
        invocation holds it), settle the open record of one that was killed
        (`settle_killed`), then write this one's: its provenance, the sweeps
        it runs and the rows on disk in them now, which it returns."""
        self.lock = hold(self.out_dir)
        try:
            settle_killed(self.out_dir)
            sweeps = sorted({Path(d).name for d in results_dirs})
            before = sum(rows_on_disk(self.out_dir / s) for s in sweeps)
        except BaseException:
            self.lock.close()
            self.lock = None
            raise
        self.open_record = {
            "id": uuid.uuid4().hex,
            "pid": os.getpid(),
            "started_unix": self.started_wall,
            "sweeps": sweeps,
            "rows_on_disk_at_start": before,
            **self._provenance(),
        }
        self.beat(force=True)
        return before

    def beat(self, force: bool = False) -> None:
        """Refresh the open record's heartbeat (its wall and driver CPU so far),
        when due: after each doubling of the run's age from
        `FIRST_HEARTBEAT_SECONDS`, then every `HEARTBEAT_SECONDS` -- a clock
        read per call, a small file rewritten at most once a minute in a long
        run. A failed write is ignored: the heartbeat is a record, never a
        reason to stop."""
        if not self.open_record:
            return
        now = time.monotonic()
        age = self.last_beat - self.started_mono
        if not force and now - self.last_beat < min(HEARTBEAT_SECONDS, max(FIRST_HEARTBEAT_SECONDS, age)):
            return
        self.last_beat = now
        self.open_record.update(
            heartbeat=_utc(time.time()),
            wall_seconds=round(now - self.started_mono, 3),
            driver_cpu_seconds=round(cpu_seconds() - self.started_cpu, 3),
        )
        with contextlib.suppress(OSError):
            _write_durably(self.out_dir / OPEN_FILE, json.dumps(self.open_record, sort_keys=True) + "\n")

    def finish(
        self,
        rows_new: int,
        rows_resumed: int,
        failures: int,
        interrupted: bool = False,
        ended_by: str | None = None,
    ) -> dict[str, Any]:
        """Append this invocation's record to ``OUT/runs.jsonl``, remove its
        open record, release the output dir, and return the record
        (``interrupted``: a run cut short, whose rows so far are committed:
        its cost counts too; ``ended_by``: by what -- "SIGINT" (Ctrl-C),
        "SIGTERM", or the error's type). Ctrl-C and SIGTERM are held back
        while it writes: the record is written whole, once."""
        from schedlab.platform.execution.interrupts import held_back

        record = {
            "wall_seconds": round(time.monotonic() - self.started_mono, 3),
            "driver_cpu_seconds": round(cpu_seconds() - self.started_cpu, 3),
            "rows_new": rows_new,
            "rows_resumed": rows_resumed,
            "failures": failures,
            **({"interrupted": True} if interrupted else {}),
            **({"ended_by": ended_by} if interrupted and ended_by else {}),
            **({"id": self.open_record["id"]} if self.open_record else {}),
            **self._provenance(),
        }
        with held_back():
            _append(self.out_dir, record)
            if self.open_record:
                with contextlib.suppress(FileNotFoundError):
                    (self.out_dir / OPEN_FILE).unlink()
                self.open_record = {}
            if self.lock is not None:
                self.lock.close()  # the lock goes with the file's last descriptor
                self.lock = None
        return record


def hold(out_dir: Path) -> IO[str]:
    """The output dir's lock (`LOCK_FILE`, an exclusive flock, released by the
    kernel when the process ends however it ends), or UserError naming the
    invocation that holds it."""
    import fcntl

    from schedlab.errors import UserError

    fh = open(Path(out_dir) / LOCK_FILE, "a")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        other = _read_open(Path(out_dir))
        who = f"PID {other.get('pid', '?')}, started {other.get('started', '?')}" if other else "starting"
        raise UserError(
            f"{out_dir}: another `schedlab pipelines run` is writing here ({who}); wait for it to end, "
            "or end it (its rows so far stay, and this command then resumes them)"
        ) from None
    return fh


def _read_open(out_dir: Path) -> dict[str, Any] | None:
    """The open record in ``out_dir`` (None if none); UserError if it cannot be read."""
    from schedlab.errors import UserError

    path = out_dir / OPEN_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        record = json.loads(text)
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
    except ValueError as err:
        raise UserError(
            f"{path}: not an open run record ({err}); remove it to go on (the run it stood for is then not counted)"
        ) from None
    return record


def killed_record(out_dir: Path) -> dict[str, Any] | None:
    """The record of an invocation that never finished (SIGKILL, power loss),
    from its open record (None if there is none, or if its line is already in
    ``OUT/runs.jsonl``: killed between the two writes of `Invocation.finish`).
    The caller knows its process is gone (it holds the dir's lock). Its wall
    and driver CPU are those of its last heartbeat, lower bounds
    (``wall_is_lower_bound``); its rows new are the rows on disk now, in the
    sweeps it ran, less those at its start: nothing has run since."""
    out_dir = Path(out_dir)
    found = _read_open(out_dir)
    if found is None or found.get("id") in {r.get("id") for r in read_runs(out_dir)}:
        return None
    before = int(found.get("rows_on_disk_at_start", 0))
    now = sum(rows_on_disk(out_dir / s) for s in found.get("sweeps", []))
    keep = ("started", "scale", "overrides", "command", "cwd", "schedlab_version", "commit", "machine", "id")
    return {
        **{k: found[k] for k in keep if k in found},
        "wall_seconds": found.get("wall_seconds", 0.0),
        "wall_is_lower_bound": True,
        "driver_cpu_seconds": found.get("driver_cpu_seconds", 0.0),
        "driver_cpu_is_lower_bound": True,
        "last_heartbeat": found.get("heartbeat"),
        "rows_new": max(0, now - before),
        "rows_resumed": before,
        "interrupted": True,
        "ended_by": NO_END,
    }


def settle_killed(out_dir: Path) -> dict[str, Any] | None:
    """A killed invocation's record (`killed_record`) appended to
    ``OUT/runs.jsonl`` and its open record removed (the caller holds the dir's
    lock); returns the record appended (None if none was)."""
    out_dir = Path(out_dir)
    if not (out_dir / OPEN_FILE).exists():
        return None
    record = killed_record(out_dir)
    if record is not None:
        _append(out_dir, record)
    (out_dir / OPEN_FILE).unlink()
    return record


def unsettled(out_dir: Path) -> dict[str, Any] | None:
    """The record a killed invocation will get when the next one starts
    (`killed_record`), for a reader (the pages) that writes nothing; None when
    there is none or an invocation is running there now."""
    from schedlab.errors import UserError

    if not (Path(out_dir) / OPEN_FILE).exists():
        return None
    try:
        lock = hold(out_dir)
    except UserError:
        return None  # a run in progress: its record is its own to write
    with lock:
        return killed_record(out_dir)


def settle_if_idle(out_dir: Path) -> None:
    """`settle_killed` when no invocation holds the output dir (a run that
    only writes its report: ``--report-only``); nothing when one does."""
    from schedlab.errors import UserError

    if not (Path(out_dir) / OPEN_FILE).exists():
        return
    try:
        lock = hold(out_dir)
    except UserError:
        return  # a run in progress: its record is its own to write
    with lock:
        settle_killed(out_dir)


def read_runs(out_dir: Path) -> list[dict[str, Any]]:
    """The invocations recorded in ``OUT/runs.jsonl``, oldest first ([] if none)."""
    path = Path(out_dir) / RUNS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
