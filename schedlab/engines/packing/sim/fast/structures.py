"""The constants and data structures of the single-resource packing kernel.

Kernel modes and statuses (shared with the Python side in ``__init__``), and
the numba structures the policies' steps and the event loop use: several max
segment trees in one array (VQS's groups), ``ServersByFree`` as a skip list of
servers ordered by (free, server), ``JobsBySize`` as a 64-ary bitset tree of
queued job ranks, and the size look-ups on it. Kept apart from the steps and
the loop because all of them call it; the package docstring says why each
gives the reference's answer.
"""

from __future__ import annotations

import math

import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

from schedlab.engines.packing.sim.engine import FIT_TOL
from schedlab.sim.common.jit import ALLOC as _ALLOC
from schedlab.sim.common.jit import HOT as _HOT
from schedlab.sim.common.jit import NONE, ZERO, njit, st_first_at_least, st_update

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
# g[base + k], base = g * 2 * size; each is jit.st_update / st_first_at_least on a view.


@njit(**_HOT)
def _gt_update(g, base, size, i, value):
    """Set value[i] in the tree stored at ``base`` of ``g`` (a view of it: ``jit.st_update``)."""
    st_update(g[base : base + 2 * size], size, i, value)


@njit(**_HOT)
def _gt_first_at_least(g, base, size, n, r, lo):
    """Lowest index i >= lo with value[i] >= r in the tree stored at ``base``
    of ``g`` (a view of it: ``jit.st_first_at_least``), or -1."""
    return st_first_at_least(g[base : base + 2 * size], size, n, r, lo)


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
        elif w > 0 and lv == nlev - 1:
            # b at a word boundary of the top level, which has a single word
            # and no level above to climb to: members < b are the whole of
            # word w - 1 (= 0). (Climbing instead returned -1 whenever b was
            # the number of ranks and that was 64 or 4096: a queue of 64
            # jobs looked empty to a server with room for the largest.)
            w -= 1
            v = bits[off[lv] + w]
        else:
            v = U0
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
