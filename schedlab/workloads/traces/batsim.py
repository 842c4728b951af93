"""Batsim workload JSON reader (and writer, for round trips and for feeding
Batsim the jobs a sweep replays).

Batsim (https://batsim.readthedocs.io, "Workloads") describes a workload as
one JSON object::

    {"nb_res": 16,
     "jobs": [{"id": "1", "subtime": 0, "walltime": 100, "res": 4, "profile": "p1"}, ...],
     "profiles": {"p1": {"type": "delay", "delay": 42.5}, ...}}

Output columns (rows by submit time, stable):

==============  =======  ===================================================
job_id          Int64    the job's ``id`` (an integer, or ``workload!int``)
submit          Float64  ``subtime``, seconds
runtime         Float64  the profile's time on a dedicated machine (below)
requested_time  Float64  ``walltime`` (a job without one, or -1: its runtime)
procs           Int64    ``res``
profile         String   the profile's name
==============  =======  ===================================================

Profiles, and the runtime each gives:

* ``delay``: ``delay`` seconds, exactly (the usual replay profile);
* ``parallel`` (``cpu``: flops per host, ``com``: a host x host byte
  matrix) and ``parallel_homogeneous`` (``cpu`` flops on every host, ``com``
  bytes to every other host): with the reader options ``speed`` (flops/s of
  a host) and ``bandwidth`` (bytes/s of a host's link), the time of the
  busiest host or link alone, max(max cpu / speed, max bytes through one
  host's link / bandwidth) -- a lower bound of SimGrid's parallel-task time,
  exact when one of them is the bottleneck (not SimGrid's model: say so when
  it matters). Without ``speed`` such a profile is an error naming it;
* ``composed`` (``seq``: profile names, ``repeat``: times, default 1): the
  sum of its parts, ``repeat`` times.

Any other type (e.g. ``smpi``, ``usage_trace``) is an error naming the file
and the profile. ``meta["machine_procs"]`` is ``nb_res`` (the batch engine's
machine size with ``procs = 0``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from schedlab.errors import UserError
from schedlab.workloads.traces.base import Trace, merge_options, read_file_trace

NAME = "batsim"
VERSION = 1
DEFAULTS: dict[str, Any] = {"speed": None, "bandwidth": None}


def read(path: str | Path, *, on_bad_line: str = "error", use_cache: bool = True, **options: Any) -> Trace:
    """Parse a Batsim workload JSON; see the module docstring."""
    opts = merge_options(NAME, DEFAULTS, options)
    for key in ("speed", "bandwidth"):
        v = opts[key]
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0):
            raise UserError(f"{key}: must be a number > 0; got {v!r}")
    return read_file_trace(NAME, VERSION, path, on_bad_line, use_cache, opts, _parse)


def _job_id(raw: Any, where: str) -> int:
    text = str(raw).rsplit("!", 1)[-1]
    try:
        return int(text)
    except ValueError:
        raise UserError(f"{where}: id {raw!r} is not an integer (or workload!integer)") from None


class _Profiles:
    """Runtimes of the named profiles (composed ones resolved, cycles refused)."""

    def __init__(self, profiles: dict[str, Any], opts: dict[str, Any], where: str) -> None:
        self.profiles, self.opts, self.where = profiles, opts, where
        self.memo: dict[str, float] = {}

    def runtime(self, name: str, res: int, stack: tuple[str, ...] = ()) -> float:
        key = f"{name}@{res}"
        if key in self.memo:
            return self.memo[key]
        at = f"{self.where}: profiles.{name}"
        if name in stack:
            raise UserError(f"{at}: composed profiles form a cycle ({' -> '.join((*stack, name))})")
        prof = self.profiles.get(name)
        if not isinstance(prof, dict):
            raise UserError(f"{at}: no such profile")
        kind = prof.get("type")
        if kind == "delay":
            value = _number(prof.get("delay"), f"{at}.delay")
        elif kind in ("parallel", "parallel_homogeneous"):
            value = self._ptask(prof, kind, res, at)
        elif kind == "composed":
            seq = prof.get("seq")
            if not isinstance(seq, list) or not seq:
                raise UserError(f"{at}.seq: a non-empty list of profile names is required")
            repeat = prof.get("repeat", prof.get("nb", 1))
            if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
                raise UserError(f"{at}.repeat: must be an integer >= 1; got {repeat!r}")
            value = repeat * sum(self.runtime(str(p), res, (*stack, name)) for p in seq)
        else:
            raise UserError(
                f"{at}: profile type {kind!r} is not supported (delay, parallel, parallel_homogeneous, composed)"
            )
        self.memo[key] = value
        return value

    def _ptask(self, prof: dict[str, Any], kind: str, res: int, at: str) -> float:
        speed, bandwidth = self.opts["speed"], self.opts["bandwidth"]
        if speed is None:
            raise UserError(f"{at}: a {kind} profile needs the reader option speed (flops/s per host)")
        if kind == "parallel_homogeneous":
            cpu = _number(prof.get("cpu"), f"{at}.cpu")
            com = _number(prof.get("com", 0.0), f"{at}.com")
            compute, link = cpu / speed, com * max(res - 1, 0)
        else:
            cpu_l = prof.get("cpu")
            com_l = prof.get("com", [])
            if not isinstance(cpu_l, list) or not cpu_l:
                raise UserError(f"{at}.cpu: a list of flops per host is required")
            cpu_a = np.asarray([_number(x, f"{at}.cpu") for x in cpu_l], dtype=float)
            compute = float(cpu_a.max()) / speed
            n = len(cpu_a)
            com_a = np.asarray(com_l, dtype=float).reshape(n, n) if com_l else np.zeros((n, n))
            link = float(max((com_a.sum(axis=1) + com_a.sum(axis=0) - 2 * np.diag(com_a)).max(), 0.0))
        if link > 0 and bandwidth is None:
            raise UserError(f"{at}: a {kind} profile that communicates needs the reader option bandwidth (bytes/s)")
        return max(compute, link / bandwidth if link > 0 else 0.0)


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise UserError(f"{where}: must be a finite number >= 0; got {v!r}")
    return float(v)


def _parse(p: Path, on_bad_line: str, opts: dict[str, Any], all_opts: dict[str, Any]) -> Trace:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise UserError(f"{p}:{err.lineno}: not valid JSON: {err.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise UserError(f"{p}: a Batsim workload is an object with a 'jobs' list")
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        raise UserError(f"{p}: profiles: must be an object of named profiles")
    resolver = _Profiles(profiles, opts, str(p))
    ids, submit, runtime, walltime, procs, names = [], [], [], [], [], []
    seen: dict[int, int] = {}
    skipped = 0
    for k, job in enumerate(data["jobs"]):
        at = f"{p}: jobs[{k}]"
        try:
            if not isinstance(job, dict):
                raise UserError(f"{at}: must be an object")
            for key in ("id", "subtime", "res", "profile"):
                if key not in job:
                    raise UserError(f"{at}.{key}: required field is missing")
            jid = _job_id(job["id"], f"{at}.id")
            if jid in seen:
                raise UserError(f"{at}.id: {jid} repeats jobs[{seen[jid]}]")
            res = job["res"]
            if isinstance(res, bool) or not isinstance(res, int) or res < 1:
                raise UserError(f"{at}.res: must be an integer >= 1; got {res!r}")
            sub = _number(job["subtime"], f"{at}.subtime")
            run = resolver.runtime(str(job["profile"]), res)
            wall = job.get("walltime", -1)
            wall = run if wall is None or wall == -1 else _number(wall, f"{at}.walltime")
        except UserError:
            if on_bad_line == "skip":
                skipped += 1
                continue
            raise
        seen[jid] = k
        ids.append(jid)
        submit.append(sub)
        runtime.append(run)
        walltime.append(wall if wall > 0 else run)
        procs.append(res)
        names.append(str(job["profile"]))
    if not ids:
        raise UserError(f"{p}: no valid job")
    order = np.argsort(np.asarray(submit, dtype=float), kind="stable")
    jobs = pl.DataFrame(
        [
            pl.Series("job_id", np.asarray(ids, dtype=np.int64)[order], dtype=pl.Int64),
            pl.Series("submit", np.asarray(submit, dtype=float)[order], dtype=pl.Float64),
            pl.Series("runtime", np.asarray(runtime, dtype=float)[order], dtype=pl.Float64),
            pl.Series("requested_time", np.asarray(walltime, dtype=float)[order], dtype=pl.Float64),
            pl.Series("procs", np.asarray(procs, dtype=np.int64)[order], dtype=pl.Int64),
            pl.Series("profile", np.asarray(names, dtype=object)[order].tolist(), dtype=pl.String),
        ]
    )
    nb_res = data.get("nb_res")
    meta: dict[str, Any] = {
        "reader": NAME,
        "version": VERSION,
        "source": str(p),
        "options": all_opts,
        "format": "Batsim workload JSON",
        "machine_procs": int(nb_res) if isinstance(nb_res, int) and not isinstance(nb_res, bool) else None,
    }
    counts = {"jobs": len(ids), "skipped_bad_lines": skipped, "profiles": len(profiles)}
    return Trace(jobs, meta, counts)


def write_workload(jobs: pl.DataFrame, path: str | Path, nb_res: int) -> Path:
    """A job table (job_id, submit, runtime, procs[, requested_time]) as a
    Batsim workload JSON: one ``delay`` profile per job (``p<job_id>``), so
    Batsim replays each job's runtime exactly; ``read`` gives the table back."""
    path = Path(path)
    req = jobs["requested_time"].to_list() if "requested_time" in jobs.columns else [-1] * jobs.height
    out_jobs, profiles = [], {}
    for jid, sub, run, res, wall in zip(
        jobs["job_id"].to_list(), jobs["submit"].to_list(), jobs["runtime"].to_list(), jobs["procs"].to_list(), req
    ):
        name = f"p{jid}"
        out_jobs.append({"id": str(jid), "subtime": sub, "walltime": wall, "res": int(res), "profile": name})
        profiles[name] = {"type": "delay", "delay": run}
    path.write_text(json.dumps({"nb_res": int(nb_res), "jobs": out_jobs, "profiles": profiles}, indent=1))
    return path
