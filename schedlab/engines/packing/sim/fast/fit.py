"""The ``schedule()`` steps of FIFO-FF, BF-J, BF-S and BF-J/S as numba helpers.

Each is the policy's ``schedule`` of ``schedlab.engines.packing.policies`` (``fifo_ff``,
``best_fit``) transcribed over the structures of ``structures``; the event
loop (``kernel._run``) calls the one of its mode.
"""

from __future__ import annotations

from schedlab.engines.packing.sim.fast.structures import (
    _FIT_TOL,
    INF,
    _bs_min,
    _bs_remove,
    _largest_at_most,
    _sl_tightest,
    _sl_update,
)
from schedlab.sim.common.jit import HOT as _HOT
from schedlab.sim.common.jit import ZERO, njit
from schedlab.sim.common.jit import st_first_at_least as _st_first_at_least
from schedlab.sim.common.jit import st_update as _st_update

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
