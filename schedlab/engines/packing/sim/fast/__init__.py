"""The packing engine's compiled fast path: one numba kernel for the
single-resource built-in policies FIFO-FF, BF-J, BF-S, BF-J/S, VQS and VQS-BF.

Why it exists
-------------
The reference engine (``schedlab.engines.packing.sim.engine`` with the policies of
``schedlab.engines.packing.policies``) is readable Python and the seam for user
policies; it packs ~75 k tasks/s (BF-J/S, Google clusterdata-2011 prefix, 1000
servers). Sweeps over the Google trace (``sweeps/google-packing.toml``) and
the Fig. 4 grids (``sweeps/packing-fig4.toml``) run BF-J/S, FIFO-FF, VQS and
VQS-BF over hundreds of thousands of tasks per point, with ``sample_every``
series. :func:`_run` is the whole event loop
of ``simulate_packing`` with each policy's ``arrive`` / ``depart`` /
``schedule`` transcribed into it, over numpy arrays, no Python object in the
loop.

Same numbers as the reference, to the bit
-----------------------------------------
The kernel is a transcription, operation for operation:

* the engine loop: arrival epochs from the same numpy expression
  (``packing.arrival_epochs``), departure epochs ``ceil(q - EPOCH_TOL *
  max(1, |q|)) * Δ``, departures popped in (epoch, job) order from a binary
  heap (a total order: any heap pops the same sequence), then arrivals in job
  order, then one ``schedule``, whose placements the engine applies in list
  order with its own fit test ``size > free + FIT_TOL`` on its own free
  capacities; the time integrals ``area += count * dt`` accumulated in the
  same order, the same resets (used := 0 when nothing runs, queued resource
  := 0 when the queue is empty), the same ``sample_every`` recording;
* each policy keeps its own free capacities, updated by the same additions
  and subtractions in the same order as the reference policy's, and its own
  structures with the reference's tie orders:

  - ``MaxSegmentTree`` (FIFO-FF, BF-S): the same array segment tree (-inf
    padding, ``a if a >= b else b``, the same First-Fit climb and descent);
  - ``ServersByFree`` (BF-J, BF-J/S): a skip list over the servers keyed by
    (free, server) -- the ``SortedList``'s order -- so "least free >= r, lowest
    index on ties" and "max free" read the same server; node levels come from
    a fixed hash of the server index (no random state; the levels only shape
    the list, never the answer);
  - ``JobsBySize`` (BF-J, BF-S, BF-J/S): all jobs are known in advance, so
    they are ranked once by the ``SortedList``'s key (size, -job); the queued
    ones are a 64-ary bitset tree over ranks, "largest size <= x, earliest
    arrival on ties" is the greatest queued rank below ``#(sizes <= x)`` and
    the smallest queued size is the least queued rank's size.

  Queues in arrival order: FIFO-FF's is the job range [head, arrived); BF-J's
  a linked list; BF-J/S's new arrivals the range that arrived this epoch.

* VQS and VQS-BF (``engines/packing/policies/vqs.py``, any J from 2 to
  ``fast_io.FAST_VQS_MAX_J``): each job's type is the reference's
  ``type_of`` (bisect_left = searchsorted 'left') and K_RED comes from the
  reference's own ``k_red``/``split_config`` (``engines/packing/sim/vqs_partition.py``) as
  (k_1, j, k_j) triples, renewed by
  the same integer ``argmax <k, Q>`` (ties to the first). Per server: the
  configuration (-1 = None), job and per-type counts, and (VQS) the per-type
  sums ``used[s][t]`` with the same ``+=``, ``-=`` and reset to 0.0.

  - VQS: VQ_t is a range of the type-t jobs in job order (FIFO: arrivals
    append, rules pop the head); the groups ``(room, server)`` are one max
    segment tree of rooms per type (-inf outside the group), so a wake adds
    every server with room >= head - FIT_TOL, as ``irange`` does; ``want1``,
    the empty servers and the schedule's heap are bitset trees over server
    indices (a heap of distinct ints pops its least: a set with "min" pops the
    same sequence); the dirty servers a list with flags (``discard`` clears
    the flag). The loop is ``schedule``'s: the lower of the heap's least
    server and the next empty server after the cursor acts, an empty one
    renewing first; rule (ii)'s local ``room -= r`` and the regrouping key
    ``cap - used`` are both computed as the reference does.
  - VQS-BF: the queue is JobsBySize's bitset over ranks; a job's type is a
    non-increasing function of its size, so the ranks of type t are a range
    and "the largest VQ_t job that fits" is the greatest queued rank below
    min(#(sizes <= x), end of t's range), if it is in that range. The policy's
    free capacities (from 1.0, reset to 1.0 when a server empties) are a max
    segment tree; the candidate servers (free >= smallest - FIT_TOL at the
    epoch's start, in index order) are read from it as the pass goes, which
    gives the same list: only the server acting changes its free capacity.

Every float operation is IEEE double in the reference's order (numba does not
reassociate or contract without ``fastmath``); the per-job starts, servers,
the time integrals, the counters and the series are returned to
:func:`schedlab.engines.packing.sim.engine.finish_result`, the reference's own code for every
derived metric (waits, percentiles, JCTs, means). So every number -- per-job
columns and every summary value but ``sim_seconds`` -- is **bit-identical**;
no tolerance is needed anywhere. (Even the horizon's types: with an integer
Δ the reference's departure epochs are Python ints, ``math.ceil(...) * Δ``;
the kernel computes them as floats -- the same values below 2^53 -- and
:func:`simulate` gives the horizon's end back as the int. ``math.ceil`` has
no negative zero, so ``_epoch_of`` turns a -0.0 ceil into 0.0.)
``tests/test_packing_fast.py`` checks it
with hypothesis on workloads full of ties (equal submits, durations and
sizes, sizes summing to the capacity up to rounding, equal free capacities,
both epoch modes; for VQS and VQS-BF sizes on the partition's boundaries and
an ulp either side, below 2^-J, bursts that make many empty servers renew in
one epoch, several J) and on the engine tests' scenarios.

Where the reference raises: FIFO-FF and the BF-J steps ask for a server with
``free >= size - FIT_TOL`` while the engine checks ``size <= free +
FIT_TOL``; at the last bit the two can disagree (sizes within ~1e-9 of a free
capacity), and the reference then raises ``CapacityExceeded``. VQS and VQS-BF
keep their own capacities (1.0, VQS's 1/3 share and unchecked type-1
reservation) and tolerance, which can overfill a server by a few ulps when
sizes sit a tolerance from 0 or 1 (1e-9, 1 + 1e-9), or when a capacity
differs from 1 by up to the FIT_TOL they accept. The kernel runs the
policies' tests as the reference does, stops at a placement the engine would
reject and returns ``MISFIT``: :func:`simulate` declines and the reference
gives its error.

When the fast path is not used
------------------------------
A kernel is named by its id, the built-in policy's registry name: the engine
registry (``schedlab.engines.packing.kernel_id``) gives it for the built-in
classes themselves, by identity, so a subclass of a built-in (a user's
policy) always runs on the reference; this package never sees a policy
class. :func:`simulate`
also declines (returns None: the caller runs the reference, which then gives
its usual answer or error) for policy parameters (FIFO-FF and the BF policies
take none; VQS and VQS-BF: anything but an int J in 2..24), clusters and jobs
VQS and VQS-BF refuse (a capacity off 1 by more than FIT_TOL, a size above
1 + FIT_TOL: the reference raises its UserError), several resources, no jobs,
inputs the reference rejects (unsorted, negative, non-finite, bad shapes, a
bad group or estimate column, a bad Δ or ``sample_every``), non-finite
capacities, a bool Δ, an int ``until`` beyond 2^53 (compared exactly by the
reference), and a MISFIT run. Groups (multi-task jobs) and estimates are
supported: these policies never read them, and the JCTs are computed by the
shared ``finish_result``. ``check`` and ``hidden`` (debugging and the
checker's guard) exist only on the reference.

Speed (``benchmarks/packing.py``, Google prefix, 1000 servers, Δ = 0.1 s):
1.5 M tasks/s for BF-J/S (~20x the reference), 1.2-1.8 M for BF-J, 2-4 M for
BF-S and FIFO-FF; 1.7-1.8 M for VQS (21-25x) and 3.0-3.3 M for VQS-BF
(54-58x). Fig. 4 setting (5 servers, Δ = 1): VQS 1.5-1.7 M tasks/s (22-30x),
VQS-BF 1.0-1.9 M (17-33x). Compiled code is cached on disk (``cache=True``,
``schedlab.sim.common.jit``): the first use on a machine compiles the kernel (about
twice the four-policy kernel's time: 22 s against 11.5 s side by side on a
loaded machine), later processes load it (0.85 s against 0.5 s). This
package imports numba; only the packing engine's fast path imports this package.

Layout
------
``structures``: kernel modes and statuses, the segment trees of VQS's groups,
``ServersByFree`` (skip list) and ``JobsBySize`` (bitset tree); ``fit``: the
``schedule()`` steps of FIFO-FF, BF-J, BF-S, BF-J/S; ``vqs``: VQS's and
VQS-BF's state and steps; ``kernel``: :func:`_run`, the event loop. This
``__init__`` is the Python side: :func:`kernel_for`, :func:`simulate`,
:func:`warm`.
"""

from __future__ import annotations

import numpy as np

from schedlab.engines.packing.sim.engine import FIT_TOL, arrival_epochs, finish_result
from schedlab.engines.packing.sim.fast.kernel import _run
from schedlab.engines.packing.sim.fast.structures import (  # noqa: F401  (INF, MISFIT: kept in this package's API)
    BF_J,
    BF_JS,
    BF_S,
    FIFO_FF,
    INF,
    MAXLV,
    MISFIT,
    OK,
    VQS,
    VQS_BF,
)
from schedlab.engines.packing.sim.fast_io import checked_inputs, fast_vqs_J, horizon
from schedlab.engines.packing.sim.vqs_partition import TYPE1_RESERVE, ascending_bounds, k_red, split_config

# ---- the Python side ----------------------------------------------------------------------


#: Kernel id (a built-in policy's registry name, see ``fast_io``) -> the kernel's mode.
_MODES = {"FIFO-FF": FIFO_FF, "BF-J": BF_J, "BF-S": BF_S, "BF-J/S": BF_JS, "VQS": VQS, "VQS-BF": VQS_BF}


def kernel_for(kernel: str | None) -> int | None:
    """The kernel mode of kernel id ``kernel``, else None."""
    return _MODES.get(kernel) if kernel is not None else None


def _levels(L: int) -> np.ndarray:
    """Skip-list node levels: 1 + trailing zero bits of a fixed hash
    (splitmix64) of the server index: P(level > k) = 2^-k, no random state."""
    z = np.arange(L, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    low = z & (~z + np.uint64(1))  # lowest set bit (0 if z == 0)
    lv = np.full(L, MAXLV, dtype=np.int64)
    nz = low != 0
    lv[nz] = np.minimum(np.log2(low[nz].astype(float)).astype(np.int64) + 1, MAXLV)
    return lv


def _writable(a: np.ndarray) -> np.ndarray:
    # A writable C float64 array: the one type the kernel is compiled for (a
    # read-only array, as polars hands out, would compile a second version).
    return np.require(a, np.float64, ["C", "W"])


def _ranks(size: np.ndarray):
    """(order, rank, sorted sizes) of the jobs by JobsBySize's key (size, -job)."""
    n = len(size)
    order = np.lexsort((-np.arange(n), size)).astype(np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    return order, rank, np.ascontiguousarray(size[order])


def _vqs_tables(size: np.ndarray, J: int):
    """VQS's tables for the kernel: each job's type (the reference's
    ``type_of(min(r, 1.0), asc)``: bisect_left is searchsorted 'left'), K_RED
    as (k_1, j, k_j) triples and VQS's capacity for type j per configuration."""
    asc = np.array(ascending_bounds(J))
    T = 2 * J
    i = np.searchsorted(asc, np.minimum(size, 1.0), side="left")
    typ = np.where(i == 0, T - 1, T - i).astype(np.int64)
    info = [split_config(k) for k in k_red(J)]
    cfg = np.array([x for triple in info for x in triple], dtype=np.int64)
    capj = np.array([1.0 - TYPE1_RESERVE if k1 else 1.0 for k1, _, _ in info])
    return typ, cfg, capj, T


def _kernel_call(mode: int, arr_t, dur, size, cap, epoch, until, sample_every, J: int = 0):
    empty = np.empty(0, dtype=np.int64)
    if mode == FIFO_FF or mode == VQS:
        order, rank, sorted_size = empty, empty, np.empty(0)
    else:
        order, rank, sorted_size = _ranks(size)
    lvl = _levels(len(cap)) if mode in (BF_J, BF_JS) else np.ones(len(cap), dtype=np.int64)
    typ, cfg, capj, T, tlist, tlo, thi = empty, empty, np.empty(0), 0, empty, empty, empty
    if mode == VQS or mode == VQS_BF:
        typ, cfg, capj, T = _vqs_tables(size, J)
        types = np.arange(T)
        if mode == VQS:  # VQ_t: type t's jobs in job order, from tlo[t] in tlist
            tlist = np.argsort(typ, kind="stable").astype(np.int64)
            tlo = np.searchsorted(typ[tlist], types, side="left").astype(np.int64)
            thi = np.searchsorted(typ[tlist], types, side="right").astype(np.int64)
        else:  # ranks by (size, -job): types non-increasing, type t's ranks a range
            neg = -typ[order]
            assert np.all(np.diff(neg) >= 0)
            tlo = np.searchsorted(neg, -types, side="left").astype(np.int64)
            thi = np.searchsorted(neg, -types, side="right").astype(np.int64)
    return _run(
        int(mode),
        arr_t,
        dur,
        size,
        cap,
        float(epoch or 0.0),
        float(0.0 if until is None else until),
        until is not None,
        float(sample_every or 0.0),
        order,
        rank,
        sorted_size,
        lvl,
        typ,
        cfg,
        capj,
        int(T),
        tlist,
        tlo,
        thi,
    )


def simulate(
    kernel: str | None,
    submit,
    duration,
    demand,
    capacity,
    *,
    epoch: float | None = 1.0,
    sample_every: float | None = None,
    until: float | None = None,
    group=None,
    estimate=None,
    params=None,
):
    """``simulate_packing(...)`` of the built-in policy whose kernel id is
    ``kernel``: the same :class:`~schedlab.engines.packing.sim.engine.PackingResult`,
    bit for bit; or None when the fast path declines (module docstring): then
    run the reference."""
    mode = kernel_for(kernel)
    if kernel is None or mode is None:
        return None
    J = 0
    if mode == VQS or mode == VQS_BF:
        found_J = fast_vqs_J(params)
        if found_J is None:
            return None
        J = found_J
    elif params:
        return None
    checked = checked_inputs(submit, duration, demand, capacity, group, estimate, epoch, sample_every, until)
    if checked is None:
        return None
    submit, duration, demand, capacity, group, estimate = checked
    if demand.shape[1] != 1:
        return None
    size = _writable(demand[:, 0])
    cap = _writable(capacity[:, 0])
    if J and (np.any(np.abs(cap - 1.0) > FIT_TOL) or np.any(size > 1.0 + FIT_TOL)):
        return None  # the reference refuses the cluster or a job (UserError)
    arr_t = _writable(arrival_epochs(submit, epoch))
    dur = _writable(duration)
    start, server, floats, ints, s_t, s_q, s_r, s_run = _kernel_call(
        mode, arr_t, dur, size, cap, epoch, until, sample_every, J
    )
    if ints[3] != OK:
        return None
    series = None
    if sample_every is not None:
        series = {
            "t": s_t.copy(),
            "queue_jobs": s_q.copy(),
            "queue_resource": s_r.reshape(-1, 1).copy(),
            "running_jobs": s_run.copy(),
        }
    hz = horizon(floats, ints, epoch, until)
    if hz is None:
        return None
    t0, t1 = hz
    _, _, area_q, area_run, area_qres, area_used = floats.tolist()
    completed, started, epochs = ints[:3].tolist()
    return finish_result(
        submit,
        duration,
        capacity,
        group,
        start,
        server,
        t0,
        t1,
        area_q,
        area_run,
        [area_qres],
        [area_used],
        completed,
        started,
        epochs,
        series,
        policy=kernel,
        until=until,
        demand=demand,
        epoch=epoch,
    )


#: The one compiled function every kernel id of this package runs on, named
#: for ``schedlab.sim.common.compiling``.
UNIT = "packing.fast"


def cached() -> bool:
    """Whether the kernel's compiled code is in the on-disk cache
    (`schedlab.sim.common.jit.cached`)."""
    from schedlab.sim.common.jit import cached as in_cache

    return in_cache(_run)


_WARM: list[bool] = []


def warm() -> None:
    """Compile (or load from the on-disk cache) the kernel now, so that a
    timed run excludes it."""
    if not _WARM:
        one = np.ones(3)
        _kernel_call(BF_JS, np.array([0.0, 0.0, 1.0]), one, one * 0.5, np.ones(2), 1.0, None, 1.0)
        _WARM.append(True)
