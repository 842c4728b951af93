"""The packing engine's compiled fast path for the multi-resource built-ins
Tetris and Slots-Fair (``schedlab.engines.packing.policies.tetris``): one numba
kernel, :func:`_run`, the event loop of ``simulate_packing`` with d resources
and the policy's ``arrive`` / ``depart`` / ``schedule`` transcribed into it
(the policies' helpers are in ``schedlab.engines.packing.sim.tetris_fast``).

Why it exists
-------------
The Tetris pipelines (``tetris-packing``, ``tetris-fairness``) and sweeps
run Tetris and Slots-Fair over the Google trace's tasks grouped into jobs,
two resources (cpu, mem), on the Python reference -- the slowest packing
policies there are (Tetris's per-placement refresh of every queued shape's
alignment). The single-resource kernel (``packing_fast``) does not take them.

Same numbers as the reference, to the bit
-----------------------------------------
As ``packing_fast``: the engine loop is the reference's (arrival epochs from
``packing.arrival_epochs``, departures popped in (epoch, task) order from
``jit.hpush``/``hpop``'s heap, then arrivals in task order, then one
``schedule`` whose placements are checked with the engine's own fit test on
its own free capacities), now with a vector per resource: ``free[s] +=
demand`` and ``-=`` element by element, the queued-resource and used sums
and their time integrals per resource in the same order, the same resets to
0.0. Each policy keeps its own copy of the free capacities, copied from the
engine's at a departure and decremented at a placement as the reference's.

* Tetris. The reference's structures and why the kernel's give the same answers:

  - the fair order, a ``SortedList`` of (dominant share, group id): two
    sorted arrays (share, dense group id; dense ids are in group-id order),
    insertion and removal by binary search in tuple order;
  - a shape's alignments, a ``SortedList`` of (-alignment, server): one
    argmax tree per live shape over the servers (-inf where the shape does
    not fit; ties to the left = the lowest server), in a pool of slots that
    grows by doubling and recycles the slots of deleted shapes. Alignments
    are computed with ``_refresh``'s operations (the sum from 0 in resource
    order); ``_new_shape`` computes them with numpy's ``sum(axis=1)``, which
    gives the same sums only if numpy adds a short row in order:
    :func:`_row_sums_in_order` checks that for the run's d on the installed
    numpy (true for d <= 7 with numpy 2.4; d >= 8 is pairwise) and the kernel
    declines otherwise;
  - ``epoch_epsilon`` sums over the shapes dict in insertion order: the live
    shapes are a linked list in creation order (a deleted shape is unlinked,
    a re-created one appended, as ``del`` and re-insertion in a dict);
  - ``_pick`` compares (score, server, task) tuples with ``<``; tasks are
    distinct, so the order is total and the order in which a job's classes
    (shapes) are scanned does not matter: a job's non-empty classes are an
    unordered linked list;
  - a job record the reference deletes (nothing queued or running) has
    share 0.0, no allocation and work 0.0 -- the state of a new record -- so
    the kernel keeps one record per group for the whole run.

  Shape keys are demand tuples compared by value; -0.0 == 0.0 would merge
  two bit-different rows into one shape whose vector is the first arrival's,
  so a demand with a negative zero is declined.
* Slots-Fair: the slot count of every task (``slots_of``: the same numpy
  products, max and ``ceil(x * (1 - 1e-12))``, at least 1) is computed once;
  the slot tree is ``MaxSegmentTree``'s array (``jit.st_*``) with the same
  float additions; the fair order of (slots held, group) the same sorted
  arrays; a job's queue a range of its tasks in task order; the blocked set
  flags cleared at the end of ``schedule``.

The per-job starts, servers, time integrals, counters and series go to
``packing.finish_result`` (the reference's own code for every derived metric),
so every per-job column and summary value but ``sim_seconds`` is
bit-identical; ``tests/test_packing_multi_fast.py`` checks it with hypothesis
on tie-heavy multi-resource workloads with groups.

Speed (``benchmarks/packing.py``: the whole Google prefix, 292k tasks, cpu
and mem, grouped into jobs, 1000 servers, Δ = 0.1 s; each policy's two paths
run back to back): Tetris 77-94 k tasks/s (21x the reference), Slots-Fair
195-278 k (22-23x), the same numbers on both paths. The first use on a
machine compiles the kernel (37-47 s on a heavily loaded machine, against
74-100 s for ``packing_fast``'s in the same runs); later processes load it
from the disk cache in 1-2 s.

When the fast path is not used
------------------------------
A kernel is named by its id, "Tetris" or "Slots-Fair": the engine registry
(``schedlab.engines.packing.kernel_id``) gives it for those classes
themselves, by identity, so a subclass runs on the reference; the class comes
along only for its constructor. :func:`simulate` declines (returns None; the reference then runs
and gives its answer or error) where the reference raises (bad inputs, as
``packing_fast_io.checked_inputs``; parameters the policy refuses: the
reference's own constructor is called to validate them and to compute its
constants; a task whose slot count overflows), no tasks, non-finite
capacities, Slots-Fair with 2^52 slots or more in all (the kernel holds
slot counts as floats), Tetris with a -0.0 demand or a d whose numpy row sums are not in
order, and a placement the engine would reject (never seen: both policies
test fits with the engine's test on the engine's numbers). ``check`` and
``hidden`` exist only on the reference.

Layout
------
``kernel``: :func:`_run` (the event loop) and its modes and statuses; this
``__init__`` is the Python side: :func:`kernel_for`, :func:`simulate`,
:func:`warm`, and the tables the kernel takes.
"""

from __future__ import annotations

import functools

import numpy as np

from schedlab.engines.packing.sim.engine import arrival_epochs, finish_result
from schedlab.engines.packing.sim.fast_io import checked_inputs, horizon
from schedlab.engines.packing.sim.multi_fast.kernel import MISFIT, OK, SLOTS, TETRIS, _run  # noqa: F401  (MISFIT: kept in this package's API)

# ---- the Python side ----------------------------------------------------------------------


#: Kernel id (a built-in policy's registry name, see ``fast_io``) -> the kernel's mode.
_MODES = {"Tetris": TETRIS, "Slots-Fair": SLOTS}


def kernel_for(kernel: str | None) -> int | None:
    """The kernel mode of kernel id ``kernel`` (Tetris or Slots-Fair), else None."""
    return _MODES.get(kernel) if kernel is not None else None


@functools.cache
def _row_sums_in_order(d: int) -> bool:
    """Whether numpy's ``x.sum(axis=1)`` of a C-contiguous m x d array (the
    reference's ``_new_shape``) adds each row from 0 in column order, as the
    kernel does -- on values where any other association gives other bits."""
    rng = np.random.default_rng(20141017)
    for m in (1, 2, 3, 5, 17, 300):
        x = rng.standard_normal((m, d)) * 10.0 ** rng.integers(-12, 13, (m, d))
        x[0, :] = [(-1.0) ** k * 2.0**53 if k % 3 else 1.0 for k in range(d)]  # cancellation: order shows
        x[-1, :] = -0.0  # from 0.0 (as Python's sum) or from the first term: the sign of zero shows
        acc = np.zeros(m)
        for k in range(d):
            acc = acc + x[:, k]
        if acc.tobytes() != x.sum(axis=1).tobytes():
            return False
    return True


def _dense(ids: np.ndarray):
    """(dense ids in sorted order of ``ids``, count)."""
    uniq, inv = np.unique(ids, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), len(uniq)


def _ranges(ids: np.ndarray, count: int):
    """The indices grouped by id (index order within an id) and each id's first position."""
    order = np.argsort(ids, kind="stable").astype(np.int64)
    lo = np.searchsorted(ids[order], np.arange(count), side="left").astype(np.int64)
    return order, lo


def _writable(a: np.ndarray, dtype=np.float64) -> np.ndarray:
    # C, writable, one dtype: the types the kernel is compiled for
    return np.require(a, dtype, ["C", "W"])


def _tables(mode: int, policy, demand, gidx, G):
    """The kernel's policy arguments (both policies' slots filled, the other
    one's empty), or None to decline."""
    n, d = demand.shape
    e_i, e_f = np.empty(0, dtype=np.int64), np.empty(0)
    L = policy.cluster.servers
    if mode == TETRIS:
        if np.any(np.signbit(demand)) or not _row_sums_in_order(d):
            return None
        _, srep, shp = np.unique(demand, axis=0, return_index=True, return_inverse=True)
        shp = shp.reshape(-1).astype(np.int64)
        S = len(srep)
        cls, C = _dense(gidx * S + shp)
        cshape = np.empty(C, dtype=np.int64)
        cshape[cls] = shp
        ctask, clo = _ranges(cls, C)
        return dict(
            fairness=float(policy.fairness),
            epsilon=float(policy.epsilon),
            w=_writable(policy.w),
            inv_total=_writable(np.array(policy.inv_total)),
            inv_mean=_writable(np.array(policy.inv_mean)),
            shp=shp,
            cls=cls,
            srep=srep.astype(np.int64),
            cshape=cshape,
            ctask=ctask,
            clo=clo,
            kslots=e_i,
            nslots=np.zeros(L),
            gtask=e_i,
            glo=e_i,
        )
    with np.errstate(over="ignore", invalid="ignore"):
        x = (demand * np.array(policy.inv_slot)).max(axis=1) * (1 - 1e-12)
    if not np.all(np.isfinite(x)):
        return None  # the reference's math.ceil raises OverflowError
    most = max(policy.slots) + 1  # a task needing more never runs (PackingStalled): any larger count acts the same
    if most * L >= 2**52:
        return None  # slot counts the kernel's floats would not hold exactly (the reference's are ints)
    k = np.minimum(np.maximum(1.0, np.ceil(x)), float(most)).astype(np.int64)
    gtask, glo = _ranges(gidx, G)
    return dict(
        fairness=0.0,
        epsilon=0.0,
        w=np.zeros((0, d)),
        inv_total=e_f,
        inv_mean=e_f,
        shp=e_i,
        cls=e_i,
        srep=e_i,
        cshape=e_i,
        ctask=e_i,
        clo=e_i,
        kslots=k,
        nslots=_writable(np.array([float(v) for v in policy.slots])),
        gtask=gtask,
        glo=glo,
    )


def _kernel_call(mode, arr_t, dur, dem, cap, est, epoch, until, sample_every, gidx, G, tables):
    return _run(
        int(mode),
        arr_t,
        dur,
        dem,
        cap,
        est,
        float(epoch or 0.0),
        float(0.0 if until is None else until),
        until is not None,
        float(sample_every or 0.0),
        gidx,
        int(G),
        **tables,
    )


def simulate(
    kernel: str | None,
    cls: type,
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
    """``simulate_packing(...)`` of Tetris or Slots-Fair (kernel id
    ``kernel``; ``cls``: that policy's class, whose constructor checks the
    parameters and computes the tables, as on the reference): the same
    :class:`~schedlab.engines.packing.sim.engine.PackingResult`, bit for bit; or None when
    the fast path declines (module docstring): then run the reference."""
    from schedlab.engines.packing.sim.engine import Cluster
    from schedlab.errors import UserError

    mode = kernel_for(kernel)
    if kernel is None or mode is None:
        return None
    checked = checked_inputs(submit, duration, demand, capacity, group, estimate, epoch, sample_every, until)
    if checked is None:
        return None
    submit, duration, demand, capacity, group, estimate = checked
    n, d = demand.shape
    try:  # the reference's own checks and constants
        policy = cls(Cluster(capacity, demand, group, estimate), **(params or {}))
    except (UserError, TypeError, ValueError):
        return None
    gidx, G = (np.arange(n, dtype=np.int64), n) if group is None else _dense(group)
    tables = _tables(mode, policy, demand, gidx, G)
    if tables is None:
        return None
    dem = _writable(demand)
    start, server, floats, area_qres, area_used, ints, s_t, s_q, s_r, s_run = _kernel_call(
        mode,
        _writable(arrival_epochs(submit, epoch)),
        _writable(duration),
        dem,
        _writable(capacity),
        _writable(estimate),
        epoch,
        until,
        sample_every,
        gidx,
        G,
        tables,
    )
    if ints[3] != OK:
        return None
    series = None
    if sample_every is not None:
        series = {
            "t": s_t.copy(),
            "queue_jobs": s_q.copy(),
            "queue_resource": s_r.reshape(-1, d).copy(),
            "running_jobs": s_run.copy(),
        }
    hz = horizon(floats, ints, epoch, until)
    if hz is None:
        return None
    t0, t1 = hz
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
        float(floats[2]),
        float(floats[3]),
        area_qres.tolist(),
        area_used.tolist(),
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
UNIT = "packing.multi_fast"


def cached() -> bool:
    """Whether the kernel's compiled code is in the on-disk cache
    (`schedlab.sim.common.jit.cached`)."""
    from schedlab.sim.common.jit import cached as in_cache

    return in_cache(_run)


_WARM: list[bool] = []


def warm(kernel: str | None, cls: type) -> None:
    """Compile (or load from the on-disk cache) the kernel now, so that a
    timed run excludes it (with kernel ``kernel`` of policy class ``cls``:
    both policies share one compiled kernel)."""
    if not _WARM:
        demand = np.array([[0.5, 0.25], [0.5, 0.25], [0.25, 0.5]])
        simulate(
            kernel, cls, [0.0, 0.0, 1.0], [1.0, 2.0, 1.0], demand, np.ones((2, 2)), sample_every=1.0, group=[0, 0, 1]
        )
        _WARM.append(True)
