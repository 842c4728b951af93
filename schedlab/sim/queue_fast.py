"""The queue engine's compiled fast path: numba kernels for the built-in policies.

Why it exists
-------------
The reference engine (``schedlab.sim.queue`` with the policies of
``schedlab.policies.queue``) is readable Python and the seam for user policies;
it runs ~0.3 M events/s. These kernels run the same schedules at tens of
millions of events/s: one ``@njit(cache=True)`` event loop per policy family
over numpy arrays, no Python object in the loop.

=============  ==================================================================
kernel         policies
=============  ==================================================================
``_fifo``      FIFO
``_ps``        PS, GPS
``_las``       LAS
``_srpt``      SRPT, SRPTE, SRPTE+PS, SRPTE+LAS
``_fsp``       FSP, FSPE, FSPE+PS, FSPE+LAS, PSBS (Algorithm 1's virtual lag)
=============  ==================================================================

Same numbers as the reference: bit-identical, for every policy
---------------------------------------------------------------
Each kernel is a transcription of the reference, operation for operation: the
same ``Server`` arithmetic (a pool's clock anchored as ``v_ref`` at ``t_ref``
and re-anchored only when its membership or its possession of the server
changes; finish tags ``F = V0 + (size - a0) / w``; weights added to and
subtracted from a pool's total in the same order; an emptied pool reset to
exactly 0), the same main loop (completions, then internal events, then
arrivals; the ``DONE_REL_TOL`` completion snapping), the same ``tie_key``
(``TIE_BITS``, round half to even) and the same heap orders: a pool's members
by (finish tag, entry sequence number), SRPT's waiting jobs by (tie key,
job), the virtual lag's O and E by (tie key of g_i, job), LAS's paused groups
by (tie key of level, creation order). Every float operation is IEEE double
in the reference's order (numba does not reassociate or contract without
``fastmath``), so the completion times are **bit-identical** for all 13
built-ins, and so is the event count; no policy needs the 1e-12 allowance.
``tests/test_queue_fast.py`` checks it with hypothesis over workloads full of
ties and coincidences, and every queue test runs on both paths.

Data structures: a pool's members sit in a pairing heap whose nodes are the
jobs (a job is in one pool at a time), so a member leaves in O(log n)
amortised without lazy deletion; the other priority queues are array-based
binary heaps. Each order above is a total order, so the heap top -- all that
the reference ever reads -- is the same whatever the heap's shape.

The one thing no transcription can copy, and what happens then
--------------------------------------------------------------
LAS (and SRPTE+LAS, FSPE+LAS) moves a whole group's members into another pool
when two groups meet, iterating over a Python ``set``: the moved jobs get
consecutive entry sequence numbers in set-iteration order, which this module
does not emulate (it moves them in the order they joined the group). That
order decides which of two members with *bit-equal* finish tags completes
first; both complete at the same instant either way, and only the
completion-snapping test (which reads the first job's size) could tell them
apart -- so results can differ only if two jobs moved together get equal
finish tags and different sizes. The kernel detects exactly that after every
move and then returns ``AMBIGUOUS``: :func:`simulate` gives up and the engine
runs the reference instead. In practice it never fires on real workloads (it
needs remaining works equal to the last bit with different sizes).

When the fast path is not used
------------------------------
:func:`kernel_for` matches the policy class by identity: a subclass of a
built-in (a user's policy) always runs on the reference. :func:`simulate`
also declines (returns None: the engine runs the reference) for inputs that
are not float64, not finite, not positive (sizes, estimates, weights), not
sorted by submit time, and for policy parameters (built-ins take none); the
reference then gives its usual answer or error.

Compiled code is cached on disk (``cache=True``, set up in
``schedlab.sim.jit``) in ``$NUMBA_CACHE_DIR`` if the user set it, else
``$SCHEDLAB_CACHE_DIR/numba/<digest>``, else ``~/.cache/schedlab/numba/<digest>``: the first use on a machine compiles every kernel
(a few seconds, see ``benchmarks/queue_engine.py``); later processes, Ray
workers included, load them in well under a second. This module imports
numba; only the queue engine's fast path imports this module.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.sim.jit import ALLOC as _ALLOC
from schedlab.sim.jit import HOT as _HOT
from schedlab.sim.jit import JIT as _JIT
from schedlab.sim.jit import cache_dir, njit  # noqa: F401  (cache_dir: kept in this module's API)
from schedlab.sim.jit import NONE, ZERO, hpop, hpush
from schedlab.sim.queue import DONE_REL_TOL, TIE_BITS

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
    """``schedlab.sim.queue.tie_key``, to the bit (round half to even)."""
    if x == 0.0 or x != x or x == INF or x == -INF:
        return x
    m, e = math.frexp(x)
    return math.ldexp(np.rint(m * _TIE_SCALE), e - _TIE_BITS)


# ---- the server (sim/queue.py's Server) ---------------------------------------------------


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


# Binary heaps of job ids ordered by (key, id): two parallel arrays, keys ``hk``
# and ids ``hi`` (a slot's key beside its id: one cache line per level, not a
# lookup per comparison), schedlab.sim.jit's hpush/hpop.


# ---- LeastAttained (policies/queue/las.py) --------------------------------------------
# Groups, one row each: gF (float) and gI (int); LI holds the scalars. The
# paused groups' heap lives in column GHEAP (position -> group), ordered by
# (tie key of level, creation order); ``paused_at`` is a hash table (hk, hv)
# from tie key to group, open addressing with linear probing.
GLEVEL, GCLOCK, GTK, GELEVEL = 0, 1, 2, 3  # level, pool clock then, heap entry's tie key and level
GPOOL, GCOUNT, GHEAD, GTAIL, GORDER, GHEAP = 0, 1, 2, 3, 4, 5
# Jobs' LAS rows, JL: group, member list links, a scratch column.
GRP, MNEXT, MPREV, SCR = 0, 1, 2, 3
ACTIVE, HSIZE, NGROUPS, ORDER, AMBIG, HLIVE = 0, 1, 2, 3, 4, 5
_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15 as a signed 64-bit integer


@njit(**_ALLOC)
def _las_new(n):
    """LAS tables for ``n`` jobs: groups (at most one per job added), the jobs'
    LAS rows and the hash table (fields written before read, but a job's
    group, NONE until it is added, and the table's empty slots)."""
    cap = n + 2
    JL = np.empty((n, 4), dtype=np.int64)
    for j in range(n):
        JL[j, GRP] = NONE
    gF = np.empty((cap, 4))
    gI = np.empty((cap, 6), dtype=np.int64)
    LI = np.zeros(6, dtype=np.int64)
    LI[ACTIVE] = NONE
    hcap = 64  # paused_at: at most one entry per group, so at most half full
    while hcap < 2 * cap:
        hcap *= 2
    hk = np.empty(hcap)
    hv = np.empty(hcap, dtype=np.int64)
    for s in range(hcap):
        hv[s] = NONE
    return JL, gF, gI, LI, hk, hv


@njit(**_HOT)
def _ht_index(key, mask):
    m, e = math.frexp(key)
    h = (np.int64(m * 9007199254740992.0) ^ (np.int64(e) << 1)) * _GOLDEN
    return (h >> 24) & mask


@njit(**_HOT)
def _ht_get(hk, hv, key):
    mask = hk.shape[0] - 1
    i = _ht_index(key, mask)
    while hv[i] >= 0:
        if hk[i] == key:
            return hv[i]
        i = (i + 1) & mask
    return NONE


@njit(**_HOT)
def _ht_set(hk, hv, LI, key, value):
    mask = hk.shape[0] - 1
    i = _ht_index(key, mask)
    while hv[i] >= 0:
        if hk[i] == key:
            hv[i] = value
            return
        i = (i + 1) & mask
    hk[i] = key
    hv[i] = value
    LI[HLIVE] += 1


@njit(**_HOT)
def _ht_del(hk, hv, LI, key):
    """Delete ``key`` if present (backward-shift deletion: no tombstones)."""
    mask = hk.shape[0] - 1
    i = _ht_index(key, mask)
    while True:
        if hv[i] < 0:
            return
        if hk[i] == key:
            break
        i = (i + 1) & mask
    LI[HLIVE] -= 1
    j = i
    while True:
        j = (j + 1) & mask
        if hv[j] < 0:
            break
        k = _ht_index(hk[j], mask)
        if (i <= j and i < k <= j) or (i > j and (k <= j or k > i)):
            continue  # already on its probe path from k
        hk[i] = hk[j]
        hv[i] = hv[j]
        i = j
    hv[i] = NONE


@njit(**_HOT)
def _gheap_push(gF, gI, LI, g):
    i = LI[HSIZE]
    while i > 0:
        parent = (i - 1) >> 1
        q = gI[parent, GHEAP]
        if gF[g, GTK] < gF[q, GTK] or (gF[g, GTK] == gF[q, GTK] and gI[g, GORDER] < gI[q, GORDER]):
            gI[i, GHEAP] = q
            i = parent
        else:
            break
    gI[i, GHEAP] = g
    LI[HSIZE] += 1


@njit(**_HOT)
def _gheap_pop(gF, gI, LI):
    top = gI[0, GHEAP]
    hs = LI[HSIZE] - 1
    LI[HSIZE] = hs
    last = gI[hs, GHEAP]
    i = ZERO
    while True:
        c = 2 * i + 1
        if c >= hs:
            break
        if c + 1 < hs:
            a = gI[c, GHEAP]
            b = gI[c + 1, GHEAP]
            if gF[b, GTK] < gF[a, GTK] or (gF[b, GTK] == gF[a, GTK] and gI[b, GORDER] < gI[a, GORDER]):
                c += 1
        q = gI[c, GHEAP]
        if gF[q, GTK] < gF[last, GTK] or (gF[q, GTK] == gF[last, GTK] and gI[q, GORDER] < gI[last, GORDER]):
            gI[i, GHEAP] = q
            i = c
        else:
            break
    if hs > 0:
        gI[i, GHEAP] = last
    return top


@njit(**_HOT)
def _las_level(PF, PI, gF, gI, g):
    return gF[g, GLEVEL] + (_clock(PF, PI, gI[g, GPOOL]) - gF[g, GCLOCK])


@njit(**_HOT)
def _las_pool(gI, LI):
    """LeastAttained.pool: the active group's pool, or NONE."""
    g = LI[ACTIVE]
    return gI[g, GPOOL] if g >= 0 else NONE


@njit(**_HOT)
def _las_new_group(PF, PI, gF, gI, LI, level):
    g = LI[NGROUPS]
    LI[NGROUPS] = g + 1
    p = _new_pool(PF, PI)
    gI[g, GPOOL] = p
    gI[g, GCOUNT] = 0
    gI[g, GHEAD] = NONE
    gI[g, GTAIL] = NONE
    gF[g, GLEVEL] = level
    gF[g, GCLOCK] = _clock(PF, PI, p)
    return g


@njit(**_HOT)
def _las_enter(JF, JI, PF, PI, JL, gI, job, g):
    _place(JF, JI, PF, PI, job, gI[g, GPOOL], 1.0)
    tail = gI[g, GTAIL]
    JL[job, MPREV] = tail
    JL[job, MNEXT] = NONE
    if tail >= 0:
        JL[tail, MNEXT] = job
    else:
        gI[g, GHEAD] = job
    gI[g, GTAIL] = job
    gI[g, GCOUNT] += 1
    JL[job, GRP] = g


@njit(**_HOT)
def _ambiguous(JF, JL, k):
    """Do two of the jobs JL[0:k, SCR] have bit-equal finish tags and
    different sizes? (Heap sort of that column by finish tag, then a scan.)"""
    for start in range(k // 2 - 1, -1, -1):
        _sift(JF, JL, start, k)
    for end in range(k - 1, 0, -1):
        top = JL[0, SCR]
        JL[0, SCR] = JL[end, SCR]
        JL[end, SCR] = top
        _sift(JF, JL, ZERO, end)
    for q in range(1, k):
        a = JL[q - 1, SCR]
        b = JL[q, SCR]
        if JF[a, FT] == JF[b, FT] and JF[a, SZ] != JF[b, SZ]:
            return True
    return False


@njit(**_HOT)
def _sift(JF, JL, i, end):
    """Max-heap sift-down of JL[0:end, SCR] by finish tag."""
    while True:
        c = 2 * i + 1
        if c >= end:
            return
        if c + 1 < end and JF[JL[c + 1, SCR], FT] > JF[JL[c, SCR], FT]:
            c += 1
        if JF[JL[c, SCR], FT] > JF[JL[i, SCR], FT]:
            t = JL[i, SCR]
            JL[i, SCR] = JL[c, SCR]
            JL[c, SCR] = t
            i = c
        else:
            return


@njit(**_HOT)
def _las_move_all(JF, JI, PF, PI, JL, gI, LI, src, dst):
    """Every member of ``src`` enters ``dst``; ``src`` ends empty. Sets AMBIG
    if the move's order could matter (see the module docstring)."""
    k = ZERO
    j = gI[src, GHEAD]
    while j >= 0:
        nxt = JL[j, MNEXT]
        _las_enter(JF, JI, PF, PI, JL, gI, j, dst)
        JL[k, SCR] = j
        k += 1
        j = nxt
    gI[src, GHEAD] = NONE
    gI[src, GTAIL] = NONE
    gI[src, GCOUNT] = 0
    if k >= 2 and LI[AMBIG] == 0 and _ambiguous(JF, JL, k):
        LI[AMBIG] = 1


@njit(**_HOT)
def _las_push(gF, gI, LI, hk, hv, g, level):
    key = tie_key(level)
    gF[g, GTK] = key
    gF[g, GELEVEL] = level
    gI[g, GORDER] = LI[ORDER]
    LI[ORDER] += 1
    _gheap_push(gF, gI, LI, g)
    _ht_set(hk, hv, LI, key + 0.0, g)  # + 0.0: -0.0 and 0.0 are one key, as in a Python dict


@njit(**_HOT)
def _las_drop_empty_paused(gF, gI, LI, hk, hv):
    while LI[HSIZE] > 0 and gI[gI[0, GHEAP], GCOUNT] == 0:
        g = _gheap_pop(gF, gI, LI)
        _ht_del(hk, hv, LI, gF[g, GTK] + 0.0)


@njit(**_HOT)
def _las_add(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv, job):
    attained = _attained(JF, JI, PF, PI, job)
    active = LI[ACTIVE]
    if active < 0:
        g = _las_new_group(PF, PI, gF, gI, LI, attained)
        LI[ACTIVE] = g
        _las_enter(JF, JI, PF, PI, JL, gI, job, g)
        return
    current = _las_level(PF, PI, gF, gI, active)
    if tie_key(attained) == tie_key(current):
        _las_enter(JF, JI, PF, PI, JL, gI, job, active)
    elif attained < current:  # _pause the active group at its level
        gF[active, GLEVEL] = current
        gF[active, GCLOCK] = _clock(PF, PI, gI[active, GPOOL])
        existing = _ht_get(hk, hv, tie_key(current) + 0.0)
        if existing < 0:
            _las_push(gF, gI, LI, hk, hv, active, current)
        else:  # a paused group already sits at this level: join it
            _las_move_all(JF, JI, PF, PI, JL, gI, LI, active, existing)
        g = _las_new_group(PF, PI, gF, gI, LI, attained)
        LI[ACTIVE] = g
        _las_enter(JF, JI, PF, PI, JL, gI, job, g)
    else:
        g = _ht_get(hk, hv, tie_key(attained) + 0.0)
        if g < 0:
            g = _las_new_group(PF, PI, gF, gI, LI, attained)
            _las_push(gF, gI, LI, hk, hv, g, attained)
        _las_enter(JF, JI, PF, PI, JL, gI, job, g)


@njit(**_HOT)
def _las_remove(JL, gF, gI, LI, hk, hv, job):
    g = JL[job, GRP]
    JL[job, GRP] = NONE
    prev = JL[job, MPREV]
    nxt = JL[job, MNEXT]
    if prev >= 0:
        JL[prev, MNEXT] = nxt
    else:
        gI[g, GHEAD] = nxt
    if nxt >= 0:
        JL[nxt, MPREV] = prev
    else:
        gI[g, GTAIL] = prev
    gI[g, GCOUNT] -= 1
    if g == LI[ACTIVE] and gI[g, GCOUNT] == 0:  # _pop_paused
        _las_drop_empty_paused(gF, gI, LI, hk, hv)
        if LI[HSIZE] == 0:
            LI[ACTIVE] = NONE
        else:
            top = _gheap_pop(gF, gI, LI)
            _ht_del(hk, hv, LI, gF[top, GTK] + 0.0)
            LI[ACTIVE] = top


@njit(**_HOT)
def _las_next_event_time(PF, PI, gF, gI, LI, hk, hv):
    active = LI[ACTIVE]
    if active < 0:
        return INF
    _las_drop_empty_paused(gF, gI, LI, hk, hv)
    if LI[HSIZE] == 0:
        return INF
    gap = gF[gI[0, GHEAP], GELEVEL] - _las_level(PF, PI, gF, gI, active)
    p = gI[active, GPOOL]  # Server.time_to_advance(the active pool, gap):
    if p != PI[ROW0, SERVED] or PI[p, PSIZE] == 0:
        return PF[ROW0, NOW] + INF
    if gap <= 0.0:
        return PF[ROW0, NOW] + 0.0
    return PF[ROW0, NOW] + gap * PF[p, PW]


@njit(**_HOT)
def _las_on_event(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv):
    _las_drop_empty_paused(gF, gI, LI, hk, hv)
    other = _gheap_pop(gF, gI, LI)
    _ht_del(hk, hv, LI, gF[other, GTK] + 0.0)
    level = gF[other, GELEVEL]
    active = LI[ACTIVE]
    if gI[active, GCOUNT] <= gI[other, GCOUNT]:
        small, large = active, other
    else:
        small, large = other, active
    _las_move_all(JF, JI, PF, PI, JL, gI, LI, small, large)
    gF[large, GLEVEL] = level
    gF[large, GCLOCK] = _clock(PF, PI, gI[large, GPOOL])
    LI[ACTIVE] = large


# ---- kernels ----------------------------------------------------------------------------
# Each returns (completion times, events, status); the loop is
# schedlab.sim.queue.simulate's, line for line: completions, then the
# policy's internal events, then arrivals.


@njit(**_JIT)
def _fifo(submit, size, seen, weight, mode, cap):
    n = submit.shape[0]
    JF, JI, PF, PI = _new_server(size, cap)
    completion = np.empty(n)
    queue = np.empty(n, dtype=np.int64)  # the FIFO: queue[q_head:q_tail]
    q_head = ZERO
    q_tail = ZERO
    i = ZERO
    events = ZERO
    done = ZERO
    while True:
        if PI[ROW0, NPOOLS] + 8 > cap:
            return completion, events, POOLS_FULL
        t_arrival = submit[i] if i < n else INF
        t_policy = INF
        t_done, job = _next_completion(JF, PF, PI, t_policy, t_arrival)
        events += 1
        if t_done <= t_policy and t_done <= t_arrival and job >= 0:
            PF[ROW0, NOW] = t_done
            _complete(JF, JI, PF, PI, job)
            completion[job] = t_done
            done += 1
            q_head += 1  # depart: popleft, serve the next
            _serve(PF, PI, JI[queue[q_head], POOL] if q_head < q_tail else NONE)
        elif i < n:
            PF[ROW0, NOW] = t_arrival
            _join(JF, JI, PF, PI, i, _lone_pool(PF, PI), 1.0, 0.0)  # Server._admit
            queue[q_tail] = i  # arrive: append; serve it if alone
            q_tail += 1
            if q_tail - q_head == 1:
                _serve(PF, PI, JI[i, POOL])
            i += 1
        else:
            break
    return completion, events, OK if done == n else STALLED


@njit(**_JIT)
def _ps(submit, size, seen, weight, mode, cap):
    """PS (mode 0: weights ignored) and GPS (mode 1)."""
    n = submit.shape[0]
    JF, JI, PF, PI = _new_server(size, cap)
    completion = np.empty(n)
    pool = _new_pool(PF, PI)
    _serve(PF, PI, pool)
    i = ZERO
    events = ZERO
    done = ZERO
    while True:
        if PI[ROW0, NPOOLS] + 8 > cap:
            return completion, events, POOLS_FULL
        t_arrival = submit[i] if i < n else INF
        t_policy = INF
        t_done, job = _next_completion(JF, PF, PI, t_policy, t_arrival)
        events += 1
        if t_done <= t_policy and t_done <= t_arrival and job >= 0:
            PF[ROW0, NOW] = t_done
            _complete(JF, JI, PF, PI, job)
            completion[job] = t_done
            done += 1
        elif i < n:
            PF[ROW0, NOW] = t_arrival
            _join(JF, JI, PF, PI, i, _lone_pool(PF, PI), 1.0, 0.0)  # Server._admit
            _place(JF, JI, PF, PI, i, pool, weight[i] if mode == 1 else 1.0)
            i += 1
        else:
            break
    return completion, events, OK if done == n else STALLED


@njit(**_JIT)
def _las(submit, size, seen, weight, mode, cap):
    n = submit.shape[0]
    JF, JI, PF, PI = _new_server(size, cap)
    JL, gF, gI, LI, hk, hv = _las_new(n)
    completion = np.empty(n)
    i = ZERO
    events = ZERO
    done = ZERO
    while True:
        if PI[ROW0, NPOOLS] + 8 > cap:
            return completion, events, POOLS_FULL
        t_arrival = submit[i] if i < n else INF
        t_policy = _las_next_event_time(PF, PI, gF, gI, LI, hk, hv)
        t_done, job = _next_completion(JF, PF, PI, t_policy, t_arrival)
        events += 1
        if t_done <= t_policy and t_done <= t_arrival and job >= 0:
            PF[ROW0, NOW] = t_done
            _complete(JF, JI, PF, PI, job)
            completion[job] = t_done
            done += 1
            _las_remove(JL, gF, gI, LI, hk, hv, job)
            _serve(PF, PI, _las_pool(gI, LI))
        elif t_policy <= t_arrival and t_policy < INF:
            if t_policy > PF[ROW0, NOW]:
                PF[ROW0, NOW] = t_policy
            _las_on_event(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv)
            _serve(PF, PI, _las_pool(gI, LI))
        elif i < n:
            PF[ROW0, NOW] = t_arrival
            _join(JF, JI, PF, PI, i, _lone_pool(PF, PI), 1.0, 0.0)  # Server._admit
            _las_add(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv, i)
            _serve(PF, PI, _las_pool(gI, LI))
            i += 1
        else:
            break
    return completion, events, AMBIGUOUS if LI[AMBIG] != 0 else (OK if done == n else STALLED)


# SRPT family (policies/queue/srpt.py). Modes:
SRPT_PLAIN, SRPT_PS, SRPT_LAS = 0, 1, 2
# The waiting heap (job ids by (tie key, job)) and the head: RF = [head_key,
# head_att], RI = [head, waiting size].
HKEY, HATT = 0, 1
HEAD, WSIZE = 0, 1


@njit(**_HOT)
def _srpt_head_remaining(JF, JI, PF, PI, RF, RI):
    return RF[HKEY] - (_attained(JF, JI, PF, PI, RI[HEAD]) - RF[HATT])


@njit(**_HOT)
def _srpt_set_head(JF, JI, PF, PI, RF, RI, job, key):
    RI[HEAD] = job
    if job >= 0:
        RF[HKEY] = key
        RF[HATT] = _attained(JF, JI, PF, PI, job)


@njit(**_HOT)
def _srpt_next_head(JF, JI, PF, PI, wk, wheap, wkey, RF, RI):
    if RI[WSIZE] > 0:
        job = wheap[0]
        RI[WSIZE] = hpop(wk, wheap, RI[WSIZE])
        _srpt_set_head(JF, JI, PF, PI, RF, RI, job, wkey[job])
    else:
        RI[HEAD] = NONE


@njit(**_HOT)
def _srpt_admit(JF, JI, PF, PI, wk, wheap, wkey, RF, RI, job, estimate):
    """Make ``job`` the head or queue it; True if it displaced a head."""
    if RI[HEAD] < 0:
        _srpt_set_head(JF, JI, PF, PI, RF, RI, job, estimate)
        return False
    remaining = _srpt_head_remaining(JF, JI, PF, PI, RF, RI)
    if tie_key(estimate) < tie_key(remaining):
        head = RI[HEAD]
        wkey[head] = remaining
        RI[WSIZE] = hpush(wk, wheap, RI[WSIZE], tie_key(remaining), head)
        _srpt_set_head(JF, JI, PF, PI, RF, RI, job, estimate)
        return True
    wkey[job] = estimate
    RI[WSIZE] = hpush(wk, wheap, RI[WSIZE], tie_key(estimate), job)
    return False


@njit(**_HOT)
def _srpt_late_time(JF, JI, PF, PI, RF, RI):
    """_SRPTELate.next_event_time: when the head's estimated remaining reaches 0."""
    head = RI[HEAD]
    if head < 0:
        return INF
    p = JI[head, POOL]  # Server.time_to_attain(head, its estimated remaining):
    if p != PI[ROW0, SERVED]:
        return PF[ROW0, NOW] + INF
    amount = _srpt_head_remaining(JF, JI, PF, PI, RF, RI)
    if amount <= 0.0:
        return PF[ROW0, NOW] + 0.0
    return PF[ROW0, NOW] + amount * PF[p, PW] / JF[head, W]


@njit(**_HOT)
def _srpte_las_sync(JF, JI, PF, PI, gI, LI, head):
    """SRPTEPlusLAS._sync: the head beside the served late group."""
    target = _las_pool(gI, LI)
    if head >= 0:
        if target < 0:
            if PI[JI[head, POOL], PSIZE] > 1:
                _place(JF, JI, PF, PI, head, _lone_pool(PF, PI), 1.0)  # isolate
            target = JI[head, POOL]
        else:
            _place(JF, JI, PF, PI, head, target, 1.0)
    _serve(PF, PI, target)


@njit(**_JIT)
def _srpt(submit, size, seen, weight, mode, cap):
    n = submit.shape[0]
    JF, JI, PF, PI = _new_server(size, cap)
    wheap = np.empty(n, dtype=np.int64)
    wk = np.empty(n)  # the waiting heap's keys: tie keys of estimated remaining work
    wkey = np.empty(n)
    RF = np.zeros(2)
    RI = np.zeros(2, dtype=np.int64)
    RI[HEAD] = NONE
    JL, gF, gI, LI, hk, hv = _las_new(n if mode == SRPT_LAS else 0)
    shared = NONE
    if mode == SRPT_PS:
        shared = _new_pool(PF, PI)
        _serve(PF, PI, shared)
    completion = np.empty(n)
    i = ZERO
    events = ZERO
    done = ZERO
    while True:
        if PI[ROW0, NPOOLS] + 8 > cap:
            return completion, events, POOLS_FULL
        t_arrival = submit[i] if i < n else INF
        if mode == SRPT_PLAIN:
            t_policy = INF
        elif mode == SRPT_PS:
            t_policy = _srpt_late_time(JF, JI, PF, PI, RF, RI)
        else:
            a = _srpt_late_time(JF, JI, PF, PI, RF, RI)
            b = _las_next_event_time(PF, PI, gF, gI, LI, hk, hv)
            t_policy = b if b < a else a
        t_done, job = _next_completion(JF, PF, PI, t_policy, t_arrival)
        events += 1
        if t_done <= t_policy and t_done <= t_arrival and job >= 0:
            PF[ROW0, NOW] = t_done
            _complete(JF, JI, PF, PI, job)
            completion[job] = t_done
            done += 1
            if mode == SRPT_PLAIN:
                _srpt_next_head(JF, JI, PF, PI, wk, wheap, wkey, RF, RI)
                _serve(PF, PI, JI[RI[HEAD], POOL] if RI[HEAD] >= 0 else NONE)
            elif mode == SRPT_PS:
                if job == RI[HEAD]:
                    _srpt_next_head(JF, JI, PF, PI, wk, wheap, wkey, RF, RI)
                    if RI[HEAD] >= 0:  # _sync
                        _place(JF, JI, PF, PI, RI[HEAD], shared, 1.0)
            else:
                if JL[job, GRP] >= 0:  # a late job
                    _las_remove(JL, gF, gI, LI, hk, hv, job)
                else:
                    _srpt_next_head(JF, JI, PF, PI, wk, wheap, wkey, RF, RI)
                _srpte_las_sync(JF, JI, PF, PI, gI, LI, RI[HEAD])
        elif t_policy <= t_arrival and t_policy < INF:
            if t_policy > PF[ROW0, NOW]:
                PF[ROW0, NOW] = t_policy
            if mode == SRPT_PS:  # the head became late: it stays in the shared pool
                _srpt_next_head(JF, JI, PF, PI, wk, wheap, wkey, RF, RI)
                if RI[HEAD] >= 0:
                    _place(JF, JI, PF, PI, RI[HEAD], shared, 1.0)
            else:
                if _srpt_late_time(JF, JI, PF, PI, RF, RI) <= _las_next_event_time(PF, PI, gF, gI, LI, hk, hv):
                    late = RI[HEAD]
                    _srpt_next_head(JF, JI, PF, PI, wk, wheap, wkey, RF, RI)
                    _las_add(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv, late)
                else:
                    _las_on_event(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv)
                _srpte_las_sync(JF, JI, PF, PI, gI, LI, RI[HEAD])
        elif i < n:
            PF[ROW0, NOW] = t_arrival
            _join(JF, JI, PF, PI, i, _lone_pool(PF, PI), 1.0, 0.0)  # Server._admit
            previous = RI[HEAD]
            displaced = _srpt_admit(JF, JI, PF, PI, wk, wheap, wkey, RF, RI, i, seen[i])
            if mode == SRPT_PLAIN:
                _serve(PF, PI, JI[RI[HEAD], POOL] if RI[HEAD] >= 0 else NONE)
            elif mode == SRPT_PS:
                if displaced:  # preempted: waits outside, keeps its service
                    _place(JF, JI, PF, PI, previous, _lone_pool(PF, PI), 1.0)  # isolate
                if RI[HEAD] >= 0:
                    _place(JF, JI, PF, PI, RI[HEAD], shared, 1.0)
            else:
                if displaced:
                    _place(JF, JI, PF, PI, previous, _lone_pool(PF, PI), 1.0)  # isolate
                _srpte_las_sync(JF, JI, PF, PI, gI, LI, RI[HEAD])
            i += 1
        else:
            break
    return completion, events, AMBIGUOUS if LI[AMBIG] != 0 else (OK if done == n else STALLED)


# FSP family (policies/queue/fsp.py). Late-job service modes:
FSP_ONE, FSP_GPS, FSP_LAS = 0, 1, 2
# The virtual lag: heaps O and E of job ids by (tie key of g_i, job); per job
# g_i and w_i; VF = [g, t, w_v], VI = [count, |O|, |E|].
VG, VT, VWV = 0, 1, 2
VCOUNT, OSIZE, ESIZE = 0, 1, 2


@njit(**_HOT)
def _vl_arrive(Ok, O, vg, vw, VF, VI, t, job, size, weight):
    if VF[VWV] > 0.0:  # _update
        VF[VG] += (t - VF[VT]) / VF[VWV]
    VF[VT] = t
    g_i = VF[VG] + size / weight
    vg[job] = g_i
    vw[job] = weight
    VI[OSIZE] = hpush(Ok, O, VI[OSIZE], tie_key(g_i), job)
    VF[VWV] += weight
    VI[VCOUNT] += 1


@njit(**_HOT)
def _vl_next_from_o(Ok, O, Ek, E, VI):
    if VI[OSIZE] == 0:
        return False
    if VI[ESIZE] == 0:
        return True
    return Ok[0] < Ek[0] or (Ok[0] == Ek[0] and O[0] <= E[0])


@njit(**_HOT)
def _vl_next_completion_time(Ok, O, Ek, E, vg, VF, VI):
    if VI[OSIZE] == 0 and VI[ESIZE] == 0:
        return INF
    g_next = vg[O[0]] if _vl_next_from_o(Ok, O, Ek, E, VI) else vg[E[0]]
    return VF[VT] + VF[VWV] * (g_next - VF[VG])


@njit(**_HOT)
def _vl_complete_next(Ok, O, Ek, E, vg, vw, VF, VI, t):
    """The announced virtual completion; the job if it became late, else NONE."""
    from_o = _vl_next_from_o(Ok, O, Ek, E, VI)
    if from_o:
        job = O[0]
        VI[OSIZE] = hpop(Ok, O, VI[OSIZE])
    else:
        job = E[0]
        VI[ESIZE] = hpop(Ek, E, VI[ESIZE])
    VF[VT] = t
    if vg[job] > VF[VG]:  # the lag reached g_i exactly
        VF[VG] = vg[job]
    VI[VCOUNT] -= 1
    if VI[VCOUNT] == 0:
        VF[VWV] = 0.0
        VF[VG] = 0.0
    else:
        VF[VWV] -= vw[job]
    return job if from_o else NONE


@njit(**_HOT)
def _fsp_reschedule(JI, PF, PI, gI, LI, O, VI, mode, n_late, first_late, late_pool):
    if n_late > 0:
        if mode == FSP_ONE:
            _serve(PF, PI, JI[first_late, POOL])
        elif mode == FSP_GPS:
            _serve(PF, PI, late_pool)
        else:
            _serve(PF, PI, _las_pool(gI, LI))
    else:
        _serve(PF, PI, JI[O[0], POOL] if VI[OSIZE] > 0 else NONE)


@njit(**_JIT)
def _fsp(submit, size, seen, weight, mode, cap):
    """FSP/FSPE (mode FSP_ONE), FSPE+PS and PSBS (FSP_GPS; weights on when
    mode + 8), FSPE+LAS (FSP_LAS)."""
    use_weights = mode >= 8
    mode = mode % 8
    n = submit.shape[0]
    JF, JI, PF, PI = _new_server(size, cap)
    O = np.empty(n, dtype=np.int64)
    E = np.empty(n, dtype=np.int64)
    Ok = np.empty(n)  # the heaps' keys: tie keys of g_i
    Ek = np.empty(n)
    vg = np.empty(n)
    vw = np.empty(n)
    VF = np.zeros(3)
    VI = np.zeros(3, dtype=np.int64)
    JL, gF, gI, LI, hk, hv = _las_new(n if mode == FSP_LAS else 0)
    late = np.zeros(n, dtype=np.bool_)
    n_late = ZERO
    late_order = np.empty(n, dtype=np.int64)  # FSPE: late jobs, first late first
    lo_head = ZERO
    lo_tail = ZERO
    late_pool = _new_pool(PF, PI) if mode == FSP_GPS else NONE
    job_w = np.empty(n)  # PSBS's weight[job]
    completion = np.empty(n)
    i = ZERO
    events = ZERO
    done = ZERO
    while True:
        if PI[ROW0, NPOOLS] + 8 > cap:
            return completion, events, POOLS_FULL
        t_arrival = submit[i] if i < n else INF
        t_virtual = _vl_next_completion_time(Ok, O, Ek, E, vg, VF, VI)
        if mode == FSP_LAS:
            b = _las_next_event_time(PF, PI, gF, gI, LI, hk, hv)
            t_policy = b if b < t_virtual else t_virtual
        else:
            t_policy = t_virtual
        t_done, job = _next_completion(JF, PF, PI, t_policy, t_arrival)
        events += 1
        if t_done <= t_policy and t_done <= t_arrival and job >= 0:
            PF[ROW0, NOW] = t_done
            _complete(JF, JI, PF, PI, job)
            completion[job] = t_done
            done += 1
            if late[job]:
                late[job] = False
                n_late -= 1
                if mode == FSP_ONE:
                    lo_head += 1  # popleft: only the first late job is ever served
                elif mode == FSP_LAS:
                    _las_remove(JL, gF, gI, LI, hk, hv, job)
            else:
                head = O[0]  # virtual.real_completion_of_head: O's head moves to E
                key = Ok[0]
                VI[OSIZE] = hpop(Ok, O, VI[OSIZE])
                VI[ESIZE] = hpush(Ek, E, VI[ESIZE], key, head)
        elif t_policy <= t_arrival and t_policy < INF:
            if t_policy > PF[ROW0, NOW]:
                PF[ROW0, NOW] = t_policy
            if mode != FSP_LAS or (_vl_next_completion_time(Ok, O, Ek, E, vg, VF, VI)
                                   <= _las_next_event_time(PF, PI, gF, gI, LI, hk, hv)):
                became = _vl_complete_next(Ok, O, Ek, E, vg, vw, VF, VI, PF[ROW0, NOW])
                if became >= 0:
                    late[became] = True
                    n_late += 1
                    if mode == FSP_ONE:
                        late_order[lo_tail] = became
                        lo_tail += 1
                    elif mode == FSP_GPS:
                        _place(JF, JI, PF, PI, became, late_pool, job_w[became])
                    else:
                        _las_add(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv, became)
            else:
                _las_on_event(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv)
        elif i < n:
            PF[ROW0, NOW] = t_arrival
            _join(JF, JI, PF, PI, i, _lone_pool(PF, PI), 1.0, 0.0)  # Server._admit
            w = weight[i] if use_weights else 1.0
            job_w[i] = w
            _vl_arrive(Ok, O, vg, vw, VF, VI, PF[ROW0, NOW], i, seen[i], w)
            i += 1
        else:
            break
        # every branch ends in FSPE._reschedule
        _fsp_reschedule(JI, PF, PI, gI, LI, O, VI, mode, n_late, late_order[lo_head] if lo_head < lo_tail else NONE,
                        late_pool)
    return completion, events, AMBIGUOUS if LI[AMBIG] != 0 else (OK if done == n else STALLED)


# ---- the Python side ------------------------------------------------------------------

#: Built-in policy name -> (kernel, mode). Matched by class identity (see kernel_for).
_KERNELS = {
    "FIFO": ("fifo", 0),
    "PS": ("ps", 0),
    "GPS": ("ps", 1),
    "LAS": ("las", 0),
    "SRPT": ("srpt", SRPT_PLAIN),
    "SRPTE": ("srpt", SRPT_PLAIN),
    "SRPTE+PS": ("srpt", SRPT_PS),
    "SRPTE+LAS": ("srpt", SRPT_LAS),
    "FSP": ("fsp", FSP_ONE),
    "FSPE": ("fsp", FSP_ONE),
    "FSPE+PS": ("fsp", FSP_GPS),
    "FSPE+LAS": ("fsp", FSP_LAS),
    "PSBS": ("fsp", FSP_GPS + 8),
}

_FUNCTIONS = {"fifo": _fifo, "ps": _ps, "las": _las, "srpt": _srpt, "fsp": _fsp}


def kernel_for(cls: type) -> tuple[str, int] | None:
    """(kernel, mode) if ``cls`` *is* a built-in queue policy class (identity,
    not subclassing: a user's subclass may change anything), else None."""
    from schedlab.policies.queue import QUEUE_POLICIES

    for name, builtin in QUEUE_POLICIES.items():
        if cls is builtin:
            return _KERNELS.get(name)
    return None


def _writable(a: np.ndarray) -> np.ndarray:
    # A writable C float64 array: the one type the kernels are compiled for (a
    # read-only array, as polars hands out, would compile a second version).
    return np.require(a, np.float64, ["C", "W"])


def simulate(cls: type, submit: np.ndarray, size: np.ndarray, estimate: np.ndarray, weight: np.ndarray,
             params=None) -> tuple[np.ndarray, int] | None:
    """(completion times, events) of built-in policy ``cls``, bit-identical to
    ``schedlab.sim.queue.simulate``; or None when the fast path declines (no
    kernel for ``cls``, policy parameters, inputs outside the kernels' remit,
    an AMBIGUOUS or STALLED run): then run the reference."""
    found = kernel_for(cls)
    if found is None or params:
        return None
    arrays = [np.asarray(a) for a in (submit, size, estimate, weight)]
    n = len(arrays[0])
    for a in arrays:
        if a.dtype != np.float64 or a.ndim != 1 or len(a) != n or not np.all(np.isfinite(a)):
            return None
    submit, size, estimate, weight = arrays
    if n == 0 or np.any(size <= 0) or np.any(estimate <= 0) or np.any(weight <= 0) or np.any(np.diff(submit) < 0):
        return None
    kernel, mode = found
    seen = size if cls.exact_size else estimate
    args = [_writable(a) for a in (submit, size, seen, weight)]
    completion, events, status = _FUNCTIONS[kernel](*args, mode, _pool_rows(n))
    if status == POOLS_FULL:  # rare (many preemptions): again with room for every pool a run can create
        completion, events, status = _FUNCTIONS[kernel](*args, mode, _pool_rows(n, enough=True))
    if status != OK:
        return None
    return completion, int(events)


def _pool_rows(n: int, enough: bool = False) -> int:
    """Rows of the pool table. A run creates a pool per arrival, at most one
    more per arrival (a preempted head isolated) and per LAS group (one per
    job at most), and SRPTE+LAS at most one per event (its head isolated;
    events <= 4 n + 1): 7 n + 2 pools in all. Most runs need ~2 n; a kernel that
    runs out returns POOLS_FULL and is run again with the bound."""
    return 8 * n + 16 if enough else 2 * n + 16


_WARM: set[str] = set()


def warm(cls: type) -> None:
    """Compile (or load from the cache) the kernel of built-in policy ``cls``
    now, so that a timed run excludes it."""
    found = kernel_for(cls)
    if found is not None and found[0] not in _WARM:
        one = np.ones(3)
        _FUNCTIONS[found[0]](np.array([0.0, 0.5, 0.5]), one, one * 0.5, one, found[1], _pool_rows(3))
        _WARM.add(found[0])


def compile_all() -> None:
    """Compile every kernel (or load it from the on-disk cache)."""
    one = np.ones(3)
    sub = np.array([0.0, 0.5, 0.5])
    for kernel in _FUNCTIONS.values():
        kernel(sub, one, one * 0.5, one, 0, _pool_rows(3))
