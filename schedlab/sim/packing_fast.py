"""The packing engine's compiled fast path: one numba kernel for the
single-resource built-in policies FIFO-FF, BF-J, BF-S and BF-J/S.

Why it exists
-------------
The reference engine (``schedlab.sim.packing`` with the policies of
``schedlab.policies.packing``) is readable Python and the seam for user
policies; it packs ~75 k tasks/s (BF-J/S, Google clusterdata-2011 prefix, 1000
servers). Sweeps over the Google trace (``sweeps/google-packing.toml``) and
the Fig. 4 grids (``sweeps/packing-fig4.toml``) run BF-J/S and FIFO-FF (with
the VQS policies, which stay on the reference) over hundreds of thousands of
tasks per point, with ``sample_every`` series. :func:`_run` is the whole event loop
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

Every float operation is IEEE double in the reference's order (numba does not
reassociate or contract without ``fastmath``); the per-job starts, servers,
the time integrals, the counters and the series are returned to
:func:`schedlab.sim.packing.finish_result`, the reference's own code for every
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
both epoch modes) and on the engine tests' scenarios.

Where the reference raises: FIFO-FF and the BF-J steps ask for a server with
``free >= size - FIT_TOL`` while the engine checks ``size <= free +
FIT_TOL``; at the last bit the two can disagree (sizes within ~1e-9 of a free
capacity), and the reference then raises ``CapacityExceeded``. The kernel
runs both tests as the reference does, stops at such a placement (or any the
engine would reject) and returns ``MISFIT``: :func:`simulate` declines and
the reference gives its error.

When the fast path is not used
------------------------------
:func:`kernel_for` matches the policy class by identity: a subclass of a
built-in (a user's policy) always runs on the reference. :func:`simulate`
also declines (returns None: the caller runs the reference, which then gives
its usual answer or error) for policy parameters (the built-ins take none),
several resources, no jobs, inputs the reference rejects (unsorted, negative,
non-finite, bad shapes, a bad group or estimate column, a bad Δ or
``sample_every``), non-finite capacities, a bool Δ, an int ``until`` beyond
2^53 (compared exactly by the reference), and a MISFIT run. Groups (multi-task jobs) and estimates are
supported: these policies never read them, and the JCTs are computed by the
shared ``finish_result``. ``check`` and ``hidden`` (debugging and the
checker's guard) exist only on the reference.

Speed (``benchmarks/packing.py``, Google prefix, 1000 servers, Δ = 0.1 s):
1.5 M tasks/s for BF-J/S (~20x the reference), 1.2-1.8 M for BF-J, 2-4 M for
BF-S and FIFO-FF. Compiled code is cached on disk (``cache=True``,
``schedlab.sim.jit``): the first use on a machine compiles the kernel (~7 s),
later processes load it (~0.3 s). This module imports numba; only the packing
engine's fast path imports this module.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

from schedlab.sim.jit import ALLOC as _ALLOC
from schedlab.sim.jit import HOT as _HOT
from schedlab.sim.jit import JIT as _JIT
from schedlab.sim.jit import njit
from schedlab.sim.packing import EPOCH_TOL, FIT_TOL, arrival_epochs, finish_result

INF = math.inf
_FIT_TOL = FIT_TOL
_EPOCH_TOL = EPOCH_TOL

#: Kernel modes, one per policy.
FIFO_FF, BF_J, BF_S, BF_JS = 0, 1, 2, 3
#: Kernel status: OK, or a placement the engine would reject (the reference raises).
OK, MISFIT = 0, 1

_WAITING, _QUEUED, _RUNNING, _DONE = 0, 1, 2, 3
#: Skip-list levels (2^32 servers would be needed to use them all).
MAXLV = 32
#: numpy scalars, not Python ints: numba types a Python int constant as a
#: literal, and a helper called with one would be compiled once more for it.
NONE = np.int64(-1)
ZERO = np.int64(0)
U0 = np.uint64(0)
U1 = np.uint64(1)
U63 = np.uint64(63)


# ---- MaxSegmentTree (policies/packing/structures.py) ----------------------------------


@njit(**_ALLOC)
def _st_new(values):
    n = values.shape[0]
    size = 1
    while size < max(n, 1):
        size *= 2
    t = np.empty(2 * size)
    for k in range(2 * size):
        t[k] = -INF
    for k in range(n):
        t[size + k] = values[k]
    for k in range(size - 1, 0, -1):
        a = t[2 * k]
        b = t[2 * k + 1]
        t[k] = a if a >= b else b
    return t, size


@njit(**_HOT)
def _st_update(t, size, i, value):
    i += size
    t[i] = value
    i >>= 1
    while i:
        a = t[2 * i]
        b = t[2 * i + 1]
        m = a if a >= b else b
        if t[i] == m:
            break  # ancestors unchanged
        t[i] = m
        i >>= 1


@njit(**_HOT)
def _st_first_at_least(t, size, n, r, lo):
    """Lowest index i >= lo with value[i] >= r, or -1."""
    if lo >= n or t[1] < r:
        return NONE
    i = lo + size
    while t[i] < r:
        while i & 1:
            i >>= 1
        if i == 0:
            return NONE
        i += 1
    while i < size:
        i <<= 1
        if t[i] < r:
            i += 1
    return i - size


# ---- ServersByFree: a skip list of servers ordered by (free, server) ------------------
# Node s (a server) has links nxt[s * MAXLV + lv] for lv < lvl[s]; node L is
# the head. The list is never empty between operations (every server is in
# it), so the last node (sst[0]) is the server with the most free capacity.


@njit(**_HOT)
def _sl_before(fv, a, b):
    """(fv[a], a) < (fv[b], b): the SortedList's tuple order."""
    fa = fv[a]
    fb = fv[b]
    return fa < fb or (fa == fb and a < b)


@njit(**_HOT)
def _sl_remove(nxt, lvl, fv, top, sst, s):
    head = fv.shape[0]
    x = head
    for lv in range(top - 1, -1, -1):
        while True:
            y = nxt[x * MAXLV + lv]
            if y < 0 or not _sl_before(fv, y, s):
                break
            x = y
        if lv < lvl[s] and nxt[x * MAXLV + lv] == s:
            nxt[x * MAXLV + lv] = nxt[s * MAXLV + lv]
    if sst[0] == s:
        sst[0] = x if x != head else NONE


@njit(**_HOT)
def _sl_insert(nxt, lvl, fv, top, sst, s):
    head = fv.shape[0]
    x = head
    for lv in range(top - 1, -1, -1):
        while True:
            y = nxt[x * MAXLV + lv]
            if y < 0 or not _sl_before(fv, y, s):
                break
            x = y
        if lv < lvl[s]:
            nxt[s * MAXLV + lv] = nxt[x * MAXLV + lv]
            nxt[x * MAXLV + lv] = s
    if nxt[s * MAXLV] < 0:
        sst[0] = s


@njit(**_HOT)
def _sl_update(nxt, lvl, fv, top, sst, s, value):
    """ServersByFree.update: server s's free capacity becomes ``value``."""
    _sl_remove(nxt, lvl, fv, top, sst, s)
    fv[s] = value
    _sl_insert(nxt, lvl, fv, top, sst, s)


@njit(**_HOT)
def _sl_tightest(nxt, fv, top, r):
    """The server with the least free capacity >= r (lowest index on ties), or -1."""
    x = fv.shape[0]
    for lv in range(top - 1, -1, -1):
        while True:
            y = nxt[x * MAXLV + lv]
            if y < 0 or not fv[y] < r:
                break
            x = y
    return nxt[x * MAXLV]


@njit(**_ALLOC)
def _sl_new(fv, lvl):
    """The skip list of servers 0..L-1 with free capacities ``fv``."""
    L = fv.shape[0]
    top = 1
    for s in range(L):
        if lvl[s] > top:
            top = lvl[s]
    nxt = np.empty((L + 1) * MAXLV, dtype=np.int64)
    for k in range((L + 1) * MAXLV):
        nxt[k] = NONE
    order = np.argsort(fv, kind="mergesort")  # (free, server): stable on ties
    last = np.empty(MAXLV, dtype=np.int64)
    for lv in range(MAXLV):
        last[lv] = L
    for k in range(L):
        s = order[k]
        for lv in range(lvl[s]):
            nxt[last[lv] * MAXLV + lv] = s
            last[lv] = s
    sst = np.empty(1, dtype=np.int64)
    sst[0] = order[L - 1]
    return nxt, top, sst


# ---- JobsBySize: queued job ranks in a 64-ary bitset tree -----------------------------
# Level 0 has a bit per rank, level k+1 a bit per word of level k (set when
# that word is not zero); level k's words start at off[k].


@njit(**_ALLOC)
def _bs_new(n):
    nlev = 1
    words = (n + 63) >> 6
    total = words
    while words > 1:
        words = (words + 63) >> 6
        total += words
        nlev += 1
    off = np.empty(nlev, dtype=np.int64)
    words = (n + 63) >> 6
    pos = 0
    for lv in range(nlev):
        off[lv] = pos
        pos += words
        words = (words + 63) >> 6
    bits = np.empty(max(total, 1), dtype=np.uint64)
    for k in range(bits.shape[0]):
        bits[k] = U0
    return bits, off


@njit(**_HOT)
def _bs_add(bits, off, x):
    for lv in range(off.shape[0]):
        w = x >> 6
        k = off[lv] + w
        old = bits[k]
        bits[k] = old | (U1 << np.uint64(x & 63))
        if old != U0:
            return
        x = w


@njit(**_HOT)
def _bs_remove(bits, off, x):
    for lv in range(off.shape[0]):
        w = x >> 6
        k = off[lv] + w
        v = bits[k] & ~(U1 << np.uint64(x & 63))
        bits[k] = v
        if v != U0:
            return
        x = w


@njit(**_HOT)
def _bs_min(bits, off):
    """The least member (the set must not be empty)."""
    x = ZERO
    for lv in range(off.shape[0] - 1, -1, -1):
        x = x * 64 + np.int64(trailing_zeros(bits[off[lv] + x]))
    return x


@njit(**_HOT)
def _bs_below(bits, off, b):
    """The greatest member < b, or -1."""
    nlev = off.shape[0]
    x = b
    lv = 0
    while lv < nlev:
        w = x >> 6
        r = x & 63
        if r:
            v = bits[off[lv] + w] & ((U1 << np.uint64(r)) - U1)
            if v != U0:
                x = w * 64 + 63 - np.int64(leading_zeros(v))
                while lv > 0:
                    lv -= 1
                    x = x * 64 + 63 - np.int64(leading_zeros(bits[off[lv] + x]))
                return x
        x = w
        lv += 1
    return NONE


@njit(**_HOT)
def _count_at_most(sorted_size, x):
    """#{k : sorted_size[k] <= x} (sorted_size ascending): bisect_right."""
    lo = ZERO
    hi = np.int64(sorted_size.shape[0])
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_size[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**_HOT)
def _largest_at_most(bits, off, sorted_size, x):
    """JobsBySize.largest_at_most(x) as a rank (-1 if none): the largest
    queued size <= x, earliest arrival on ties."""
    return _bs_below(bits, off, _count_at_most(sorted_size, x))


# ---- departures: a binary heap of (epoch, job) ----------------------------------------


@njit(**_HOT)
def _hpush(hk, hj, hs, key, job):
    i = hs
    while i > 0:
        parent = (i - 1) >> 1
        pk = hk[parent]
        pj = hj[parent]
        if key < pk or (key == pk and job < pj):
            hk[i] = pk
            hj[i] = pj
            i = parent
        else:
            break
    hk[i] = key
    hj[i] = job
    return hs + 1


@njit(**_HOT)
def _hpop(hk, hj, hs):
    hs -= 1
    lk = hk[hs]
    lj = hj[hs]
    i = ZERO
    while True:
        c = 2 * i + 1
        if c >= hs:
            break
        if c + 1 < hs and (hk[c + 1] < hk[c] or (hk[c + 1] == hk[c] and hj[c + 1] < hj[c])):
            c += 1
        if hk[c] < lk or (hk[c] == lk and hj[c] < lj):
            hk[i] = hk[c]
            hj[i] = hj[c]
            i = c
        else:
            break
    if hs > 0:
        hk[i] = lk
        hj[i] = lj
    return hs


@njit(**_HOT)
def _epoch_of(x, delta):
    """packing._epoch_of: ``math.ceil`` (a Python int) times Δ. A float ceil
    is the same integer, which int * float converts exactly, except that an
    int has no negative zero: ceil(-1e-9) is -0.0 here and 0 there, so the
    ceil gets + 0.0 (which turns -0.0 into 0.0 and leaves every other value)."""
    q = x / delta
    a = abs(q)
    m = a if a > 1.0 else 1.0
    return (np.ceil(q - _EPOCH_TOL * m) + 0.0) * delta


# ---- the policies' schedule() -----------------------------------------------------------


@njit(**_HOT)
def _fifo_ff(size, t, tsize, L, head, arrived, out_j, out_s):
    """FIFOFF.schedule over the queue [head, arrived); returns (placements, new head)."""
    m = ZERO
    while head < arrived:
        r = size[head]
        s = _st_first_at_least(t, tsize, L, r - _FIT_TOL, ZERO)
        if s < 0:
            break
        _st_update(t, tsize, s, t[tsize + s] - r)
        out_j[m] = head
        out_s[m] = s
        m += 1
        head += 1
    return m, head


@njit(**_HOT)
def _bf_j(size, rank, sorted_size, bits, off, nq, nxt, lvl, fv, top, sst, lnext, ltail, out_j, out_s):
    """BFJ.schedule: the queue (a linked list from lnext[n]) in arrival
    order; returns (placements, queued count, list tail)."""
    head = lnext.shape[0] - 1
    m = ZERO
    prev = head
    j = lnext[head]
    while j >= 0:
        mn = sorted_size[_bs_min(bits, off)] if nq > 0 else INF
        if fv[sst[0]] + _FIT_TOL < mn:
            break  # nothing left in the queue fits anywhere
        r = size[j]
        nj = lnext[j]
        s = _sl_tightest(nxt, fv, top, r - _FIT_TOL)
        if s >= 0:
            _sl_update(nxt, lvl, fv, top, sst, s, fv[s] - r)
            _bs_remove(bits, off, rank[j])
            nq -= 1
            out_j[m] = j
            out_s[m] = s
            m += 1
            lnext[prev] = nj
            if nj < 0:
                ltail = prev
        else:
            prev = j
        j = nj
    return m, nq, ltail


@njit(**_HOT)
def _bf_s(order, sorted_size, bits, off, nq, t, tsize, L, out_j, out_s):
    """BFS.schedule; returns (placements, queued count)."""
    m = ZERO
    s = ZERO
    while nq > 0:
        s = _st_first_at_least(t, tsize, L, sorted_size[_bs_min(bits, off)] - _FIT_TOL, s)
        if s < 0:
            break
        free = t[tsize + s]
        while True:
            k = _largest_at_most(bits, off, sorted_size, free + _FIT_TOL)
            if k < 0:
                break
            r = sorted_size[k]
            _bs_remove(bits, off, k)
            nq -= 1
            free -= r
            out_j[m] = order[k]
            out_s[m] = s
            m += 1
        _st_update(t, tsize, s, free)
        s += 1
    return m, nq


@njit(**_HOT)
def _bf_js(size, order, rank, sorted_size, bits, off, nq, nxt, lvl, fv, top, sst, inq, dep, nd, new_lo, new_hi,
           out_j, out_s):
    """BFJS.schedule: BF-S over the departed servers dep[:nd] (sorted), then
    BF-J over the jobs new_lo..new_hi-1 still queued; returns (placements,
    queued count)."""
    m = ZERO
    for k in range(nd):
        s = dep[k]
        while nq > 0:
            q = _largest_at_most(bits, off, sorted_size, fv[s] + _FIT_TOL)
            if q < 0:
                break
            r = sorted_size[q]
            j = order[q]
            _sl_update(nxt, lvl, fv, top, sst, s, fv[s] - r)
            _bs_remove(bits, off, q)
            nq -= 1
            inq[j] = 0
            out_j[m] = j
            out_s[m] = s
            m += 1
    for j in range(new_lo, new_hi):
        if inq[j] == 0:
            continue
        r = size[j]
        if fv[sst[0]] + _FIT_TOL < r:
            continue
        s = _sl_tightest(nxt, fv, top, r - _FIT_TOL)
        if s >= 0:
            _sl_update(nxt, lvl, fv, top, sst, s, fv[s] - r)
            _bs_remove(bits, off, rank[j])
            nq -= 1
            inq[j] = 0
            out_j[m] = j
            out_s[m] = s
            m += 1
    return m, nq


# ---- sampled series ----------------------------------------------------------------------


@njit(**_ALLOC)
def _grow_f(a, cap):
    b = np.empty(cap)
    for k in range(a.shape[0]):
        b[k] = a[k]
    return b


@njit(**_ALLOC)
def _grow_i(a, cap):
    b = np.empty(cap, dtype=np.int64)
    for k in range(a.shape[0]):
        b[k] = a[k]
    return b


# ---- the kernel -----------------------------------------------------------------------------


@njit(**_JIT)
def _run(mode, arr_t, dur, size, cap, epoch, until, has_until, sample_every, order, rank, sorted_size, lvl):
    """The event loop of ``simulate_packing`` with policy ``mode`` (module
    docstring). ``epoch`` <= 0: at every event; ``sample_every`` <= 0: no
    series. Returns (start, server, floats [t0, t1, area_q, area_run,
    area_qres, area_used], ints [completed, started, epochs, status, 1 if
    the horizon was extended to ``until``, 1 if the last epoch was a
    departure epoch], series t, queue_jobs, queue_resource, running_jobs)."""
    n = arr_t.shape[0]
    L = cap.shape[0]
    start = np.empty(n)
    server = np.empty(n, dtype=np.int64)
    state = np.zeros(n, dtype=np.uint8)
    for j in range(n):
        start[j] = np.nan
        server[j] = NONE
    efree = cap.copy()  # the engine's free capacities
    out_j = np.empty(n, dtype=np.int64)
    out_s = np.empty(n, dtype=np.int64)
    hk = np.empty(n)
    hj = np.empty(n, dtype=np.int64)
    hs = ZERO
    # the policy's structures (its own free capacities)
    t, tsize = _st_new(cap)  # FIFO-FF, BF-S
    fv = cap.copy()  # BF-J, BF-J/S: ServersByFree
    nxt, top, sst = _sl_new(fv, lvl)
    bits, off = _bs_new(n)  # BF-J, BF-S, BF-J/S: JobsBySize
    nq = ZERO
    lnext = np.empty(n + 1 if mode == BF_J else 1, dtype=np.int64)  # BF-J's queue
    lnext[lnext.shape[0] - 1] = NONE
    ltail = np.int64(lnext.shape[0] - 1)
    fhead = ZERO  # FIFO-FF's queue is [fhead, i)
    inq = np.zeros(n if mode == BF_JS else 0, dtype=np.uint8)  # BF-J/S's `queued`
    dep = np.empty(L if mode == BF_JS else 0, dtype=np.int64)  # BF-J/S's `departed`
    isdep = np.zeros(L if mode == BF_JS else 0, dtype=np.uint8)
    nd = ZERO

    sampling = sample_every > 0.0
    ns = ZERO
    scap = 64 if sampling else 0
    s_t = np.empty(scap)
    s_q = np.empty(scap, dtype=np.int64)
    s_r = np.empty(scap)
    s_run = np.empty(scap, dtype=np.int64)
    next_sample = INF
    k_sample = ZERO

    i = ZERO
    queued = ZERO
    running = ZERO
    completed = ZERO
    started = ZERO
    qres = 0.0
    used = 0.0
    area_q = 0.0
    area_run = 0.0
    area_qres = 0.0
    area_used = 0.0
    epochs = ZERO
    have_t0 = False
    at_departure = False
    t0 = 0.0
    t_prev = 0.0
    status = OK

    while True:
        t_arr = arr_t[i] if i < n else INF
        t_dep = hk[0] if hs > 0 else INF
        now = t_arr if t_arr < t_dep else t_dep
        if now == INF or (has_until and now > until):
            break
        at_departure = not t_arr < t_dep  # the reference's `now` is then a departure epoch
        if not have_t0:
            have_t0 = True
            t0 = now
            if sampling:
                next_sample = t0
        else:
            dt = now - t_prev
            area_q += queued * dt
            area_run += running * dt
            area_qres += qres * dt
            area_used += used * dt
            if sampling:
                while next_sample < now:
                    if ns == s_t.shape[0]:
                        s_t = _grow_f(s_t, 2 * ns)
                        s_q = _grow_i(s_q, 2 * ns)
                        s_r = _grow_f(s_r, 2 * ns)
                        s_run = _grow_i(s_run, 2 * ns)
                    s_t[ns] = next_sample
                    s_q[ns] = queued
                    s_r[ns] = qres
                    s_run[ns] = running
                    ns += 1
                    k_sample += 1
                    next_sample = t0 + k_sample * sample_every

        # departures
        while hs > 0 and hk[0] <= now:
            j = hj[0]
            hs = _hpop(hk, hj, hs)
            s = server[j]
            r = size[j]
            efree[s] += r
            state[j] = _DONE
            running -= 1
            completed += 1
            used -= r
            if mode == FIFO_FF or mode == BF_S:
                _st_update(t, tsize, s, t[tsize + s] + r)
            else:
                _sl_update(nxt, lvl, fv, top, sst, s, fv[s] + r)
                if mode == BF_JS and isdep[s] == 0:
                    isdep[s] = 1
                    dep[nd] = s
                    nd += 1
        if running == 0:
            used = 0.0  # no drift when the cluster is empty

        # arrivals
        new_lo = i
        while i < n and arr_t[i] <= now:
            state[i] = _QUEUED
            queued += 1
            qres += size[i]
            if mode != FIFO_FF:
                _bs_add(bits, off, rank[i])
                nq += 1
                if mode == BF_J:
                    lnext[ltail] = i
                    lnext[i] = NONE
                    ltail = i
                elif mode == BF_JS:
                    inq[i] = 1
            i += 1

        # decisions
        if mode == FIFO_FF:
            m, fhead = _fifo_ff(size, t, tsize, L, fhead, i, out_j, out_s)
        elif mode == BF_J:
            m, nq, ltail = _bf_j(size, rank, sorted_size, bits, off, nq, nxt, lvl, fv, top, sst, lnext, ltail,
                                 out_j, out_s)
        elif mode == BF_S:
            m, nq = _bf_s(order, sorted_size, bits, off, nq, t, tsize, L, out_j, out_s)
        else:
            if nd > 1:
                dep[:nd].sort()
            m, nq = _bf_js(size, order, rank, sorted_size, bits, off, nq, nxt, lvl, fv, top, sst, inq, dep, nd,
                           new_lo, i, out_j, out_s)
            for k in range(nd):
                isdep[dep[k]] = 0
            nd = ZERO
        for p in range(m):
            j = out_j[p]
            s = out_s[p]
            r = size[j]
            if state[j] != _QUEUED or not (0 <= s < L) or r > efree[s] + _FIT_TOL:
                status = MISFIT  # the reference raises PlacementError / CapacityExceeded here
                break
            efree[s] -= r
            state[j] = _RUNNING
            server[j] = s
            start[j] = now
            queued -= 1
            running += 1
            started += 1
            qres -= r
            used += r
            end = now + dur[j]
            hs = _hpush(hk, hj, hs, end if epoch <= 0.0 else _epoch_of(end, epoch), j)
        if status != OK:
            break
        if queued == 0:
            qres = 0.0
        epochs += 1
        t_prev = now

    if not have_t0:  # no epoch at all
        t0 = 0.0 if not has_until else (until if until < 0.0 else 0.0)
        t_prev = t0
    t1 = t_prev
    extended = has_until and until > t_prev
    if extended:
        dt = until - t_prev
        area_q += queued * dt
        area_run += running * dt
        area_qres += qres * dt
        area_used += used * dt
        t1 = until
    if sampling and status == OK:
        while next_sample < t1 or next_sample == t1:
            if ns == s_t.shape[0]:
                s_t = _grow_f(s_t, 2 * ns)
                s_q = _grow_i(s_q, 2 * ns)
                s_r = _grow_f(s_r, 2 * ns)
                s_run = _grow_i(s_run, 2 * ns)
            s_t[ns] = next_sample
            s_q[ns] = queued
            s_r[ns] = qres
            s_run[ns] = running
            ns += 1
            k_sample += 1
            next_sample = t0 + k_sample * sample_every

    floats = np.empty(6)
    floats[0] = t0
    floats[1] = t1
    floats[2] = area_q
    floats[3] = area_run
    floats[4] = area_qres
    floats[5] = area_used
    ints = np.empty(6, dtype=np.int64)
    ints[0] = completed
    ints[1] = started
    ints[2] = epochs
    ints[3] = status
    ints[4] = 1 if extended else 0
    ints[5] = 1 if at_departure else 0
    return start, server, floats, ints, s_t[:ns], s_q[:ns], s_r[:ns], s_run[:ns]


# ---- the Python side ----------------------------------------------------------------------


def kernel_for(cls: type) -> int | None:
    """The kernel mode if ``cls`` *is* one of the four built-in classes
    (identity, not subclassing: a user's subclass may change anything)."""
    from schedlab.policies.packing.best_fit import BFJ, BFJS, BFS
    from schedlab.policies.packing.fifo_ff import FIFOFF

    for builtin, mode in ((FIFOFF, FIFO_FF), (BFJ, BF_J), (BFS, BF_S), (BFJS, BF_JS)):
        if cls is builtin:
            return mode
    return None


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


def _kernel_call(mode: int, arr_t, dur, size, cap, epoch, until, sample_every):
    if mode == FIFO_FF:
        empty = np.empty(0, dtype=np.int64)
        order, rank, sorted_size = empty, empty, np.empty(0)
    else:
        order, rank, sorted_size = _ranks(size)
    lvl = _levels(len(cap)) if mode in (BF_J, BF_JS) else np.ones(len(cap), dtype=np.int64)
    return _run(
        int(mode), arr_t, dur, size, cap, float(epoch or 0.0), float(0.0 if until is None else until),
        until is not None, float(sample_every or 0.0), order, rank, sorted_size, lvl,
    )


def simulate(cls: type, submit, duration, demand, capacity, *, epoch: float | None = 1.0,
             sample_every: float | None = None, until: float | None = None, group=None, estimate=None,
             params=None):
    """``simulate_packing(...)`` of built-in policy ``cls``: the same
    :class:`~schedlab.sim.packing.PackingResult`, bit for bit; or None when
    the fast path declines (module docstring): then run the reference."""
    from schedlab.sim.packing import _as_groups, _as_inputs

    mode = kernel_for(cls)
    if mode is None or params:
        return None
    try:
        submit, duration, demand, capacity = _as_inputs(submit, duration, demand, capacity)
        group, estimate = _as_groups(group, estimate, duration)
    except ValueError:
        return None  # the reference raises the same error
    if epoch is not None and (isinstance(epoch, bool) or not (epoch > 0 and math.isfinite(epoch))):
        return None
    if sample_every is not None and not (sample_every > 0 and math.isfinite(sample_every)):
        return None
    if until is not None and (math.isnan(until) or float(until) != until):
        return None  # (an int beyond 2^53: the reference compares it exactly)
    n, d = demand.shape
    if n == 0 or d != 1 or not np.all(np.isfinite(capacity)):
        return None
    size = _writable(demand[:, 0])
    cap = _writable(capacity[:, 0])
    arr_t = _writable(arrival_epochs(submit, epoch))
    dur = _writable(duration)
    start, server, floats, ints, s_t, s_q, s_r, s_run = _kernel_call(
        mode, arr_t, dur, size, cap, epoch, until, sample_every)
    if ints[3] != OK:
        return None
    series = None
    if sample_every is not None:
        series = {"t": s_t.copy(), "queue_jobs": s_q.copy(), "queue_resource": s_r.reshape(-1, 1).copy(),
                  "running_jobs": s_run.copy()}
    t0, t1, area_q, area_run, area_qres, area_used = floats.tolist()
    completed, started, epochs, _, extended, at_departure = ints.tolist()
    # The horizon's ends as the reference holds them: ``until`` as given, and
    # with an integer Δ a departure epoch is ``math.ceil(...) * Δ``, an int
    # (the same value: an integer below 2^53 in a float is exact).
    if epochs == 0:
        t0 = 0.0 if until is None else min(0.0, until)
    if extended:
        t1 = until
    elif epochs == 0:
        t1 = t0
    elif at_departure and isinstance(epoch, numbers.Integral):
        if not abs(t1) < 2.0**53:
            return None
        t1 = int(t1) // epoch * epoch
    return finish_result(submit, duration, capacity, group, start, server, t0, t1, area_q, area_run, [area_qres],
                         [area_used], completed, started, epochs, series)


_WARM: list[bool] = []


def warm() -> None:
    """Compile (or load from the on-disk cache) the kernel now, so that a
    timed run excludes it."""
    if not _WARM:
        one = np.ones(3)
        _kernel_call(BF_JS, np.array([0.0, 0.0, 1.0]), one, one * 0.5, np.ones(2), 1.0, None, 1.0)
        _WARM.append(True)
