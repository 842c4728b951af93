"""VQS and VQS-BF (``schedlab.engines.packing.policies.vqs``) as numba helpers.

Their own state (types, K_RED configurations, per-server counts, virtual
queues, server sets as bitset trees) and their wake / place / schedule /
depart steps, which the event loop (``kernel._run``) calls in modes VQS and
VQS_BF. Kept apart from the First-Fit / Best-Fit steps: they share only the
structures of ``structures``.
"""

from __future__ import annotations

import numpy as np

from schedlab.engines.packing.sim.fast.structures import (
    _FIT_TOL,
    INF,
    _bs_add,
    _bs_at_least,
    _bs_below,
    _bs_min,
    _bs_remove,
    _count_at_most,
    _gt_first_at_least,
    _gt_update,
    _largest_at_most,
)
from schedlab.sim.common.jit import HOT as _HOT
from schedlab.sim.common.jit import NONE, ZERO, njit
from schedlab.sim.common.jit import st_first_at_least as _st_first_at_least
from schedlab.sim.common.jit import st_update as _st_update

# ---- VQS and VQS-BF (engines/packing/policies/vqs.py) -----------------------------------------
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
