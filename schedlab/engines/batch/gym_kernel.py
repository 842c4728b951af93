"""``schedlab/Batch-v0``'s hot path, compiled: the batch engine's event loop
and the priority pass with the head chosen by the agent, over numpy arrays,
for one episode or many at once (the vector environment steps them all in
one call).

Why it exists
-------------
Driving ``BatchRun`` and the priority pass in Python (``Batch-v0``'s
``loop="reference"``, kept as this kernel's check) costs tens of
microseconds a decision; RLScheduler's environment schedules about 7,500
jobs/s with its backfilling (issue 38). Here a step is one call into numba
that applies the action, runs the engine to the next decision that can change
the schedule and writes the observation.

The same schedule as the engine
-------------------------------
Each operation is ``schedlab.engines.batch.sim.fast._priority``'s (itself the
reference engine's, operation for operation), with the head given instead of
computed: completions by (end, job) from a binary heap, arrivals in
``order`` (the stable argsort of submit), then one pass; a head that fits
starts (``start = t``, ``end = t + run``) and the pass goes on; one that does
not ends the pass, after EASY's reservation and backfill scan with
``backfill``. So a scripted agent gives its policy's schedule bit for bit
(tests/test_gym_batch.py).

Decisions that cannot change the outcome are not asked
------------------------------------------------------
A pass asks the agent only while some waiting job fits the free units (as
before), and now also not when (a) one job waits (the only choice), (b)
every waiting job fits at once (whatever the order, all of them start now):
the kernel starts the oldest, which any agent's pick would also have
started at this instant; or (c) with EASY, exactly one waiting job fits and
it ends (by its requested time) no later than the shadow time of the
smallest job that does not fit: chosen, it starts; behind any other head it
backfills (a wider head's shadow time is no earlier), and the pass then
ends either way with the same jobs running.

RLScheduler's setting
---------------------
``setting="rlscheduler"`` (``S[e, SETTING]``) runs :func:`_rl_run` instead of
:func:`_run` on the same state: ``RLSchedulerLoop``'s pass per event with the
agent's pick committed, its backfilling (the shadow time kept, strict ``<``),
its release order and decision points, and ``gym_rlscheduler.fill``'s slots
(the section above :func:`_rl_ending_key_lt` says how its sorted-in-place lists are
kept). Its reference loop is its check, bit for bit.

State layout (``E`` episodes of ``n`` jobs; row ``e`` is one episode)
---------------------------------------------------------------------
``F[e, c, :]`` float64 columns (:data:`SUBMIT` ... :data:`REQ_END`),
``N[e, c, :]`` int64 columns (:data:`NEED` ... :data:`PRV`), ``S[e, :]``
int64 scalars (:data:`HS` ... :data:`TERM`), ``T[e, :]`` float64 scalars
(:data:`NOW` ... :data:`SCALE`). The environment's settings (backfilling, the
reward terms, tau, the observation's scale; the machine's size is ``CAP``)
are written there by :func:`load`, not passed at each step: numba checks
every argument of every call from Python, about 0.1 us each, so a handful
of arrays keeps a step's call cheap (:func:`step_one` takes eight).
"""

from __future__ import annotations

import numpy as np

from schedlab.engines.batch.features import JOB_FEATURES, WAIT_SCALE
from schedlab.engines.batch.sim.fast import sorted_add, sorted_remove
from schedlab.sim.common.jit import HOT, JIT, NONE, ZERO, hpop, hpush, njit

#: Float columns of ``F``.
SUBMIT, RUNTIME, REQUESTED, START, END, HK, RK, REQ_END = range(8)
#: Int columns of ``N``. The last ten serve RLScheduler's setting only (:func:`_rl_run`): each job's
#: start number, its dense ranks by (requested, submit) and by (need, submit, requested), the
#: pending question's slots, counting-sort buckets, seen-stamps, the open instant's ending jobs,
#: the shortest-requested and fewest-processors lists of a fill, a submit group being re-sorted.
NEED, ORDER, HI, RI, NXT, PRV, SEQ, RRS, RNS, SLOT, CNT, MARK, ENDED, SHORT, FEW, GRP = range(16)
INT_COLUMNS = 16
#: Int scalars of ``S``: heap size, running-list size, queue ends, free units,
#: next arrival, jobs started, queue length and summed need, decision pending,
#: passes, capacity (the machine's units: the observation's ``nodes``); the
#: settings: EASY backfilling (1) or none (0), the reward terms (``TERM_*``).
HS, R, QHEAD, QTAIL, FREE, NEXT, STARTED, QLEN, QNEED, PENDING, PASSES, CAP, BACKFILL, TERM = range(14)
#: Int scalars of RLScheduler's setting: the setting (:data:`SETTING_SCHEDLAB` or
#: :data:`SETTING_RLSCHEDULER`), the window, the committed head (-1: none), whether its shadow
#: time is kept, the open instant's arrivals end (positions in ``order``), ending jobs and the next
#: of them to release, the starts counted at the last shadow time (its running list's sort), the
#: pending question's slots, the fills' seen-stamp.
SETTING, WINDOW, HEAD, HAS_SHADOW, ARR_END, NENDED, ENDCUR, LSORT, NSLOT, STAMP = range(14, 24)
INT_SCALARS = 24
#: Float scalars of ``T``: the current instant; the step's summed reward terms;
#: the settings: tau (bounded slowdown), the observation's requested-time scale;
#: RLScheduler's setting: the committed head's kept shadow time.
NOW, REW, TAU, SCALE, SHADOW = range(5)
FLOAT_SCALARS = 5
#: ``S[e, SETTING]``: schedlab's loop (:func:`_run`) or RLScheduler's (:func:`_rl_run`).
SETTING_SCHEDLAB, SETTING_RLSCHEDULER = 0, 1

#: Reward terms kernels add up per started job (``reward_mode="step"``).
TERM_NONE, TERM_BSLD, TERM_WAIT = 0, 1, 2


def allocate(envs: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Empty state arrays for ``envs`` episodes of ``n`` jobs."""
    return (
        np.zeros((envs, 8, n)),
        np.zeros((envs, INT_COLUMNS, n), dtype=np.int64),
        np.zeros((envs, INT_SCALARS), dtype=np.int64),
        np.zeros((envs, FLOAT_SCALARS)),
    )


@njit(**HOT)
def _unlink(Ie, S, e, job):
    p = Ie[PRV, job]
    after = Ie[NXT, job]
    if p >= 0:
        Ie[NXT, p] = after
    else:
        S[e, QHEAD] = after
    if after >= 0:
        Ie[PRV, after] = p
    else:
        S[e, QTAIL] = p


@njit(**HOT)
def _launch(Fe, Ie, S, T, e, job, backfill, term, tau):
    """Start ``job`` (queued, fitting) at the current instant."""
    now = T[e, NOW]
    nj = Ie[NEED, job]
    S[e, FREE] -= nj
    _unlink(Ie, S, e, job)
    S[e, QLEN] -= 1
    S[e, QNEED] -= nj
    if backfill:
        x = now + Fe[REQUESTED, job]
        Fe[REQ_END, job] = x
        S[e, R] = sorted_add(Fe[RK], Ie[RI], S[e, R], x, job)
    Fe[START, job] = now
    end = now + Fe[RUNTIME, job]
    Fe[END, job] = end
    S[e, HS] = hpush(Fe[HK], Ie[HI], S[e, HS], end, job)
    S[e, STARTED] += 1
    if term == TERM_BSLD:
        d = end - Fe[SUBMIT, job]
        p = Fe[RUNTIME, job]
        T[e, REW] += (d if d > tau else tau) / (p if p > tau else tau)
    elif term == TERM_WAIT:
        T[e, REW] += now - Fe[SUBMIT, job]


@njit(**HOT)
def _head(Fe, Ie, S, T, e, head, backfill, term, tau):
    """The pass's head is ``head``: start it if it fits (True: the pass goes
    on), else EASY's reservation and backfill scan with ``backfill`` (False:
    the pass ends) -- ``fast._priority``'s code."""
    nh = Ie[NEED, head]
    free = S[e, FREE]
    if nh <= free:
        _launch(Fe, Ie, S, T, e, head, backfill, term, tau)
        return True
    if backfill and free > 0:
        now = T[e, NOW]
        r = S[e, R]
        avail = free
        shadow = now
        k = ZERO
        while k < r:
            x = Fe[RK, k]
            avail += Ie[NEED, Ie[RI, k]]
            k += 1
            if avail >= nh:
                shadow = x if x > now else now
                break
        while k < r:
            x = Fe[RK, k]
            if x > shadow:
                break
            avail += Ie[NEED, Ie[RI, k]]
            k += 1
        extra = avail - nh
        job = S[e, QHEAD]
        while job >= 0:
            after = Ie[NXT, job]
            nj = Ie[NEED, job]
            if job != head and nj <= S[e, FREE]:
                go = True
                if now + Fe[REQUESTED, job] <= shadow:
                    pass
                elif nj <= extra:
                    extra -= nj
                else:
                    go = False
                if go:
                    _launch(Fe, Ie, S, T, e, job, backfill, term, tau)
                    if S[e, FREE] == 0:
                        break
            job = after
    return False


@njit(**HOT)
def _shadow(Fe, Ie, S, T, e, nh):
    """EASY's shadow time for a head of need ``nh`` (as :func:`_head` computes
    it): nondecreasing in ``nh``."""
    now = T[e, NOW]
    avail = S[e, FREE]
    k = ZERO
    while k < S[e, R]:
        avail += Ie[NEED, Ie[RI, k]]
        if avail >= nh:
            x = Fe[RK, k]
            return x if x > now else now
        k += 1
    return now


@njit(**HOT)
def _append(Ie, S, e, j):
    """Queue ``j`` at the tail."""
    Ie[NXT, j] = NONE
    tail = S[e, QTAIL]
    Ie[PRV, j] = tail
    if tail >= 0:
        Ie[NXT, tail] = j
    else:
        S[e, QHEAD] = j
    S[e, QTAIL] = j
    S[e, QLEN] += 1
    S[e, QNEED] += Ie[NEED, j]


@njit(**HOT)
def _advance(Fe, Ie, S, T, e, backfill):
    """Apply every event of the next instant (completions, then arrivals)."""
    n = Fe.shape[1]
    i = S[e, NEXT]
    hs = S[e, HS]
    t_arr = Fe[SUBMIT, Ie[ORDER, i]] if i < n else np.inf
    t = Fe[HK, 0] if hs > 0 and Fe[HK, 0] < t_arr else t_arr
    while S[e, HS] > 0 and Fe[HK, 0] <= t:
        j = Ie[HI, 0]
        S[e, HS] = hpop(Fe[HK], Ie[HI], S[e, HS])
        S[e, FREE] += Ie[NEED, j]
        if backfill:
            S[e, R] = sorted_remove(Fe[RK], Ie[RI], S[e, R], Fe[REQ_END, j], j)
    while i < n and Fe[SUBMIT, Ie[ORDER, i]] <= t:
        _append(Ie, S, e, Ie[ORDER, i])
        i += 1
    S[e, NEXT] = i
    S[e, PASSES] += 1
    T[e, NOW] = t


@njit(**HOT)
def _run(Fe, Ie, S, T, e, job, backfill, term, tau):
    """Apply the agent's head ``job`` (-1: none, at the start of an episode),
    then run until the next decision (``S[e, PENDING] = 1``) or until every job
    has started (0). Reward terms add up in ``T[e, REW]`` until the caller
    reads and clears them (the terms of the starts before the first decision
    go to the first step)."""
    n = Fe.shape[1]
    S[e, PENDING] = 0
    open_pass = False
    if job >= 0:
        open_pass = _head(Fe, Ie, S, T, e, job, backfill, term, tau)
    while True:
        while open_pass and S[e, QLEN] > 0:
            free = S[e, FREE]
            if S[e, QNEED] <= free:
                # every waiting job fits at once (the one waiting job fits): all start now whatever the order
                _launch(Fe, Ie, S, T, e, S[e, QHEAD], backfill, term, tau)
                continue
            if S[e, QLEN] == 1:
                break  # the one waiting job does not fit
            # waiting jobs that fit: how many (the scan stops at two: a question, unless one fits only
            # and it is EASY's, which needs the least need of the others); the first of them
            fits = ZERO
            only = NONE
            least = S[e, CAP] + 1
            q = S[e, QHEAD]
            while q >= 0:
                nq = Ie[NEED, q]
                if nq <= free:
                    fits += 1
                    if only < 0:
                        only = q
                    if fits == 2 or not backfill:
                        break
                elif nq < least:
                    least = nq
                q = Ie[NXT, q]
            if fits == 0:
                break  # nothing fits: no choice could change this pass
            if backfill and fits == 1 and T[e, NOW] + Fe[REQUESTED, only] <= _shadow(Fe, Ie, S, T, e, least):
                # the one job that fits starts now whatever the head: chosen, it starts; behind any
                # other head it backfills (it ends by the earliest shadow time any head can get)
                _launch(Fe, Ie, S, T, e, only, backfill, term, tau)
                continue
            S[e, PENDING] = 1
            return
        if S[e, STARTED] == n:
            return
        _advance(Fe, Ie, S, T, e, backfill)
        open_pass = True


# ---- RLScheduler's setting (``setting="rlscheduler"``) -----------------------------------------
# ``schedlab.engines.batch.policies.rlscheduler.RLSchedulerLoop`` with the agent as its chooser and
# ``schedlab.engines.batch.gym_rlscheduler.fill`` for the slots, operation for operation (the
# reference loop is its check, tests/test_gym_batch_rlscheduler_kernel.py). Its queue is a Python
# list sorted in place; only the order of jobs of one submit time is ever read from it (every
# read sorts it by submit first, stably), so the queue here is the linked list kept in that order:
# arrivals append (the latest submit), and a fill of an overflowing queue re-sorts each submit
# group by (need, requested), stably -- what its sorts by (requested, submit) then (need, submit)
# leave behind. Its running list (release order of jobs ending together) is start order re-sorted
# stably by requested end at each shadow time: the jobs started before the last one (``LSORT``)
# by (requested end, start), then the later ones by start (:func:`_rl_ending_key_lt`).


@njit(**HOT)
def _rl_ending_key_lt(Fe, Ie, lsort, a, b):
    """Whether ending job ``a`` comes before ``b`` in RLScheduler's running list."""
    sa = Ie[SEQ, a]
    sb = Ie[SEQ, b]
    if sa < lsort and sb < lsort:
        xa = Fe[REQ_END, a]
        xb = Fe[REQ_END, b]
        if xa != xb:
            return xa < xb
        return sa < sb
    if sa < lsort:
        return True
    if sb < lsort:
        return False
    return sa < sb


@njit(**HOT)
def _rl_advance(Fe, Ie, S, T, e, backfill):
    """Open the next instant: its completions (the heap's (end, job) order) become the ending
    jobs to release, re-ordered as RLScheduler's running list with backfilling; its arrivals are
    ``order[NEXT:ARR_END]``. Units are freed at each release, not here (its passes' ``free``)."""
    n = Fe.shape[1]
    i = S[e, NEXT]
    t_arr = Fe[SUBMIT, Ie[ORDER, i]] if i < n else np.inf
    t = Fe[HK, 0] if S[e, HS] > 0 and Fe[HK, 0] < t_arr else t_arr
    ended = Ie[ENDED]
    m = ZERO
    while S[e, HS] > 0 and Fe[HK, 0] <= t:
        ended[m] = Ie[HI, 0]
        m += 1
        S[e, HS] = hpop(Fe[HK], Ie[HI], S[e, HS])
    if backfill and m > 1:
        lsort = S[e, LSORT]
        for a in range(1, m):  # insertion sort: a handful of jobs
            j = ended[a]
            b = a
            while b > 0 and _rl_ending_key_lt(Fe, Ie, lsort, j, ended[b - 1]):
                ended[b] = ended[b - 1]
                b -= 1
            ended[b] = j
    a1 = i
    while a1 < n and Fe[SUBMIT, Ie[ORDER, a1]] <= t:
        a1 += 1
    S[e, ARR_END] = a1
    S[e, NENDED] = m
    S[e, ENDCUR] = 0
    S[e, PASSES] += 1
    T[e, NOW] = t


@njit(**HOT)
def _rl_shadow(Fe, Ie, S, T, e, nh):
    """RLScheduler's shadow time (``policies.rlscheduler.shadow_time``): the requested end at
    which the free units plus the running jobs' (by requested end) first cover ``nh``; the last
    requested end if they never do, ``now`` if nothing runs. Not clamped to ``now``."""
    avail = S[e, FREE]
    shadow = T[e, NOW]
    r = S[e, R]
    k = ZERO
    while k < r:
        avail += Ie[NEED, Ie[RI, k]]
        shadow = Fe[RK, k]
        if avail >= nh:
            break
        k += 1
    return shadow


@njit(**HOT)
def _rl_start(Fe, Ie, S, T, e, job, backfill, term, tau):
    Ie[SEQ, job] = S[e, STARTED]
    _launch(Fe, Ie, S, T, e, job, backfill, term, tau)


@njit(**HOT)
def _topk(Ie, S, e, key, out, k):
    """The first ``k`` queued jobs by (``key``, queue order) into ``out``: a counting sort over
    the dense ranks ``key`` (< n), stable in the queue's order, placing only positions < ``k``."""
    cnt = Ie[CNT]
    j = S[e, QHEAD]
    while j >= 0:
        cnt[key[j]] += 1
        j = Ie[NXT, j]
    acc = ZERO
    r = ZERO
    while acc < k:
        c = cnt[r]
        cnt[r] = acc
        acc += c
        r += 1
    j = S[e, QHEAD]
    while j >= 0:
        rr = key[j]
        if rr < r:
            p = cnt[rr]
            cnt[rr] = p + 1
            if p < k:
                out[p] = j
        j = Ie[NXT, j]
    for x in range(r):  # the offsets (empty ranks' too), then the counts past them
        cnt[x] = 0
    j = S[e, QHEAD]
    while j >= 0:
        cnt[key[j]] = 0
        j = Ie[NXT, j]


@njit(**HOT)
def _regroup(Fe, Ie, S, e):
    """Re-sort each submit group of the queue by (need, requested), stably (module section)."""
    grp = Ie[GRP]
    j = S[e, QHEAD]
    while j >= 0:
        s = Fe[SUBMIT, j]
        last = j
        m = ZERO
        while Ie[NXT, last] >= 0 and Fe[SUBMIT, Ie[NXT, last]] == s:
            last = Ie[NXT, last]
            m += 1
        if m == 0:
            j = Ie[NXT, j]
            continue
        before = Ie[PRV, j]
        after = Ie[NXT, last]
        m = ZERO
        q = j
        while True:
            x = q
            b = m
            while b > 0:
                y = grp[b - 1]
                if Ie[NEED, y] > Ie[NEED, x] or (Ie[NEED, y] == Ie[NEED, x] and Fe[REQUESTED, y] > Fe[REQUESTED, x]):
                    grp[b] = y
                    b -= 1
                else:
                    break
            grp[b] = x
            m += 1
            if q == last:
                break
            q = Ie[NXT, q]
        prev = before
        for b in range(m):
            x = grp[b]
            Ie[PRV, x] = prev
            if prev >= 0:
                Ie[NXT, prev] = x
            else:
                S[e, QHEAD] = x
            prev = x
        Ie[NXT, prev] = after
        if after >= 0:
            Ie[PRV, after] = prev
        else:
            S[e, QTAIL] = prev
        j = after


@njit(**HOT)
def _rl_fill(Fe, Ie, S, e):
    """The question's slots (``gym_rlscheduler.fill``): at most ``window`` waiting jobs, the
    queue (oldest first); more, the shortest-requested and fewest-processors lists interleaved,
    each job once, then the queue's submit groups re-sorted as its sorts leave them."""
    window = S[e, WINDOW]
    q = S[e, QLEN]
    slot = Ie[SLOT]
    if q <= window:
        k = ZERO
        j = S[e, QHEAD]
        while j >= 0:
            slot[k] = j
            k += 1
            j = Ie[NXT, j]
        S[e, NSLOT] = q
        return
    short = Ie[SHORT]
    few = Ie[FEW]
    _topk(Ie, S, e, Ie[RRS], short, window)
    _topk(Ie, S, e, Ie[RNS], few, window)
    stamp = S[e, STAMP] + 1
    S[e, STAMP] = stamp
    mark = Ie[MARK]
    c = ZERO
    i = ZERO
    while c < window:
        j = short[i]
        if mark[j] != stamp:
            mark[j] = stamp
            slot[c] = j
            c += 1
        if c < window:
            j = few[i]
            if mark[j] != stamp:
                mark[j] = stamp
                slot[c] = j
                c += 1
        i += 1
    S[e, NSLOT] = window
    _regroup(Fe, Ie, S, e)


@njit(**HOT)
def _rl_pass(Fe, Ie, S, T, e, backfill, term, tau):
    """RLScheduler's pass (``RLSchedulerLoop._pass``) from where it stands: the committed head
    starts while it fits; a blocked head gets its shadow time once and the queue a backfilling
    scan (submit order, fits the free units and ends strictly before the shadow time). With no
    head and a job waiting: the question (True, its slots filled)."""
    while S[e, QLEN] > 0:
        head = S[e, HEAD]
        if head < 0:
            _rl_fill(Fe, Ie, S, e)
            S[e, PENDING] = 1
            return True
        nh = Ie[NEED, head]
        if nh <= S[e, FREE]:
            _rl_start(Fe, Ie, S, T, e, head, backfill, term, tau)
            S[e, HEAD] = NONE
            S[e, HAS_SHADOW] = 0
            continue
        if backfill:
            if S[e, HAS_SHADOW] == 0:
                T[e, SHADOW] = _rl_shadow(Fe, Ie, S, T, e, nh)
                S[e, HAS_SHADOW] = 1
                S[e, LSORT] = S[e, STARTED]  # its running list is sorted by requested end here
            shadow = T[e, SHADOW]
            now = T[e, NOW]
            j = S[e, QHEAD]
            while j >= 0:
                after = Ie[NXT, j]
                if Ie[NEED, j] <= S[e, FREE] and now + Fe[REQUESTED, j] < shadow:
                    _rl_start(Fe, Ie, S, T, e, j, backfill, term, tau)
                j = after
        break
    return False


@njit(**HOT)
def _rl_run(Fe, Ie, S, T, e, job, backfill, term, tau):
    """RLScheduler's loop (``RLSchedulerLoop.decisions``, one pass per event: an instant's
    arrivals first, in ``order``, then its ending jobs, each released then passed): commit the
    agent's ``job`` as the head (-1: none, at the start of an episode), then run to the next
    question (``S[e, PENDING] = 1``) or until every job has started (0)."""
    n = Fe.shape[1]
    S[e, PENDING] = 0
    if job >= 0:
        S[e, HEAD] = job
        if _rl_pass(Fe, Ie, S, T, e, backfill, term, tau):
            return
    while True:
        i = S[e, NEXT]
        if i < S[e, ARR_END]:
            _append(Ie, S, e, Ie[ORDER, i])
            S[e, NEXT] = i + 1
        elif S[e, ENDCUR] < S[e, NENDED]:
            j = Ie[ENDED, S[e, ENDCUR]]
            S[e, ENDCUR] += 1
            S[e, FREE] += Ie[NEED, j]
            if backfill:
                S[e, R] = sorted_remove(Fe[RK], Ie[RI], S[e, R], Fe[REQ_END, j], j)
        else:
            if S[e, STARTED] == n:
                return
            _rl_advance(Fe, Ie, S, T, e, backfill)
            continue
        if _rl_pass(Fe, Ie, S, T, e, backfill, term, tau):
            return


@njit(**HOT)
def _go(Fe, Ie, S, T, e, job):
    """Apply ``job`` and run episode ``e`` to its next decision, in its setting's loop."""
    if S[e, SETTING] == SETTING_RLSCHEDULER:
        _rl_run(Fe, Ie, S, T, e, job, S[e, BACKFILL] != 0, S[e, TERM], T[e, TAU])
    else:
        _run(Fe, Ie, S, T, e, job, S[e, BACKFILL] != 0, S[e, TERM], T[e, TAU])


@njit(**HOT)
def _observe(Fe, Ie, S, T, e, o, mask, slots):
    """``schedlab.engines.batch.features.batch_observation`` of row ``e`` into
    ``o`` (every entry written), the same float64 operations rounded once to
    float32 (``nodes``: the machine's units, ``CAP``; the requested-time scale:
    ``SCALE``); ``mask`` and ``slots`` (each slot's job, -1 if empty). Returns
    the number of slots holding a job (the mask is always a prefix): 0 when no
    decision is pending. The slots: the queue's first ``window`` jobs (schedlab's setting), or
    the question's fill (RLScheduler's, :func:`_rl_fill`)."""
    window = mask.shape[0]
    o[:] = 0.0
    mask[:] = False
    slots[:] = -1
    if S[e, PENDING] == 0:
        # no decision: slot 0 is the one valid action, a no-op (an episode that
        # ended, or one that needed no decision at all and ends at its first step)
        mask[0] = True
        return ZERO
    nodes = S[e, CAP]
    scale = T[e, SCALE]
    now = T[e, NOW]
    free = S[e, FREE]
    rl = S[e, SETTING] == SETTING_RLSCHEDULER
    nslot = S[e, NSLOT]
    k = ZERO
    job = Ie[SLOT, 0] if rl else S[e, QHEAD]
    while job >= 0 and k < window:
        b = k * JOB_FEATURES
        o[b] = 1.0
        w = (now - Fe[SUBMIT, job]) / WAIT_SCALE
        o[b + 1] = w if w < 1.0 else 1.0
        r = Fe[REQUESTED, job] / scale
        o[b + 2] = r if r < 1.0 else 1.0
        o[b + 3] = Ie[NEED, job] / nodes
        o[b + 4] = 1.0 if Ie[NEED, job] <= free else 0.0
        mask[k] = True
        slots[k] = job
        k += 1
        if rl:
            job = Ie[SLOT, k] if k < nslot else NONE
        else:
            job = Ie[NXT, job]
    m = window * JOB_FEATURES
    o[m] = free / nodes
    x = (S[e, QLEN] - k) / window
    o[m + 1] = x if x < 1.0 else 1.0
    return k


@njit(**JIT)
def load(
    F,
    N,
    S,
    T,
    e,
    submit,
    runtime,
    requested,
    need,
    order,
    capacity,
    backfill,
    term,
    tau,
    scale,
    setting,
    window,
    rrs,
    rns,
):
    """Start episode ``e`` on these jobs, with these settings (backfilling, the
    reward terms, tau, the observation's requested-time scale, the loop's
    setting and, for RLScheduler's, the window and the jobs' dense ranks by
    (requested, submit) and by (need, submit, requested): empty arrays for
    schedlab's), and run it to its first decision."""
    n = submit.shape[0]
    Fe = F[e]
    Ie = N[e]
    for j in range(n):
        Fe[SUBMIT, j] = submit[j]
        Fe[RUNTIME, j] = runtime[j]
        Fe[REQUESTED, j] = requested[j]
        Fe[START, j] = np.nan
        Fe[END, j] = np.nan
        Ie[NEED, j] = need[j]
        Ie[ORDER, j] = order[j]
    S[e, :] = 0
    T[e, REW] = 0.0
    S[e, QHEAD] = NONE
    S[e, QTAIL] = NONE
    S[e, FREE] = capacity
    S[e, CAP] = capacity
    S[e, BACKFILL] = 1 if backfill else 0
    S[e, TERM] = term
    T[e, TAU] = tau
    T[e, SCALE] = scale
    S[e, SETTING] = setting
    S[e, WINDOW] = window
    S[e, HEAD] = NONE
    if setting == SETTING_RLSCHEDULER:
        for j in range(n):
            Ie[RRS, j] = rrs[j]
            Ie[RNS, j] = rns[j]
            Ie[CNT, j] = 0
            Ie[MARK, j] = 0
    _go(Fe, Ie, S, T, e, NONE)


@njit(**JIT)
def step_one(F, N, S, T, slot, obs, mask, slots):
    """The single environment's step (episode 0): the agent picks ``slot``, a
    slot of the mask (the caller checked it: a prefix of the slots, or slot 0
    when no decision is pending, a no-op); its job is found by walking the
    queue, or in the question's fill in RLScheduler's setting (the
    observation's slots, without trusting arrays handed to the user),
    applied, the episode run to its next decision and observed into ``obs``,
    ``mask``, ``slots`` (1-D, fresh from the caller: nothing returned to the
    user is written again). Returns the number of slots holding a job,
    0 when the episode has ended. The step's reward terms are in ``T[0, REW]``."""
    Fe = F[0]
    Ie = N[0]
    job = NONE
    if S[0, PENDING]:
        if S[0, SETTING] == SETTING_RLSCHEDULER:
            job = Ie[SLOT, slot]
        else:
            job = S[0, QHEAD]
            for _ in range(slot):
                job = Ie[NXT, job]
    _go(Fe, Ie, S, T, 0, job)
    return _observe(Fe, Ie, S, T, 0, obs, mask, slots)


@njit(**JIT)
def observe(F, N, S, T, e, obs, mask, slots):
    """Write episode ``e``'s observation into the 1-D ``obs``, ``mask``,
    ``slots`` (after :func:`load`, or again after a no-op); the number of
    slots holding a job (0: no decision pending)."""
    return _observe(F[e], N[e], S, T, e, obs, mask, slots)


#: ``invalid_action`` codes of :func:`vstep` (``schedlab.gym.common.INVALID_ACTIONS``).
NEAREST, PENALTY, RAISE = 0, 1, 2


@njit(**JIT)
def vstep(F, N, S, T, actions, skip, invalid, penalty, factor, obs, mask, slots, out):
    """The vector environment's step: for each episode not in ``skip`` (an
    autoreset pending), the action ``actions[e]`` read under ``invalid``
    (the mask is a prefix of the slots: the nearest filled slot of an empty
    one is the last filled), run to the next decision, observe; ``out[e]``:
    the step's summed reward terms times ``factor``, or minus the penalty
    (a no-op), or 0 (``skip``). Returns
    the first episode whose action must raise (``RAISE``, or outside the
    action space), else -1; nothing is stepped then."""
    window = mask.shape[1]
    envs = S.shape[0]
    for e in range(envs):
        a = actions[e]
        if not skip[e] and (a < 0 or a >= window or (invalid == RAISE and not mask[e, a])):
            return e
    for e in range(envs):
        out[e] = 0.0
        if skip[e]:
            continue
        a = actions[e]
        if not mask[e, a]:
            if invalid == PENALTY:
                out[e] = -penalty
                continue
            while a > 0 and not mask[e, a]:
                a -= 1
        _go(F[e], N[e], S, T, e, slots[e, a])
        _observe(F[e], N[e], S, T, e, obs[e], mask[e], slots[e])
        out[e] = T[e, REW] * factor
        T[e, REW] = 0.0
    return NONE
