"""The DFRS event loop (:func:`simulate_dfrs`): arrivals, completions,
penalty expiries and periodic instants, the policy callbacks at each
instant, then the allocation; and the usage profile it records. The tie
rule and the ``star_pass`` option are in the package docstring
(``schedlab.sim.dfrs``). This is the module that reads the true processing
times (``state.processing``): the check-mode guard
(``schedlab.checks.dfrs``) allows reads from here only."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from schedlab.errors import PolicyError
from schedlab.sim.bound.underutilization import UsageProfile
from schedlab.sim.dfrs.allocation import allocate
from schedlab.sim.dfrs.state import DEFAULT_PENALTY, WAITING, DfrsState, check_state

#: Livelock: a periodic policy is declared stuck when, at a periodic call, no
#: job has progressed, arrived or completed for this many times the time the
#: whole workload needs run one job after another (span of submits + sum of
#: processing times + one penalty per job + one period). Jobs paused or
#: migrated over and over so that none leaves its penalty, or kept waiting for
#: good, never finish; a correct policy cannot come near this (``schedlab
#: check-policy``'s ``completes`` invariant, with this message).
STALL_FACTOR = 10.0

# An idle cluster with jobs pending is a stall from the instant it happens:
# every job fits the empty cluster, so a policy that leaves one pending with
# nothing running has a bug. The loop tests it at the end of each instant
# (O(1): the sizes of the running and pending sets). A policy without a
# period is stopped at that instant; a periodic one may leave its pending
# jobs to its next periodic call, so it is stopped at the end of that call if
# the cluster is still idle -- at most one period later.


class DfrsLivelock(PolicyError):
    """A periodic policy keeps every job from progressing (see STALL_FACTOR)."""


@dataclass
class DfrsResult:
    state: DfrsState
    events: int
    profile: UsageProfile
    lp_failures: int
    snapshots: list = field(default_factory=list)


def _periodic_instant(t: float, t0: float, k: int, period: float | None) -> bool:
    """Whether ``t`` is one of the periodic instants t0 + k' x period,
    k' >= k (the engine's grid; the loop below skips instants passed while
    idle in the same way)."""
    if not period:
        return False
    t_per = t0 + k * period
    while t_per < t:
        k += 1
        t_per = t0 + k * period
    return t_per == t


SECOND_EPS = 1e-6  # s: a predicted completion within this above a whole second is on it (float residue)


def _whole_second_completions(t_c: np.ndarray, pen_until: np.ndarray, t: float) -> tuple[np.ndarray, float]:
    """``time_units = "seconds"``: the authors' simulator keeps time in whole
    seconds and ends an allocation at the first whole second at which its
    work is done, the job holding its CPU and memory until then
    (docs/dfrs.md row 1). So each predicted completion is rounded up, and the
    next event is the earliest rounded completion or penalty end. With
    integer submissions, period and penalty every event time is then an
    integer, so no other event falls strictly inside a rounding and a job's
    virtual time overshoots its processing time only in its completing step
    (where the engine sets it to p)."""
    t_c = np.ceil(t_c - SECOND_EPS)
    pen = pen_until[pen_until > t]
    t_ahead = min(float(t_c.min()) if len(t_c) else math.inf, float(pen.min()) if len(pen) else math.inf)
    return t_c, t_ahead


def simulate_dfrs(
    release,
    processing,
    tasks,
    cpu,
    mem,
    nodes: int,
    policy,
    *,
    penalty: float = DEFAULT_PENALTY,
    check: bool = False,
    snapshots: bool = False,
    hidden=None,
    star_pass: str = "completion",
    victims: str = "prefix",
    stretch_realloc: str = "mapping-change",
    mcb8_rules: str = "schedlab",
    relabel: str = "memory",
    cpu_units: str = "real",
    penalties: str = "each-change",
    period_origin: str = "first-release",
    time_units: str = "real",
    priority_units: str = "real",
    arrival_at_period: str = "placed",
    victims_settle: str = "arrival",
    mcb8_remaps: str = "each-event",
    recorder=None,
) -> DfrsResult:
    """Replay jobs (arrays in job order) under ``policy`` (an instance with
    ``opt``, ``on_arrival(state, j)``, ``on_completion(state)``). Every job
    must fit on the empty cluster (checked by :func:`run_table`).

    ``snapshots=True`` records, after each instant, (t, vt copy, status
    copy, pen_until copy, y copy) for tests. ``hidden`` (check mode,
    ``schedlab.checks``): a function applied once to the processing-time
    array, returning what ``state.processing`` then holds and the engine
    reads -- a guard that refuses reads from outside this module (None, the
    normal path, adds nothing per event). ``victims``: GreedyP / GreedyPM's
    victim rule, "prefix" or "put-back" (``schedlab.policies.dfrs.greedy``),
    read by the policy from ``state.victims``; ``mcb8_rules`` and ``relabel``
    likewise (``state.mcb8_rules``, ``state.relabel``: the MCB8 remap,
    ``schedlab.policies.dfrs.greedy.mcb8_remap``); ``cpu_units``
    (``state.cpu_units``): "percent" floors the engine's OPT=MIN / OPT=AVG
    yields to whole percents of a node (``allocation.percent_yields``);
    ``penalties`` (``state.penalties``): "instant-net" charges penalties by
    each instant's net change (``DfrsState.settle_instant``);
    ``period_origin = "zero"`` puts the periodic instants at k x period
    from time 0 instead of from the first release; ``time_units =
    "seconds"`` rounds every completion up to a whole second
    (``_whole_second_completions``); ``priority_units = "ms"`` ranks jobs
    as that simulator does (``DfrsState._vcsim_value``);
    ``arrival_at_period = "remap"`` does not call ``on_arrival`` for a job
    released at a periodic instant: that instant's remap maps it;
    ``victims_settle = "instant-end"`` (``state.victims_settle``) holds
    GreedyP / GreedyPM's victims until the end of the instant, where the
    policy's ``end_instant`` settles them before the '*' pass;
    ``mcb8_remaps = "instant-end"`` (``state.mcb8_remaps``): MCB8* and
    MCB8/per remap once, in ``end_instant``, where they asked for a remap.

    ``stretch_realloc = "every-instant"``: a policy with its own
    ``allocate`` hook (the /stretch-per family) re-allocates at every
    instant that has running jobs, not only when the mapping changed (the
    authors' simulator; docs/dfrs.md row 18)."""
    st = DfrsState(nodes, release, processing, tasks, cpu, mem, penalty)
    st.victims = victims
    st.mcb8_rules = mcb8_rules
    st.relabel = relabel
    st.cpu_units = cpu_units
    st.penalties = penalties
    st.priority_units = priority_units
    st.victims_settle = victims_settle
    st.mcb8_remaps = mcb8_remaps
    late_star = star_pass in ("instant-end", "vcsim") and _greedy_family(policy)
    st.star_pass = star_pass
    if hidden is not None:
        st.processing = hidden(st.processing)
    n = st.n
    rel = np.asarray(st.release)
    # The engine's own view of the processing times: a plain array (in check
    # mode the state holds the guarded container, which the compiled
    # look-ahead could not take; reading it here, in the engine, is allowed).
    p = np.asarray(st.processing, dtype=float)
    order = np.argsort(rel, kind="stable").tolist()
    demand_j = np.asarray(st.cpu) * np.asarray(st.tasks, dtype=float)
    times: list[float] = []
    dem: list[float] = []
    alloc: list[float] = []
    demand = 0.0
    snaps: list = []
    i = 0
    events = 0
    lp_failures = 0
    t = float(rel[order[0]]) if n else 0.0
    st.now = t
    period = getattr(policy, "period", None)
    own_allocate = getattr(policy, "allocate", None)  # optional hook (see the module docstring)
    realloc_each = stretch_realloc == "every-instant" and own_allocate is not None
    whole_seconds = time_units == "seconds"
    remap_arrivals = arrival_at_period == "remap" and bool(period)
    net_penalties = penalties == "instant-net"
    # Periodic instants: r_min + k x period, k >= 1 (default), or k x period from the table's time 0
    # (period_origin = "zero": the authors' simulator, whose grid starts at its trace file's t = 0; an
    # instant equal to the first release runs right after it).
    t0 = 0.0 if period_origin == "zero" else t
    k_per = max(0, math.ceil(t / period)) if period and period_origin == "zero" else 1
    t_per = t0 + k_per * period if period else math.inf
    inf = math.inf
    # The livelock guard (STALL_FACTOR): only periodic calls can repeat forever.
    stall = STALL_FACTOR * (float(rel.max() - rel.min() + p.sum()) + n * st.penalty + period) if period and n else inf
    moved = -inf  # time of the last progress, arrival or completion
    idle_at = inf  # since when the cluster has been idle with jobs pending (a periodic policy's grace)
    vt_seen = -1.0
    from schedlab.sim.dfrs.fast import horizon_kernel  # numba: loaded when a DFRS run starts

    while i < n or st.running or st.pending:
        t_arr = float(rel[order[i]]) if i < n else inf
        t_next = t_arr
        run = np.fromiter(st.running, dtype=np.int64, count=len(st.running)) if st.running else None
        if run is not None:
            # rate (y, or 0 in a penalty), predicted completions t + (p - vt) / rate (inf at rate 0), and the
            # earliest completion or penalty end: compiled (schedlab.sim.dfrs.fast.horizon_kernel)
            rate, t_c, t_ahead = horizon_kernel(run, st.pen_until, st.y, p, st.vt, t)
            if whole_seconds:
                t_c, t_ahead = _whole_second_completions(t_c, st.pen_until[run], t)
            t_next = min(t_next, t_ahead)
        if period and (st.running or st.pending):
            t_next = min(t_next, t_per)
        if t_next == inf:
            if not st.pending:  # placed jobs that never progress (a policy's own allocate gave them yield 0)
                raise PolicyError(
                    f"t={t}: job {min(st.running)}: {len(st.running)} placed jobs make no progress "
                    "and nothing arrives (every running job has yield 0)"
                )
            raise PolicyError(
                f"t={t}: job {min(st.pending)}: {len(st.pending)} jobs pending but nothing runs and nothing arrives "
                "(the policy left an idle cluster with jobs it never places)"
            )
        dt = t_next - t
        if dt > 0:
            times.append(t)
            dem.append(demand)
            alloc.append(float(np.dot(demand_j[run], rate)) if run is not None else 0.0)  # working CPU only
        if run is not None:
            if dt > 0:
                st.vt[run] += rate * dt
            done = run[t_c <= t_next]
        else:
            done = np.zeros(0, dtype=np.int64)
        t = t_next
        st.now = t
        events += 1
        for j in sorted(done.tolist()):
            st.vt[j] = p[j]
            st._finish(j)
            demand -= demand_j[j]
        if len(done) and not late_star:
            policy.on_completion(st)
        acted = bool(len(done))
        # arrival_at_period = "remap": an arrival at a periodic instant is left to that instant's remap
        # (the authors' simulator does not run its submission policy then; docs/dfrs.md row 3)
        skip_arrival = remap_arrivals and _periodic_instant(t, t0, k_per, period)
        while i < n and rel[order[i]] <= t:
            acted = True
            j = order[i]
            i += 1
            st.status[j] = WAITING
            st.pending.add(j)
            demand += demand_j[j]
            if not skip_arrival:
                policy.on_arrival(st, j)
        if acted:
            moved = t
        periodic = False  # this instant ran the policy's periodic call
        if t_per <= t:
            assert period  # t_per is finite only with a period
            while t_per < t:  # instants passed while idle are skipped
                k_per += 1
                t_per = t0 + k_per * period
            if t_per == t:
                if st.running or st.pending:
                    vt_now = float(st.vt.sum())
                    if vt_now > vt_seen:
                        vt_seen, moved = vt_now, t
                    elif t - moved > stall:
                        raise DfrsLivelock(
                            f"the policy never finishes: t={t}: no job progressed, arrived or completed for "
                            f"{t - moved:g} s ({STALL_FACTOR:g}x the time the workload needs run one job after "
                            f"another): a livelock of jobs kept paused, waiting or in their migration penalty"
                        )
                    policy.on_period(st)
                    acted = periodic = True
                k_per += 1
                t_per = t0 + k_per * period
        if st.held or st.remap_due:  # victims_settle / mcb8_remaps = "instant-end": before the '*' pass
            policy.end_instant(st)
        if late_star and acted:
            policy.on_completion(st)
        st.star_skip.clear()
        if not st.running and not st.pending:
            demand = 0.0  # drop round-off
        if net_penalties:
            st.settle_instant()
        if st.dirty or (realloc_each and st.running):
            if own_allocate is not None:
                lp_failures += int(own_allocate(st, t_per))
            else:
                lp_failures += allocate(st, policy.opt)
            st.dirty = False
        if check:
            check_state(st)
        if st.pending and not st.running:
            if not period:
                raise _stalled(t, st, t, "")
            if idle_at == inf:
                idle_at = t
            if periodic:
                raise _stalled(t, st, idle_at, " after its periodic call")
        else:
            idle_at = inf
        if recorder is not None:
            recorder(t, st)
        if snapshots:
            snaps.append((t, st.vt.copy(), list(st.status), st.pen_until.copy(), st.y.copy()))
    times.append(t)
    if len(times) == 1:
        times.append(t + 1.0)
        dem.append(0.0)
        alloc.append(0.0)
    prof = UsageProfile(np.asarray(times), np.maximum(np.asarray(dem), 0.0), np.asarray(alloc))
    return DfrsResult(st, events, prof, lp_failures, snaps)


def _stalled(t: float, st: DfrsState, since: float, when: str) -> PolicyError:
    """The error of an idle cluster with jobs pending at the end of the
    instant ``t`` (finding the first pending job scans them once, on the way out)."""
    return PolicyError(
        f"t={t}: job {min(st.pending)}: {len(st.pending)} jobs pending but nothing runs since t={since}"
        f"{when} (the policy left an idle cluster with jobs it never places)"
    )


def _greedy_family(policy) -> bool:
    """Whether ``policy``'s on_completion is the Greedy '*' pass (the
    ``star_pass`` option moves only that one): the Greedy family's classes
    say so with ``greedy_star_pass = True`` (``schedlab.policies.dfrs.greedy``),
    and so every subclass of them does."""
    return bool(getattr(policy, "greedy_star_pass", False))
