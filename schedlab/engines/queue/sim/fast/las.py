"""``LeastAttained`` (``schedlab.engines.queue.policies.las``) for the kernels: LAS
over a dynamic set of jobs, used by the LAS kernel and by SRPTE+LAS and
FSPE+LAS for their late jobs.

Groups of jobs with equal attained service are pools of the server; the
paused groups sit in a binary heap by (tie key of level, creation order) and
in a hash table from tie key to group (the reference's ``paused_at`` dict).
A merge moves the smaller group's members into the larger one's pool; the
order of that move is the one thing the kernels cannot copy from the
reference (a Python set's iteration order), hence ``_ambiguous``.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.engines.queue.sim.fast.server import (
    FT,
    INF,
    NOW,
    PSIZE,
    PW,
    ROW0,
    SERVED,
    SZ,
    _attained,
    _clock,
    _new_pool,
    _place,
    tie_key,
)
from schedlab.sim.common.jit import ALLOC as _ALLOC
from schedlab.sim.common.jit import HOT as _HOT
from schedlab.sim.common.jit import NONE, ZERO, njit

# ---- LeastAttained (engines/queue/policies/las.py) --------------------------------------------
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
    LI = np.empty(6, dtype=np.int64)
    for k in range(6):
        LI[k] = 0
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
    different sizes? (Heap sort of that column by finish tag, then a scan;
    the sift-down is written once, inline, not as a helper: one function
    less to compile.)"""
    start = k // 2 - 1  # heapify: sift start, start - 1, ..., 0 down in JL[0:k]
    end = k
    while True:
        if start >= 0:
            i = start
            start -= 1
        else:  # sort: move the max to JL[end - 1], sift the new root down in JL[0:end - 1]
            end -= 1
            if end <= 0:
                break
            top = JL[0, SCR]
            JL[0, SCR] = JL[end, SCR]
            JL[end, SCR] = top
            i = ZERO
        while True:  # max-heap sift-down of i in JL[0:end, SCR] by finish tag
            c = 2 * i + 1
            if c >= end:
                break
            if c + 1 < end and JF[JL[c + 1, SCR], FT] > JF[JL[c, SCR], FT]:
                c += 1
            if JF[JL[c, SCR], FT] > JF[JL[i, SCR], FT]:
                t = JL[i, SCR]
                JL[i, SCR] = JL[c, SCR]
                JL[c, SCR] = t
                i = c
            else:
                break
    for q in range(1, k):
        a = JL[q - 1, SCR]
        b = JL[q, SCR]
        if JF[a, FT] == JF[b, FT] and JF[a, SZ] != JF[b, SZ]:
            return True
    return False


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
    current = gF[active, GLEVEL] + (_clock(PF, PI, gI[active, GPOOL]) - gF[active, GCLOCK])  # the level
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
    level = gF[active, GLEVEL] + (_clock(PF, PI, gI[active, GPOOL]) - gF[active, GCLOCK])
    gap = gF[gI[0, GHEAP], GELEVEL] - level
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
