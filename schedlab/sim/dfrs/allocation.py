"""The DFRS resource allocation (§4.6): the yields of the running jobs
from the overloaded nodes' incidence matrix -- max-min fair (OPT=MIN,
progressive filling, compiled) or the sum of yields maximised by an LP
(OPT=AVG, HiGHS). Split from the event loop because it is a pure function of
the mapping, which the /stretch-per policies' own ``allocate`` also builds on
(``running_incidence``)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from schedlab.sim.dfrs.state import DfrsState

_LOAD_EPS = 1e-12


def max_min_yields(A: np.ndarray) -> np.ndarray:
    """Progressive filling: the max-min fair y in [0, 1] with A y <= 1.
    Compiled (``schedlab.sim.dfrs.fast.max_min_kernel``, bit-identical to
    :func:`max_min_yields_numpy`, which runs when the kernel cannot reach
    numpy's BLAS)."""
    from schedlab.sim.dfrs.fast import blas_functions, max_min_kernel

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
    (``schedlab.sim.dfrs.fast.hit_incidence_kernel``)."""
    from schedlab.sim.dfrs.fast import hit_incidence_kernel

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
        floor = 1.0 / max(1.0, float(state.load.max()))
        floor = min(floor, float(y.min()))  # guard: never above the proven-feasible max-min values
        res = linprog(-np.ones(len(hit)), A_ub=A, b_ub=np.ones(len(over)), bounds=(floor, 1.0), method="highs")
        if res.status == 0 and res.x is not None:
            y = np.clip(res.x, 0.0, 1.0)
        else:
            failed = 1
    if state.cpu_units == "percent":
        y = percent_yields(y, state.cpu_arr[hit], level_step=opt == "MIN")
    state.y[hit] = y
    return failed


PERCENT_EPS = 1e-9  # a yield within this of a percent step counts as on it (floats of 0.66 may read 0.6599...)


def percent_yields(y: np.ndarray, need: np.ndarray, *, level_step: bool) -> np.ndarray:
    """``[system] cpu_units = "percent"``: the allocation in whole percents of
    a node, as the authors' simulator gives it (docs/dfrs.md row 1): a job of
    CPU need c (``round(100 c)`` percent) gets ``max(1, floor(y x 100 c))``
    percent, i.e. yield ``max(1, floor(y 100 c)) / (100 c)`` -- never more
    than y, so every node stays within its CPU. With ``level_step``
    (OPT=MIN) the max-min level is first floored to 0.01, as that simulator's
    progressive filling computes its levels. This floors the exact max-min
    yields; that simulator floors at each filling step, so its later levels
    can be a step higher (measured against it: ``benchmarks/vcsim_compare.py``)."""
    pct = np.rint(100.0 * need)
    if level_step:
        y = np.floor(100.0 * y + PERCENT_EPS) / 100.0
    cpu = np.maximum(1.0, np.floor(y * pct + PERCENT_EPS))
    return np.minimum(cpu / pct, 1.0)
