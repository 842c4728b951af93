"""The FSP family's kernel (``schedlab.engines.queue.policies.fsp``): FSP and FSPE,
FSPE+PS and PSBS (late jobs in one GPS pool), FSPE+LAS (late jobs under
``LeastAttained``), all over Algorithm 1's virtual lag."""

from __future__ import annotations

import numpy as np

from schedlab.engines.queue.sim.fast.las import (
    AMBIG,
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
    ROW0,
    STALLED,
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

# FSP family (engines/queue/policies/fsp.py). Late-job service modes:
FSP_ONE, FSP_GPS, FSP_LAS = 0, 1, 2
# The virtual lag: heaps O (array Oid) and E of job ids by (tie key of g_i, job); per job
# g_i and w_i; VF = [g, t, w_v], VI = [count, |O|, |E|].
VG, VT, VWV = 0, 1, 2
VCOUNT, OSIZE, ESIZE = 0, 1, 2


@njit(**_HOT)
def _vl_arrive(Ok, Oid, vg, vw, VF, VI, t, job, size, weight):
    if VF[VWV] > 0.0:  # _update
        VF[VG] += (t - VF[VT]) / VF[VWV]
    VF[VT] = t
    g_i = VF[VG] + size / weight
    vg[job] = g_i
    vw[job] = weight
    VI[OSIZE] = hpush(Ok, Oid, VI[OSIZE], tie_key(g_i), job)
    VF[VWV] += weight
    VI[VCOUNT] += 1


@njit(**_HOT)
def _vl_next_from_o(Ok, Oid, Ek, E, VI):
    if VI[OSIZE] == 0:
        return False
    if VI[ESIZE] == 0:
        return True
    return Ok[0] < Ek[0] or (Ok[0] == Ek[0] and Oid[0] <= E[0])


@njit(**_HOT)
def _vl_next_completion_time(Ok, Oid, Ek, E, vg, VF, VI):
    if VI[OSIZE] == 0 and VI[ESIZE] == 0:
        return INF
    g_next = vg[Oid[0]] if _vl_next_from_o(Ok, Oid, Ek, E, VI) else vg[E[0]]
    return VF[VT] + VF[VWV] * (g_next - VF[VG])


@njit(**_HOT)
def _vl_complete_next(Ok, Oid, Ek, E, vg, vw, VF, VI, t):
    """The announced virtual completion; the job if it became late, else NONE."""
    from_o = _vl_next_from_o(Ok, Oid, Ek, E, VI)
    if from_o:
        job = Oid[0]
        VI[OSIZE] = hpop(Ok, Oid, VI[OSIZE])
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
def _fsp_reschedule(JI, PF, PI, gI, LI, Oid, VI, mode, n_late, first_late, late_pool):
    if n_late > 0:
        if mode == FSP_ONE:
            _serve(PF, PI, JI[first_late, POOL])
        elif mode == FSP_GPS:
            _serve(PF, PI, late_pool)
        else:
            _serve(PF, PI, _las_pool(gI, LI))
    else:
        _serve(PF, PI, JI[Oid[0], POOL] if VI[OSIZE] > 0 else NONE)


@njit(**_JIT)
def _fsp(submit, size, seen, weight, mode, cap):
    """FSP/FSPE (mode FSP_ONE), FSPE+PS and PSBS (FSP_GPS; weights on when
    mode + 8), FSPE+LAS (FSP_LAS)."""
    use_weights = mode >= 8
    mode = mode % 8
    n = submit.shape[0]
    JF, JI, PF, PI = _new_server(size, cap)
    Oid = np.empty(n, dtype=np.int64)
    E = np.empty(n, dtype=np.int64)
    Ok = np.empty(n)  # the heaps' keys: tie keys of g_i
    Ek = np.empty(n)
    vg = np.empty(n)
    vw = np.empty(n)
    VF = np.empty(3)  # (np.empty and explicit zeros: np.zeros would be one more numpy function to compile)
    VI = np.empty(3, dtype=np.int64)
    for k in range(3):
        VF[k] = 0.0
        VI[k] = 0
    JL, gF, gI, LI, hk, hv = _las_new(n if mode == FSP_LAS else 0)
    late = np.empty(n, dtype=np.int64)  # 1: the job is late
    for j in range(n):
        late[j] = 0
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
        t_virtual = _vl_next_completion_time(Ok, Oid, Ek, E, vg, VF, VI)
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
            if late[job] != 0:
                late[job] = 0
                n_late -= 1
                if mode == FSP_ONE:
                    lo_head += 1  # popleft: only the first late job is ever served
                elif mode == FSP_LAS:
                    _las_remove(JL, gF, gI, LI, hk, hv, job)
            else:
                head = Oid[0]  # virtual.real_completion_of_head: O's head moves to E
                key = Ok[0]
                VI[OSIZE] = hpop(Ok, Oid, VI[OSIZE])
                VI[ESIZE] = hpush(Ek, E, VI[ESIZE], key, head)
        elif t_policy <= t_arrival and t_policy < INF:
            if t_policy > PF[ROW0, NOW]:
                PF[ROW0, NOW] = t_policy
            if mode != FSP_LAS or (
                _vl_next_completion_time(Ok, Oid, Ek, E, vg, VF, VI) <= _las_next_event_time(PF, PI, gF, gI, LI, hk, hv)
            ):
                became = _vl_complete_next(Ok, Oid, Ek, E, vg, vw, VF, VI, PF[ROW0, NOW])
                if became >= 0:
                    late[became] = 1
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
            _vl_arrive(Ok, Oid, vg, vw, VF, VI, PF[ROW0, NOW], i, seen[i], w)
            i += 1
        else:
            break
        # every branch ends in FSPE._reschedule
        _fsp_reschedule(
            JI, PF, PI, gI, LI, Oid, VI, mode, n_late, late_order[lo_head] if lo_head < lo_tail else NONE, late_pool
        )
    return completion, events, AMBIGUOUS if LI[AMBIG] != 0 else (OK if done == n else STALLED)
