"""The multi-resource packing kernel: :func:`_run`, the event loop for Tetris and Slots-Fair.

The reference engine's loop with each policy's steps (``schedlab.engines.packing.sim.tetris_fast``'s
helpers) called in it, over numpy arrays; its modes and statuses. The
package's ``__init__`` (the Python side) builds its tables and calls it; the
package docstring says why it gives the reference's numbers.
"""

from __future__ import annotations

import numpy as np

from schedlab.engines.packing.sim import tetris_fast as tf
from schedlab.engines.packing.sim.engine import FIT_TOL
from schedlab.sim.common.jit import ALLOC, JIT, NONE, ZERO, epoch_of, grow_f, grow_i, hpop, hpush, njit, st_new

INF = np.inf
_FIT_TOL = FIT_TOL
#: Kernel modes.
TETRIS, SLOTS = 0, 1
#: Kernel status: OK, or a placement the engine would reject.
OK, MISFIT = 0, 1
_QUEUED, _RUNNING, _DONE = 1, 2, 3


@njit(**ALLOC)
def _record(ns, s_t, s_q, s_r, s_run, at, queued, qres, running):
    """Append one sample (the state in force at ``at``), doubling the buffers when full."""
    d = qres.shape[0]
    if ns == s_t.shape[0]:
        s_t = grow_f(s_t, 2 * ns)
        s_q = grow_i(s_q, 2 * ns)
        s_r = grow_f(s_r, 2 * ns * d)
        s_run = grow_i(s_run, 2 * ns)
    s_t[ns] = at
    s_q[ns] = queued
    for k in range(d):
        s_r[ns * d + k] = qres[k]
    s_run[ns] = running
    return ns + 1, s_t, s_q, s_r, s_run


@njit(**JIT)
def _run(
    mode,
    arr_t,
    dur,
    dem,
    cap,
    est,
    epoch,
    until,
    has_until,
    sample_every,
    gidx,
    G,
    fairness,
    epsilon,
    w,
    inv_total,
    inv_mean,
    shp,
    cls,
    srep,
    cshape,
    ctask,
    clo,
    kslots,
    nslots,
    gtask,
    glo,
):
    """The event loop of ``simulate_packing`` with Tetris (``mode`` TETRIS)
    or Slots-Fair. ``epoch`` <= 0: at every event; ``sample_every`` <= 0: no
    series. Returns (start, server, floats [t0, t1, area_q, area_run],
    area_qres, area_used, ints [completed, started, epochs, status, extended
    to ``until``, last epoch a departure], series t, queue_jobs,
    queue_resource (flat, d per sample), running_jobs)."""
    n, d = dem.shape
    L = cap.shape[0]
    start = np.full(n, np.nan)
    server = np.full(n, NONE, dtype=np.int64)
    state = np.zeros(n, dtype=np.uint8)
    efree = cap.copy()
    pfree = cap.copy()  # the policy's copy
    out_j = np.empty(n, dtype=np.int64)
    out_s = np.empty(n, dtype=np.int64)
    hk = np.empty(n)
    hj = np.empty(n, dtype=np.int64)
    hs = ZERO
    ts = np.zeros(tf.TS_LEN, dtype=np.int64)
    ts[tf.SHEAD] = NONE
    ts[tf.STAIL] = NONE
    fk = np.empty(G)
    fg = np.empty(G, dtype=np.int64)
    tet = mode == TETRIS
    # Tetris
    S = srep.shape[0]
    C = cshape.shape[0]
    chead = clo.copy()
    ctail = clo.copy()
    cnext = np.empty(C, dtype=np.int64)
    cprev = np.empty(C, dtype=np.int64)
    jchead = np.full(G if tet else 0, NONE, dtype=np.int64)
    scount = np.zeros(S, dtype=np.int64)
    ssize = np.zeros(S)
    sslot = np.full(S, NONE, dtype=np.int64)
    snext = np.empty(S, dtype=np.int64)
    sprev = np.empty(S, dtype=np.int64)
    asize = 1
    while asize < L:
        asize *= 2
    pool = min(S, 16)
    aval = np.empty(pool * asize)
    atree = np.empty(pool * 2 * asize, dtype=np.int64)
    fslots = np.arange(pool - 1, -1, -1).astype(np.int64)  # free slots, a stack
    ts[tf.NFREE] = pool
    ts[tf.POOL] = pool
    jwork = np.zeros(G if tet else 0)
    jqueued = np.zeros(G if tet else 0, dtype=np.int64)
    jrunning = np.zeros(G if tet else 0, dtype=np.int64)
    jalloc = np.zeros((G if tet else 0, d))
    jshare = np.zeros(G if tet else 0)
    dirty = np.zeros(L if tet else 0, dtype=np.uint8)
    dlist = np.empty(L if tet else 0, dtype=np.int64)
    # Slots-Fair
    t, tsize = st_new(nslots)
    ghead = glo.copy()
    gtail = glo.copy()
    held = np.zeros(G if not tet else 0, dtype=np.int64)
    taken = np.zeros(n if not tet else 0, dtype=np.int64)
    blocked = np.zeros(G if not tet else 0, dtype=np.uint8)
    blist = np.empty(G if not tet else 0, dtype=np.int64)

    sampling = sample_every > 0.0
    ns = ZERO
    scap = 64 if sampling else 0
    s_t = np.empty(scap)
    s_q = np.empty(scap, dtype=np.int64)
    s_r = np.empty(scap * d)
    s_run = np.empty(scap, dtype=np.int64)
    next_sample = INF
    k_sample = ZERO

    i = ZERO
    queued = ZERO
    running = ZERO
    completed = ZERO
    started = ZERO
    qres = np.zeros(d)
    used = np.zeros(d)
    area_q = 0.0
    area_run = 0.0
    area_qres = np.zeros(d)
    area_used = np.zeros(d)
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
            for k in range(d):
                area_qres[k] += qres[k] * dt
                area_used[k] += used[k] * dt
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
            for k in range(d):
                efree[s, k] += dem[j, k]
            state[j] = _DONE
            running -= 1
            completed += 1
            for k in range(d):
                used[k] -= dem[j, k]
            if tet:
                tf.tetris_depart(
                    j,
                    s,
                    gidx,
                    dem,
                    efree,
                    pfree,
                    d,
                    jrunning,
                    jalloc,
                    jshare,
                    jqueued,
                    inv_total,
                    fk,
                    fg,
                    dirty,
                    dlist,
                    ts,
                )
            else:
                tf.slots_depart(j, s, gidx, ghead, gtail, held, taken, t, tsize, efree, pfree, d, fk, fg, ts)
        if running == 0:
            used[:] = 0.0  # no drift when the cluster is empty

        # arrivals
        while i < n and arr_t[i] <= now:
            state[i] = _QUEUED
            queued += 1
            for k in range(d):
                qres[k] += dem[i, k]
            if tet:
                if sslot[shp[i]] < 0 and ts[tf.NFREE] == 0:  # a new shape and a full pool: double it
                    old = ts[tf.POOL]
                    new = min(2 * old, S)
                    aval = grow_f(aval, new * asize)
                    atree = grow_i(atree, new * 2 * asize)
                    fslots = grow_i(fslots, new)
                    for q in range(new - old):
                        fslots[q] = new - 1 - q
                    ts[tf.NFREE] = new - old
                    ts[tf.POOL] = new
                tf.tetris_arrive(
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
                )
            else:
                tf.slots_arrive(i, gidx, ghead, gtail, held, fk, fg, ts)
            i += 1

        # decisions
        if tet:
            m = tf.tetris_schedule(
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
            )
        else:
            m = tf.slots_schedule(
                gidx,
                ghead,
                gtail,
                gtask,
                held,
                taken,
                kslots,
                t,
                tsize,
                L,
                dem,
                pfree,
                d,
                fk,
                fg,
                blocked,
                blist,
                ts,
                out_j,
                out_s,
            )
        for p in range(m):
            j = out_j[p]
            s = out_s[p]
            fits = state[j] == _QUEUED and 0 <= s < L
            for k in range(d):
                if fits and dem[j, k] > efree[s, k] + _FIT_TOL:
                    fits = False
            if not fits:
                status = MISFIT  # the reference raises PlacementError / CapacityExceeded here
                break
            for k in range(d):
                efree[s, k] -= dem[j, k]
            state[j] = _RUNNING
            server[j] = s
            start[j] = now
            queued -= 1
            running += 1
            started += 1
            for k in range(d):
                qres[k] -= dem[j, k]
                used[k] += dem[j, k]
            end = now + dur[j]
            hs = hpush(hk, hj, hs, end if epoch <= 0.0 else epoch_of(end, epoch), j)
        if status != OK:
            break
        if queued == 0:
            qres[:] = 0.0
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
        for k in range(d):
            area_qres[k] += qres[k] * dt
            area_used[k] += used[k] * dt
        t1 = until
    if sampling and status == OK:
        while next_sample < t1 or next_sample == t1:
            ns, s_t, s_q, s_r, s_run = _record(ns, s_t, s_q, s_r, s_run, next_sample, queued, qres, running)
            k_sample += 1
            next_sample = t0 + k_sample * sample_every

    floats = np.empty(4)
    floats[0] = t0
    floats[1] = t1
    floats[2] = area_q
    floats[3] = area_run
    ints = np.empty(6, dtype=np.int64)
    ints[0] = completed
    ints[1] = started
    ints[2] = epochs
    ints[3] = status
    ints[4] = 1 if extended else 0
    ints[5] = 1 if at_departure else 0
    return start, server, floats, area_qres, area_used, ints, s_t[:ns], s_q[:ns], s_r[: ns * d], s_run[:ns]
