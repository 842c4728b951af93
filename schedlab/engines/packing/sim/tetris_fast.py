"""Tetris and Slots-Fair (``schedlab.engines.packing.policies.tetris``) as numba
helpers for the multi-resource packing kernel (``packing_multi_fast``): each
policy's ``arrive`` / ``depart`` / ``schedule`` over numpy arrays, with the
reference's float operations in the reference's order and its tie orders.
No Python object is touched in the loop; the module docstring of
``packing_multi_fast`` says why each structure gives the reference's answer.

Index spaces (computed once in Python, see ``packing_multi_fast``): groups
(multi-task jobs) are dense ids 0..G-1 in the order of their group ids, so
the fair-share order (share, group id) is (share, dense id); shapes (distinct
demand vectors) are dense ids 0..S-1; a *class* is one (group, shape) pair,
whose queued tasks are a range ``ctask[chead[c]:ctail[c]]`` of its tasks in
task order (the reference's per-shape deque: arrivals append in task order,
placements pop the head).

Scalars shared between calls live in the int64 array ``ts`` (slots below).
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.engines.packing.sim.engine import FIT_TOL
from schedlab.sim.common.jit import HOT, NONE, ZERO, njit, st_first_at_least, st_update

INF = math.inf
_FIT_TOL = FIT_TOL

#: ``ts`` slots: jobs in the fair order, first/last live shape (insertion
#: order), free alignment-pool slots, dirty servers, pool capacity.
NF, SHEAD, STAIL, NFREE, NDIRTY, POOL = 0, 1, 2, 3, 4, 5
TS_LEN = 6


# ---- the fair-share order: a SortedList of (key, group) as two sorted arrays -----------------


@njit(**HOT)
def fs_find(fk, fg, nf, key, g):
    """First position whose (key, group) is not below (key, g): tuple order,
    so -0.0 and 0.0 tie and the group decides."""
    lo = ZERO
    hi = nf
    while lo < hi:
        mid = (lo + hi) >> 1
        k = fk[mid]
        if k < key or (k == key and fg[mid] < g):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**HOT)
def fs_insert(fk, fg, nf, key, g):
    p = fs_find(fk, fg, nf, key, g)
    for q in range(nf, p, -1):
        fk[q] = fk[q - 1]
        fg[q] = fg[q - 1]
    fk[p] = key
    fg[p] = g
    return nf + 1


@njit(**HOT)
def fs_remove(fk, fg, nf, key, g):
    p = fs_find(fk, fg, nf, key, g)
    for q in range(p, nf - 1):
        fk[q] = fk[q + 1]
        fg[q] = fg[q + 1]
    return nf - 1


# ---- Tetris: per-shape alignment trees (the reference's SortedList of (-a, server)) -----------
# Pool slot p holds one live shape's alignments: aval[p*asize + s] (-inf where s
# does not fit) and a tree of argmax leaves atree[2*p*asize + node] (node 1 the
# root; ties to the left, i.e. the lowest server, as (-a, s) orders them).


@njit(**HOT)
def _align(dem, rep, pfree, w, s, d):
    """Shape ``dem[rep]``'s alignment with server s (``_refresh``'s test and
    sum, from 0, in resource order), or -inf if it does not fit."""
    for k in range(d):
        if dem[rep, k] > pfree[s, k] + _FIT_TOL:
            return -INF
    a = 0.0
    for k in range(d):
        a += dem[rep, k] * (pfree[s, k] * w[s, k])
    return a


@njit(**HOT)
def _at_set(aval, atree, p, asize, s, v):
    vb = p * asize
    tb = 2 * p * asize
    aval[vb + s] = v
    node = (asize + s) >> 1
    while node >= 1:
        left = atree[tb + 2 * node]
        right = atree[tb + 2 * node + 1]
        atree[tb + node] = left if aval[vb + left] >= aval[vb + right] else right
        node >>= 1


@njit(**HOT)
def _best(aval, atree, p, asize):
    """(alignment, server) of pool slot p's best server (-inf if none fits)."""
    b = atree[2 * p * asize + 1]
    return aval[p * asize + b], b


@njit(**HOT)
def _new_shape(sh, rep, dem, pfree, w, L, d, aval, atree, asize, fslots, sslot, snext, sprev, ssize, inv_mean, ts):
    """Tetris._new_shape: alignments with every server that fits (the
    numpy expression's sums, from 0 in resource order: checked by
    ``packing_multi_fast`` before a run), |demand|, appended to the shapes'
    insertion order (``epoch_epsilon`` sums over it)."""
    ts[NFREE] -= 1
    p = fslots[ts[NFREE]]
    sslot[sh] = p
    vb = p * asize
    tb = 2 * p * asize
    for s in range(asize):
        aval[vb + s] = _align(dem, rep, pfree, w, s, d) if s < L else -INF
        atree[tb + asize + s] = s
    for node in range(asize - 1, 0, -1):
        left = atree[tb + 2 * node]
        right = atree[tb + 2 * node + 1]
        atree[tb + node] = left if aval[vb + left] >= aval[vb + right] else right
    z = 0.0
    for k in range(d):
        z += dem[rep, k] * inv_mean[k]
    ssize[sh] = z
    tail = ts[STAIL]
    snext[sh] = NONE
    sprev[sh] = tail
    if tail >= 0:
        snext[tail] = sh
    else:
        ts[SHEAD] = sh
    ts[STAIL] = sh


@njit(**HOT)
def _del_shape(sh, fslots, sslot, snext, sprev, ts):
    fslots[ts[NFREE]] = sslot[sh]
    ts[NFREE] += 1
    sslot[sh] = NONE
    a = sprev[sh]
    b = snext[sh]
    if a >= 0:
        snext[a] = b
    else:
        ts[SHEAD] = b
    if b >= 0:
        sprev[b] = a
    else:
        ts[STAIL] = a


@njit(**HOT)
def _refresh(s, dem, pfree, w, d, aval, atree, asize, srep, sslot, snext, ts):
    """Tetris._refresh: server s's alignment with every live shape."""
    sh = ts[SHEAD]
    while sh >= 0:
        _at_set(aval, atree, sslot[sh], asize, s, _align(dem, srep[sh], pfree, w, s, d))
        sh = snext[sh]


@njit(**HOT)
def _share(jalloc, g, inv_total, d):
    """max_r alloc_r / total_r, the first maximum as Python's ``max``."""
    m = jalloc[g, 0] * inv_total[0]
    for k in range(1, d):
        x = jalloc[g, k] * inv_total[k]
        if x > m:
            m = x
    return m


@njit(**HOT)
def _set_share(g, listed, jalloc, jshare, jqueued, inv_total, d, fk, fg, ts):
    new = _share(jalloc, g, inv_total, d)
    if listed:
        ts[NF] = fs_remove(fk, fg, ts[NF], jshare[g], g)
    jshare[g] = new
    if jqueued[g] > 0:
        ts[NF] = fs_insert(fk, fg, ts[NF], new, g)


@njit(**HOT)
def _unlink_class(c, g, jchead, cnext, cprev):
    a = cprev[c]
    b = cnext[c]
    if a >= 0:
        cnext[a] = b
    else:
        jchead[g] = b
    if b >= 0:
        cprev[b] = a


@njit(**HOT)
def tetris_arrive(
    i,
    gidx,
    cls,
    shp,
    est,
    dem,
    pfree,
    w,
    L,
    d,
    chead,
    ctail,
    jchead,
    cnext,
    cprev,
    srep,
    scount,
    ssize,
    sslot,
    snext,
    sprev,
    aval,
    atree,
    asize,
    fslots,
    inv_mean,
    jwork,
    jqueued,
    jshare,
    fk,
    fg,
    ts,
):
    """Tetris.arrive(i) (the pool has a free slot if i's shape is new)."""
    g = gidx[i]
    c = cls[i]
    ctail[c] += 1
    if ctail[c] - chead[c] == 1:  # the class's deque is new: link it (the order is immaterial, see _pick)
        head = jchead[g]
        cprev[c] = NONE
        cnext[c] = head
        if head >= 0:
            cprev[head] = c
        jchead[g] = c
    sh = shp[i]
    if sslot[sh] < 0:
        _new_shape(
            sh, srep[sh], dem, pfree, w, L, d, aval, atree, asize, fslots, sslot, snext, sprev, ssize, inv_mean, ts
        )
    scount[sh] += 1
    jwork[g] += est[i] * ssize[sh]
    jqueued[g] += 1
    if jqueued[g] == 1:
        ts[NF] = fs_insert(fk, fg, ts[NF], jshare[g], g)


@njit(**HOT)
def tetris_depart(
    j, s, gidx, dem, efree, pfree, d, jrunning, jalloc, jshare, jqueued, inv_total, fk, fg, dirty, dlist, ts
):
    """Tetris.depart(j, s) (a job whose record the reference deletes keeps
    zeros here: the state a new record starts from)."""
    g = gidx[j]
    jrunning[g] -= 1
    if jrunning[g] == 0:
        for k in range(d):
            jalloc[g, k] = 0.0
    else:
        for k in range(d):
            jalloc[g, k] = jalloc[g, k] - dem[j, k]
    _set_share(g, jqueued[g] > 0, jalloc, jshare, jqueued, inv_total, d, fk, fg, ts)
    for k in range(d):
        pfree[s, k] = efree[s, k]
    if dirty[s] == 0:
        dirty[s] = 1
        dlist[ts[NDIRTY]] = s
        ts[NDIRTY] += 1


@njit(**HOT)
def _epsilon(epsilon, scount, sslot, snext, aval, atree, asize, jwork, fg, ts):
    """Tetris.epoch_epsilon: ā over the live shapes in insertion order, W̄
    over the jobs in the fair order."""
    nf = ts[NF]
    if epsilon == 0.0 or nf == 0:
        return 0.0
    num = 0.0
    cnt = ZERO
    sh = ts[SHEAD]
    while sh >= 0:
        v, _ = _best(aval, atree, sslot[sh], asize)
        if v != -INF:
            num -= scount[sh] * -v
            cnt += scount[sh]
        sh = snext[sh]
    tot = 0.0
    for q in range(nf):
        tot += jwork[fg[q]]
    wbar = tot / nf
    if cnt == 0 or not wbar > 0:
        return 0.0
    return epsilon * (num / cnt) / wbar


@njit(**HOT)
def tetris_schedule(
    fairness,
    epsilon,
    gidx,
    est,
    dem,
    pfree,
    w,
    d,
    chead,
    ctail,
    ctask,
    cshape,
    jchead,
    cnext,
    cprev,
    srep,
    scount,
    ssize,
    sslot,
    snext,
    sprev,
    aval,
    atree,
    asize,
    fslots,
    jwork,
    jqueued,
    jrunning,
    jalloc,
    jshare,
    inv_total,
    fk,
    fg,
    dirty,
    dlist,
    ts,
    out_j,
    out_s,
):
    """Tetris.schedule: refresh the dirty servers, then place the best
    (score, server, task) among the ⌈f·J⌉ first candidate jobs of the fair
    order until none is left; returns the number of placements."""
    for q in range(ts[NDIRTY]):
        s = dlist[q]
        dirty[s] = 0
        _refresh(s, dem, pfree, w, d, aval, atree, asize, srep, sslot, snext, ts)
    ts[NDIRTY] = 0
    m = ZERO
    if ts[NF] == 0:
        return m
    eps = _epsilon(epsilon, scount, sslot, snext, aval, atree, asize, jwork, fg, ts)
    while True:
        nf = ts[NF]
        kk = np.int64(np.ceil(fairness * nf - 1e-9))
        if kk < 1:
            kk = 1
        found = ZERO
        bsc = 0.0
        bs = NONE
        bt = NONE
        bc = NONE
        bg = NONE
        for q in range(nf):
            g = fg[q]
            pen = eps * jwork[g]
            csc = 0.0
            cs = NONE
            ct = NONE
            cc = NONE
            c = jchead[g]
            while c >= 0:
                v, b = _best(aval, atree, sslot[cshape[c]], asize)
                if v != -INF:
                    sc = -v + pen
                    t = ctask[chead[c]]
                    if cc < 0 or sc < csc or (sc == csc and (b < cs or (b == cs and t < ct))):
                        csc = sc
                        cs = b
                        ct = t
                        cc = c
                c = cnext[c]
            if cc < 0:
                continue  # nothing of this job fits anywhere: not a candidate
            if bc < 0 or csc < bsc or (csc == bsc and (cs < bs or (cs == bs and ct < bt))):
                bsc = csc
                bs = cs
                bt = ct
                bc = cc
                bg = g
            found += 1
            if found == kk:
                break
        if bc < 0:
            break
        s, task, c, g = bs, bt, bc, bg
        chead[c] += 1
        if chead[c] == ctail[c]:
            _unlink_class(c, g, jchead, cnext, cprev)
        sh = cshape[c]
        scount[sh] -= 1
        if scount[sh] == 0:
            _del_shape(sh, fslots, sslot, snext, sprev, ts)
        jqueued[g] -= 1
        jwork[g] = jwork[g] - est[task] * ssize[sh] if jqueued[g] > 0 else 0.0
        jrunning[g] += 1
        for k in range(d):
            jalloc[g, k] = jalloc[g, k] + dem[task, k]
        _set_share(g, True, jalloc, jshare, jqueued, inv_total, d, fk, fg, ts)
        for k in range(d):
            pfree[s, k] -= dem[task, k]
        _refresh(s, dem, pfree, w, d, aval, atree, asize, srep, sslot, snext, ts)
        out_j[m] = task
        out_s[m] = s
        m += 1
    return m


# ---- Slots-Fair ---------------------------------------------------------------------------------
# A job's queue is the range gtask[ghead[g]:gtail[g]] of its tasks in task
# order; held[g] its slots; the slot tree is MaxSegmentTree's (jit.st_*).


@njit(**HOT)
def slots_arrive(i, gidx, ghead, gtail, held, fk, fg, ts):
    g = gidx[i]
    gtail[g] += 1
    if gtail[g] - ghead[g] == 1:
        ts[NF] = fs_insert(fk, fg, ts[NF], np.float64(held[g]), g)


@njit(**HOT)
def slots_depart(j, s, gidx, ghead, gtail, held, taken, t, tsize, efree, pfree, d, fk, fg, ts):
    k = taken[j]
    st_update(t, tsize, s, t[tsize + s] + k)
    for r in range(d):
        pfree[s, r] = efree[s, r]
    g = gidx[j]
    queued = gtail[g] > ghead[g]
    if queued:
        ts[NF] = fs_remove(fk, fg, ts[NF], np.float64(held[g]), g)
    held[g] -= k
    if queued:
        ts[NF] = fs_insert(fk, fg, ts[NF], np.float64(held[g]), g)


@njit(**HOT)
def _server_for(task, k, t, tsize, L, dem, pfree, d):
    """SlotsFair._server_for: the lowest server with k free slots and room."""
    r = np.float64(k)
    s = st_first_at_least(t, tsize, L, r, ZERO)
    while s >= 0:
        fits = True
        for q in range(d):
            if dem[task, q] > pfree[s, q] + _FIT_TOL:
                fits = False
                break
        if fits:
            return s
        s = st_first_at_least(t, tsize, L, r, s + 1)
    return NONE


@njit(**HOT)
def slots_schedule(
    gidx, ghead, gtail, gtask, held, taken, kslots, t, tsize, L, dem, pfree, d, fk, fg, blocked, blist, ts, out_j, out_s
):
    """SlotsFair.schedule: one task at a time to the unblocked job holding
    the fewest slots (fair order), on the lowest server that takes it."""
    m = ZERO
    nb = ZERO
    while ts[NF] > 0 and t[1] >= 1.0:
        hit = NONE
        task = NONE
        k = ZERO
        s = NONE
        for q in range(ts[NF]):
            g = fg[q]
            if blocked[g]:
                continue
            task = gtask[ghead[g]]
            k = kslots[task]
            s = _server_for(task, k, t, tsize, L, dem, pfree, d)
            if s < 0:
                blocked[g] = 1
                blist[nb] = g
                nb += 1
                continue
            hit = q
            break
        if hit < 0:
            break
        g = fg[hit]
        ghead[g] += 1
        ts[NF] = fs_remove(fk, fg, ts[NF], np.float64(held[g]), g)
        held[g] += k
        if gtail[g] > ghead[g]:
            ts[NF] = fs_insert(fk, fg, ts[NF], np.float64(held[g]), g)
        st_update(t, tsize, s, t[tsize + s] - k)
        for r in range(d):
            pfree[s, r] -= dem[task, r]
        taken[task] = k
        out_j[m] = task
        out_s[m] = s
        m += 1
    for q in range(nb):
        blocked[blist[q]] = 0
    return m
