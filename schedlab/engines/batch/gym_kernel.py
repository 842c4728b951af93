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
#: Int columns of ``N``.
NEED, ORDER, HI, RI, NXT, PRV = range(6)
#: Int scalars of ``S``: heap size, running-list size, queue ends, free units,
#: next arrival, jobs started, queue length and summed need, decision pending,
#: passes, capacity (the machine's units: the observation's ``nodes``); the
#: settings: EASY backfilling (1) or none (0), the reward terms (``TERM_*``).
HS, R, QHEAD, QTAIL, FREE, NEXT, STARTED, QLEN, QNEED, PENDING, PASSES, CAP, BACKFILL, TERM = range(14)
#: Float scalars of ``T``: the current instant; the step's summed reward terms;
#: the settings: tau (bounded slowdown), the observation's requested-time scale.
NOW, REW, TAU, SCALE = range(4)

#: Reward terms kernels add up per started job (``reward_mode="step"``).
TERM_NONE, TERM_BSLD, TERM_WAIT = 0, 1, 2


def allocate(envs: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Empty state arrays for ``envs`` episodes of ``n`` jobs."""
    return (
        np.zeros((envs, 8, n)),
        np.zeros((envs, 6, n), dtype=np.int64),
        np.zeros((envs, 14), dtype=np.int64),
        np.zeros((envs, 4)),
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
        j = Ie[ORDER, i]
        i += 1
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


@njit(**HOT)
def _observe(Fe, Ie, S, T, e, o, mask, slots):
    """``schedlab.engines.batch.features.batch_observation`` of row ``e`` into
    ``o`` (every entry written), the same float64 operations rounded once to
    float32 (``nodes``: the machine's units, ``CAP``; the requested-time scale:
    ``SCALE``); ``mask`` and ``slots`` (each slot's job, -1 if empty). Returns
    the number of slots holding a job (the mask is always a prefix): 0 when no
    decision is pending."""
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
    k = ZERO
    job = S[e, QHEAD]
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
        job = Ie[NXT, job]
    m = window * JOB_FEATURES
    o[m] = free / nodes
    x = (S[e, QLEN] - k) / window
    o[m + 1] = x if x < 1.0 else 1.0
    return k


@njit(**JIT)
def load(F, N, S, T, e, submit, runtime, requested, need, order, capacity, backfill, term, tau, scale):
    """Start episode ``e`` on these jobs, with these settings (backfilling, the
    reward terms, tau, the observation's requested-time scale), and run it to
    its first decision."""
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
    _run(Fe, Ie, S, T, e, NONE, backfill, term, tau)


@njit(**JIT)
def step_one(F, N, S, T, slot, obs, mask, slots):
    """The single environment's step (episode 0): the agent picks ``slot``, a
    slot of the mask (the caller checked it: a prefix of the queue, or slot 0
    when no decision is pending, a no-op); its job is found by walking the
    queue (the observation's slots, without trusting arrays handed to the
    user), applied, the episode run to its next decision and observed into
    ``obs``, ``mask``, ``slots`` (1-D, fresh from the caller: nothing returned
    to the user is written again). Returns the number of slots holding a job,
    0 when the episode has ended. The step's reward terms are in ``T[0, REW]``."""
    Fe = F[0]
    Ie = N[0]
    job = NONE
    if S[0, PENDING]:
        job = S[0, QHEAD]
        for _ in range(slot):
            job = Ie[NXT, job]
    _run(Fe, Ie, S, T, 0, job, S[0, BACKFILL] != 0, S[0, TERM], T[0, TAU])
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
        _run(F[e], N[e], S, T, e, slots[e, a], S[e, BACKFILL] != 0, S[e, TERM], T[e, TAU])
        _observe(F[e], N[e], S, T, e, obs[e], mask[e], slots[e])
        out[e] = T[e, REW] * factor
        T[e, REW] = 0.0
    return NONE
