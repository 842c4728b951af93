"""The engine's server for the queue kernels: ``schedlab.engines.queue.sim.engine.Server``
transcribed over numpy tables, plus the layout constants, ``tie_key`` and
the kernels' status codes. Every kernel module builds on this one.

Jobs sit in pools; a pool's members form a pairing heap whose nodes are the
jobs (a job is in one pool at a time), ordered by (finish tag, entry
sequence number) -- the reference heap's order on its live entries. See the
package docstring for why every operation is the reference's, in its order.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.engines.queue.sim.engine import DONE_REL_TOL, TIE_BITS
from schedlab.sim.common.jit import ALLOC as _ALLOC
from schedlab.sim.common.jit import HOT as _HOT
from schedlab.sim.common.jit import NONE, njit

INF = math.inf
_TIE_SCALE = float(1 << TIE_BITS)
_TIE_BITS = TIE_BITS
_DONE_REL_TOL = DONE_REL_TOL

#: Kernel status codes.
OK, STALLED, AMBIGUOUS, POOLS_FULL = 0, 1, 2, 3


# ---- state layout --------------------------------------------------------------------
# Jobs, one row each: JF (float) and JI (int).
W, A0, V0, FT, SZ = 0, 1, 2, 3, 4  # weight in its pool, attained at joining, pool clock then, finish tag, size
POOL, KSEQ, CHILD, SIB, PREV = 0, 1, 2, 3, 4  # pool, entry seq, pairing-heap links
# Pools, one row each from row 1: PF (float) and PI (int). Row 0 holds the server's scalars.
PV, PT, PW = 0, 1, 2  # v_ref, t_ref, weight (sum of member weights)
PSET, PSIZE, PROOT, PLONE = 0, 1, 2, 3  # t_ref set (the pool holds the server), members, heap root, lone pool
ROW0 = 0
NOW = 0  # PF[ROW0, NOW]: the clock
SERVED, SEQ, NPOOLS, FREE = 0, 1, 2, 3  # PI[ROW0, .]: served pool (-1: idle), last entry seq, rows used, free row


@njit(**_HOT)
def tie_key(x):
    """``schedlab.engines.queue.sim.engine.tie_key``, to the bit (round half to even)."""
    if x == 0.0 or x != x or x == INF or x == -INF:
        return x
    m, e = math.frexp(x)
    return math.ldexp(np.rint(m * _TIE_SCALE), e - _TIE_BITS)


# ---- the server (engines/queue/sim/engine.py's Server) ---------------------------------------------------


@njit(**_ALLOC)
def _new_server(size, cap):
    """Job and pool tables for ``cap`` pool rows. np.empty: every field is
    written before it is read (a job's when it is admitted, a pool's by
    _new_pool), so untouched capacity costs nothing. (Explicit loops, not
    numpy's fill or slice assignment: those cost seconds of compile time.)"""
    n = size.shape[0]
    JF = np.empty((n, 5))
    JI = np.empty((n, 5), dtype=np.int64)
    for j in range(n):
        JF[j, SZ] = size[j]
    PF = np.empty((cap, 3))
    PI = np.empty((cap, 4), dtype=np.int64)
    PF[ROW0, NOW] = 0.0
    PI[ROW0, SERVED] = NONE
    PI[ROW0, SEQ] = 0
    PI[ROW0, NPOOLS] = 1
    PI[ROW0, FREE] = NONE
    return JF, JI, PF, PI


@njit(**_HOT)
def _new_pool(PF, PI):
    """Server.new_pool: an empty pool, not holding the server -- a row freed
    by a lone pool (see _lone_pool) if there is one, else a new row."""
    p = PI[ROW0, FREE]
    if p >= 0:
        PI[ROW0, FREE] = PI[p, PROOT]  # the free rows are linked through PROOT
    else:
        p = PI[ROW0, NPOOLS]
        PI[ROW0, NPOOLS] = p + 1
    PF[p, PV] = 0.0
    PF[p, PT] = 0.0
    PF[p, PW] = 0.0
    PI[p, PSET] = 0
    PI[p, PSIZE] = 0
    PI[p, PROOT] = NONE
    PI[p, PLONE] = 0
    return p


@njit(**_HOT)
def _lone_pool(PF, PI):
    """A new pool for one job: Server._admit's, or one isolating a job.

    Why its row is recycled: nothing but its one job (and the server, while
    it holds it) ever refers to such a pool, so once the job leaves it (moved
    elsewhere, or completed) the pool is dead -- in the reference it is
    garbage -- and _leave puts its row back on the free list. Without that a
    run would use a row per arrival plus one per isolation (SRPTE+LAS
    isolates its head at up to one event in two), and a run that outgrew the
    table (POOLS_FULL) was paid twice. With it the rows in use are at most
    the jobs present plus the LAS groups plus the shared pools: the initial
    2 n + 16 rows always suffice."""
    p = _new_pool(PF, PI)
    PI[p, PLONE] = 1
    return p


# A pool's members: a pairing heap whose nodes are the jobs, ordered by
# (finish tag, entry seq) -- the reference heap's order on its live entries.


@njit(**_HOT)
def _meld(JF, JI, a, b):
    if a < 0:
        return b
    if b < 0:
        return a
    fa = JF[a, FT]
    fb = JF[b, FT]
    if fb < fa or (fb == fa and JI[b, KSEQ] < JI[a, KSEQ]):
        a, b = b, a
    c = JI[a, CHILD]
    JI[b, SIB] = c
    if c >= 0:
        JI[c, PREV] = b
    JI[b, PREV] = a
    JI[a, CHILD] = b
    JI[a, SIB] = NONE
    JI[a, PREV] = NONE
    return a


@njit(**_HOT)
def _pop_root(JF, JI, root):
    """Detach ``root``; return the root of its children melded (two-pass pairing)."""
    c = JI[root, CHILD]
    JI[root, CHILD] = NONE
    stack = NONE  # first pass's results, linked through SIB
    while c >= 0:
        a = c
        b = JI[a, SIB]
        JI[a, SIB] = NONE
        JI[a, PREV] = NONE
        if b < 0:
            JI[a, SIB] = stack
            stack = a
            break
        c = JI[b, SIB]
        JI[b, SIB] = NONE
        JI[b, PREV] = NONE
        m = _meld(JF, JI, a, b)
        JI[m, SIB] = stack
        stack = m
    r = NONE
    while stack >= 0:
        nxt = JI[stack, SIB]
        JI[stack, SIB] = NONE
        r = _meld(JF, JI, stack, r)
        stack = nxt
    return r


@njit(**_HOT)
def _clock(PF, PI, p):
    if PI[p, PSET] == 0 or PF[p, PW] == 0.0:
        return PF[p, PV]
    return PF[p, PV] + (PF[ROW0, NOW] - PF[p, PT]) / PF[p, PW]


@njit(**_HOT)
def _attained(JF, JI, PF, PI, job):
    return JF[job, A0] + JF[job, W] * (_clock(PF, PI, JI[job, POOL]) - JF[job, V0])


@njit(**_HOT)
def _unlink(JF, JI, PI, job, p):
    """Take ``job``'s node out of pool ``p``'s heap (its children meld back in)."""
    root = PI[p, PROOT]
    if job == root:
        PI[p, PROOT] = _pop_root(JF, JI, root)
        return
    parent = JI[job, PREV]
    s = JI[job, SIB]
    if JI[parent, CHILD] == job:
        JI[parent, CHILD] = s
    else:
        JI[parent, SIB] = s
    if s >= 0:
        JI[s, PREV] = parent
    JI[job, SIB] = NONE
    JI[job, PREV] = NONE
    PI[p, PROOT] = _meld(JF, JI, root, _pop_root(JF, JI, job))


@njit(**_HOT)
def _leave(JF, PF, PI, job, p):
    """Server._leave, but for the heap (see _unlink): ``job`` leaves pool
    ``p``, the pool's clock anchored at now first."""
    PF[p, PV] = _clock(PF, PI, p)  # _anchor
    if PI[p, PSET] != 0:
        PF[p, PT] = PF[ROW0, NOW]
    PI[p, PSIZE] -= 1
    if PI[p, PSIZE] == 0:  # reset exactly
        PF[p, PW] = 0.0
        PF[p, PV] = 0.0
        PI[p, PROOT] = NONE
        if PI[p, PLONE] != 0:  # a lone pool emptied is dead: recycle its row (see _lone_pool)
            PI[p, PROOT] = PI[ROW0, FREE]
            PI[ROW0, FREE] = p
            if PI[ROW0, SERVED] == p:  # the server held it: now it holds nothing, which for
                PI[ROW0, SERVED] = NONE  # every later read (and _serve's anchoring) is the same
    else:
        PF[p, PW] -= JF[job, W]


@njit(**_HOT)
def _join(JF, JI, PF, PI, job, p, weight, attained):
    """Server._join."""
    PF[p, PV] = _clock(PF, PI, p)  # _anchor
    if PI[p, PSET] != 0:
        PF[p, PT] = PF[ROW0, NOW]
    PI[p, PSIZE] += 1
    PF[p, PW] += weight
    JI[job, POOL] = p
    JF[job, W] = weight
    JF[job, A0] = attained
    v0 = PF[p, PV]
    JF[job, V0] = v0
    PI[ROW0, SEQ] += 1
    JI[job, KSEQ] = PI[ROW0, SEQ]
    JF[job, FT] = v0 + (JF[job, SZ] - attained) / weight
    JI[job, CHILD] = NONE
    JI[job, SIB] = NONE
    JI[job, PREV] = NONE
    PI[p, PROOT] = _meld(JF, JI, PI[p, PROOT], job)


@njit(**_HOT)
def _place(JF, JI, PF, PI, job, p, weight):
    old = JI[job, POOL]
    if old == p and JF[job, W] == weight:
        return
    attained = _attained(JF, JI, PF, PI, job)
    if old >= 0:
        if PI[old, PSIZE] > 1:  # (a last member's heap is simply reset)
            _unlink(JF, JI, PI, job, old)
        _leave(JF, PF, PI, job, old)
    _join(JF, JI, PF, PI, job, p, weight, attained)


@njit(**_HOT)
def _serve(PF, PI, p):
    current = PI[ROW0, SERVED]
    if p == current:
        return
    if current >= 0:
        PF[current, PV] = _clock(PF, PI, current)
        PI[current, PSET] = 0
    PI[ROW0, SERVED] = p
    if p >= 0:
        PF[p, PT] = PF[ROW0, NOW]
        PI[p, PSET] = 1


@njit(**_HOT)
def _next_completion(JF, PF, PI, t_policy, t_arrival):
    """The engine's next completion, (time, job) or (INF, -1): the served
    pool's heap top, with simulate's snapping to the next other event."""
    p = PI[ROW0, SERVED]
    if p < 0 or PI[p, PSIZE] == 0:
        return INF, NONE
    job = PI[p, PROOT]
    now = PF[ROW0, NOW]
    t = PF[p, PT] + (JF[job, FT] - PF[p, PV]) * PF[p, PW]
    t_done = t if t > now else now
    t_other = t_policy if t_policy < t_arrival else t_arrival
    if t_done > t_other and (t_done - t_other) * JF[job, W] <= _DONE_REL_TOL * JF[job, SZ] * PF[p, PW]:
        t_done = t_other if t_other > now else now
    return t_done, job


@njit(**_HOT)
def _complete(JF, JI, PF, PI, job):
    p = JI[job, POOL]
    finish = JF[job, FT]
    # the job is the heap's root: pop it
    PI[p, PROOT] = _pop_root(JF, JI, job) if JI[job, CHILD] >= 0 else NONE
    PF[p, PV] = finish
    PF[p, PT] = PF[ROW0, NOW]
    _leave(JF, PF, PI, job, p)
    JI[job, POOL] = NONE
