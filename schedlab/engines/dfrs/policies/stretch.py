"""/stretch-per: MCB8-stretch and the expected-stretch resource allocations
(dfrs-vs-batch-scheduling §4.7; OPT=MAX is the allocation Fig. 1 uses for
GreedyPM*/stretch-per).

The paper only sketches the algorithm (the exact description is in a web
supplement we do not have). This module is OUR READING of §4.7:

Expected stretch
----------------
At time t, with the next scheduling event assumed at t + T, a job j
(release r_j, virtual time v_j = progress so far, running or pending) that
gets yield y over [t, t + T] and is assumed not to finish before t + T has
the *expected stretch*

    s_j(y) = F_j / (v_j + y T),    F_j = max(t + T - r_j, 10)

(flow time over virtual time at the next event; the 10 s floor on the flow
time is the bounded-stretch convention of the engine, harmless here since
F_j >= T). No floor is put on the denominator, so a job that has never run
and gets y = 0 has s = inf; in u = 1/S every quantity is then finite and
piecewise linear: the yield job j needs to reach a target stretch S = 1/u is

    y_j(u) = clip((F_j u - v_j) / T, 0, 1),

non-decreasing and continuous in u (breakpoints v_j / F_j and
(v_j + T) / F_j). The progress a job in its penalty cannot make is ignored
(the formula assumes progress over all of [t, t + T]).

MCB8-stretch (the periodic remap, every ``period`` s, default 600)
-----------------------------------------------------------------
T = period. All running and pending jobs, in §4.1 priority order (highest
first, ties to the smaller job index, as ``mcb8``), task lists laid out job
by job. For a target S each task of job j has CPU requirement c_j y_j(1/S)
and memory m_j (a job with y_j = 0 still needs its memory). Feasibility is
MCB8's vector packing, ``mcb8.pack`` (reused, not copied):

1. memory alone (every CPU requirement 0, MCB8's Y = 0 test); if it fails the
   lowest-priority job (largest index among ties) is dropped and the search
   restarts, as in MCB8 (a table whose total memory provably exceeds what
   any packing can hold is dropped from without packing it,
   ``_memory_overflow``: same result, far fewer packs);
2. S_lo = max_j s_j(1) (every job at full yield: no smaller max expected
   stretch exists). If every job fits at full yield (the MCB8 Y = 1 packing;
   every job then gets its own minimal expected stretch) that packing is
   used; else if the requirements at S_lo (jobs other than the worst need
   less than full yield) pack, that packing is used;
3. S_hi = max_j F_j / max(v_j, 10) (the bounded-stretch 10 s floor on the
   virtual time, only to make the range finite); if it does not pack, the
   memory-only mapping of step 1 is used (as MCB8 returns a Y = 0 mapping);
4. otherwise geometric binary search (invariant: S_hi packs, S_lo does not;
   S_mid = sqrt(S_lo S_hi)) until S_hi / S_lo <= 1 + ``STRETCH_PRECISION``
   (0.01); the mapping found at S_hi is used. ``pack`` is a heuristic, so as
   for MCB8 this is exact only where feasibility is monotone in S.

The mapping is then applied exactly as the /per remap does (``greedy``:
bins renumbered by ``_relabel`` to keep running memory in place, dropped
running jobs paused, running jobs moved, pending jobs placed) and the
MINVT / MINFT limits pin running jobs the same way (pinned tasks first on
their nodes with CPU c_j y_j(1/S), then ``pack`` around them). The yields
of the search are not used: the allocation below runs on the new mapping.

Resource allocation (the mapping fixed; ``allocate(state, next_period)``)
-----------------------------------------------------------------------
T = next periodic instant - now (so between periodic instants, after an
arrival or completion handled by the Greedy part, the horizon is the rest of
the period). Only overloaded nodes (CPU load > 1) constrain; a job with no
task on one gets y = 1 (which minimises its expected stretch).

* OPT=MAX -- iterative min-max expected stretch, the analogue of the
  engine's max-min yields, in u = 1/S: all unfrozen jobs share a common u
  (y_j = y_j(u)), raised until a node saturates (sum of c_j y_j over its
  tasks = 1, solved exactly: the node load is piecewise linear in u) or a
  job reaches y = 1 (its minimum stretch s_j(1)); the jobs on saturated
  nodes and those at y = 1 are frozen; repeat. The result lexicographically
  minimises the sorted vector of expected stretches (largest first). A job
  whose expected stretch at y = 0 is already below the common level may be
  frozen at y = 0 (it stays placed, makes no progress until the next
  allocation).
* OPT=AVG -- minimise the sum (= average) of expected stretches
  sum_j F_j / (v_j + y_j T) (convex, separable) subject to node CPU
  capacity and the OPT=MAX value as a ceiling (s_j(y_j) <= S_max, i.e.
  y_j >= y_j(1/S_max), with S_max the maximum expected stretch under OPT=MAX
  of the jobs on overloaded nodes -- the others have y = 1 either way),
  y_j <= 1. Solved per connected component of
  the job / overloaded-node graph with ``scipy.optimize.minimize`` (SLSQP,
  analytic gradients, started just inside the OPT=MAX yields: bounds
  relaxed and node rows tightened by ~1e-9, the result clipped back to the
  bounds -- OPT=MAX's point is a degenerate vertex on which SLSQP otherwise
  often stops with "inequality constraints incompatible"; a remaining node
  excess, at most 1e-6, is removed by scaling down the parts of the yields
  above their ceiling floor on the overfull nodes, ``_repair``, so node CPU
  <= 1 exactly up to round-off). The result is kept only if it does not
  increase the component's sum; otherwise the OPT=MAX yields are kept (and an SLSQP
  failure -- status other than 0 or 8 (stalled line search next to the
  optimum), or an infeasible result -- is counted in ``lp_failures``). So OPT=AVG's average <= OPT=MAX's and its max <=
  OPT=MAX's max by construction.

Policies (``STRETCH_PER_POLICIES``): the paper's ``/stretch-per`` (RR-7659
Table 1, 14th row: nothing on submission, nothing on completion, MCB8-stretch
periodically; Table 2's last row is ``/stretch-per/OPT=MAX/MINVT=600``), and
schedlab's combinations with a submission policy: ``Greedy*/stretch-per``,
``GreedyP*/...``, ``GreedyPM*/...``, ``MCB8*/...`` (MCB8 on submission and
completion as ``MCB8*``, MCB8-stretch periodically); each with OPT=MAX and
OPT=AVG, and each of these with /MINVT=300, /MINVT=600, /MINFT=300,
/MINFT=600. Parameters ``period`` (default 600 s), ``minvt`` / ``minft``.
All are in ``DFRS_POLICIES``.

Behaviour to know: the per-job CPU requirements change from one period to the
next, so MCB8's sort order, hence its packing, changes much more than with
the common yield of /per: on a 1000-job Lublin trace (128 nodes, memory 0.1)
GreedyPM*/stretch-per/OPT=MAX/MINVT=600 migrated ~15x more than
GreedyPM*/per/OPT=MIN/MINVT=600 and had a larger max stretch.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from schedlab.engines.dfrs.policies.base import DfrsPolicy
from schedlab.engines.dfrs.policies.greedy import (
    MIN_BOUNDS,
    PER_ONLY,
    GreedyPMStar,
    GreedyPStar,
    GreedyStar,
    MCB8Star,
    PeriodicMCB8,
    _pinned,
    _relabel,
    _with_limit,
)
from schedlab.engines.dfrs.policies.mcb8 import FIT_TOL, pack
from schedlab.engines.dfrs.sim import RUNNING, DfrsState, running_incidence

STRETCH_PRECISION = 0.01  # MCB8-stretch: stop when S_hi / S_lo <= 1 + this
STRETCH_FLOOR = 10.0  # s: bounded-stretch threshold (flow-time floor; virtual-time floor of the search range)
_SAT_TOL = 1e-12
_AVG_FEAS_TOL = 1e-6  # OPT=AVG: SLSQP node CPU excess beyond which its result is rejected (else repaired)
_AVG_MARGIN = 1e-9  # OPT=AVG: interior-start margin (see min_avg_stretch_yields)
_MEM_SAFE = 1e-8  # relative margin of the memory-overflow shortcut over every rounding (see _memory_overflow)
_MEM_TERMS = 10**6  # most memory terms the shortcut's rounding bound covers (n u <= 1.2e-10)

__all__ = [
    "STRETCH_PER_POLICIES",
    "STRETCH_PRECISION",
    "StretchPer",
    "expected_stretch",
    "mcb8_stretch",
    "min_max_stretch_yields",
    "min_avg_stretch_yields",
    "stretch_allocate",
    "stretch_remap",
]


# -- expected stretch ------------------------------------------------------------


def _flow(st: DfrsState, jobs, horizon: float) -> np.ndarray:
    rel = np.asarray([st.release[j] for j in jobs], dtype=float)
    return np.maximum(st.now + horizon - rel, STRETCH_FLOOR)


def expected_stretch(F: np.ndarray, v: np.ndarray, T: float, y: np.ndarray) -> np.ndarray:
    """s_j(y) = F_j / (v_j + y_j T) (inf when the denominator is 0)."""
    den = np.asarray(v, dtype=float) + np.asarray(y, dtype=float) * T
    with np.errstate(divide="ignore"):
        return np.where(den > 0, np.asarray(F, dtype=float) / np.where(den > 0, den, 1.0), math.inf)


def _need(F: np.ndarray, v: np.ndarray, T: float, u: float) -> np.ndarray:
    """y_j(u) = clip((F_j u - v_j) / T, 0, 1), u = 1 / S."""
    return np.clip((F * u - v) / T, 0.0, 1.0)


# -- MCB8-stretch ------------------------------------------------------------------


def _memory_overflow(table: list, pinned: dict, nodes: int) -> np.ndarray:
    """out[n]: True when the first n rows of ``table`` certainly fail MCB8-stretch's
    memory-only packing (``attempt(0.0)``) -- a necessary condition, so
    skipping those packs leaves the result unchanged (only the cost changes).

    Why it is sound: ``pack`` places a task on a node only if the node's
    (rounded) memory plus the task's is <= 1 + FIT_TOL, so a node ends with at
    most max(its pinned memory, 1 + FIT_TOL) <= 1 + FIT_TOL + its excess
    (pinned memory beyond 1 + FIT_TOL, at most that of all pinned rows). A
    successful packing therefore has total memory (pinned tasks included, as
    ``pin_mem``) <= cap = nodes (1 + FIT_TOL) + the excess, exactly up to the
    rounding of the node sums. The totals here are rounded too; with at most
    ``_MEM_TERMS`` terms each rounding is below 1e-9 relatively (n u << 1e-9),
    so a computed total above cap (1 + ``_MEM_SAFE``) is above every total a
    packing can reach. Beyond ``_MEM_TERMS`` terms nothing is skipped."""
    out = np.zeros(len(table) + 1, dtype=bool)
    counts = [len(pinned[r[0]]) if r[0] in pinned else r[1] for r in table]
    if sum(counts) + nodes > _MEM_TERMS:
        return out
    pin_mem = np.zeros(nodes)
    for r in table:
        if r[0] in pinned:
            for k in pinned[r[0]]:
                pin_mem[int(k)] += r[3]
    limit = 1.0 + FIT_TOL
    cap = nodes * limit + float(np.sum(np.maximum(pin_mem - limit, 0.0)))
    total = np.cumsum([r[3] * c for r, c in zip(table, counts)])
    out[1:] = total > cap * (1.0 + _MEM_SAFE)
    return out


def mcb8_stretch(
    jobs, nodes: int, horizon: float, precision: float = STRETCH_PRECISION, pinned: dict | None = None
) -> tuple[dict, list, float]:
    """MCB8-stretch on ``jobs`` = (job id, tasks, need, mem, priority, F, v)
    tuples (F = flow time at the next event, v = virtual time now;
    ``horizon`` = T). Returns (mapping job id -> nodes, dropped ids in drop
    order, S) with S the target stretch the mapping packs at (inf for the
    memory-only fallback). See the module docstring."""
    if not 0 < precision:
        raise ValueError(f"precision must be > 0, got {precision}")
    T = float(horizon)
    table = sorted(jobs, key=lambda r: r[0])
    table.sort(key=lambda r: -r[4])  # highest priority first, ties: smaller id first
    pinned = dict(pinned or {})
    dropped: list = []
    # Dropping pops the last row, so the table is always a prefix of the first one: the per-row arrays
    # are built once and sliced (same values, elementwise operations unchanged).
    F_all = np.asarray([r[5] for r in table], dtype=float)
    v_all = np.asarray([r[6] for r in table], dtype=float)
    need_all = np.asarray([r[2] for r in table], dtype=float)
    mem_all = np.asarray([r[3] for r in table], dtype=float)
    pin_all = np.asarray([r[0] in pinned for r in table], dtype=bool)
    tasks_all = np.asarray([r[1] for r in table], dtype=np.int64)
    mem_over = _memory_overflow(table, pinned, nodes)
    while table:
        nt = len(table)
        if mem_over[nt]:  # memory alone cannot fit: attempt(0.0) would fail (see _memory_overflow)
            dropped.append(table.pop()[0])
            continue
        owner = np.repeat(np.flatnonzero(~pin_all[:nt]), tasks_all[:nt][~pin_all[:nt]])
        mems = mem_all[owner]
        F = F_all[:nt]
        v = v_all[:nt]
        need = need_all[:nt]
        pin_rows = [(i, [int(k) for k in pinned[r[0]]]) for i, r in enumerate(table) if r[0] in pinned]
        pin_mem = [0.0] * nodes
        for i, where in pin_rows:
            for k in where:
                pin_mem[k] += table[i][3]

        def attempt(
            u: float, need=need, F=F, v=v, owner=owner, mems=mems, pin_rows=pin_rows, pin_mem=pin_mem
        ) -> list[int] | None:  # this iteration's values, bound
            cpu_job = need * (1.0 if u == math.inf else _need(F, v, T, u))
            cpu = cpu_job[owner]
            if not pin_rows:
                return pack(cpu, mems, nodes)
            init_cpu = [0.0] * nodes
            for i, pinned_nodes in pin_rows:
                c = float(cpu_job[i])
                for k in pinned_nodes:
                    init_cpu[k] += c
            if any(x > 1.0 + FIT_TOL for x in init_cpu):
                return None
            return pack(cpu, mems, nodes, init_cpu, pin_mem)

        best = attempt(0.0)
        if best is None:
            dropped.append(table.pop()[0])
            continue
        s_lo = float(np.max(F / (v + T)))
        s_hi = float(np.max(F / np.maximum(v, STRETCH_FLOOR)))
        S = math.inf
        found = attempt(math.inf)  # every job at full yield (MCB8's Y = 1 packing)
        if found is None:
            found = attempt(1.0 / s_lo)
        if found is not None:
            best, S = found, s_lo
        elif s_hi > s_lo and (found := attempt(1.0 / s_hi)) is not None:
            best, S = found, s_hi
            while s_hi / s_lo > 1.0 + precision:
                mid = math.sqrt(s_lo * s_hi)
                found = attempt(1.0 / mid)
                if found is None:
                    s_lo = mid
                else:
                    s_hi, best, S = mid, found, mid
        mapping: dict = {table[i][0]: list(w) for i, w in pin_rows}
        for r in table:
            mapping.setdefault(r[0], [])
        for t, i in enumerate(owner.tolist()):
            mapping[table[i][0]].append(best[t])
        return mapping, dropped, S
    return {}, dropped, math.inf


def stretch_remap(st: DfrsState, horizon: float, minvt: float | None = None, minft: float | None = None) -> None:
    """One MCB8-stretch remapping of all running and pending jobs, applied as
    the /per MCB8 remap (``greedy.mcb8_remap``)."""
    jobs = sorted(st.running | st.pending)
    if not jobs:
        return
    pinned = _pinned(st, minvt, minft)
    F = _flow(st, jobs, horizon)
    rows = [
        (j, st.tasks[j], st.cpu[j], st.mem[j], st.priority(j), float(F[i]), float(st.vt[j])) for i, j in enumerate(jobs)
    ]
    mapping, dropped, _S = mcb8_stretch(rows, st.nodes, horizon, pinned=pinned)
    fixed = {k for j in pinned if j in mapping for k in mapping[j]}
    relabel = _relabel(st, mapping, fixed).tolist()
    mapping = {j: [relabel[b] for b in bins] for j, bins in mapping.items()}
    pauses = [j for j in dropped if st.status[j] == RUNNING]
    moves = {j: nodes for j, nodes in mapping.items() if st.status[j] == RUNNING}
    places = {j: nodes for j, nodes in mapping.items() if st.status[j] != RUNNING}
    st.apply(pauses=pauses, moves=moves, places=places)


# -- resource allocation -----------------------------------------------------------


def _node_levels(A: np.ndarray, F: np.ndarray, v: np.ndarray, T: float, cap: np.ndarray) -> np.ndarray:
    """For each row k of A (columns: the active jobs), the largest u with
    sum_j A[k, j] y_j(u) <= cap[k] (inf if never exceeded). Each row sum is
    piecewise linear and non-decreasing in u with breakpoints among v_j / F_j
    and (v_j + T) / F_j: it is evaluated at all of them (one matrix product)
    and interpolated linearly between the two around cap[k] -- exact."""
    out = np.full(A.shape[0], math.inf)
    full = A.sum(axis=1)
    cap = np.maximum(cap, 0.0)
    rows = np.flatnonzero((full > 0.0) & (full > cap * (1.0 + _SAT_TOL)))  # rows without active jobs: inf
    if not len(rows):
        return out
    cand = np.unique(np.concatenate([v / F, (v + T) / F]))
    G = A[rows] @ np.clip((F[:, None] * cand[None, :] - v[:, None]) / T, 0.0, 1.0)
    c = cap[rows]
    i = np.argmax(G > c[:, None], axis=1)  # exists: the last column is the full load > cap
    ok = i > 0
    out[rows[~ok]] = cand[0]
    r, k = rows[ok], i[ok]
    g0, g1 = G[ok, k - 1], G[ok, k]
    u0, u1 = cand[k - 1], cand[k]
    out[r] = u0 + (c[ok] - g0) * (u1 - u0) / (g1 - g0)
    return out


def min_max_stretch_yields(A: np.ndarray, F: np.ndarray, v: np.ndarray, T: float) -> np.ndarray:
    """OPT=MAX: progressive filling in u = 1/S (see the module docstring):
    the yields in [0, 1] with A y <= 1 that lexicographically minimise the
    expected stretches F_j / (v_j + y_j T), largest first. A: rows = nodes,
    A[k, j] = c_j x (tasks of j on k)."""
    K, J = A.shape
    F = np.asarray(F, dtype=float)
    v = np.asarray(v, dtype=float)
    y = np.zeros(J)
    active = np.ones(J, dtype=bool)
    used = np.zeros(K)
    u_job = (v + T) / F  # u at which y_j reaches 1
    level = np.full(K, math.inf)
    stale = np.ones(K, dtype=bool)
    while active.any():
        rows = np.flatnonzero(stale)
        if len(rows):
            cols = np.flatnonzero(active)
            level[rows] = _node_levels(A[np.ix_(rows, cols)], F[cols], v[cols], T, 1.0 - used[rows])
        stale[:] = False
        u = min(float(level.min()) if K else math.inf, float(u_job[active].min()))
        y[active] = _need(F[active], v[active], T, u)
        sat = level <= u * (1.0 + _SAT_TOL)
        # A >= 0, so "a positive entry in a saturated row" is "the column sum over them > 0"
        freeze = active & ((u_job <= u * (1.0 + _SAT_TOL)) | A[sat].any(axis=0))
        if not freeze.any():  # u is attained by a job (u_job) or by a row holding active jobs
            raise RuntimeError("min_max_stretch_yields: no job frozen (bug)")
        # y[freeze] already holds y_j(u) (set for every active job just above, elementwise)
        used += A[:, freeze] @ y[freeze]
        stale |= (A[:, freeze] > 0).any(axis=1)
        active &= ~freeze
    return y


def _repair(A: np.ndarray, x: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Make A x <= 1 keeping lo <= x (A lo <= 1, A >= 0): on each overfull row k the
    parts above the floor are scaled by alpha_k = (1 - A_k lo) / (A_k x - A_k lo);
    each job takes the smallest alpha of its rows."""
    over = A @ x
    if float(over.max()) <= 1.0:
        return x
    base = A @ lo
    alpha = np.where(over > 1.0, (1.0 - base) / np.maximum(over - base, 1e-300), 1.0)
    alpha = np.clip(alpha, 0.0, 1.0)
    job_alpha = np.where(A > 0, alpha[:, None], 1.0).min(axis=0)
    return lo + (x - lo) * job_alpha


def min_avg_stretch_yields(
    A: np.ndarray, F: np.ndarray, v: np.ndarray, T: float, y_max: np.ndarray
) -> tuple[np.ndarray, int]:
    """OPT=AVG: minimise sum_j F_j / (v_j + y_j T) s.t. A y <= 1,
    y_j(1/S_max) <= y_j <= 1 with S_max the max expected stretch of the
    OPT=MAX yields ``y_max`` (SLSQP per connected component; see the module
    docstring). Returns (yields, number of components where SLSQP failed)."""
    from scipy.optimize import minimize
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    K, J = A.shape
    F = np.asarray(F, dtype=float)
    v = np.asarray(v, dtype=float)
    s_max = float(np.max(expected_stretch(F, v, T, y_max)))
    lb = np.zeros(J) if not math.isfinite(s_max) else _need(F, v, T, 1.0 / s_max)
    lb = np.minimum(lb, y_max)  # never above the proven-feasible OPT=MAX yields
    y = y_max.copy()
    B = (A > 0).astype(float)
    adj = csr_matrix(B.T @ B)
    ncomp, label = connected_components(adj, directed=False)
    failures = 0
    for c in range(ncomp):
        cols = np.flatnonzero(label == c)
        if len(cols) < 2:
            continue  # one job: the OPT=MAX yield (its largest feasible one) is optimal
        rows = np.flatnonzero(A[:, cols].sum(axis=1) > 0)
        Ac = np.unique(A[np.ix_(rows, cols)], axis=0)  # identical node rows once
        Fc, vc, y0, lo = F[cols], v[cols], y_max[cols], lb[cols]
        base = float(np.sum(expected_stretch(Fc, vc, T, y0)))
        scale = 1.0 / max(base, 1e-300)
        # Strictly interior start: OPT=MAX's yields sit on a degenerate vertex (saturated nodes,
        # ceiling bounds, y = 0 or 1 all tight), where SLSQP often stops with "inequality
        # constraints incompatible". With d = _AVG_MARGIN: bounds [lo - 2d, 1 + d], node rows
        # A x <= 1 - (d/2) x row sum, start y_max - d (strictly inside all of them); the result is
        # clipped back to [lo, 1], which adds at most 2d per yield: node CPU <= 1 + 1.5 d x row sum.
        d = _AVG_MARGIN
        lo_r, hi_r = lo - 2.0 * d, np.full(len(cols), 1.0 + d)
        rhs = 1.0 - 0.5 * d * Ac.sum(axis=1)
        x0 = y0 - d

        def fun(x, Fc=Fc, vc=vc, lo=lo, scale=scale):  # evaluated on the clipped point (SLSQP may probe outside)
            den = np.maximum(vc + np.clip(x, lo, 1.0) * T, 1e-12)
            return float(np.sum(Fc / den)) * scale, -Fc * T / den**2 * scale

        res = minimize(
            fun,
            x0,
            jac=True,
            method="SLSQP",
            bounds=list(zip(lo_r, hi_r)),
            constraints=[{"type": "ineq", "fun": lambda x, Ac=Ac, rhs=rhs: rhs - Ac @ x, "jac": lambda x, Ac=Ac: -Ac}],
            options={"ftol": 1e-12, "maxiter": 200},
        )
        x = np.clip(np.asarray(res.x, dtype=float), lo, 1.0)
        # status 8 ("positive directional derivative in linesearch") is SLSQP stalling on a flat
        # objective next to the optimum: its point is used if it passes the checks
        if not (res.status in (0, 8) and np.all(np.isfinite(x)) and float(np.max(Ac @ x)) <= 1.0 + _AVG_FEAS_TOL):
            failures += 1
            continue
        x = _repair(Ac, x, lo)
        if float(np.max(Ac @ x)) > 1.0 + 1e-12:
            failures += 1
            continue
        if float(np.sum(expected_stretch(Fc, vc, T, x))) <= base:  # never worse than OPT=MAX
            y[cols] = x
    return y, failures


def stretch_allocate(st: DfrsState, opt: str, horizon: float) -> int:
    """Set ``state.y`` of the running jobs for OPT=MAX or OPT=AVG (expected
    stretch over ``horizon`` seconds); returns the SLSQP failures (AVG)."""
    jobs = sorted(st.running)
    if not jobs:
        return 0
    jarr = np.asarray(jobs)
    st.y[jarr] = 1.0
    over = np.flatnonzero(st.load > 1.0 + 1e-12)
    if not len(over):
        return 0
    hit, A = running_incidence(st, jobs, over)
    F = _flow(st, hit.tolist(), horizon)
    v = st.vt[hit].astype(float)
    y = min_max_stretch_yields(A, F, v, horizon)
    failures = 0
    if opt == "AVG":
        y, failures = min_avg_stretch_yields(A, F, v, horizon, y)
    st.y[hit] = np.clip(y, 0.0, 1.0)
    return failures


# -- policies ---------------------------------------------------------------------


class StretchPer(PeriodicMCB8):
    """Mixin for the /stretch-per variants: /per's parameters (period,
    MINVT/MINFT), but MCB8-stretch every ``period`` seconds and the OPT=MAX /
    OPT=AVG expected-stretch allocation (engine hook ``allocate``) after every
    mapping change. ``opt`` is "MAX" or "AVG"."""

    opt: ClassVar[str] = "MAX"

    def on_period(self, st: DfrsState) -> None:
        stretch_remap(st, self.period, self.minvt, self.minft)

    def allocate(self, st: DfrsState, next_period: float) -> int:
        T = next_period - st.now
        if not (0.0 < T < math.inf):
            T = self.period
        return stretch_allocate(st, self.opt, T)


def _stretch_per(base: type[DfrsPolicy], opt: str) -> type[DfrsPolicy]:
    name = f"{base.name}/stretch-per/OPT={opt}"
    what = (
        "iterative min-max expected stretch"
        if opt == "MAX"
        else "min average expected stretch under the OPT=MAX ceiling"
    )
    return type(
        name,
        (StretchPer, base),
        {
            "name": name,
            "opt": opt,
            "__module__": __name__,
            "summary": f"{base.summary}; MCB8-stretch remapping every period (default 600 s); {what}",
            "__doc__": f"{base.__doc__} Periodic MCB8-stretch remapping (/stretch-per), resource allocation "
            f"OPT={opt} on expected stretch.",
        },
    )


_STRETCH_BASES = [
    _stretch_per(b, o) for b in (PER_ONLY, GreedyStar, GreedyPStar, GreedyPMStar, MCB8Star) for o in ("MAX", "AVG")
]
STRETCH_PER_POLICIES: dict[str, type] = {c.name: c for c in _STRETCH_BASES}
STRETCH_PER_POLICIES.update(
    {
        c.name: c
        for base in _STRETCH_BASES
        for kind in ("MINVT", "MINFT")
        for b in MIN_BOUNDS
        for c in (_with_limit(base, kind, b),)
    }
)
