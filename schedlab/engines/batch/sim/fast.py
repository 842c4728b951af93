"""The batch engine's compiled fast path: numba kernels for FCFS, EASY and the
priority policies (SJF, WFP3, UNICEP, F1-F4, each with or without EASY).

Why it exists
-------------
The reference engine (``schedlab.engines.batch.sim.engine.simulate_batch`` with the policies
of ``schedlab.engines.batch.policies``) is readable Python and the seam for user
policies; EASY replays ~0.2 M jobs/s there (a Python call per arrival,
completion and pass, a ``SortedList`` of tuples). A sweep over the Parallel
Workloads Archive logs replays millions of jobs per grid point, so the two
built-in policies get one ``@njit(cache=True)`` event loop over numpy arrays
here (:func:`_fcfs`, :func:`_easy`), no Python object in the loop.

Same numbers as the reference: bit-identical
--------------------------------------------
Each kernel is a transcription of ``simulate_batch`` + the policy, operation
for operation:

* the event loop: jobs arrive in ``np.argsort(submit, kind="stable")`` order
  (computed by the same numpy call, outside the kernel); the next instant is
  ``heap top if heap top < next submit else next submit``; at each instant
  all completions with end <= t (in (end, job) order), then all arrivals with
  submit <= t, then ONE scheduling pass (counted in ``passes``), whose starts
  are applied in the policy's list order: ``start = t``, ``end = t + run``.
  A job of runtime 0 ends at t and is completed by a second pass at the same
  t, exactly as in the reference (the loop is the same loop);
* completions: a binary heap ordered by (end, job) -- the order of Python's
  ``heapq`` on ``(end, job)`` tuples; a total order, so the sequence of tops
  (all the reference ever reads) is the same whatever the heap's shape;
* FCFS: the queue is the arrival order itself (``order[head:i]``): the head
  starts while its need fits in the free units;
* EASY: the queue is a doubly linked list over job indices in arrival order
  (O(1) removal of a backfilled job, iteration in the ``dict``'s insertion
  order); the running jobs are a sorted array of (requested end, job), the
  ``SortedList`` of the reference, with binary-search insertion and removal
  (O(log r) search, O(r) shift; r <= capacity since every job holds >= 1
  unit). The requested end is the same float ``now + requested[job]``; the
  shadow scan walks the running jobs in order (``avail += need``; shadow =
  ``e if e > now else now``; then every job with e <= shadow), ``extra =
  avail - need[head]``, and the backfill scan applies rules (a) ``now +
  requested <= shadow`` and (b) ``need <= extra`` (then ``extra -= need``) in
  queue order, stopping when no unit is free -- the same comparisons on the
  same floats. The backfilled jobs start after the heads of the pass, in
  queue order, as in the reference's returned list;
* the priority policies (:func:`_priority`, one kernel, the key chosen by
  the class's ``kind``): the queue is EASY's linked list; at each pass the
  head is the first job of smallest :func:`_key` in a scan in arrival order
  (strict ``<``, as ``PriorityPolicy.choose``); each key is the policy's
  expression with the same operations in the same order (``q * q * q * n``,
  ``math.log2`` / ``log10`` / ``sqrt``: the C library's, as Python's); with
  backfilling, EASY's reservation and scan skipping the head.

There is no float arithmetic besides ``t + run`` and ``now + requested``
(integers count the units), and numba compiles IEEE double operations without
reassociation (no ``fastmath``), so start and end times are **bit-identical**
to the reference and the pass count is equal. ``tests/test_batch_fast.py``
checks it by exact equality (``tolist() ==``) with hypothesis over workloads
full of ties (equal submits, equal ends, runtime 0, jobs outliving their
requested time, requested far from runtime, needs equal to the capacity, both
machine models) and on the HPC2N log; every batch engine test runs on both
paths.

When the fast path is not used
------------------------------
A kernel is named by its id (``Kernel``: "FCFS", "EASY", or a priority
policy's ("priority", kind, backfill)): the engine registry
(``schedlab.engines.batch.kernel_id``) gives it for the built-in classes
themselves, by identity, so a subclass of a built-in (a user's policy) always
runs on the reference; this module never sees a policy class. :func:`simulate`
also declines (returns None: the engine runs the reference) for policy
parameters (EASY's ``record_reservations``, which only the Python policy
records), no jobs, inputs that are not finite, negative submits or runtimes,
requested times <= 0, needs outside 1..capacity, and a run that does not
finish every job (impossible for valid inputs; a guard, not a code path). The
reference then gives its usual answer or error.

Compiled code is cached on disk (``cache=True``, set up in
``schedlab.sim.common.jit``); :func:`warm` compiles or loads a kernel before a timed
run. This module imports numba; only the batch engine's fast path imports it.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.sim.common.jit import HOT as _HOT
from schedlab.sim.common.jit import JIT as _JIT
from schedlab.sim.common.jit import NONE, ZERO, hpop, hpush, njit
from schedlab.sim.common.jit import cached as _cached

INF = math.inf

#: schedlab.engines.batch.policies.priority's key guards (sim/ never imports policies/: a test checks they agree).
UNICEP_EPS = 1e-15
F_SUBMIT_FLOOR = 0.1

#: Kernel status codes.
OK, STALLED = 0, 1

# Completions: a binary heap of (end, job), schedlab.sim.common.jit's hpush/hpop.


# ---- EASY's running jobs: a sorted array of (requested end, job) ------------------------


@njit(**_HOT)
def _lower_bound(rk, ri, r, key, item):
    """First position in rk/ri[:r] whose (key, item) is not < (key, item)."""
    lo = ZERO
    hi = r
    while lo < hi:
        mid = (lo + hi) >> 1
        mk = rk[mid]
        if mk < key or (mk == key and ri[mid] < item):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**_HOT)
def sorted_add(rk, ri, r, key, item):
    """Insert (key, item); return the new size."""
    p = _lower_bound(rk, ri, r, key, item)
    k = r
    while k > p:
        rk[k] = rk[k - 1]
        ri[k] = ri[k - 1]
        k -= 1
    rk[p] = key
    ri[p] = item
    return r + 1


@njit(**_HOT)
def sorted_remove(rk, ri, r, key, item):
    """Remove (key, item), which is present; return the new size."""
    p = _lower_bound(rk, ri, r, key, item)
    r -= 1
    while p < r:
        rk[p] = rk[p + 1]
        ri[p] = ri[p + 1]
        p += 1
    return r


# ---- the kernels -------------------------------------------------------------------------
# Arguments: submit, runtime, requested (float64), need (int64 units), order
# (int64, the stable argsort of submit), capacity. Returns start, end, passes,
# status.


@njit(**_JIT)
def _fcfs(submit, runtime, requested, need, order, capacity):
    n = submit.shape[0]
    start = np.empty(n)
    end = np.empty(n)
    hk = np.empty(n)
    hi = np.empty(n, dtype=np.int64)
    hs = ZERO
    free = capacity
    i = ZERO  # arrivals so far: the queue is order[q:i]
    q = ZERO
    passes = ZERO
    started = ZERO
    while i < n or hs > 0:
        t_arr = submit[order[i]] if i < n else INF
        t = hk[0] if hs > 0 and hk[0] < t_arr else t_arr
        while hs > 0 and hk[0] <= t:
            free += need[hi[0]]
            hs = hpop(hk, hi, hs)
        while i < n and submit[order[i]] <= t:
            i += 1
        passes += 1
        while q < i:
            j = order[q]
            nj = need[j]
            if nj > free:
                break
            q += 1
            free -= nj
            start[j] = t
            e = t + runtime[j]
            end[j] = e
            hs = hpush(hk, hi, hs, e, j)
            started += 1
    return start, end, passes, OK if started == n else STALLED


@njit(**_JIT)
def _easy(submit, runtime, requested, need, order, capacity):
    n = submit.shape[0]
    start = np.empty(n)
    end = np.empty(n)
    hk = np.empty(n)  # completions: (actual end, job)
    hi = np.empty(n, dtype=np.int64)
    hs = ZERO
    rk = np.empty(n)  # running jobs sorted by (requested end, job)
    ri = np.empty(n, dtype=np.int64)
    r = ZERO
    req_end = np.empty(n)
    nxt = np.empty(n, dtype=np.int64)  # the queue: a linked list in arrival order
    prv = np.empty(n, dtype=np.int64)
    qhead = NONE
    qtail = NONE
    free = capacity
    i = ZERO
    passes = ZERO
    started = ZERO
    while i < n or hs > 0:
        t_arr = submit[order[i]] if i < n else INF
        t = hk[0] if hs > 0 and hk[0] < t_arr else t_arr
        while hs > 0 and hk[0] <= t:
            j = hi[0]
            hs = hpop(hk, hi, hs)
            free += need[j]
            r = sorted_remove(rk, ri, r, req_end[j], j)  # EASY.complete
        while i < n and submit[order[i]] <= t:
            j = order[i]
            i += 1
            nxt[j] = NONE  # EASY.arrive: append to the queue
            prv[j] = qtail
            if qtail >= 0:
                nxt[qtail] = j
            else:
                qhead = j
            qtail = j
        passes += 1
        # EASY.schedule(t); each start applied at once (the engine applies the
        # returned list in order, and the policy's own free count is the same).
        now = t
        while qhead >= 0:
            head = qhead
            nh = need[head]
            if nh <= free:
                qhead = nxt[head]  # del queue[head]
                if qhead >= 0:
                    prv[qhead] = NONE
                else:
                    qtail = NONE
                free -= nh
                e = now + requested[head]
                req_end[head] = e
                r = sorted_add(rk, ri, r, e, head)
                start[head] = t
                e = t + runtime[head]
                end[head] = e
                hs = hpush(hk, hi, hs, e, head)
                started += 1
                continue
            # Reservation for the head: shadow time and extra units.
            avail = free
            shadow = now
            k = ZERO
            while k < r:
                e = rk[k]
                avail += need[ri[k]]
                k += 1
                if avail >= nh:
                    shadow = e if e > now else now
                    break
            while k < r:
                e = rk[k]
                if e > shadow:
                    break
                avail += need[ri[k]]
                k += 1
            extra = avail - nh
            # Backfill later jobs, in queue order, without delaying the head.
            if free > 0:
                job = nxt[head]
                while job >= 0:
                    after = nxt[job]
                    nj = need[job]
                    if nj <= free:
                        go = True
                        if now + requested[job] <= shadow:
                            pass
                        elif nj <= extra:
                            extra -= nj
                        else:
                            go = False
                        if go:
                            free -= nj
                            p = prv[job]  # del queue[job] (never the head)
                            nxt[p] = after
                            if after >= 0:
                                prv[after] = p
                            else:
                                qtail = p
                            e = now + requested[job]
                            req_end[job] = e
                            r = sorted_add(rk, ri, r, e, job)
                            start[job] = t
                            e = t + runtime[job]
                            end[job] = e
                            hs = hpush(hk, hi, hs, e, job)
                            started += 1
                            if free == 0:
                                break
                    job = after
            break
    return start, end, passes, OK if started == n else STALLED


@njit(**_HOT)
def _key(kind, j, now, submit, requested, need):
    """``schedlab.engines.batch.policies.priority``'s keys, the same operations in the
    same order (kind: the policy class's ``kind``)."""
    r = requested[j]
    n = need[j]
    if kind == 1:  # SJF
        return r
    if kind == 2:  # WFP3
        q = (now - submit[j]) / r
        return -(q * q * q * n)
    if kind == 3:  # UNICEP
        return -((now - submit[j] + UNICEP_EPS) / (math.log2(n + UNICEP_EPS) * r))
    s = submit[j]
    ls = math.log10(s if s > 0 else F_SUBMIT_FLOOR)
    if kind == 4:  # F1
        return math.log10(r) * n + 870.0 * ls
    if kind == 5:  # F2
        return math.sqrt(r) * n + 25600.0 * ls
    if kind == 6:  # F3
        return r * n + 6860000.0 * ls
    return r * math.sqrt(n) + 530000.0 * ls  # F4


@njit(**_JIT)
def _priority(submit, runtime, requested, need, order, capacity, kind, backfill):
    """PriorityPolicy: at each pass the waiting job of smallest key (first in
    arrival order on ties) starts while it fits; with ``backfill``, EASY's
    reservation for it and the backfill scan over the others in arrival
    order."""
    n = submit.shape[0]
    start = np.empty(n)
    end = np.empty(n)
    hk = np.empty(n)
    hi = np.empty(n, dtype=np.int64)
    hs = ZERO
    rk = np.empty(n)
    ri = np.empty(n, dtype=np.int64)
    r = ZERO
    req_end = np.empty(n)
    nxt = np.empty(n, dtype=np.int64)
    prv = np.empty(n, dtype=np.int64)
    qhead = NONE
    qtail = NONE
    free = capacity
    i = ZERO
    passes = ZERO
    started = ZERO
    while i < n or hs > 0:
        t_arr = submit[order[i]] if i < n else INF
        t = hk[0] if hs > 0 and hk[0] < t_arr else t_arr
        while hs > 0 and hk[0] <= t:
            j = hi[0]
            hs = hpop(hk, hi, hs)
            free += need[j]
            if backfill:
                r = sorted_remove(rk, ri, r, req_end[j], j)
        while i < n and submit[order[i]] <= t:
            j = order[i]
            i += 1
            nxt[j] = NONE
            prv[j] = qtail
            if qtail >= 0:
                nxt[qtail] = j
            else:
                qhead = j
            qtail = j
        passes += 1
        now = t
        while qhead >= 0:
            head = qhead  # the smallest key, first in arrival order on ties
            best_key = _key(kind, head, now, submit, requested, need)
            job = nxt[head]
            while job >= 0:
                k = _key(kind, job, now, submit, requested, need)
                if k < best_key:
                    head = job
                    best_key = k
                job = nxt[job]
            nh = need[head]
            if nh <= free:
                free -= nh
                p = prv[head]  # del queue[head]
                after = nxt[head]
                if p >= 0:
                    nxt[p] = after
                else:
                    qhead = after
                if after >= 0:
                    prv[after] = p
                else:
                    qtail = p
                if backfill:
                    e = now + requested[head]
                    req_end[head] = e
                    r = sorted_add(rk, ri, r, e, head)
                start[head] = t
                e = t + runtime[head]
                end[head] = e
                hs = hpush(hk, hi, hs, e, head)
                started += 1
                continue
            if backfill and free > 0:
                avail = free
                shadow = now
                k = ZERO
                while k < r:
                    e = rk[k]
                    avail += need[ri[k]]
                    k += 1
                    if avail >= nh:
                        shadow = e if e > now else now
                        break
                while k < r:
                    e = rk[k]
                    if e > shadow:
                        break
                    avail += need[ri[k]]
                    k += 1
                extra = avail - nh
                job = qhead
                while job >= 0:
                    after = nxt[job]
                    nj = need[job]
                    if job != head and nj <= free:
                        go = True
                        if now + requested[job] <= shadow:
                            pass
                        elif nj <= extra:
                            extra -= nj
                        else:
                            go = False
                        if go:
                            free -= nj
                            p = prv[job]
                            if p >= 0:
                                nxt[p] = after
                            else:
                                qhead = after
                            if after >= 0:
                                prv[after] = p
                            else:
                                qtail = p
                            e = now + requested[job]
                            req_end[job] = e
                            r = sorted_add(rk, ri, r, e, job)
                            start[job] = t
                            e = t + runtime[job]
                            end[job] = e
                            hs = hpush(hk, hi, hs, e, job)
                            started += 1
                            if free == 0:
                                break
                    job = after
            break
    return start, end, passes, OK if started == n else STALLED


# ---- the Python side ------------------------------------------------------------------

#: A kernel's id, which the engine registry (``schedlab.engines.batch.kernel_id``)
#: gives for the built-in classes themselves: "FCFS" or "EASY", or for a
#: priority policy ("priority", its key code ``kind``, its ``backfill``).
Kernel = str | tuple[str, int, bool]

#: FCFS's and EASY's kernel ids -> their kernels.
_FUNCTIONS = {"FCFS": _fcfs, "EASY": _easy}


def kernel_for(kernel: Kernel | None):
    """The compiled kernel of id ``kernel``, else None: FCFS and EASY have
    their own, the priority policies share :func:`_priority`."""
    if isinstance(kernel, tuple):
        return _priority if kernel[0] == "priority" else None
    return _FUNCTIONS.get(kernel) if kernel is not None else None


def _extra_args(kernel: Kernel | None) -> tuple:
    """The kernel's arguments after capacity: a priority policy's key code and backfilling."""
    if isinstance(kernel, tuple):
        return (np.int64(kernel[1]), bool(kernel[2]))
    return ()


def simulate(kernel: Kernel | None, submit, runtime, requested, need, capacity: int, params=None):
    """(start, end, passes) of kernel ``kernel``, bit-identical to
    ``schedlab.engines.batch.sim.engine.simulate_batch`` with that built-in policy; or
    None when the fast path declines (no such kernel, policy parameters,
    inputs outside the kernels' remit, see the module docstring): then run
    the reference."""
    function = kernel_for(kernel)
    if function is None or params:
        return None
    arrays = [np.asarray(a) for a in (submit, runtime, requested)]
    need = np.asarray(need)
    n = len(arrays[0])
    if n == 0 or need.ndim != 1 or len(need) != n or need.dtype.kind not in "iu":
        return None
    for a in arrays:
        if a.dtype != np.float64 or a.ndim != 1 or len(a) != n or not np.all(np.isfinite(a)):
            return None
    submit, runtime, requested = (np.require(a, np.float64, ["C", "W"]) for a in arrays)
    if isinstance(capacity, bool) or int(capacity) != capacity or capacity < 1:
        return None
    capacity = int(capacity)
    if (
        np.any(submit < 0)
        or np.any(runtime < 0)
        or np.any(requested <= 0)
        or np.any(need < 1)
        or np.any(need > capacity)
    ):
        return None
    need = np.require(need, np.int64, ["C", "W"])
    order = np.argsort(submit, kind="stable").astype(np.int64)
    start, end, passes, status = function(
        submit, runtime, requested, need, order, np.int64(capacity), *_extra_args(kernel)
    )
    if status != OK:
        return None
    return start, end, int(passes)


def unit(kernel: Kernel | None) -> str | None:
    """The compiled function kernel id ``kernel`` runs on, named for
    ``schedlab.sim.common.compiling`` ("batch._easy"), else None."""
    function = kernel_for(kernel)
    return None if function is None else f"batch.{function.__name__}"


def cached(kernel: Kernel | None) -> bool:
    """Whether kernel ``kernel``'s compiled code is in the on-disk cache
    (`schedlab.sim.common.jit.cached`); True for no kernel."""
    function = kernel_for(kernel)
    return function is None or _cached(function)


_WARM: set[Kernel] = set()


def warm(kernel: Kernel | None) -> None:
    """Compile (or load from the cache) kernel ``kernel`` now, so that a timed
    run excludes it."""
    if kernel is not None and kernel_for(kernel) is not None and kernel not in _WARM:
        simulate(
            kernel,
            np.array([0.0, 0.5, 0.5]),
            np.array([1.0, 0.0, 2.0]),
            np.array([1.0, 1.0, 3.0]),
            np.array([1, 2, 1]),
            2,
        )
        _WARM.add(kernel)


def compile_all() -> None:
    """Compile every kernel (or load it from the on-disk cache)."""
    kernels: list[Kernel] = [*_FUNCTIONS, ("priority", 1, False)]  # the priority policies share one kernel
    for kernel in kernels:
        warm(kernel)
