"""Offline max-stretch lower bound of a DFRS or batch schedule (DFRS paper).

Source: Stillwell, Vivien, Casanova, "Dynamic Fractional Resource Scheduling
vs. Batch Scheduling", TPDS 2012 (../shared/papers/dfrs-vs-batch-scheduling.md),
§2 (model, bounded stretch), §3 (Theorem 1, linear system (1)) and §5.3.1
(underutilization).

Model (§2, §3). Job j has ``tasks[j]`` = |T_j| tasks, a CPU need
c_j = ``cpu_need[j]`` in (0, 1] (fraction of a node's CPU one task needs to run
at full speed), a release date r_j and a processing time p_j (its run time on
a dedicated system). There are |P| = ``nodes`` identical nodes. Memory is
ignored (infinite memory, as Theorem 1 assumes), so the bound is valid for any
memory-constrained schedule too.

Bounded stretch
---------------
The paper (§2) uses the *bounded* stretch with a 10 s threshold
(``BOUNDED_STRETCH_THRESHOLD``). This module uses the standard bounded-slowdown
form (the paper's reference [9], Feitelson et al.)::

    stretch_j = max(C_j - r_j, tau) / max(p_j, tau)            (see bounded_stretch)

and the LP bound uses the *same* convention: the deadline of job j for a
target max stretch S is ``d_j = r_j + S * max(p_j, tau)``, while the work the
job must receive stays ``p_j``. Every schedule whose bounded max stretch is S
finishes every job by that deadline (C_j - r_j <= max(C_j - r_j, tau) <= S max(p_j, tau)),
so the LP is feasible at S and the returned bound is <= the bounded max stretch
achieved by every policy. It is also <= the literal reading of §2
(max(C_j - r_j, tau) / p_j, which is never smaller). With ``threshold=0`` the
bound is exactly the paper's Theorem 1 bound on the plain stretch (C_j - r_j) / p_j.
Bounded stretch is always >= 1, so the binary search starts at S = 1.

Linear system (Theorem 1, system (1)), for a fixed target S
-----------------------------------------------------------
D = {r_j} U {d_j}; the sorted distinct points of D cut
[min r_j, max d_j] into consecutive left-closed intervals t with length
l(t) = sup t - inf t. Variables alpha_j^t >= 0 (fraction of job j done in t)::

    (1a)  for all j:      sum_t alpha_j^t = 1
    (1b)  r_j >= sup t  =>  alpha_j^t = 0
    (1c)  d_j <= inf t  =>  alpha_j^t = 0
    (1d)  for all j, t:   alpha_j^t * p_j <= l(t)
    (1e)  for all t:      sum_j alpha_j^t * p_j * c_j * |T_j| <= |P| * l(t)

(1b)/(1c) are imposed by creating variables only for the intervals inside each
job's window [r_j, d_j) (r_j and d_j are interval end points, so a window is a
contiguous run of intervals); (1d) is a variable upper bound
alpha_j^t <= l(t) / p_j. Note that (1d) has no c_j: p_j is the time at *full*
speed (a task allocated its full need c_j), so a task cannot do more than a
fraction l(t)/p_j of its job in t. The work of one task in t is
alpha_j^t p_j c_j CPU-seconds; (1e) is the platform capacity in node-CPU
seconds.

The returned bound (both methods)
---------------------------------
The smallest feasible S is bracketed by a binary search (geometric midpoint)
between 1 and the bounded max stretch of a feasible processor-sharing schedule
(or of the serial schedule, whichever is smaller), down to a relative width of
``rel_precision`` (default ``STRETCH_BOUND_REL_PRECISION``). The *lower* end of
the final bracket (an S proven infeasible, or exactly 1 when S = 1 is feasible)
is returned, so the result is a true lower bound on the optimum.
``max_stretch_lower_bound_exact`` returns max(1, S*) itself, S* the smallest
feasible S.

Reference method (``method="lp"``, ``stretch_lp_feasible``)
-----------------------------------------------------------
Each probe of the binary search solves system (1) with scipy's HiGHS (zero
objective): one variable per (job, interval in its window), |J| equality rows
and |I| inequality rows (each divided by |P| l(t) for conditioning). About
17 LPs of ~40,000 variables on a 1,000-job Lublin trace: 17-30 s.

Exact method (``method="flow"``, the default; ``stretch_flow_feasible``)
------------------------------------------------------------------------
*Feasibility at one S is a maximum flow.* With y_j^t = alpha_j^t p_j q_j
(q_j = c_j |T_j|: the CPU-seconds job j gets in t), system (1) reads
sum_t y_j^t = W_j := q_j p_j (1a), y_j^t only for t in j's window (1b, 1c),
0 <= y_j^t <= q_j l(t) (1d), sum_j y_j^t <= |P| l(t) (1e): exactly a flow
saturating every source arc of the network source -> job j (capacity W_j)
-> interval t of its window (q_j l(t)) -> sink (|P| l(t)). So (1) is feasible
iff the maximum flow F(S) equals W = sum_j W_j. No integrality is involved:
a maximum flow with real capacities is computed exactly by augmenting paths
(Dinic's algorithm, ``stretch_flow.transport_max_flow``, float64; each
augmentation zeroes its bottleneck arc exactly, so termination is
combinatorial, and the final search's reached set X is a minimum cut whose
arcs are all saturated). Feasible iff F >= W (1 - 1e-12) (the flow's rounding
is ~1e-14 W), after the LP path's own check that each job alone fits its
window (same 1e-12). Cost: O(|J| + |I| + E) to build, E = sum of window
sizes (~40,000 arcs on the Lublin trace), and Dinic's phases: 2-8 ms there.

*S* is found exactly, not bracketed.* (a) F is non-decreasing and continuous
in S (a solution of (1) is a piecewise-constant rate schedule; a schedule that
meets deadlines d_j(S) meets d_j(S') >= d_j(S); interval lengths move
continuously and an interval of length 0 carries nothing), so the feasible
S form [S*, inf) and F(S*) = W. (b) The order of the points r_i and
d_j(S) = r_j + S w_j (w_j = max(p_j, tau)) changes only at the breakpoints
S = (r_i - r_j) / w_j (a deadline meets a release) and
S = (r_j - r_i) / (w_i - w_j) (two deadlines meet); between two consecutive
breakpoints the windows are fixed index ranges and every l(t) = dA_t + S dB_t
is affine in S, so the capacity of every s-t cut is affine in S and F, their
minimum, is concave and piecewise linear on that segment. (c) A binary
search over the sorted breakpoints in the bracket (with the max-flow test)
finds the segment [a, b] with a infeasible, b feasible
(``stretch_flow.stretch_breakpoints``: an O(|J|^2) scan; 46,593 breakpoints,
~16 max flows on the Lublin trace). (d) In it, Newton's method from a: at S_k
(infeasible) the max flow's minimum cut C_k has capacity c_k(S) affine, with
c_k(S_k) = F(S_k) < W and c_k >= F on the segment; so every S in [S_k,
S_{k+1}), S_{k+1} the root of c_k(S) = W, is infeasible and S_{k+1} <= S*;
the slope is > 0 (c_k(S*) >= W > c_k(S_k)), and C_k is never a minimum cut
again (c_k >= W > F at the later iterates), so the iteration stops, at S*,
after finitely many steps (1-3 in practice), when the cut carries W (up to
its sums' rounding). The cut's shortfall is summed over X only, so a small
job's deficit is not lost against W. A bisection on the segment backs this up
if rounding ever made the slope <= 0 (never seen).

*Same result as the LP path.* The binary search above only reads the answers
of the probes, and system (1)'s answer at S is ``S >= S*``; the flow method
runs the same search (same start, same doublings, same geometric midpoints)
with that predicate, so it returns the LP path's value, bit for bit, except
when a probe lands within HiGHS's tolerances (~1e-7 relative) of S*, where the
LP's own answer is a rounding artefact. Tests check equality within 1e-9
relative on the hand-worked cases and on hypothesis instances, S* inside the
LP bracket, and both tests agreeing on both sides of S*. On the 1,000-job
Lublin trace: 0.13 s (~19 max flows and the processor-sharing start), vs
17-30 s for the LP path, with the same bound; the first call of a process
also loads numba and the cached kernels (~0.5 s; the first call of a machine
compiles them, ~1.5 s, cached on disk: ``schedlab.sim.common.jit``).

Underutilization (§5.3.1) is in ``schedlab.sim.bound.underutilization``; it is
re-exported here only for the frozen DFRS reference (``tests/dfrs_reference``,
which must not be edited), which imports it from this module.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from schedlab.sim.bound.underutilization import (  # re-exported (see the module docstring)
    UsageProfile,
    batch_usage_profile,
    normalized_underutilization,
    underutilization,
)
from schedlab.sim.common.portable import dot

BOUNDED_STRETCH_THRESHOLD = 10.0
"""Bounded-stretch threshold in seconds (paper §2)."""

STRETCH_BOUND_REL_PRECISION = 1e-4
"""Default relative width of the final binary-search bracket on S."""

_HI_SAFETY_DOUBLINGS = 8

__all__ = [
    "BOUNDED_STRETCH_THRESHOLD",
    "STRETCH_BOUND_REL_PRECISION",
    "UsageProfile",
    "batch_usage_profile",
    "bounded_stretch",
    "max_stretch_lower_bound",
    "max_stretch_lower_bound_exact",
    "normalized_underutilization",
    "stretch_flow_feasible",
    "stretch_lp_feasible",
    "underutilization",
]


# --------------------------------------------------------------------------
# Bounded stretch
# --------------------------------------------------------------------------


def bounded_stretch(
    release: Any, processing: Any, completion: Any, *, threshold: float = BOUNDED_STRETCH_THRESHOLD
) -> np.ndarray:
    """Per-job bounded stretch max(C - r, tau) / max(p, tau) (the convention of the bound)."""
    r = np.asarray(release, dtype=float)
    p = np.asarray(processing, dtype=float)
    c = np.asarray(completion, dtype=float)
    if not (r.shape == p.shape == c.shape):
        raise ValueError("release, processing and completion must have the same shape")
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")
    return np.maximum(c - r, threshold) / np.maximum(p, threshold)


# --------------------------------------------------------------------------
# LP bound
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Instance:
    release: np.ndarray  # r_j
    processing: np.ndarray  # p_j
    weight: np.ndarray  # max(p_j, tau): deadline d_j = r_j + S * weight_j
    demand: np.ndarray  # c_j * |T_j| (node-CPU units while running at full speed)
    nodes: float


def _instance(release, processing, tasks, cpu_need, nodes, threshold) -> _Instance:
    r = np.asarray(release, dtype=float).ravel()
    p = np.asarray(processing, dtype=float).ravel()
    k = np.asarray(tasks, dtype=float).ravel()
    c = np.asarray(cpu_need, dtype=float).ravel()
    n = len(r)
    if not (len(p) == len(k) == len(c) == n):
        raise ValueError("release, processing, tasks and cpu_need must have the same length")
    if n == 0:
        raise ValueError("at least one job is required")
    if not np.all(np.isfinite(r)):
        raise ValueError("release dates must be finite")
    if not np.all(np.isfinite(p) & (p > 0)):
        raise ValueError("processing times must be finite and > 0")
    if not np.all((k >= 1) & (k == np.round(k))):
        raise ValueError("tasks must be integers >= 1")
    if not np.all((c > 0) & (c <= 1)):
        raise ValueError("cpu_need must be in (0, 1]")
    if not (np.isfinite(nodes) and nodes > 0):
        raise ValueError(f"nodes must be > 0, got {nodes}")
    if not (np.isfinite(threshold) and threshold >= 0):
        raise ValueError(f"threshold must be finite and >= 0, got {threshold}")
    return _Instance(r, p, np.maximum(p, float(threshold)), c * k, float(nodes))


def _intervals(inst: _Instance, S: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(l(t) per interval, first interval of each window, end of each window) at target S."""
    r = inst.release
    d = r + S * inst.weight
    points = np.unique(np.concatenate((r, d)))
    length = np.diff(points)  # l(t), all > 0
    lo = np.searchsorted(points, r)  # first interval with inf t >= r_j   (1b)
    hi = np.searchsorted(points, d)  # intervals with sup t <= d_j        (1c)
    return length, lo, hi


def _lp_feasible(inst: _Instance, S: float) -> bool:
    p, q, P = inst.processing, inst.demand, inst.nodes
    n = len(p)
    length, lo, hi = _intervals(inst, S)
    counts = hi - lo
    if np.any(counts <= 0):
        return False
    # (1d) as bounds: alpha_j^t <= l(t) / p_j. Quick necessary check: a job
    # running at full speed over its whole window must be able to finish.
    offsets = np.concatenate(([0], np.cumsum(counts)))
    nvar = int(offsets[-1])
    job = np.repeat(np.arange(n), counts)
    interval = lo[job] + (np.arange(nvar) - offsets[job])
    ub = length[interval] / p[job]
    window_capacity = np.add.reduceat(np.minimum(ub, 1.0), offsets[:-1])
    if np.any(window_capacity < 1.0 - 1e-12):
        return False
    ub = np.minimum(ub, 1.0)  # alpha <= 1 is implied by (1a) and alpha >= 0

    # (1a): one equality row per job.
    a_eq = sp.csr_matrix((np.ones(nvar), (job, np.arange(nvar))), shape=(n, nvar))
    b_eq = np.ones(n)
    # (1e): one row per interval, divided by |P| l(t).
    coef = q[job] * p[job] / (P * length[interval])
    a_ub = sp.csr_matrix((coef, (interval, np.arange(nvar))), shape=(len(length), nvar))
    b_ub = np.ones(len(length))

    res = linprog(
        c=np.zeros(nvar),
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=b_eq,
        bounds=np.column_stack((np.zeros(nvar), ub)),
        method="highs",
    )
    if res.status == 0:
        return True
    if res.status == 2:
        return False
    raise RuntimeError(f"HiGHS failed on the stretch LP at S={S!r}: status {res.status}, {res.message}")


def stretch_lp_feasible(
    release: Any,
    processing: Any,
    tasks: Any,
    cpu_need: Any,
    nodes: float,
    S: float,
    *,
    threshold: float = BOUNDED_STRETCH_THRESHOLD,
) -> bool:
    """Whether linear system (1) has a solution for target max stretch ``S``."""
    return _lp_feasible(_instance(release, processing, tasks, cpu_need, nodes, threshold), float(S))


# --------------------------------------------------------------------------
# Exact method: max flow and a breakpoint / Newton search (module docstring)
# --------------------------------------------------------------------------

#: Feasible when the maximum flow falls short of the total work W = sum_j c_j
#: |T_j| p_j by at most this fraction of W (the flow's rounding is ~1e-14 W
#: on a 1,000-job trace).
_FLOW_REL_TOL = 1e-12
#: Breakpoints collected at once at most (8 bytes each); with more in the
#: bracket, the bracket is first narrowed by geometric bisection.
_BREAKPOINT_LIMIT = 1 << 22
#: Newton steps in the final segment before falling back to bisection (never
#: reached in the tests: the step count is finite and small, see the docstring).
_NEWTON_MAX_STEPS = 200


def _window_capacity(length: np.ndarray, lo: np.ndarray, hi: np.ndarray, p: np.ndarray) -> np.ndarray:
    """sum over job j's window of min(l(t) / p_j, 1): what the LP path checks."""
    counts = hi - lo
    offsets = np.concatenate(([0], np.cumsum(counts)))
    job = np.repeat(np.arange(len(p)), counts)
    interval = lo[job] + (np.arange(int(offsets[-1])) - offsets[job])
    return np.add.reduceat(np.minimum(length[interval] / p[job], 1.0), offsets[:-1])


def _flow_feasible(inst: _Instance, S: float) -> bool:
    """Exact test of system (1) at S: the transportation network's max flow
    carries all the work W (up to ``_FLOW_REL_TOL`` W of rounding)."""
    from schedlab.sim.bound.stretch_flow import transport_max_flow

    length, lo, hi = _intervals(inst, S)
    if np.any(hi - lo <= 0) or np.any(_window_capacity(length, lo, hi, inst.processing) < 1.0 - 1e-12):
        return False
    work = inst.demand * inst.processing
    total = float(work.sum())
    value, _, _ = transport_max_flow(lo, hi, length, work, inst.demand, inst.nodes)
    return bool(value >= total * (1.0 - _FLOW_REL_TOL))


def stretch_flow_feasible(
    release: Any,
    processing: Any,
    tasks: Any,
    cpu_need: Any,
    nodes: float,
    S: float,
    *,
    threshold: float = BOUNDED_STRETCH_THRESHOLD,
) -> bool:
    """Whether linear system (1) has a solution for target max stretch ``S``,
    decided by a maximum flow (same answer as ``stretch_lp_feasible``)."""
    return _flow_feasible(_instance(release, processing, tasks, cpu_need, nodes, threshold), float(S))


@dataclass(frozen=True)
class _Segment:
    """The interval structure of system (1) on an S-range with no breakpoint:
    event points are lines A + S B (r_j: (r_j, 0); d_j: (r_j, w_j)) in a fixed
    order, so l(t) = dA_t + S dB_t and the windows are fixed index ranges."""

    d_a: np.ndarray
    d_b: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def length(self, S: float) -> np.ndarray:
        return np.maximum(self.d_a + S * self.d_b, 0.0)


def _segment(inst: _Instance, a: float, b: float) -> _Segment:
    n = len(inst.release)
    pts = np.column_stack((np.concatenate((inst.release, inst.release)), np.concatenate((np.zeros(n), inst.weight))))
    uniq, inverse = np.unique(pts, axis=0, return_inverse=True)
    mid = 0.5 * (a + b)
    order = np.lexsort((uniq[:, 1], uniq[:, 0] + mid * uniq[:, 1]))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    line = uniq[order]
    pos = rank[inverse.ravel()]
    return _Segment(np.diff(line[:, 0]), np.diff(line[:, 1]), pos[:n], pos[n:])


def _newton_in_segment(inst: _Instance, a: float, b: float) -> float:
    """Smallest feasible S in [a, b] (a infeasible, b feasible, no breakpoint
    in between): Newton's method on the concave piecewise-linear max-flow
    value F(S), from the left, with the minimum cut of each step as the
    supporting line (see the module docstring)."""
    from schedlab.sim.bound.stretch_flow import transport_max_flow

    seg = _segment(inst, a, b)
    q, P = inst.demand, inst.nodes
    work = q * inst.processing
    total = float(work.sum())
    S = a
    for _ in range(_NEWTON_MAX_STEPS):
        length = seg.length(S)
        value, jx, tx = transport_max_flow(seg.lo, seg.hi, length, work, q, P)
        if value >= total:
            return S
        # Cut (X, complement): c(S) = sum_{j not in X} W_j + sum_{j in X} q_j
        # sum_{t in win_j, t not in X} l_t(S) + P sum_{t in X} l_t(S). Its
        # shortfall D(S) = W - c(S) is computed over X only (no cancellation
        # against W) and falls with slope beta per unit of S.
        out_b = np.concatenate(([0.0], np.cumsum(np.where(tx, 0.0, seg.d_b))))
        out_len = np.concatenate(([0.0], np.cumsum(np.where(tx, 0.0, length))))
        lo, hi = seg.lo[jx], seg.hi[jx]
        shortfall = float(work[jx].sum() - dot(q[jx], out_len[hi] - out_len[lo]) - P * length[tx].sum())
        beta = float(dot(q[jx], out_b[hi] - out_b[lo]) + P * seg.d_b[tx].sum())
        scale = float(work[jx].sum() + dot(q[jx], out_len[hi] - out_len[lo]) + P * length[tx].sum())
        if shortfall <= 64.0 * np.finfo(float).eps * scale:  # F(S) = W up to the rounding of the cut's sums
            return S
        if not beta > 0.0:
            break  # impossible in exact arithmetic (the cut must reach W by b); bisect
        nxt = S + shortfall / beta
        if nxt >= b:
            return b
        if nxt <= S * (1.0 + 4.0 * np.finfo(float).eps):
            return nxt
        S = nxt
    # Fallback: bisection in [S, b] with the exact test on the segment.
    lo_s, hi_s = S, b
    while hi_s > lo_s * (1.0 + 4.0 * np.finfo(float).eps):
        mid = 0.5 * (lo_s + hi_s)
        value, _, _ = transport_max_flow(seg.lo, seg.hi, seg.length(mid), work, q, P)
        if value >= total * (1.0 - _FLOW_REL_TOL):
            hi_s = mid
        else:
            lo_s = mid
    return hi_s


def _min_feasible_stretch(inst: _Instance, lo: float, hi: float) -> float:
    """The smallest S at which system (1) is feasible, given lo infeasible and
    hi feasible: locate it between two consecutive breakpoints (binary search
    with the max-flow test), then solve exactly in that segment (Newton)."""
    from schedlab.sim.bound.stretch_flow import stretch_breakpoints

    while True:
        count, values = stretch_breakpoints(inst.release, inst.weight, lo, hi, _BREAKPOINT_LIMIT)
        if count <= _BREAKPOINT_LIMIT:
            break
        mid = float(np.sqrt(lo * hi))
        if _flow_feasible(inst, mid):
            hi = mid
        else:
            lo = mid
    cuts = np.concatenate(([lo], np.unique(values), [hi]))
    i, k = 0, len(cuts) - 1  # cuts[i] infeasible, cuts[k] feasible
    while k - i > 1:
        m = (i + k) // 2
        if _flow_feasible(inst, float(cuts[m])):
            k = m
        else:
            i = m
    return _newton_in_segment(inst, float(cuts[i]), float(cuts[k]))


def _serial_completions(inst: _Instance) -> np.ndarray:
    """Jobs one at a time in release order, each alone at rate min(1, |P| / (c |T|))."""
    order = np.argsort(inst.release, kind="stable")
    dur = inst.processing * np.maximum(1.0, inst.demand / inst.nodes)
    out = np.empty(len(order))
    clock = -np.inf
    for j in order:
        clock = max(clock, inst.release[j]) + dur[j]
        out[j] = clock
    return out


def _processor_sharing_completions(inst: _Instance) -> np.ndarray:
    """Equal-yield processor sharing: every released, unfinished job runs at
    rate min(1, |P| / sum of active c_j |T_j|); valid for system (1)."""
    r, p, q, P = inst.release, inst.processing, inst.demand, inst.nodes
    n = len(r)
    order = np.argsort(r, kind="stable")
    remaining = p.astype(float).copy()  # in seconds at full speed
    out = np.full(n, np.nan)
    active: list[int] = []
    clock = r[order[0]]
    nxt = 0
    while nxt < n or active:
        while nxt < n and r[order[nxt]] <= clock:
            active.append(int(order[nxt]))
            nxt += 1
        if not active:
            clock = r[order[nxt]]
            continue
        idx = np.array(active)
        rate = min(1.0, P / float(q[idx].sum()))
        rem = remaining[idx]
        dt_done = float(rem.min()) / rate
        dt = dt_done if nxt >= n else min(dt_done, r[order[nxt]] - clock)
        remaining[idx] = rem - rate * dt
        clock += dt
        finished = remaining[idx] <= 1e-12 * np.maximum(p[idx], 1.0)
        if dt == dt_done:
            finished[int(np.argmin(rem))] = True
        for j in idx[finished]:
            out[j] = clock
        active = [int(j) for j in idx[~finished]]
    return out


def max_stretch_lower_bound(
    release: Any,
    processing: Any,
    tasks: Any,
    cpu_need: Any,
    nodes: float,
    *,
    rel_precision: float = STRETCH_BOUND_REL_PRECISION,
    threshold: float = BOUNDED_STRETCH_THRESHOLD,
    method: str = "flow",
) -> float:
    """Lower bound on the optimal (bounded) max stretch: Theorem 1 + binary search.

    For a target S, deadlines are d_j = r_j + S * max(p_j, threshold) (§3,
    with the bounded-stretch convention of the module docstring) and
    linear system (1) is checked for feasibility::

        (1a) sum_t alpha_j^t = 1
        (1b) r_j >= sup t => alpha_j^t = 0
        (1c) d_j <= inf t => alpha_j^t = 0
        (1d) alpha_j^t p_j <= l(t)
        (1e) sum_j alpha_j^t p_j c_j |T_j| <= |P| l(t)

    Binary search on S in [1, S_feasible] (S_feasible: bounded max stretch of
    a processor-sharing or serial schedule) until hi <= lo * (1 + rel_precision);
    returns lo (proven infeasible; exactly 1.0 if S = 1 is feasible), so the
    value is <= the bounded max stretch of every valid schedule and within a
    factor (1 + rel_precision) of the smallest feasible S.

    ``method="flow"`` (default) finds the smallest feasible S exactly (max
    flow, breakpoints, Newton) and replays the search against it;
    ``method="lp"`` solves an LP per probe (the reference; ~100x slower).
    Both give the same value (module docstring).

    ``release``, ``processing`` (> 0, seconds at full speed), ``tasks`` (int >= 1),
    ``cpu_need`` (in (0, 1]) are per-job arrays; ``nodes`` = |P|. A job with
    c_j |T_j| > |P| is allowed (it then cannot run at full speed even alone).
    Memory is ignored (infinite memory, as in Theorem 1).
    """
    if not (0 < rel_precision < 1):
        raise ValueError(f"rel_precision must be in (0, 1), got {rel_precision}")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    inst = _instance(release, processing, tasks, cpu_need, nodes, threshold)
    key = _bound_key(inst, rel_precision, threshold, method)
    if key in _BOUND_MEMO:
        return _BOUND_MEMO[key]
    if method == "lp":
        value = _search_bound(inst, rel_precision, float(threshold))
    else:
        value = _flow_search_bound(inst, rel_precision, float(threshold))
    _BOUND_MEMO[key] = value
    while len(_BOUND_MEMO) > _BOUND_MEMO_SIZE:
        _BOUND_MEMO.pop(next(iter(_BOUND_MEMO)))
    return value


#: Bounds of the last few instances, by content: a sweep task runs every
#: policy of one instance in turn in one process, and the bound belongs to the
#: instance, so each policy's ``bound=True`` run after the first costs nothing.
_BOUND_MEMO: dict[str, float] = {}
_BOUND_MEMO_SIZE = 16


def _bound_key(inst: _Instance, rel_precision: float, threshold: float, method: str) -> str:
    h = hashlib.sha256()
    for a in (inst.release, inst.processing, inst.weight, inst.demand):
        h.update(np.ascontiguousarray(a, dtype=float).tobytes())
    h.update(np.array([inst.nodes, rel_precision, threshold], dtype=float).tobytes())
    h.update(method.encode())
    return h.hexdigest()


def _feasible_start(inst: _Instance, tau: float) -> float:
    """Upper end of the search: the bounded max stretch of a processor-sharing
    or a serial schedule (both valid for system (1)), whichever is smaller."""
    hi = float(
        min(
            bounded_stretch(inst.release, inst.processing, _processor_sharing_completions(inst), threshold=tau).max(),
            bounded_stretch(inst.release, inst.processing, _serial_completions(inst), threshold=tau).max(),
        )
    )
    return max(hi, 1.0) * (1.0 + 1e-9)


def _search_bound(inst: _Instance, rel_precision: float, tau: float, feasible=_lp_feasible) -> float:
    """The binary search of ``max_stretch_lower_bound`` with the feasibility
    test ``feasible(inst, S)`` (the LP by default)."""
    if feasible(inst, 1.0):
        return 1.0
    lo = 1.0
    hi = _feasible_start(inst, tau)
    for _ in range(_HI_SAFETY_DOUBLINGS):  # numerically the bracket end must be feasible
        if feasible(inst, hi):
            break
        lo, hi = hi, 2.0 * hi
    else:
        raise RuntimeError("could not find a feasible upper end for the stretch binary search")

    while hi > lo * (1.0 + rel_precision):
        mid = float(np.sqrt(lo * hi))
        if feasible(inst, mid):
            hi = mid
        else:
            lo = mid
    return float(lo)


def _exact_bound(inst: _Instance, tau: float) -> float:
    """max(1, S*) with S* the smallest S at which system (1) is feasible."""
    if _flow_feasible(inst, 1.0):
        return 1.0
    lo = 1.0
    hi = _feasible_start(inst, tau)
    for _ in range(_HI_SAFETY_DOUBLINGS):
        if _flow_feasible(inst, hi):
            break
        lo, hi = hi, 2.0 * hi
    else:
        raise RuntimeError("could not find a feasible upper end for the stretch search")
    return max(1.0, _min_feasible_stretch(inst, lo, hi))


def _flow_search_bound(inst: _Instance, rel_precision: float, tau: float) -> float:
    """The LP path's binary search replayed against the exact S*: the test
    ``S >= S*`` is what system (1) answers at every S (feasibility is
    monotone in S), so the bracket, and the returned lower end, are those of
    the LP path, without solving anything but S*."""
    s_star = _exact_bound(inst, tau)
    if s_star <= 1.0:
        return 1.0
    return _search_bound(inst, rel_precision, tau, lambda _inst, S: S >= s_star)


_METHODS = ("flow", "lp")


def max_stretch_lower_bound_exact(
    release: Any,
    processing: Any,
    tasks: Any,
    cpu_need: Any,
    nodes: float,
    *,
    threshold: float = BOUNDED_STRETCH_THRESHOLD,
) -> float:
    """max(1, S*), S* the smallest target max stretch at which linear system
    (1) is feasible (max flow + breakpoint search + Newton; see the module
    docstring): the best lower bound Theorem 1 gives, which
    ``max_stretch_lower_bound`` brackets to ``rel_precision``. Same arguments."""
    inst = _instance(release, processing, tasks, cpu_need, nodes, threshold)
    return _exact_bound(inst, float(threshold))
