"""The kernel of FIFO, PS, GPS and LAS: ``schedlab.engines.queue.sim.engine.simulate``'s
loop over the server (``server``) and, for LAS, ``LeastAttained`` (``las``).

Why one kernel for four policies: a kernel's compile includes a copy of
every helper it calls (numba links them into the kernel's module and
optimises and generates machine code for the whole); three small kernels
paid for the server's helpers three times, one pays once."""

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
)
from schedlab.sim.common.jit import JIT as _JIT
from schedlab.sim.common.jit import NONE, ZERO, njit

# ---- the kernel ----------------------------------------------------------------------
# It returns (completion times, events, status); the loop is
# schedlab.engines.queue.sim.engine.simulate's, line for line: completions, then the
# policy's internal events, then arrivals.

#: _basic's modes.
B_FIFO, B_PS, B_GPS, B_LAS = 0, 1, 2, 3


@njit(**_JIT)
def _basic(submit, size, seen, weight, mode, cap):
    """FIFO (mode B_FIFO), PS (B_PS: weights ignored), GPS (B_GPS), LAS (B_LAS)."""
    n = submit.shape[0]
    JF, JI, PF, PI = _new_server(size, cap)
    JL, gF, gI, LI, hk, hv = _las_new(n if mode == B_LAS else 0)
    completion = np.empty(n)
    queue = np.empty(n if mode == B_FIFO else 0, dtype=np.int64)  # the FIFO: queue[q_head:q_tail]
    q_head = ZERO
    q_tail = ZERO
    shared = NONE
    if mode == B_PS or mode == B_GPS:
        shared = _new_pool(PF, PI)
        _serve(PF, PI, shared)
    i = ZERO
    events = ZERO
    done = ZERO
    while True:
        if PI[ROW0, NPOOLS] + 8 > cap:
            return completion, events, POOLS_FULL
        t_arrival = submit[i] if i < n else INF
        t_policy = _las_next_event_time(PF, PI, gF, gI, LI, hk, hv) if mode == B_LAS else INF
        t_done, job = _next_completion(JF, PF, PI, t_policy, t_arrival)
        events += 1
        if t_done <= t_policy and t_done <= t_arrival and job >= 0:
            PF[ROW0, NOW] = t_done
            _complete(JF, JI, PF, PI, job)
            completion[job] = t_done
            done += 1
            if mode == B_FIFO:
                q_head += 1  # depart: popleft, serve the next
                _serve(PF, PI, JI[queue[q_head], POOL] if q_head < q_tail else NONE)
            elif mode == B_LAS:
                _las_remove(JL, gF, gI, LI, hk, hv, job)
                _serve(PF, PI, _las_pool(gI, LI))
        elif t_policy <= t_arrival and t_policy < INF:  # (LAS only: the others' t_policy is INF)
            if t_policy > PF[ROW0, NOW]:
                PF[ROW0, NOW] = t_policy
            _las_on_event(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv)
            _serve(PF, PI, _las_pool(gI, LI))
        elif i < n:
            PF[ROW0, NOW] = t_arrival
            _join(JF, JI, PF, PI, i, _lone_pool(PF, PI), 1.0, 0.0)  # Server._admit
            if mode == B_FIFO:
                queue[q_tail] = i  # arrive: append; serve it if alone
                q_tail += 1
                if q_tail - q_head == 1:
                    _serve(PF, PI, JI[i, POOL])
            elif mode == B_LAS:
                _las_add(JF, JI, PF, PI, JL, gF, gI, LI, hk, hv, i)
                _serve(PF, PI, _las_pool(gI, LI))
            else:
                _place(JF, JI, PF, PI, i, shared, weight[i] if mode == B_GPS else 1.0)
            i += 1
        else:
            break
    return completion, events, AMBIGUOUS if LI[AMBIG] != 0 else (OK if done == n else STALLED)
