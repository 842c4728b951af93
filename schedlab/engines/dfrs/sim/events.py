"""The DFRS event loop (:class:`DfrsRun`, one instant per step;
:func:`simulate_dfrs` steps it to the end): arrivals, completions,
penalty expiries and periodic instants, the policy callbacks at each
instant, then the allocation; and the usage profile it records. The tie
rule and the ``star_pass`` option are in the package docstring
(``schedlab.engines.dfrs.sim``). This is the module that reads the true processing
times (``state.processing``): the check-mode guard
(``schedlab.engines.dfrs.checks``) allows reads from here only."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from schedlab.engines.dfrs.sim.allocation import allocate
from schedlab.engines.dfrs.sim.state import DEFAULT_PENALTY, WAITING, DfrsState, check_state
from schedlab.errors import PolicyError
from schedlab.sim.bound.underutilization import UsageProfile
from schedlab.sim.common.stepping import run_to_end

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


class DfrsRun:
    """One DFRS run, advanced one instant at a time by whoever holds it:
    :func:`simulate_dfrs` (:meth:`step_to_end`: the instants of ``while not
    run.done: run.step()`` in one loop), a test, a notebook (the shape of
    SimPy's ``Environment.peek()`` / ``step()``). Arguments are those of
    :func:`simulate_dfrs`.

    :meth:`step` processes the next instant: the jobs progress to it, its
    completions, arrivals and periodic call reach the policy, then the
    allocation; :meth:`peek` is that instant's time (``inf``: none is left).
    The step that finds no job left to arrive, run or place sets
    :attr:`done`; :meth:`result` is then the :class:`DfrsResult`. Between
    steps ``run.state`` (the :class:`DfrsState`) and ``run.policy`` may be read.
    """

    def __init__(
        self,
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
        minvt_units: str = "real",
        recorder=None,
    ) -> None:
        self.state = st = DfrsState(nodes, release, processing, tasks, cpu, mem, penalty)
        self.policy = policy
        st.victims = victims
        st.mcb8_rules = mcb8_rules
        st.relabel = relabel
        st.cpu_units = cpu_units
        st.penalties = penalties
        st.priority_units = priority_units
        st.victims_settle = victims_settle
        st.mcb8_remaps = mcb8_remaps
        st.minvt_units = minvt_units
        self._late_star = star_pass in ("instant-end", "vcsim") and _greedy_family(policy)
        st.star_pass = star_pass
        if hidden is not None:
            st.processing = hidden(st.processing)
        self.n = n = st.n
        self._rel = rel = np.asarray(st.release)
        # The engine's own view of the processing times: a plain array (in check
        # mode the state holds the guarded container, which the compiled
        # look-ahead could not take; reading it here, in the engine, is allowed).
        self._p = p = np.asarray(st.processing, dtype=float)
        self._order = np.argsort(rel, kind="stable").tolist()
        self._demand_j = np.asarray(st.cpu) * np.asarray(st.tasks, dtype=float)
        self._times: list[float] = []
        self._dem: list[float] = []
        self._alloc: list[float] = []
        self._demand = 0.0
        self._snaps: list = []
        self._check, self._snapshots, self._recorder = check, snapshots, recorder
        self.arrived = 0  # jobs released so far, in release order
        self.events = 0
        self.lp_failures = 0
        self.now = t = float(rel[self._order[0]]) if n else 0.0
        st.now = t
        self._period = period = getattr(policy, "period", None)
        self._own_allocate = own_allocate = getattr(policy, "allocate", None)  # optional hook (module docstring)
        self._realloc_each = stretch_realloc == "every-instant" and own_allocate is not None
        self._whole_seconds = time_units == "seconds"
        self._remap_arrivals = arrival_at_period == "remap" and bool(period)
        self._net_penalties = penalties == "instant-net"
        # Periodic instants: r_min + k x period, k >= 1 (default), or k x period from the table's time 0
        # (period_origin = "zero": the authors' simulator, whose grid starts at its trace file's t = 0; an
        # instant equal to the first release runs right after it).
        self._t0 = 0.0 if period_origin == "zero" else t
        self._k_per = max(0, math.ceil(t / period)) if period and period_origin == "zero" else 1
        self._t_per = self._t0 + self._k_per * period if period else math.inf
        # The livelock guard (STALL_FACTOR): only periodic calls can repeat forever.
        self._stall = (
            STALL_FACTOR * (float(rel.max() - rel.min() + p.sum()) + n * st.penalty + period)
            if period and n
            else math.inf
        )
        self._moved = -math.inf  # time of the last progress, arrival or completion
        self._idle_at = math.inf  # since when the cluster has been idle with jobs pending (a periodic policy's grace)
        self._vt_seen = -1.0
        self.done = False
        from schedlab.engines.dfrs.sim.fast import horizon_kernel  # numba: loaded when a DFRS run starts

        self._horizon_kernel = horizon_kernel

    def _horizon(self):
        """(running jobs or None, their rates, predicted completions, the next instant)."""
        st, i, t, inf = self.state, self.arrived, self.now, math.inf
        t_next = float(self._rel[self._order[i]]) if i < self.n else inf
        run = rate = t_c = None
        if st.running:
            run = np.fromiter(st.running, dtype=np.int64, count=len(st.running))
            # rate (y, or 0 in a penalty), predicted completions t + (p - vt) / rate (inf at rate 0), and the
            # earliest completion or penalty end: compiled (schedlab.engines.dfrs.sim.fast.horizon_kernel)
            rate, t_c, t_ahead = self._horizon_kernel(run, st.pen_until, st.y, self._p, st.vt, t)
            if self._whole_seconds:
                t_c, t_ahead = _whole_second_completions(t_c, st.pen_until[run], t)
            t_next = min(t_next, t_ahead)
        if self._period and (st.running or st.pending):
            t_next = min(t_next, self._t_per)
        return run, rate, t_c, t_next

    def peek(self) -> float:
        """The time of the next instant (``inf``: none is left, or the run is stuck: :meth:`step` says why)."""
        st = self.state
        if self.done or not (self.arrived < self.n or st.running or st.pending):
            return math.inf
        return float(self._horizon()[3])

    def step(self) -> None:
        """Process the next instant (or, with nothing left, end the run: ``done``)."""
        if self.done:
            raise RuntimeError("step() on a finished run")
        self._instants_until(self.events + 1)

    def step_to_end(self) -> None:
        """Process every instant left: what ``while not run.done: run.step()``
        does, in one loop (:func:`simulate_dfrs`'s)."""
        if self.done:
            raise RuntimeError("step() on a finished run")
        self._instants_until(-1)

    def _instants_until(self, stop: int) -> None:
        """The engine's one loop: process instants until the one numbered
        ``stop`` (``events``) has run or the run is done (``stop = -1``: to
        the end), the run's fixed references loaded once, not per instant."""
        st, n, policy, period, inf = self.state, self.n, self.policy, self._period, math.inf
        demand_j, p, late_star, rel, order = self._demand_j, self._p, self._late_star, self._rel, self._order
        while True:
            if not (self.arrived < n or st.running or st.pending):
                self._finish()
                return
            t = self.now
            run, rate, t_c, t_next = self._horizon()
            if t_next == inf:
                if not st.pending:  # placed jobs that never progress (a policy's own allocate gave them yield 0)
                    raise PolicyError(
                        f"t={t}: job {min(st.running)}: {len(st.running)} placed jobs make no progress "
                        "and nothing arrives (every running job has yield 0)"
                    )
                raise PolicyError(
                    f"t={t}: job {min(st.pending)}: {len(st.pending)} jobs pending but nothing runs and nothing "
                    "arrives (the policy left an idle cluster with jobs it never places)"
                )
            dt = t_next - t
            if dt > 0:
                self._times.append(t)
                self._dem.append(self._demand)
                self._alloc.append(float(np.dot(demand_j[run], rate)) if run is not None else 0.0)  # working CPU only
            if run is not None:
                if dt > 0:
                    st.vt[run] += rate * dt
                done = run[t_c <= t_next]
            else:
                done = np.zeros(0, dtype=np.int64)
            t = t_next
            self.now = st.now = t
            self.events += 1
            for j in sorted(done.tolist()):
                st.vt[j] = p[j]
                st._finish(j)
                self._demand -= demand_j[j]
            if len(done) and not late_star:
                policy.on_completion(st)
            acted = bool(len(done))
            # arrival_at_period = "remap": an arrival at a periodic instant is left to that instant's remap
            # (the authors' simulator does not run its submission policy then; docs/dfrs.md row 3)
            skip_arrival = self._remap_arrivals and _periodic_instant(t, self._t0, self._k_per, period)
            i = self.arrived
            while i < n and rel[order[i]] <= t:
                acted = True
                j = order[i]
                i += 1
                self.arrived = i
                st.status[j] = WAITING
                st.pending.add(j)
                self._demand += demand_j[j]
                if not skip_arrival:
                    policy.on_arrival(st, j)
            if acted:
                self._moved = t
            periodic = False  # this instant ran the policy's periodic call
            if self._t_per <= t:
                assert period  # t_per is finite only with a period
                while self._t_per < t:  # instants passed while idle are skipped
                    self._k_per += 1
                    self._t_per = self._t0 + self._k_per * period
                if self._t_per == t:
                    if st.running or st.pending:
                        vt_now = float(st.vt.sum())
                        if vt_now > self._vt_seen:
                            self._vt_seen, self._moved = vt_now, t
                        elif t - self._moved > self._stall:
                            raise DfrsLivelock(
                                f"the policy never finishes: t={t}: no job progressed, arrived or completed for "
                                f"{t - self._moved:g} s ({STALL_FACTOR:g}x the time the workload needs run one job "
                                f"after another): a livelock of jobs kept paused, waiting or in their migration penalty"
                            )
                        policy.on_period(st)
                        acted = periodic = True
                    self._k_per += 1
                    self._t_per = self._t0 + self._k_per * period
            if st.held or st.remap_due:  # victims_settle / mcb8_remaps = "instant-end": before the '*' pass
                policy.end_instant(st)
            if late_star and acted:
                policy.on_completion(st)
            st.star_skip.clear()
            if not st.running and not st.pending:
                self._demand = 0.0  # drop round-off
            if self._net_penalties:
                st.settle_instant()
            if st.dirty or (self._realloc_each and st.running):
                if self._own_allocate is not None:
                    self.lp_failures += int(self._own_allocate(st, self._t_per))
                else:
                    self.lp_failures += allocate(st, policy.opt)
                st.dirty = False
            if self._check:
                check_state(st)
            if st.pending and not st.running:
                if not period:
                    raise _stalled(t, st, t, "")
                if self._idle_at == inf:
                    self._idle_at = t
                if periodic:
                    raise _stalled(t, st, self._idle_at, " after its periodic call")
            else:
                self._idle_at = inf
            if self._recorder is not None:
                self._recorder(t, st)
            if self._snapshots:
                self._snaps.append((t, st.vt.copy(), list(st.status), st.pen_until.copy(), st.y.copy()))
            if self.events == stop:
                return

    def _finish(self) -> None:
        """Close the usage profile at the last instant."""
        times, t = self._times, self.now
        times.append(t)
        if len(times) == 1:
            times.append(t + 1.0)
            self._dem.append(0.0)
            self._alloc.append(0.0)
        self._profile = UsageProfile(np.asarray(times), np.maximum(np.asarray(self._dem), 0.0), np.asarray(self._alloc))
        self.done = True

    def result(self) -> DfrsResult:
        """The :class:`DfrsResult` of the finished run."""
        if not self.done:
            raise RuntimeError("result() before the run is done")
        return DfrsResult(self.state, self.events, self._profile, self.lp_failures, self._snaps)


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
    minvt_units: str = "real",
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
    victim rule, "prefix" or "put-back" (``schedlab.engines.dfrs.policies.greedy``),
    read by the policy from ``state.victims``; ``mcb8_rules`` and ``relabel``
    likewise (``state.mcb8_rules``, ``state.relabel``: the MCB8 remap,
    ``schedlab.engines.dfrs.policies.greedy.mcb8_remap``); ``cpu_units``
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
    MCB8/per remap once, in ``end_instant``, where they asked for a remap;
    ``minvt_units = "ms"`` (``state.minvt_units``): MINVT's pinning test in
    whole milliseconds (``DfrsState.below_minvt``).

    ``stretch_realloc = "every-instant"``: a policy with its own
    ``allocate`` hook (the /stretch-per family) re-allocates at every
    instant that has running jobs, not only when the mapping changed (the
    authors' simulator; docs/dfrs.md row 18). The loop is :class:`DfrsRun`
    stepped to its end."""
    return run_to_end(
        DfrsRun(
            release,
            processing,
            tasks,
            cpu,
            mem,
            nodes,
            policy,
            penalty=penalty,
            check=check,
            snapshots=snapshots,
            hidden=hidden,
            star_pass=star_pass,
            victims=victims,
            stretch_realloc=stretch_realloc,
            mcb8_rules=mcb8_rules,
            relabel=relabel,
            cpu_units=cpu_units,
            penalties=penalties,
            period_origin=period_origin,
            time_units=time_units,
            priority_units=priority_units,
            arrival_at_period=arrival_at_period,
            victims_settle=victims_settle,
            mcb8_remaps=mcb8_remaps,
            minvt_units=minvt_units,
            recorder=recorder,
        )
    )


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
    say so with ``greedy_star_pass = True`` (``schedlab.engines.dfrs.policies.greedy``),
    and so every subclass of them does."""
    return bool(getattr(policy, "greedy_star_pass", False))
