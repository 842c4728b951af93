"""The SRPT family's kernel (``schedlab.engines.queue.policies.srpt``): SRPT and
SRPTE, SRPTE+PS (late jobs share a pool with the head) and SRPTE+LAS (late
jobs under ``LeastAttained``, beside the head)."""

from __future__ import annotations

import numpy as np

from schedlab.engines.queue.sim.fast.las import (
    AMBIG,
    GRP,
    _las_add,
    _las_new,
    _las_next_event_time,
    _las_on_event,
    _las_pool,
    _las_remove,
)
from schedlab.engines.queue.sim.fast.server import (
    AMBIGUOUS,
    INF,
    NOW,
    NPOOLS,
    OK,
    POOL,
    POOLS_FULL,
    PSIZE,
    PW,
    ROW0,
    SERVED,
    STALLED,
    W,
    _attained,
    _complete,
    _join,
    _lone_pool,
    _new_pool,
    _new_server,
    _next_completion,
    _place,
    _serve,
    tie_key,
)
from schedlab.sim.common.jit import HOT as _HOT
from schedlab.sim.common.jit import JIT as _JIT
from schedlab.sim.common.jit import NONE, ZERO, hpop, hpush, njit

# SRPT family (engines/queue/policies/srpt.py). Modes:
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
    RF = np.empty(2)  # (np.empty and explicit zeros: np.zeros would be one more numpy function to compile)
    RI = np.empty(2, dtype=np.int64)
    RF[HKEY] = 0.0
    RF[HATT] = 0.0
    RI[WSIZE] = 0
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
