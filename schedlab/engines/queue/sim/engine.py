"""The queue engine: one server of rate 1 shared preemptively, as a fluid.

This is the model of the PSBS paper (Dell'Amico, Carra, Michiardi 2014): a job
of size s alone on the server finishes in s; at any instant the shares of the
jobs in service sum to at most 1.

Who knows what
--------------
The engine owns time and the truth (real sizes, attained service, completions).
A policy (``schedlab.engines.queue.policies``) owns its decision state and sees only
what a real scheduler would: each job's *estimate* and weight when it arrives,
the service a job has attained so far, and the completion of a job when the
engine reports it. Exact-size policies (SRPT, FSP) are simply given
estimate = size.

How service is represented (why it is O(log n) per event)
---------------------------------------------------------
Every job sits in exactly one :class:`Pool`. A pool is a GPS group: while the
pool holds the server, each member i receives service at rate w_i / W (W the
sum of member weights). The pool keeps one *virtual clock* V, the service per
unit weight it has delivered; a member's attained service is
``a0 + w (V - V0)``, so nothing per member changes as time passes. Each member
has a fixed finish tag ``F = V0 + (size - a0) / w`` and the pool keeps its
members in a heap by F: the next completion is the heap top, found in O(1),
and every membership change costs O(log n). At most one pool holds the server
at a time -- every policy of the paper is a GPS over one set of jobs -- and a
policy switches the server between pools in O(1) (that is what makes LAS
cheap: pausing a whole group of equal-attained jobs touches no member).

Each pool's clock is stored as an anchor (V_ref at t_ref) and is re-anchored
only when its membership or its possession of the server changes, so a job
served alone from t0 finishes at exactly ``t0 + size`` (FIFO reproduces the
recursion C_i = max(a_i, C_{i-1}) + s_i to the last bit).

Ties and determinism
--------------------
Events at the same instant are applied in this order: real completions first,
then the policy's internal events (virtual completions, a job becoming late,
LAS groups meeting), then arrivals in job-table order. A completion is the job
the engine *predicted* to finish (the heap top): it is never decided by a
threshold on remaining work, so no tolerance is involved in deciding
completions; simultaneous completions follow one another at zero elapsed time.
All arithmetic is IEEE double; the same inputs give bit-identical outputs.

Floating point: time resolution is that of a double at the current clock
value, so a job whose size is below ~1e-16 of the clock (Weibull shape 0.125
draws sizes down to 1e-30) may finish in zero measured time. Slowdown is
therefore reported as ``max(1, sojourn / size)``: see ``schedlab.sim.common.metrics``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from schedlab.errors import PolicyError
from schedlab.sim.common.stepping import run_to_end

INF = float("inf")

#: A job whose remaining work is at most this fraction of its size when another
#: event happens is complete at that event (not ~1e-16 later): a leftover of
#: rounding must not reorder a schedule (e.g. leave a finished job waiting
#: behind a newcomer under LAS).
DONE_REL_TOL = 1e-9
#: Priority keys (SRPT remaining estimates, FSP virtual lags, LAS levels) are
#: compared after rounding to this many mantissa bits (~1e-12 relative), so
#: keys that are equal in exact arithmetic tie, and ties go by arrival order.
TIE_BITS = 40


def tie_key(x: float) -> float:
    """``x`` rounded to TIE_BITS significant bits: the form in which policies
    compare computed priority keys (see TIE_BITS)."""
    if x == 0.0 or x != x or x in (INF, -INF):
        return x
    m, e = math.frexp(x)
    return math.ldexp(round(m * (1 << TIE_BITS)), e - TIE_BITS)


class Pool:
    """A GPS group of jobs. Engine-owned; policies create, fill and serve pools
    only through :class:`Server` and never read or write these fields."""

    __slots__ = ("v_ref", "t_ref", "weight", "size", "heap")

    def __init__(self) -> None:
        self.v_ref = 0.0  # virtual clock (service per unit weight) at t_ref
        self.t_ref: float | None = None  # None while the pool does not hold the server
        self.weight = 0.0  # sum of member weights
        self.size = 0  # number of members
        self.heap: list[tuple[float, int, int]] = []  # (finish tag, entry seq, job), lazy deletion


class QueuePolicy(Protocol):
    """The seam between the engine and a policy (see ``schedlab.engines.queue.policies.base``)."""

    exact_size: bool

    def arrive(self, job: int, estimate: float, weight: float) -> None: ...
    def depart(self, job: int) -> None: ...
    def next_event_time(self) -> float: ...
    def on_event(self) -> None: ...


class Server:
    """The engine's handle given to a policy: the only way a policy acts.

    Jobs are named by their index in the job table (arrival order). A new job
    starts alone in a fresh pool that does not hold the server.
    """

    def __init__(self, sizes: Sequence[float], weights_hint: int) -> None:
        n = weights_hint
        self.now = 0.0
        self._size = sizes
        self._pool: list[Pool | None] = [None] * n
        self._w = [0.0] * n  # weight of the job inside its current pool
        self._a0 = [0.0] * n  # attained service when the job joined its pool
        self._v0 = [0.0] * n  # pool clock when the job joined it
        self._entry = [-1] * n  # seq of the job's live heap entry
        self._seq = 0
        self._served: Pool | None = None

    # ---- what a policy may ask -------------------------------------------------
    def new_pool(self) -> Pool:
        """An empty pool, not holding the server."""
        return Pool()

    def pool_of(self, job: int) -> Pool:
        return self._pool[job]  # type: ignore[return-value]

    def attained(self, job: int) -> float:
        """Service the job has received so far (a real scheduler knows this)."""
        pool = self._pool[job]
        assert pool is not None, "attained service of a job that is not in the system"
        return self._a0[job] + self._w[job] * (self._clock(pool) - self._v0[job])

    def pool_clock(self, pool: Pool) -> float:
        """Service per unit weight the pool has delivered (constant while paused)."""
        return self._clock(pool)

    def time_to_attain(self, job: int, amount: float) -> float:
        """Time until ``job`` receives ``amount`` more service if nothing changes
        (infinite if its pool does not hold the server)."""
        pool = self._pool[job]
        if pool is None or pool is not self._served:
            return INF
        if amount <= 0.0:
            return 0.0
        return amount * pool.weight / self._w[job]

    def time_to_advance(self, pool: Pool, amount: float) -> float:
        """Time until the pool's clock advances by ``amount`` if nothing changes."""
        if pool is not self._served or pool.size == 0:
            return INF
        if amount <= 0.0:
            return 0.0
        return amount * pool.weight

    @property
    def served(self) -> Pool | None:
        return self._served

    @property
    def served_weight(self) -> float:
        """Total weight W of the pool holding the server (asked only while a
        completion is predicted, which is a member of that pool)."""
        pool = self._served
        if pool is None:
            raise RuntimeError("no pool holds the server")
        return pool.weight

    def served_shares(self) -> list[tuple[int, float]]:
        """(job, share) of every job in the pool holding the server, by job:
        the shares w_i / W of the GPS in force now (empty while idle). O(members);
        what a schedule recorder reads (``simulate``'s ``recorder``), never the
        event loop itself."""
        pool = self._served
        if pool is None or pool.size == 0:
            return []
        entry = self._entry
        members = sorted(job for _, seq, job in pool.heap if entry[job] == seq)
        return [(job, self._w[job] / pool.weight) for job in members]

    # ---- what a policy may do --------------------------------------------------
    def place(self, job: int, pool: Pool, weight: float = 1.0) -> None:
        """Move ``job`` into ``pool`` with GPS weight ``weight``, keeping the
        service it has attained. O(log n)."""
        if not (weight > 0.0 and weight < INF):
            raise PolicyError(f"t={self.now}: job {job}: GPS weight must be a finite number > 0; got {weight!r}")
        old = self._pool[job]
        if old is pool and self._w[job] == weight:
            return
        attained = self.attained(job)
        if old is not None:
            self._leave(job, old)
        self._join(job, pool, weight, attained)

    def isolate(self, job: int) -> Pool:
        """Move ``job`` alone into a fresh pool (e.g. a preempted job), keeping
        its attained service. Returns that pool."""
        pool = Pool()
        self.place(job, pool, 1.0)
        return pool

    def serve(self, pool: Pool | None) -> None:
        """Give the whole server to ``pool`` (None: idle). O(1)."""
        current = self._served
        if pool is current:
            return
        if current is not None:
            current.v_ref = self._clock(current)
            current.t_ref = None
        self._served = pool
        if pool is not None:
            pool.t_ref = self.now

    def serve_job(self, job: int | None) -> None:
        """Serve the pool of ``job`` (None: idle)."""
        self.serve(None if job is None else self._pool[job])

    # ---- engine internals --------------------------------------------------------
    def _clock(self, pool: Pool) -> float:
        if pool.t_ref is None or pool.weight == 0.0:
            return pool.v_ref
        return pool.v_ref + (self.now - pool.t_ref) / pool.weight

    def _anchor(self, pool: Pool) -> None:
        pool.v_ref = self._clock(pool)
        if pool.t_ref is not None:
            pool.t_ref = self.now

    def _leave(self, job: int, pool: Pool) -> None:
        """Take ``job`` out of ``pool`` (its clock anchored at now first)."""
        self._anchor(pool)
        self._entry[job] = -1
        pool.size -= 1
        if pool.size == 0:  # reset exactly: no drift carried into the pool's next use
            pool.weight = 0.0
            pool.v_ref = 0.0
            pool.heap.clear()
        else:
            pool.weight -= self._w[job]
            if len(pool.heap) > 2 * pool.size + 32:
                self._compact(pool)

    def _compact(self, pool: Pool) -> None:
        """Drop the stale heap entries of jobs that left the pool (lazy
        deletion), so a long-lived pool's heap stays O(members): amortised O(1)."""
        entry = self._entry
        pool.heap = [e for e in pool.heap if entry[e[2]] == e[1]]
        heapq.heapify(pool.heap)

    def _join(self, job: int, pool: Pool, weight: float, attained: float) -> None:
        self._anchor(pool)
        pool.size += 1
        pool.weight += weight
        self._pool[job] = pool
        self._w[job] = weight
        self._a0[job] = attained
        v0 = pool.v_ref
        self._v0[job] = v0
        self._seq += 1
        self._entry[job] = self._seq
        heapq.heappush(pool.heap, (v0 + (self._size[job] - attained) / weight, self._seq, job))

    def _admit(self, job: int) -> None:
        self._join(job, Pool(), 1.0, 0.0)

    def _next_completion(self) -> tuple[float, int]:
        pool = self._served
        if pool is None or pool.size == 0:
            return INF, -1
        heap = pool.heap
        entry = self._entry
        while entry[heap[0][2]] != heap[0][1]:
            heapq.heappop(heap)
        finish, _, job = heap[0]
        assert pool.t_ref is not None  # the served pool is anchored
        t = pool.t_ref + (finish - pool.v_ref) * pool.weight
        return (t if t > self.now else self.now), job

    def _complete(self, job: int) -> None:
        """The predicted completion of ``job`` (the served pool's heap top)."""
        pool = self._pool[job]
        assert pool is not None, "completion of a job that is not in the system"
        finish, _, _ = heapq.heappop(pool.heap)
        # The clock reached the job's finish tag exactly: set it so (then
        # _leave's anchoring keeps it), so members with an equal tag finish at
        # this same instant.
        pool.v_ref = finish
        pool.t_ref = self.now
        self._leave(job, pool)
        self._pool[job] = None


class PolicyStalled(PolicyError):
    """A policy left jobs in the system with nothing scheduled: a policy bug.

    Raised at the instant it happens, not when the workload runs out: as soon
    as the clock would move on while the server is idle (no pool holding jobs
    is served), jobs are present and the policy announces no internal event
    (``next_event_time()`` is ``INF``), so only an arrival could wake it. A
    policy that declares ``work_conserving = False`` may wait for an arrival
    on purpose ("a better job"); it is stopped when no arrival is left. The
    test is O(1) per loop turn; the message names the instant, the first job
    waiting and since when the server has been idle with jobs present."""


#: Loop turns at one instant with no job arriving or leaving, beyond
#: ``STALL_PER_JOB`` per job of the table, before the policy is declared stuck
#: (:class:`PolicyStuck`). A correct policy has at most a few internal events
#: per job at one instant (a virtual completion, a job becoming late, two LAS
#: groups meeting); one whose ``next_event_time()`` keeps answering the
#: current instant -- or a time in the past, which the engine takes as now --
#: without changing anything would loop forever.
STALL_EVENTS = 1_000
STALL_PER_JOB = 4


class PolicyStuck(PolicyError):
    """A policy announces internal events forever without the clock moving
    (``schedlab check-policy``'s ``completes`` invariant, with this message)."""


def _stuck(now: float, turns: int, t_policy: float) -> PolicyStuck:
    past = " (in the past)" if t_policy < now else ""
    return PolicyStuck(
        f"the policy never finishes: t={now}: {turns} internal events at this instant with no job arriving or "
        f"leaving (next_event_time() = {t_policy!r}{past})"
    )


class QueueRun:
    """One run of a policy over a workload, advanced one event at a time by
    whoever holds it: :func:`simulate` (:meth:`step_to_end`: the events of
    ``while not run.done: run.step()`` in one loop), a Gymnasium environment, a test or a notebook (the shape of SimPy's
    ``Environment.peek()`` / ``step()``).

    :meth:`peek` is the time of the next event (``INF`` when none is left);
    :meth:`step` applies exactly one event -- a completion, one of the
    policy's internal events or an arrival, in the tie order of the module
    docstring -- so several events may share an instant. The step that finds
    nothing left to do sets :attr:`done` (that turn is counted in ``events``,
    as the loop always has); :meth:`result` is then (completion times, events).
    Between two steps a driver may read ``run.server`` (time, pools, attained
    service) and ``run.policy``, and may act through the policy's seam.
    Arguments are those of :func:`simulate`.
    """

    __slots__ = (
        "n",
        "_sub",
        "_sizes",
        "server",
        "policy",
        "_seen",
        "_weights",
        "completion",
        "_arrive",
        "_depart",
        "_next_event_time",
        "_on_event",
        "_next_completion",
        "_complete",
        "_admit",
        "_w",
        "_recorder",
        "_conserving",
        "_stall",
        "arrived",
        "completed",
        "events",
        "done",
        "_idle_at",
        "_same",
    )

    def __init__(
        self,
        submit: np.ndarray,
        size: np.ndarray,
        estimate: np.ndarray,
        weight: np.ndarray,
        policy_factory: Callable[[Server], Any],
        *,
        hidden: Callable[[list[float]], Sequence[float]] | None = None,
        recorder: Callable[[float, Server], None] | None = None,
    ) -> None:
        self.n = n = len(submit)
        self._sub = submit.tolist()
        sizes = size.tolist()
        if hidden is not None:
            sizes = hidden(sizes)
        self._sizes = sizes
        self.server = server = Server(sizes, n)
        self.policy = policy = policy_factory(server)
        self._seen = sizes if policy.exact_size else estimate.tolist()
        self._weights = weight.tolist()
        self.completion = [0.0] * n
        self._arrive, self._depart = policy.arrive, policy.depart
        self._next_completion, self._complete, self._admit = server._next_completion, server._complete, server._admit
        self._w = server._w
        self._next_event_time, self._on_event = policy.next_event_time, policy.on_event
        self._recorder = recorder
        self._conserving = getattr(policy, "work_conserving", True)
        self._stall = STALL_EVENTS + STALL_PER_JOB * n
        self.arrived = 0  # jobs admitted so far (the next arrival is job ``arrived``)
        self.completed = 0
        self.events = 0
        self.done = False
        self._idle_at = -INF  # since when the server has been idle with jobs present (-INF: it is not)
        self._same = 0  # loop turns at this instant without an arrival or departure (see STALL_EVENTS)

    @property
    def now(self) -> float:
        return self.server.now

    def peek(self) -> float:
        """The time of the next event (``INF``: none is left). A query: it
        changes nothing a step would see."""
        if self.done:
            return INF
        server = self.server
        i = self.arrived
        t_arrival = self._sub[i] if i < self.n else INF
        t_done, job = server._next_completion()
        t_policy = self._next_event_time()
        if job >= 0:
            t_done = self._settled(t_done, job, t_policy if t_policy < t_arrival else t_arrival)
        t = min(t_done, t_policy, t_arrival)
        return t if t == INF or t > server.now else server.now

    def _settled(self, t_done: float, job: int, t_other: float) -> float:
        """``job``'s completion time, moved to the other event ``t_other`` when
        its residual work there is within DONE_REL_TOL of its size (work done
        in dt is dt * w / W)."""
        server = self.server
        if (
            t_done > t_other
            and (t_done - t_other) * server._w[job] <= DONE_REL_TOL * self._sizes[job] * server.served_weight
        ):
            return t_other if t_other > server.now else server.now
        return t_done

    def step(self) -> None:
        """Apply the next event (or, with none left, end the run: ``done``)."""
        if self.done:
            raise RuntimeError("step() on a finished run")
        self._events_until(self.events + 1)

    def step_to_end(self) -> None:
        """Apply every event left: what ``while not run.done: run.step()``
        does, in one loop (:func:`simulate`'s)."""
        if self.done:
            raise RuntimeError("step() on a finished run")
        self._events_until(-1)

    def _events_until(self, stop: int) -> None:
        """The engine's one event loop: apply events until the loop turn
        numbered ``stop`` (``events``) has run or the run is done (``stop =
        -1``: to the end). Why a loop here rather than :meth:`step` called per
        event: the run's counters live in locals while it turns and are
        written back when it stops (also when a policy error ends it), so a
        run stepped to its end pays what the single-function loop did; they
        are the run's between two steps, not during one (a policy's call)."""
        server = self.server
        n, sub, sizes, w_of, seen, weights = self.n, self._sub, self._sizes, self._w, self._seen, self._weights
        completion, recorder, conserving, stall = self.completion, self._recorder, self._conserving, self._stall
        arrive, depart, next_event_time, on_event = self._arrive, self._depart, self._next_event_time, self._on_event
        next_completion, complete, admit = self._next_completion, self._complete, self._admit
        i, done, events, idle_at, same = self.arrived, self.completed, self.events, self._idle_at, self._same
        try:
            while True:
                t_arrival = sub[i] if i < n else INF
                t_done, job = next_completion()
                t_policy = next_event_time()
                events += 1
                if job >= 0:
                    t_other = t_policy if t_policy < t_arrival else t_arrival
                    # Completion first if the job's residual work at the other event is
                    # within DONE_REL_TOL of its size (work done in dt is dt * w / W).
                    if (
                        t_done > t_other
                        and (t_done - t_other) * w_of[job] <= DONE_REL_TOL * sizes[job] * server.served_weight
                    ):
                        t_done = t_other if t_other > server.now else server.now
                    idle_at = -INF
                elif i > done:
                    if idle_at == -INF:
                        idle_at = server.now
                    if t_policy == INF and t_arrival > server.now and (conserving or i == n):
                        raise _stalled(server, n, i - done, idle_at)
                if t_done <= t_policy and t_done <= t_arrival and job >= 0:
                    server.now = t_done
                    complete(job)
                    completion[job] = t_done
                    done += 1
                    same = 0
                    depart(job)
                elif t_policy <= t_arrival and t_policy < INF:
                    if t_policy > server.now:
                        server.now = t_policy
                        same = 0
                    else:
                        same += 1
                        if same > stall:
                            raise _stuck(server.now, stall, t_policy)
                    on_event()
                elif i < n:
                    server.now = t_arrival
                    same = 0
                    admit(i)
                    arrive(i, seen[i], weights[i])
                    i += 1
                else:
                    self.done = True
                    return
                if recorder is not None:
                    recorder(server.now, server)
                if events == stop:
                    return
        finally:
            self.arrived, self.completed, self.events, self._idle_at, self._same = i, done, events, idle_at, same

    def result(self) -> tuple[np.ndarray, int]:
        """(completion times in job-table order, events) of the finished run."""
        if not self.done:
            raise RuntimeError("result() before the run is done")
        return np.asarray(self.completion, dtype=np.float64), self.events


def simulate(
    submit: np.ndarray,
    size: np.ndarray,
    estimate: np.ndarray,
    weight: np.ndarray,
    policy_factory: Callable[[Server], Any],
    *,
    hidden: Callable[[list[float]], Sequence[float]] | None = None,
    recorder: Callable[[float, Server], None] | None = None,
) -> tuple[np.ndarray, int]:
    """Run one policy over one workload; return (completion times, events).

    ``submit`` must be non-decreasing; ``policy_factory(server)`` builds the
    policy. Completion times are in job-table order. The loop is
    :class:`QueueRun` stepped to its end.

    ``hidden`` (check mode, ``schedlab.checks``): a function applied once to
    the list of true sizes, returning the sequence the engine then uses
    (``Server._size`` included) -- a guard that refuses reads from outside
    this module. None (the normal path) adds nothing per event.

    ``recorder`` (schedule views, ``schedlab.views``): called as
    ``recorder(now, server)`` after every event is applied, so it sees each
    state the server is in between two events (``Server.served_shares``).
    None (the normal path) costs one test per event.
    """
    return run_to_end(QueueRun(submit, size, estimate, weight, policy_factory, hidden=hidden, recorder=recorder))


def _stalled(server: Server, n: int, present: int, since: float) -> PolicyStalled:
    """The :class:`PolicyStalled` of a server idle with ``present`` jobs in
    the system; finding the first of them scans the table once, on the way out."""
    first = next(j for j in range(n) if server._pool[j] is not None)
    return PolicyStalled(
        f"t={server.now}: job {first}: the server is idle with {present} jobs unserved since t={since} "
        f"(the policy serves no pool that holds jobs and announces no event)"
    )
