"""The packing engine's compiled fast path: one numba kernel for the
single-resource built-in policies FIFO-FF, BF-J, BF-S, BF-J/S, VQS and VQS-BF.

Why it exists
-------------
The reference engine (``schedlab.sim.packing`` with the policies of
``schedlab.policies.packing``) is readable Python and the seam for user
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

* VQS and VQS-BF (``policies/packing/vqs.py``, any J from 2 to
  ``packing.FAST_VQS_MAX_J``): each job's type is the reference's
  ``_type_of`` (bisect_left = searchsorted 'left') and K_RED comes from the
  reference's own ``k_red``/``_split`` as (k_1, j, k_j) triples, renewed by
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
:func:`kernel_for` matches the policy class by identity: a subclass of a
built-in (a user's policy) always runs on the reference. :func:`simulate`
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
``schedlab.sim.jit``): the first use on a machine compiles the kernel (about
twice the four-policy kernel's time: 22 s against 11.5 s side by side on a
loaded machine), later processes load it (0.85 s against 0.5 s). This
module imports numba; only the packing engine's fast path imports this module.
"""

from __future__ import annotations

import math

import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

from schedlab.sim.jit import ALLOC as _ALLOC
from schedlab.sim.jit import HOT as _HOT
from schedlab.sim.jit import JIT as _JIT
from schedlab.sim.jit import NONE, ZERO, hpop, hpush, njit
from schedlab.sim.jit import epoch_of as _epoch_of
from schedlab.sim.jit import grow_f as _grow_f
from schedlab.sim.jit import grow_i as _grow_i
from schedlab.sim.jit import st_first_at_least as _st_first_at_least
from schedlab.sim.jit import st_new as _st_new
from schedlab.sim.jit import st_update as _st_update
from schedlab.sim.packing import FIT_TOL, arrival_epochs, finish_result
from schedlab.sim.packing_fast_io import checked_inputs, horizon

INF = math.inf
_FIT_TOL = FIT_TOL

#: Kernel modes, one per policy.
FIFO_FF, BF_J, BF_S, BF_JS, VQS, VQS_BF = 0, 1, 2, 3, 4, 5
#: Kernel status: OK, or a placement the engine would reject (the reference raises).
OK, MISFIT = 0, 1

_WAITING, _QUEUED, _RUNNING, _DONE = 0, 1, 2, 3
#: Skip-list levels (2^32 servers would be needed to use them all).
MAXLV = 32
U0 = np.uint64(0)
U1 = np.uint64(1)
U63 = np.uint64(63)


# Several max segment trees in one array (VQS's groups): tree g's node k is
# g[base + k], base = g * 2 * size; the same code as _st_update / _st_first_at_least.


@njit(**_HOT)
def _gt_update(g, base, size, i, value):
    i += size
    g[base + i] = value
    i >>= 1
    while i:
        a = g[base + 2 * i]
        b = g[base + 2 * i + 1]
        m = a if a >= b else b
        if g[base + i] == m:
            break
        g[base + i] = m
        i >>= 1


@njit(**_HOT)
def _gt_first_at_least(g, base, size, n, r, lo):
    """Lowest index i >= lo with value[i] >= r in the tree at ``base``, or -1."""
    if lo >= n or g[base + 1] < r:
        return NONE
    i = lo + size
    while g[base + i] < r:
        while i & 1:
            i >>= 1
        if i == 0:
            return NONE
        i += 1
    while i < size:
        i <<= 1
        if g[base + i] < r:
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
def _bs_at_least(bits, off, x):
    """The least member >= x (x >= 0), or -1."""
    nlev = off.shape[0]
    lv = 0
    while lv < nlev:
        w = x >> 6
        k = off[lv] + w
        end = off[lv + 1] if lv + 1 < nlev else bits.shape[0]
        if k < end:
            v = bits[k] & ~((U1 << np.uint64(x & 63)) - U1)
            if v != U0:
                x = w * 64 + np.int64(trailing_zeros(v))
                while lv > 0:
                    lv -= 1
                    x = x * 64 + np.int64(trailing_zeros(bits[off[lv] + x]))
                return x
        x = w + 1  # the next word: its index at the level above
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


# Departures: a binary heap of (epoch, job), schedlab.sim.jit's hpush/hpop.


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
def _bf_js(
    size, order, rank, sorted_size, bits, off, nq, nxt, lvl, fv, top, sst, inq, dep, nd, new_lo, new_hi, out_j, out_s
):
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


# ---- VQS and VQS-BF (policies/packing/vqs.py) -----------------------------------------
# T = 2J types. Configuration c of K_RED (eq. 19's order) is cfg[3c:3c+3] =
# (k_1, other type j, k_j); capj[c] is VQS's capacity for type j (1 - 2/3 when
# k_1 = 1, else 1, the reference's own expression). Per server s and type t:
# cnt[s * T + t] jobs and (VQS) used[s * T + t] their summed size; config[s] = -1
# for None; Q[t] = len(VQ_t). Sets of servers (VQS's want1, empty servers and
# the heap of one schedule()) are bitset trees over server indices, with a flag
# per server where membership is asked.


@njit(**_HOT)
def _max_weight(cfg, Q):
    """max_weight(configs, Q): argmax <k, Q> in eq. 19's order, ties to the
    first, -1 when every weight is 0 (integers: no rounding)."""
    best = NONE
    best_w = ZERO
    for c in range(cfg.shape[0] // 3):
        w = cfg[3 * c] * Q[1] + cfg[3 * c + 2] * Q[cfg[3 * c + 1]]
        if w > best_w:
            best = c
            best_w = w
    return best


@njit(**_HOT)
def _set_add(bits, off, flag, s):
    """Add server s to a flagged bitset; returns 1 if it was not there."""
    if flag[s]:
        return ZERO
    flag[s] = 1
    _bs_add(bits, off, s)
    return np.int64(1)


@njit(**_HOT)
def _set_remove(bits, off, flag, s):
    """Remove server s from a flagged bitset; returns 1 if it was there."""
    if not flag[s]:
        return ZERO
    flag[s] = 0
    _bs_remove(bits, off, s)
    return np.int64(1)


@njit(**_HOT)
def _vqs_wake(t, size, tlist, qhead, Q, L, gt, tsz, wbits, woff, nw, hbits, hoff, hin):
    """VQS._wake(t): the servers that may take VQ_t's head join the heap (the
    lowest waiting for a type-1 job; for another type every server of group t
    with room >= head - FIT_TOL); returns how many joined."""
    added = ZERO
    if Q[t] == 0:
        return added
    if t == 1:
        if nw > 0:
            added += _set_add(hbits, hoff, hin, _bs_min(wbits, woff))
        return added
    need = size[tlist[qhead[t]]] - _FIT_TOL
    base = t * 2 * tsz
    s = _gt_first_at_least(gt, base, tsz, L, need, ZERO)
    while s >= 0:
        added += _set_add(hbits, hoff, hin, s)
        s = _gt_first_at_least(gt, base, tsz, L, need, s + 1)
    return added


@njit(**_HOT)
def _vqs_place(s, job, size, typ, T, njobs, cnt, used, ebits, eoff, out_j, out_s, m):
    """_record_place and VQS._place (the caller pops the job off its VQ)."""
    k = s * T + typ[job]
    njobs[s] += 1
    cnt[k] += 1
    used[k] += size[job]
    if njobs[s] == 1:
        _bs_remove(ebits, eoff, s)
    out_j[m] = job
    out_s[m] = s
    return m + 1


@njit(**_HOT)
def _vqs_schedule(
    size,
    typ,
    tlist,
    cfg,
    capj,
    T,
    L,
    config,
    njobs,
    cnt,
    used,
    Q,
    qhead,
    gt,
    tsz,
    ingrp,
    wbits,
    woff,
    win,
    nw,
    ebits,
    eoff,
    hbits,
    hoff,
    hin,
    dep,
    isdep,
    nd,
    newhead,
    total,
    out_j,
    out_s,
):
    """VQS.schedule: the heap starts with the dirty servers dep[:nd] (those
    still flagged) and the servers woken by new heads; then, repeatedly, the
    lower of the heap's least server and the next empty server after the
    cursor acts (an empty one renews first). Returns (placements, queued
    count, |want1|)."""
    m = ZERO
    nh = ZERO
    if total > 0:
        for k in range(nd):
            if isdep[dep[k]]:
                nh += _set_add(hbits, hoff, hin, dep[k])
        for t in range(T):
            if newhead[t]:
                nh += _vqs_wake(t, size, tlist, qhead, Q, L, gt, tsz, wbits, woff, nw, hbits, hoff, hin)
    for k in range(nd):
        isdep[dep[k]] = 0
    for t in range(T):
        newhead[t] = 0
    cursor = NONE
    while total > 0:
        e = _bs_at_least(ebits, eoff, cursor + 1)
        if e < 0 and nh == 0:
            break
        h = _bs_min(hbits, hoff) if nh > 0 else NONE
        if nh > 0 and (e < 0 or h < e):
            s = h
            nh -= _set_remove(hbits, hoff, hin, s)
        else:
            s = e
            cursor = e
            # _set_config(s)
            c = _max_weight(cfg, Q)
            config[s] = c
            if c < 0:
                continue
            j = cfg[3 * c + 1]
            _gt_update(gt, j * 2 * tsz, tsz, s, capj[c] - used[s * T + j])
            ingrp[s] = 1
            if cfg[3 * c]:
                nw += _set_add(wbits, woff, win, s)
        # _fill(s): rule (i), then rule (ii) while the head fits
        c = config[s]
        j = cfg[3 * c + 1]
        touched1 = False
        if cfg[3 * c] and cnt[s * T + 1] == 0 and Q[1] > 0:
            job = tlist[qhead[1]]
            qhead[1] += 1
            Q[1] -= 1
            total -= 1
            m = _vqs_place(s, job, size, typ, T, njobs, cnt, used, ebits, eoff, out_j, out_s, m)
            nw -= _set_remove(wbits, woff, win, s)
            touched1 = True
        placed = False
        room = capj[c] - used[s * T + j]
        while Q[j] > 0:
            job = tlist[qhead[j]]
            r = size[job]
            if not r <= room + _FIT_TOL:
                break
            qhead[j] += 1
            Q[j] -= 1
            total -= 1
            m = _vqs_place(s, job, size, typ, T, njobs, cnt, used, ebits, eoff, out_j, out_s, m)
            room -= r
            placed = True
        if placed:  # _regroup(s)
            _gt_update(gt, j * 2 * tsz, tsz, s, capj[c] - used[s * T + j])
        # the wakes of the touched VQs (independent of each other: any order)
        if touched1:
            nh += _vqs_wake(1, size, tlist, qhead, Q, L, gt, tsz, wbits, woff, nw, hbits, hoff, hin)
        if placed:
            nh += _vqs_wake(j, size, tlist, qhead, Q, L, gt, tsz, wbits, woff, nw, hbits, hoff, hin)
    while nh > 0:  # the reference's heap lives for one schedule()
        nh -= _set_remove(hbits, hoff, hin, _bs_min(hbits, hoff))
    return m, total, nw


@njit(**_HOT)
def _vqs_depart(
    job,
    s,
    size,
    typ,
    cfg,
    capj,
    T,
    tsz,
    config,
    njobs,
    cnt,
    used,
    gt,
    ingrp,
    wbits,
    woff,
    win,
    nw,
    ebits,
    eoff,
    dep,
    isdep,
    nd,
):
    """VQS.depart (with _record_depart); returns (|want1|, dirty count)."""
    t = typ[job]
    c = config[s]
    k = s * T + t
    njobs[s] -= 1
    cnt[k] -= 1
    used[k] = 0.0 if cnt[k] == 0 else used[k] - size[job]
    if njobs[s] == 0:  # config := None, _drop_config, dirty.discard, empty.add
        config[s] = NONE
        if ingrp[s]:
            _gt_update(gt, cfg[3 * c + 1] * 2 * tsz, tsz, s, -INF)
            ingrp[s] = 0
        nw -= _set_remove(wbits, woff, win, s)
        isdep[s] = 0
        _bs_add(ebits, eoff, s)
        return nw, nd
    j = cfg[3 * c + 1]
    if t == 1:
        nw += _set_add(wbits, woff, win, s)
    elif t == j:  # _regroup(s)
        _gt_update(gt, j * 2 * tsz, tsz, s, capj[c] - used[s * T + j])
    if isdep[s] == 0:
        isdep[s] = 1
        dep[nd] = s
        nd += 1
    return nw, nd


@njit(**_HOT)
def _largest_of_type(bits, off, sorted_size, tlo, thi, t, x):
    """VQS-BF's _largest_fitting(VQ_t, .) as a rank, or -1: a job's type is
    a non-increasing function of its size, so the ranks of type t are the
    range [tlo[t], thi[t])."""
    b = _count_at_most(sorted_size, x)
    if b > thi[t]:
        b = thi[t]
    if b <= tlo[t]:
        return NONE
    q = _bs_below(bits, off, b)
    return q if q >= tlo[t] else NONE


@njit(**_HOT)
def _vqsbf_take(s, q, order, sorted_size, typ, T, bits, off, njobs, cnt, Q, st, tsz, out_j, out_s, m):
    """VQSBF._take of the job of rank q (the caller counts total)."""
    job = order[q]
    t = typ[job]
    _bs_remove(bits, off, q)
    Q[t] -= 1
    njobs[s] += 1
    cnt[s * T + t] += 1
    _st_update(st, tsz, s, st[tsz + s] - sorted_size[q])
    out_j[m] = job
    out_s[m] = s
    return m + 1


@njit(**_HOT)
def _vqsbf_schedule(
    order, sorted_size, typ, tlo, thi, cfg, T, L, config, njobs, cnt, Q, bits, off, total, st, tsz, out_j, out_s
):
    """VQSBF.schedule: the servers with free >= smallest queued size -
    FIT_TOL at the start, in index order (read from the tree as the pass
    goes: a server's free capacity changes only when it acts), each renewing
    if empty then applying rules (i)-(iii). Returns (placements, queued count)."""
    m = ZERO
    if total == 0:
        return m, total
    lo = sorted_size[_bs_min(bits, off)] - _FIT_TOL
    s = _st_first_at_least(st, tsz, L, lo, ZERO)
    while s >= 0 and total > 0:
        if not st[tsz + s] + _FIT_TOL < sorted_size[_bs_min(bits, off)]:
            if njobs[s] == 0:
                config[s] = _max_weight(cfg, Q)  # not -1: every type is some configuration's
            c = config[s]
            j = cfg[3 * c + 1]
            kj = cfg[3 * c + 2]
            if cfg[3 * c] and cnt[s * T + 1] == 0:
                q = _largest_of_type(bits, off, sorted_size, tlo, thi, 1, st[tsz + s] + _FIT_TOL)
                if q >= 0:
                    m = _vqsbf_take(
                        s, q, order, sorted_size, typ, T, bits, off, njobs, cnt, Q, st, tsz, out_j, out_s, m
                    )
                    total -= 1
            while cnt[s * T + j] < kj:
                q = _largest_of_type(bits, off, sorted_size, tlo, thi, j, st[tsz + s] + _FIT_TOL)
                if q < 0:
                    break
                m = _vqsbf_take(s, q, order, sorted_size, typ, T, bits, off, njobs, cnt, Q, st, tsz, out_j, out_s, m)
                total -= 1
            while total > 0:
                q = _largest_at_most(bits, off, sorted_size, st[tsz + s] + _FIT_TOL)
                if q < 0:
                    break
                m = _vqsbf_take(s, q, order, sorted_size, typ, T, bits, off, njobs, cnt, Q, st, tsz, out_j, out_s, m)
                total -= 1
        s = _st_first_at_least(st, tsz, L, lo, s + 1)
    return m, total


@njit(**_HOT)
def _vqsbf_depart(job, s, size, typ, T, config, njobs, cnt, st, tsz):
    """VQSBF.depart (with _record_depart)."""
    t = typ[job]
    njobs[s] -= 1
    cnt[s * T + t] -= 1
    if njobs[s] == 0:
        config[s] = NONE
        _st_update(st, tsz, s, 1.0)
    else:
        _st_update(st, tsz, s, st[tsz + s] + size[job])


# ---- the kernel -----------------------------------------------------------------------------


@njit(**_JIT)
def _run(
    mode,
    arr_t,
    dur,
    size,
    cap,
    epoch,
    until,
    has_until,
    sample_every,
    order,
    rank,
    sorted_size,
    lvl,
    typ,
    cfg,
    capj,
    T,
    tlist,
    tlo,
    thi,
):
    """The event loop of ``simulate_packing`` with policy ``mode`` (module
    docstring). ``epoch`` <= 0: at every event; ``sample_every`` <= 0: no
    series. VQS, VQS-BF: ``typ`` each job's type, ``cfg``/``capj`` K_RED
    (see their section), T = 2J types; VQS: ``tlist`` the jobs by (type, job),
    type t's from ``tlo[t]``; VQS-BF: type t's ranks [tlo[t], thi[t]). Returns (start, server,
    floats [t0, t1, area_q, area_run,
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
    t, tsize = _st_new(np.ones(L) if mode == VQS_BF else cap)  # FIFO-FF, BF-S; VQS-BF's free (from 1.0)
    fv = cap.copy()  # BF-J, BF-J/S: ServersByFree
    nxt, top, sst = _sl_new(fv, lvl)
    bits, off = _bs_new(n)  # BF-J, BF-S, BF-J/S, VQS-BF: JobsBySize
    nq = ZERO
    lnext = np.empty(n + 1 if mode == BF_J else 1, dtype=np.int64)  # BF-J's queue
    lnext[lnext.shape[0] - 1] = NONE
    ltail = np.int64(lnext.shape[0] - 1)
    fhead = ZERO  # FIFO-FF's queue is [fhead, i)
    inq = np.zeros(n if mode == BF_JS else 0, dtype=np.uint8)  # BF-J/S's `queued`
    dep = np.empty(L if mode == BF_JS or mode == VQS else 0, dtype=np.int64)  # BF-J/S's `departed`, VQS's `dirty`
    isdep = np.zeros(L if mode == BF_JS or mode == VQS else 0, dtype=np.uint8)
    nd = ZERO
    # VQS, VQS-BF
    isv = mode == VQS or mode == VQS_BF
    config = np.full(L if isv else 0, NONE, dtype=np.int64)
    njobs = np.zeros(L if isv else 0, dtype=np.int64)
    cnt = np.zeros(L * T if isv else 0, dtype=np.int64)
    Q = np.zeros(T if isv else 0, dtype=np.int64)
    Lv = L if mode == VQS else 0
    vused = np.zeros(Lv * T)  # VQS's used[s][t]
    qhead = tlo.copy()  # VQS: VQ_t is tlist[qhead[t] : qhead[t] + Q[t]]
    newhead = np.zeros(T if mode == VQS else 0, dtype=np.uint8)
    gsize = 1
    while gsize < max(Lv, 1):
        gsize *= 2
    gt = np.full(2 * gsize * T if mode == VQS else 0, -INF)  # VQS's groups: a max tree of rooms per type
    ingrp = np.zeros(Lv, dtype=np.uint8)
    wbits, woff = _bs_new(Lv)  # VQS's want1
    win = np.zeros(Lv, dtype=np.uint8)
    nw = ZERO
    ebits, eoff = _bs_new(Lv)  # VQS's empty servers
    for s in range(Lv):
        _bs_add(ebits, eoff, s)
    hbits, hoff = _bs_new(Lv)  # VQS's heap (a set: it pops its least server)
    hin = np.zeros(Lv, dtype=np.uint8)

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
            hs = hpop(hk, hj, hs)
            s = server[j]
            r = size[j]
            efree[s] += r
            state[j] = _DONE
            running -= 1
            completed += 1
            used -= r
            if mode == FIFO_FF or mode == BF_S:
                _st_update(t, tsize, s, t[tsize + s] + r)
            elif mode == VQS:
                nw, nd = _vqs_depart(
                    j,
                    s,
                    size,
                    typ,
                    cfg,
                    capj,
                    T,
                    gsize,
                    config,
                    njobs,
                    cnt,
                    vused,
                    gt,
                    ingrp,
                    wbits,
                    woff,
                    win,
                    nw,
                    ebits,
                    eoff,
                    dep,
                    isdep,
                    nd,
                )
            elif mode == VQS_BF:
                _vqsbf_depart(j, s, size, typ, T, config, njobs, cnt, t, tsize)
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
            if mode == VQS:
                ty = typ[i]
                if Q[ty] == 0:
                    newhead[ty] = 1
                Q[ty] += 1  # VQ_t's tail is job i
                nq += 1
            elif mode == VQS_BF:
                _bs_add(bits, off, rank[i])
                Q[typ[i]] += 1
                nq += 1
            elif mode != FIFO_FF:
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
            m, nq, ltail = _bf_j(
                size, rank, sorted_size, bits, off, nq, nxt, lvl, fv, top, sst, lnext, ltail, out_j, out_s
            )
        elif mode == BF_S:
            m, nq = _bf_s(order, sorted_size, bits, off, nq, t, tsize, L, out_j, out_s)
        elif mode == VQS:
            m, nq, nw = _vqs_schedule(
                size,
                typ,
                tlist,
                cfg,
                capj,
                T,
                L,
                config,
                njobs,
                cnt,
                vused,
                Q,
                qhead,
                gt,
                gsize,
                ingrp,
                wbits,
                woff,
                win,
                nw,
                ebits,
                eoff,
                hbits,
                hoff,
                hin,
                dep,
                isdep,
                nd,
                newhead,
                nq,
                out_j,
                out_s,
            )
            nd = ZERO
        elif mode == VQS_BF:
            m, nq = _vqsbf_schedule(
                order,
                sorted_size,
                typ,
                tlo,
                thi,
                cfg,
                T,
                L,
                config,
                njobs,
                cnt,
                Q,
                bits,
                off,
                nq,
                t,
                tsize,
                out_j,
                out_s,
            )
        else:
            if nd > 1:
                dep[:nd].sort()
            m, nq = _bf_js(
                size,
                order,
                rank,
                sorted_size,
                bits,
                off,
                nq,
                nxt,
                lvl,
                fv,
                top,
                sst,
                inq,
                dep,
                nd,
                new_lo,
                i,
                out_j,
                out_s,
            )
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
            hs = hpush(hk, hj, hs, end if epoch <= 0.0 else _epoch_of(end, epoch), j)
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
    """The kernel mode if ``cls`` *is* one of the six built-in classes
    (identity, not subclassing: a user's subclass may change anything)."""
    from schedlab.policies.packing import vqs
    from schedlab.policies.packing.best_fit import BFJ, BFJS, BFS
    from schedlab.policies.packing.fifo_ff import FIFOFF

    for builtin, mode in (
        (FIFOFF, FIFO_FF),
        (BFJ, BF_J),
        (BFS, BF_S),
        (BFJS, BF_JS),
        (vqs.VQS, VQS),
        (vqs.VQSBF, VQS_BF),
    ):
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


def _vqs_tables(size: np.ndarray, J: int):
    """VQS's tables for the kernel: each job's type (the reference's
    ``_type_of(min(r, 1.0), asc)``: bisect_left is searchsorted 'left'), K_RED
    as (k_1, j, k_j) triples and VQS's capacity for type j per configuration."""
    from schedlab.policies.packing import vqs

    asc = np.array(vqs._ascending_bounds(J))
    T = 2 * J
    i = np.searchsorted(asc, np.minimum(size, 1.0), side="left")
    typ = np.where(i == 0, T - 1, T - i).astype(np.int64)
    info = [vqs._split(k) for k in vqs.k_red(J)]
    cfg = np.array([x for triple in info for x in triple], dtype=np.int64)
    capj = np.array([1.0 - vqs.TYPE1_RESERVE if k1 else 1.0 for k1, _, _ in info])
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
    """``simulate_packing(...)`` of built-in policy ``cls``: the same
    :class:`~schedlab.sim.packing.PackingResult`, bit for bit; or None when
    the fast path declines (module docstring): then run the reference."""
    from schedlab.sim.packing import fast_vqs_J

    mode = kernel_for(cls)
    if mode is None:
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
    )


_WARM: list[bool] = []


def warm() -> None:
    """Compile (or load from the on-disk cache) the kernel now, so that a
    timed run excludes it."""
    if not _WARM:
        one = np.ones(3)
        _kernel_call(BF_JS, np.array([0.0, 0.0, 1.0]), one, one * 0.5, np.ones(2), 1.0, None, 1.0)
        _WARM.append(True)
