"""Deliberately naive, independent reference for the single-server queue policies.

Written from the PSBS paper (Dell'Amico, Carra, Michiardi, 2014: sections 3,
4.1 and 4.2, Algorithm 1), NOT from schedlab's engine or policies. Its only
use is to cross-check the production engine in
``tests/test_reference_agreement.py``.

Model: one server of rate 1, preemptive fluid sharing. At every event the
policy returns the full allocation {job: share}, with shares summing to 1
whenever a job is present. The loop then takes the time to the next event:
the next arrival, the first real completion at the current rates, or the
policy's next internal event (a virtual completion, a job turning late, or a
LAS group catching up with the next attained level). It advances every job's
remaining work, attained service and virtual remaining work, and repeats.
Each event costs O(n); the aim is clarity, not speed.

Order of simultaneous events: real completions first, then virtual
completions / lateness, then arrivals in input order.

Floating-point tolerances (all explicit):

* ``DONE_TOL``: a job is complete when remaining <= DONE_TOL * max(1, size).
  The same test is used for virtual remaining work (against the estimate), and
  for SRPTE's "late" test (estimated remaining <= DONE_TOL * max(1, estimate)).
* ``ATT_TOL``: LAS attained-service values that are within ATT_TOL
  (absolute) of each other count as equal.
* ``PRIO_TOL``: priority keys (SRPT estimated remaining, FSP virtual finishing
  key) within PRIO_TOL * max(1, |key|) count as equal, and the earlier
  arrival then wins. Without this, a float rounding step could turn an exact
  tie into a strict preemption. The cost is that inputs which genuinely
  differ by less than that (sizes 10.0 and 9.999999999999998, say) are also
  treated as tied. That is why the property test draws its inputs from grids.
"""

from __future__ import annotations

import numpy as np

DONE_TOL = 1e-9
ATT_TOL = 1e-9
PRIO_TOL = 1e-9

POLICIES = (
    "FIFO",
    "PS",
    "GPS",
    "LAS",
    "SRPT",
    "SRPTE",
    "SRPTE+PS",
    "SRPTE+LAS",
    "FSP",
    "FSPE",
    "FSPE+PS",
    "FSPE+LAS",
    "PSBS",
)
_SRPT_FAMILY = {"SRPT", "SRPTE", "SRPTE+PS", "SRPTE+LAS"}
_FSP_FAMILY = {"FSP", "FSPE", "FSPE+PS", "FSPE+LAS", "PSBS"}


def _argmin_then_earliest(jobs, key, rank):
    """The job with the least key. Keys within PRIO_TOL of the least one
    count as tied, and the tie goes to the earliest arrival."""
    m = min(key[j] for j in jobs)
    tied = [j for j in jobs if key[j] <= m + PRIO_TOL * max(1.0, abs(m))]
    return min(tied, key=lambda j: rank[j])


def _least_attained(jobs, att):
    """The jobs whose attained service is within ATT_TOL of the minimum."""
    m = min(att[j] for j in jobs)
    return [j for j in jobs if att[j] <= m + ATT_TOL]


def _catch_up_dt(group, others, att, share_each):
    """Time until the served least-attained ``group`` (each served at
    ``share_each``) reaches the attained service of the nearest job in
    ``others``, or inf if ``others`` is empty."""
    if not others or share_each <= 0:
        return float("inf")
    m = min(att[j] for j in group)
    nxt = min(att[j] for j in others)
    return (nxt - m) / share_each


def reference_completions(policy: str, submit, size, estimate, weight) -> np.ndarray:
    """Completion time of every job (input order) under ``policy``."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}")
    submit = [float(x) for x in submit]
    size = [float(x) for x in size]
    n = len(size)
    est = [float(x) for x in (size if policy in ("SRPT", "FSP") else estimate)]
    weight = [float(x) for x in weight]
    # The virtual system of FSP/FSPE and its variants is PS, so all weights
    # count as 1. PSBS uses GPS with the jobs' weights.
    vw = weight if policy == "PSBS" else [1.0] * n

    # Arrival rank: by submit time, then input order.
    order = sorted(range(n), key=lambda i: (submit[i], i))
    rank = [0] * n
    for r, i in enumerate(order):
        rank[i] = r

    rem = list(size)  # real remaining work
    att = [0.0] * n  # real attained service
    vrem = list(est)  # virtual remaining work (FSP family)
    completion = [float("nan")] * n

    active: list[int] = []  # arrived and not finished for real
    invirt: list[int] = []  # still in the virtual system (FSP family)
    late: dict[int, int] = {}  # job -> sequence number of becoming late
    late_seq = 0
    nxt_arr = 0  # index into ``order``
    done = 0
    t = 0.0 if n == 0 else min(0.0, submit[order[0]])

    for _guard in range(200 * n * n + 1000):
        # 1. real completions
        for j in list(active):
            if rem[j] <= DONE_TOL * max(1.0, size[j]):
                completion[j] = t
                active.remove(j)
                late.pop(j, None)
                done += 1
        if done == n:
            break

        # 2. virtual completions / lateness (ties: earlier arrival first)
        if policy in _FSP_FAMILY:
            vdone = sorted((j for j in invirt if vrem[j] <= DONE_TOL * max(1.0, est[j])), key=lambda j: rank[j])
            for j in vdone:
                invirt.remove(j)
                if j in active:
                    late[j] = late_seq
                    late_seq += 1
        elif policy in ("SRPTE+PS", "SRPTE+LAS"):
            newly = sorted(
                (j for j in active if j not in late and est[j] - att[j] <= DONE_TOL * max(1.0, est[j])),
                key=lambda j: rank[j],
            )
            for j in newly:
                late[j] = late_seq
                late_seq += 1

        # 3. arrivals, in input order
        while nxt_arr < n and submit[order[nxt_arr]] <= t:
            j = order[nxt_arr]
            nxt_arr += 1
            active.append(j)
            if policy in _FSP_FAMILY:
                invirt.append(j)

        # 4. the policy's allocation and its next internal event
        alloc: dict[int, float] = {}
        internal_dt = float("inf")
        if active:
            if policy == "FIFO":
                alloc = {min(active, key=lambda j: rank[j]): 1.0}
            elif policy == "PS":
                alloc = {j: 1.0 / len(active) for j in active}
            elif policy == "GPS":
                wsum = sum(weight[j] for j in active)
                alloc = {j: weight[j] / wsum for j in active}
            elif policy == "LAS":
                group = _least_attained(active, att)
                alloc = {j: 1.0 / len(group) for j in group}
                others = [j for j in active if j not in alloc]
                internal_dt = _catch_up_dt(group, others, att, 1.0 / len(group))
            elif policy in ("SRPT", "SRPTE"):
                # Estimated remaining = estimate - attained. A late job (<= 0)
                # stays the minimum, so it keeps the server.
                erem = {j: est[j] - att[j] for j in active}
                alloc = {_argmin_then_earliest(active, erem, rank): 1.0}
            elif policy in ("SRPTE+PS", "SRPTE+LAS"):
                non_late = [j for j in active if j not in late]
                erem = {j: est[j] - att[j] for j in non_late}
                head = _argmin_then_earliest(non_late, erem, rank) if non_late else None
                lates = list(late)
                if policy == "SRPTE+LAS" and lates:
                    lates = _least_attained(lates, att)
                chosen = lates + ([head] if head is not None else [])
                alloc = {j: 1.0 / len(chosen) for j in chosen}
                if head is not None:  # the head turns late
                    internal_dt = min(internal_dt, erem[head] / alloc[head])
                if policy == "SRPTE+LAS" and lates:
                    others = [j for j in late if j not in alloc]
                    internal_dt = min(internal_dt, _catch_up_dt(lates, others, att, 1.0 / len(chosen)))
            else:  # FSP family
                if late:
                    lates = list(late)
                    if policy in ("FSP", "FSPE"):
                        first = min(lates, key=lambda j: (late[j], rank[j]))
                        alloc = {first: 1.0}
                    elif policy == "FSPE+PS":
                        alloc = {j: 1.0 / len(lates) for j in lates}
                    elif policy == "FSPE+LAS":
                        group = _least_attained(lates, att)
                        alloc = {j: 1.0 / len(group) for j in group}
                        others = [j for j in lates if j not in alloc]
                        internal_dt = _catch_up_dt(group, others, att, 1.0 / len(group))
                    else:  # PSBS: late jobs share by weight
                        wsum = sum(weight[j] for j in lates)
                        alloc = {j: weight[j] / wsum for j in lates}
                else:
                    # Every non-late active job is still in the virtual
                    # system. The earliest to finish there has the least
                    # vrem / w, since all shares are proportional to w.
                    key = {j: vrem[j] / vw[j] for j in active}
                    alloc = {_argmin_then_earliest(active, key, rank): 1.0}
        if policy in _FSP_FAMILY and invirt:  # next virtual completion
            wv = sum(vw[j] for j in invirt)
            internal_dt = min(internal_dt, min(vrem[j] * wv / vw[j] for j in invirt))

        # 5. time to the next event
        arr_dt = submit[order[nxt_arr]] - t if nxt_arr < n else float("inf")
        comp_dt = min((rem[j] / s for j, s in alloc.items() if s > 0), default=float("inf"))
        dt = min(arr_dt, comp_dt, internal_dt)
        if dt == float("inf"):
            raise RuntimeError("reference simulation stalled")

        # 6. advance
        for j, s in alloc.items():
            rem[j] -= s * dt
            att[j] += s * dt
        if policy in _FSP_FAMILY and invirt:
            wv = sum(vw[j] for j in invirt)
            for j in invirt:
                vrem[j] -= dt * vw[j] / wv
        t = submit[order[nxt_arr]] if dt == arr_dt else t + dt
    else:
        raise RuntimeError("reference simulation did not terminate")

    return np.array(completion, dtype=float)
