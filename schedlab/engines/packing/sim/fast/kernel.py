"""The single-resource packing kernel: :func:`_run`, the whole event loop.

``simulate_packing``'s loop (arrival and departure epochs, the engine's fit
test, time integrals, ``sample_every`` series) with each policy's
``arrive`` / ``depart`` / ``schedule`` transcribed into it; the policies'
steps are in ``fit`` and ``vqs``, the structures in ``structures``. The
package's ``__init__`` prepares its arrays and calls it.
"""

from __future__ import annotations

import numpy as np

from schedlab.engines.packing.sim.fast.fit import _bf_j, _bf_js, _bf_s, _fifo_ff
from schedlab.engines.packing.sim.fast.structures import (
    _DONE,
    _FIT_TOL,
    _QUEUED,
    _RUNNING,
    BF_J,
    BF_JS,
    BF_S,
    FIFO_FF,
    INF,
    MISFIT,
    OK,
    VQS,
    VQS_BF,
    _bs_add,
    _bs_new,
    _sl_new,
    _sl_update,
)
from schedlab.engines.packing.sim.fast.vqs import (
    _vqs_depart,
    _vqs_schedule,
    _vqsbf_depart,
    _vqsbf_schedule,
)
from schedlab.sim.common.jit import JIT as _JIT
from schedlab.sim.common.jit import NONE, ZERO, hpop, hpush, njit
from schedlab.sim.common.jit import epoch_of as _epoch_of
from schedlab.sim.common.jit import grow_f as _grow_f
from schedlab.sim.common.jit import grow_i as _grow_i
from schedlab.sim.common.jit import st_new as _st_new
from schedlab.sim.common.jit import st_update as _st_update

# Departures: a binary heap of (epoch, job), schedlab.sim.common.jit's hpush/hpop.


@njit(**_JIT)
def _record(ns, s_t, s_q, s_r, s_run, at, queued, qres, running):
    """Append one sample (the state in force at ``at``), doubling the buffers when full."""
    if ns == s_t.shape[0]:
        s_t = _grow_f(s_t, 2 * ns)
        s_q = _grow_i(s_q, 2 * ns)
        s_r = _grow_f(s_r, 2 * ns)
        s_run = _grow_i(s_run, 2 * ns)
    s_t[ns] = at
    s_q[ns] = queued
    s_r[ns] = qres
    s_run[ns] = running
    return ns + 1, s_t, s_q, s_r, s_run


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
                    ns, s_t, s_q, s_r, s_run = _record(ns, s_t, s_q, s_r, s_run, next_sample, queued, qres, running)
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
            ns, s_t, s_q, s_r, s_run = _record(ns, s_t, s_q, s_r, s_run, next_sample, queued, qres, running)
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
