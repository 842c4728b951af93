"""Normalised underutilization of a schedule (DFRS paper, Stillwell, Vivien,
Casanova, TPDS 2012, §5.3.1): how much CPU the cluster left idle while jobs
were waiting for it, as a fraction of the work.

With D(t) the total CPU demand (sum over submitted-but-not-completed jobs of
c_j |T_j|) and u(t) the total allocated CPU::

    underutilization = integral of min(|P|, D(t)) - u(t) dt

The paper normalises it "as a fraction of the total resources required to
execute the workload", i.e. divided by sum_j c_j |T_j| p_j (CPU-seconds, the
same unit as the integral). See ``normalized_underutilization`` for the two
accepted schedule formats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Tolerance of the profile checks and of rounding a demand/allocation to 0.
_UTIL_TOL = 1e-9


@dataclass(frozen=True)
class UsageProfile:
    """Piecewise-constant CPU demand and allocation.

    ``times`` has K+1 strictly increasing break points; ``demand[k]`` = D(t)
    and ``allocated[k]`` = u(t) on [times[k], times[k+1]) (both in node-CPU
    units: a task of need c running at full speed allocates c). Outside
    [times[0], times[-1]) both are 0.
    """

    times: np.ndarray
    demand: np.ndarray
    allocated: np.ndarray

    def __post_init__(self) -> None:
        t = np.asarray(self.times, dtype=float)
        dm = np.asarray(self.demand, dtype=float)
        al = np.asarray(self.allocated, dtype=float)
        if t.ndim != 1 or len(t) < 1:
            raise ValueError("times must be a 1-D array with at least one break point")
        if dm.shape != (len(t) - 1,) or al.shape != (len(t) - 1,):
            raise ValueError("demand and allocated must have len(times) - 1 entries")
        if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
            raise ValueError("times must be finite and strictly increasing")
        if np.any(dm < -_UTIL_TOL) or np.any(al < -_UTIL_TOL):
            raise ValueError("demand and allocated must be >= 0")
        object.__setattr__(self, "times", t)
        object.__setattr__(self, "demand", dm)
        object.__setattr__(self, "allocated", al)


def batch_usage_profile(submit: Any, start: Any, end: Any, tasks: Any, cpu_need: Any) -> UsageProfile:
    """Profile of a batch schedule from per-job (submit, start, end, tasks, cpu_need).

    Demand of job j is cpu_need_j * tasks_j on [submit_j, end_j); a running
    job (on [start_j, end_j)) is allocated min(cpu_need_j, 1) * tasks_j.
    """
    s = np.asarray(submit, dtype=float).ravel()
    b = np.asarray(start, dtype=float).ravel()
    e = np.asarray(end, dtype=float).ravel()
    k = np.asarray(tasks, dtype=float).ravel()
    c = np.asarray(cpu_need, dtype=float).ravel()
    if not (len(s) == len(b) == len(e) == len(k) == len(c)):
        raise ValueError("submit, start, end, tasks and cpu_need must have the same length")
    if len(s) == 0:
        return UsageProfile(np.zeros(1), np.zeros(0), np.zeros(0))
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(b)) and np.all(np.isfinite(e))):
        raise ValueError("submit, start and end must be finite")
    if np.any(b < s) or np.any(e < b):
        raise ValueError("need submit <= start <= end for every job")
    if np.any(k < 0) or np.any(c < 0):
        raise ValueError("tasks and cpu_need must be >= 0")
    need = c * k
    used = np.minimum(c, 1.0) * k
    # times = np.unique(s, b, e) and each value's index in it (what
    # np.searchsorted(times, x) gives), from one stable argsort: submits are
    # sorted in a trace and starts nearly so, runs a stable sort exploits
    # (several times faster than np.unique + four searchsorted on a log).
    n = len(s)
    allt = np.concatenate((s, b, e))
    perm = np.argsort(allt, kind="stable")
    ordered = allt[perm]
    first = np.empty(len(ordered), dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    times = ordered[first]
    index = np.empty(len(ordered), dtype=np.intp)
    index[perm] = np.cumsum(first) - 1
    i_s, i_b, i_e = index[:n], index[n : 2 * n], index[2 * n :]
    dd = np.zeros(len(times))
    du = np.zeros(len(times))
    np.add.at(dd, i_s, need)
    np.add.at(dd, i_e, -need)
    np.add.at(du, i_b, used)
    np.add.at(du, i_e, -used)
    demand = np.cumsum(dd)[:-1]
    allocated = np.cumsum(du)[:-1]
    # Remove cumulative round-off (exact zeros where nothing is pending).
    demand[np.abs(demand) < _UTIL_TOL * max(1.0, float(need.max()))] = 0.0
    allocated[np.abs(allocated) < _UTIL_TOL * max(1.0, float(used.max()))] = 0.0
    return UsageProfile(times, demand, allocated)


def underutilization(profile: UsageProfile, nodes: float) -> float:
    """integral of min(|P|, D(t)) - u(t) dt (§5.3.1), in node-CPU seconds.

    Raises ValueError if the allocation exceeds min(|P|, D) anywhere (the paper
    notes u <= |P| and u <= D for a valid schedule).
    """
    if not (np.isfinite(nodes) and nodes > 0):
        raise ValueError(f"nodes must be > 0, got {nodes}")
    cap = np.minimum(float(nodes), profile.demand)
    gap = cap - profile.allocated
    scale = max(1.0, float(nodes))
    if np.any(gap < -1e-7 * scale):
        k = int(np.argmin(gap))
        raise ValueError(
            f"allocation {profile.allocated[k]} exceeds min(|P|, D) = {cap[k]} on "
            f"[{profile.times[k]}, {profile.times[k + 1]})"
        )
    return float(np.sum(np.maximum(gap, 0.0) * np.diff(profile.times)))


def _column(jobs: Any, name: str) -> np.ndarray:
    try:
        col = jobs[name]
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"jobs has no column {name!r}") from exc
    if hasattr(col, "to_numpy"):
        col = col.to_numpy()
    return np.asarray(col, dtype=float)


def normalized_underutilization(
    nodes: float,
    *,
    jobs: Any = None,
    profile: UsageProfile | Sequence[Any] | None = None,
    total_work: float | None = None,
) -> float:
    """Underutilization (§5.3.1) divided by the total resources required to
    execute the workload, sum_j c_j |T_j| p_j (node-CPU seconds).

    Give exactly one schedule:

    * ``jobs``: a batch schedule, any object indexable by column name (dict of
      arrays, polars DataFrame) with columns ``submit``, ``start``, ``end``,
      ``tasks``, ``cpu_need``; see ``batch_usage_profile``. ``total_work``
      defaults to sum min(cpu_need, 1) * tasks * (end - start) (a batch job
      runs at full speed, so end - start = p_j).
    * ``profile``: a ``UsageProfile`` or a (times, demand, allocated) triple
      of piecewise-constant values (e.g. from a DFRS simulation). ``total_work``
      = sum_j c_j |T_j| p_j is then required (the allocation integral can
      contain wasted time, e.g. preemption penalties).
    """
    if (jobs is None) == (profile is None):
        raise ValueError("give exactly one of jobs= or profile=")
    if jobs is not None:
        cols = {n: _column(jobs, n) for n in ("submit", "start", "end", "tasks", "cpu_need")}
        prof = batch_usage_profile(**cols)
        if total_work is None:
            total_work = float(
                np.sum(np.minimum(cols["cpu_need"], 1.0) * cols["tasks"] * (cols["end"] - cols["start"]))
            )
    else:
        assert profile is not None  # exactly one of jobs / profile, checked above
        prof = profile if isinstance(profile, UsageProfile) else UsageProfile(*profile)
        if total_work is None:
            raise ValueError("total_work (sum of c_j |T_j| p_j) is required with profile=")
    if not (np.isfinite(total_work) and total_work > 0):
        raise ValueError(f"total_work must be > 0, got {total_work}")
    return underutilization(prof, nodes) / float(total_work)
