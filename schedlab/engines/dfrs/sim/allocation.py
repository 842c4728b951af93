"""The DFRS resource allocation (§4.6): the yields of the running jobs
from the overloaded nodes' incidence matrix -- max-min fair (OPT=MIN,
progressive filling, compiled) or the sum of yields maximised by an LP
(OPT=AVG, HiGHS). Split from the event loop because it is a pure function of
the mapping, which the /stretch-per policies' own ``allocate`` also builds on
(``running_incidence``)."""

from __future__ import annotations

import numpy as np

from schedlab.engines.dfrs.sim.state import DfrsState

_LOAD_EPS = 1e-12


def max_min_yields(A: np.ndarray) -> np.ndarray:
    """Progressive filling: the max-min fair y in [0, 1] with A y <= 1.
    Compiled (``schedlab.engines.dfrs.sim.fast.max_min_kernel``, bit-identical to
    :func:`max_min_yields_numpy`, which runs when the kernel cannot reach
    numpy's BLAS)."""
    from schedlab.engines.dfrs.sim.fast import blas_functions, max_min_kernel

    blas = blas_functions()
    if blas is None:
        return max_min_yields_numpy(A)
    return max_min_kernel(A, blas[0], blas[1], blas[2], _LOAD_EPS)


def max_min_yields_numpy(A: np.ndarray) -> np.ndarray:
    """:func:`max_min_yields` in numpy: the definition the kernel reproduces."""
    K, J = A.shape
    y = np.zeros(J)
    active = np.ones(J, dtype=bool)
    while active.any():
        act_load = A[:, active].sum(axis=1)
        used = A[:, ~active] @ y[~active]
        with np.errstate(divide="ignore", invalid="ignore"):
            lev = np.where(act_load > _LOAD_EPS, (1.0 - used) / act_load, np.inf)
        level = min(float(lev.min()) if K else np.inf, 1.0)
        level = max(level, 0.0)
        y[active] = level
        if level >= 1.0:
            break
        sat = lev <= level * (1.0 + 1e-12) + 1e-15
        freeze = active & (A[sat].sum(axis=0) > 0)
        active &= ~freeze
    return y


def running_incidence(state: DfrsState, jobs: list[int], over: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hit, A) for the running ``jobs`` (sorted) and the overloaded nodes
    ``over``: the jobs with a task on an overloaded node, in order (an int64
    array), and their incidence matrix A[r, i] = c_j x (tasks of job hit[i] on node
    over[r]), summed task by task -- in one compiled pass
    (``schedlab.engines.dfrs.sim.fast.hit_incidence_kernel``)."""
    from schedlab.engines.dfrs.sim.fast import hit_incidence_kernel

    row_of = np.full(state.nodes, -1, dtype=np.int64)
    row_of[over] = np.arange(len(over))
    wh = [state.nodes_of(j) for j in jobs]
    ptr = np.zeros(len(jobs) + 1, dtype=np.int64)
    np.cumsum([len(w) for w in wh], out=ptr[1:])
    jarr = np.asarray(jobs, dtype=np.int64)
    idx, A = hit_incidence_kernel(
        row_of, len(over), np.concatenate(wh).astype(np.int64, copy=False), ptr, state.cpu_arr[jarr]
    )
    return jarr[idx], A


def allocate(state: DfrsState, opt: str) -> int:
    """Set ``state.y`` for the running jobs; returns 1 if the LP failed (AVG)."""
    jobs = sorted(state.running)
    if not jobs:
        return 0
    over = np.flatnonzero(state.load > 1.0 + _LOAD_EPS)
    jarr = np.asarray(jobs)
    if not len(over):
        state.y[jarr] = 1.0
        return 0
    hit, A = running_incidence(state, jobs, over)
    state.y[jarr] = 1.0
    y = max_min_yields(A)
    failed = 0
    if opt == "AVG":
        # scipy's HiGHS only here: importing the engine (and with it the registry every command
        # loads) must not pay for scipy.optimize, 0.35 s of a 0.45 s registry import
        from scipy.optimize import linprog

        floor = 1.0 / max(1.0, float(state.load.max()))
        floor = min(floor, float(y.min()))  # guard: never above the proven-feasible max-min values
        res = linprog(-np.ones(len(hit)), A_ub=A, b_ub=np.ones(len(over)), bounds=(floor, 1.0), method="highs")
        if res.status == 0 and res.x is not None:
            y = np.clip(res.x, 0.0, 1.0)
        else:
            failed = 1
    if state.cpu_units == "percent":
        need = state.cpu_arr[hit]
        y = percent_max_min(A, need) if opt == "MIN" and not failed else percent_yields(y, need, level_step=False)
    state.y[hit] = y
    return failed


def percent_max_min(A: np.ndarray, need: np.ndarray) -> np.ndarray:
    """``[system] cpu_units = "percent"``, OPT=MIN: progressive filling in
    whole percents, as the authors' simulator computes it (docs/dfrs.md rows
    1 and 9). ``A``: the overloaded nodes' incidence (need x tasks per node),
    ``need``: the jobs' CPU needs; both in integer percent after rounding.
    At each step every open node offers the level
    ``floor(100 (100 - load) / remaining need) / 100`` (at most 1), the
    lowest level fixes the jobs on the nodes offering it at
    ``max(1, int(level x need%))`` percent, whose CPU then counts as load --
    so a later level uses what the earlier floors left (the exact max-min
    floored afterwards would not). The float products are those of that
    simulator (``int(0.29 * 100)`` is 28 there too). Returns the yields
    CPU / need."""
    pct = np.rint(100.0 * need).astype(np.int64)
    counts = np.rint(A / need).astype(np.int64)  # tasks of job i on overloaded node r
    rows, jobs = counts.shape
    needs = (counts * pct).sum(axis=1)
    loads = np.zeros(rows, dtype=np.int64)
    cpu = np.zeros(jobs, dtype=np.int64)
    active = np.ones(jobs, dtype=bool)
    open_rows = np.ones(rows, dtype=bool)
    while active.any():
        open_rows &= needs > 0
        levels = {
            r: min(1.0, float((100 * (100 - int(loads[r]))) // int(needs[r])) / 100) for r in np.flatnonzero(open_rows)
        }
        level = min(levels.values())
        filled = [r for r, v in levels.items() if v == level]
        bound = np.flatnonzero(active & (counts[filled].sum(axis=0) > 0))
        for i in bound:
            cpu[i] = max(1, int(level * int(pct[i])))
            loads += cpu[i] * counts[:, i]
            needs -= pct[i] * counts[:, i]
        open_rows[filled] = False
        active[bound] = False
    return np.minimum(cpu / pct, 1.0)


PERCENT_EPS = 1e-9  # a yield within this of a percent step counts as on it (floats of 0.66 may read 0.6599...)


def percent_yields(y: np.ndarray, need: np.ndarray, *, level_step: bool) -> np.ndarray:
    """``[system] cpu_units = "percent"`` for OPT=AVG (and a failed LP): the
    allocation in whole percents of a node, as the authors' simulator
    truncates its LP's values (docs/dfrs.md row 10): a job of CPU need c
    (``round(100 c)`` percent) gets ``max(1, floor(y x 100 c))`` percent,
    i.e. yield ``max(1, floor(y 100 c)) / (100 c)`` -- never more than y, so
    every node stays within its CPU. ``level_step`` first floors y to 0.01
    (a level). OPT=MIN uses :func:`percent_max_min`, which floors at each
    filling step as that simulator does."""
    pct = np.rint(100.0 * need)
    if level_step:
        y = np.floor(100.0 * y + PERCENT_EPS) / 100.0
    cpu = np.maximum(1.0, np.floor(y * pct + PERCENT_EPS))
    return np.minimum(cpu / pct, 1.0)
