"""Priority policies: the heuristics reinforcement-learning batch schedulers
compare against (RLScheduler, Zhang et al. SC'20, Tables V-VI), each without
backfilling and with EASY backfilling (``<name>+EASY``).

The rule (one pass at each event instant ``now``)
-------------------------------------------------
1. The waiting job of smallest ``key(job, now)`` (ties: submit order, then
   job order -- the first in arrival order) is the head.
2. If the head fits in the free units it starts now; go to 1.
3. Otherwise nothing else starts without backfilling (the head blocks the
   queue). With EASY backfilling the head gets EASY's reservation (shadow
   time and extra units from the running jobs' *requested* ends,
   :func:`schedlab.engines.batch.policies.easy.reservation`) and the other waiting
   jobs, scanned in submit order, start now if they do not delay it
   (:func:`schedlab.engines.batch.policies.easy.backfill`).

The head is chosen again at every pass (priorities are recomputed, as a
production scheduler does each cycle): a later arrival of higher priority
overtakes a waiting head. When no waiting job fits in the free units the
choice cannot change the pass (nothing starts, nothing backfills):
:meth:`PriorityPolicy.decisions` then asks nothing.

``commit = true`` (a parameter; such runs take the Python reference path) is
RLScheduler's semantics instead: as soon as no job is committed and the queue
is not empty -- even when nothing fits -- the job of smallest key is chosen
and kept as the head until it starts; later arrivals never overtake it
(docs/gym.md lists every difference from its simulator; the rlsched-tables
pipeline measures this one). Its other rules are parameters too, each
RLScheduler's with ``"rlscheduler"`` (``schedlab.engines.batch.policies.rlscheduler``,
which runs them): ``passes = "event"`` (a pass per arrival and per completion),
``backfill = "rlscheduler"`` (``+EASY`` policies, with ``commit = true``: its
backfilling, not EASY's) and ``wait = "rlscheduler"`` (WFP3 and UNICEP: the
wait read as ``-1 - s``, below). The defaults are schedlab's rules.

A constant key (every job equal: the first in arrival order) gives FCFS
without backfilling and EASY with it, start for start (a test checks both).

Keys (lower = first; ``r`` = requested time, ``n`` = units needed,
``s`` = submit time, ``w = now - s`` = wait so far; RLScheduler's
definitions, read in its ``HPCSimPickJobs.py``, except where said)
-----------------------------------------------------------------------
* SJF: ``r`` (shortest requested time first);
* WFP3 (Tang et al. 2009): ``-(w / r)^3 * n``, computed as ``q * q * q * n``
  with ``q = w / r`` (largest first: long-waiting, short, wide jobs).
  RLScheduler's code reads the wait as ``scheduled_time - submit_time``
  while ``scheduled_time`` is still -1, i.e. ``-1 - s``: its WFP3 and UNICEP
  order by submit time, not wait (docs/gym.md, the rlsched-tables pipeline);
  here the wait is the real one (``wait = "rlscheduler"``: RLScheduler's);
* UNICEP (Tang et al. 2009): ``-(w + 1e-15) / (log2(n + 1e-15) * r)``, with
  RLScheduler's guards against w = 0 and n = 1 (serial jobs come first);
* F1..F4 (Carastan-Santos & de Camargo, SC'17; s <= 0 read as 0.1 as in
  RLScheduler's F1): ``log10(r) * n + 870 * log10(s)``,
  ``sqrt(r) * n + 25600 * log10(s)``, ``r * n + 6860000 * log10(s)``,
  ``r * sqrt(n) + 530000 * log10(s)``. They read the absolute submit time:
  shifting a workload's times changes their order.

Every key reads the requested time, never the actual runtime. The built-ins
run on the compiled kernel ``schedlab.engines.batch.sim.fast._priority`` (the same
operations in the same order: bit-identical schedules).

The pass is written once, as a coroutine (:meth:`PriorityPolicy.decisions`):
``schedule`` answers its questions with :meth:`choose`. The Gymnasium
environment ``schedlab/Batch-v0`` runs the same pass compiled
(``schedlab.engines.batch.gym_kernel``, the operations of the compiled kernel
``_priority``) with the agent's action as the head, or, with
``loop="reference"``, on the engine's own ``BatchRun`` with this class's
queue and backfill scan (``schedlab.engines.batch.gym_reference.AgentHead``, an ask /
answer state machine that the environment drives); its tests check that a
scripted agent gives this module's schedules bit for bit on both.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Generator
from typing import Any, ClassVar, Literal

from sortedcontainers import SortedList

from schedlab.engines.batch.policies.base import BatchPolicy, run_pass
from schedlab.engines.batch.policies.easy import backfill, reservation
from schedlab.engines.batch.policies.rlscheduler import EVENT, RLSCHEDULER, RLSchedulerLoop

#: Keys' guards (RLScheduler's): added to the wait and to the need in UNICEP;
#: the submit time a log10 reads when s <= 0 (F1..F4).
UNICEP_EPS = 1e-15
F_SUBMIT_FLOOR = 0.1


class PriorityPolicy(BatchPolicy):
    """The head chosen by smallest :meth:`key` at each pass; optional EASY
    backfilling (class attribute ``backfill``). Subclasses set ``name``,
    ``summary``, ``kind`` (the compiled kernel's key code) and ``key``."""

    backfill: ClassVar[bool] = False
    kind: ClassVar[int] = -1
    #: The key reads the wait (``now - s``): ``wait = "rlscheduler"`` reads ``-1 - s`` instead.
    reads_wait: ClassVar[bool] = False

    def __init__(
        self,
        machine: Any,
        *,
        commit: bool = False,
        passes: Literal["instant", "event"] = "instant",
        backfill: Literal["easy", "rlscheduler"] = "easy",
        wait: Literal["real", "rlscheduler"] = "real",
    ) -> None:
        super().__init__(machine)
        try:
            type(self).check_params(commit=commit, passes=passes, backfill=backfill, wait=wait)
        except ValueError as err:
            raise TypeError(str(err)) from None
        self.commit = bool(commit)
        #: WFP3 / UNICEP read the wait as RLScheduler's code does (``-1 - s``).
        self.wait_rlscheduler = wait == RLSCHEDULER
        #: RLScheduler's loop (``policies.rlscheduler``) when one of its rules is asked; None: schedlab's.
        self.loop: RLSchedulerLoop | None = None
        if passes == EVENT or backfill == RLSCHEDULER:
            own = type(self).choose is not PriorityPolicy.choose  # a learned agent's pick, not the key's
            self.loop = RLSchedulerLoop(
                machine,
                self.rlscheduler_key,
                commit=self.commit,
                backfill=backfill == RLSCHEDULER,
                event_passes=passes == EVENT,
                chooser=self._loop_choose if own else None,
            )
        self.head: int | None = None  # the committed head (commit=True)
        self.queue: dict[int, None] = {}  # waiting jobs in arrival order
        self.running = SortedList()  # (requested end, job), kept with backfilling only
        self.req_end: dict[int, float] = {}
        self.free = machine.free  # free units at the current decision (read by the environment)

    @classmethod
    def check_params(
        cls, *, commit: bool = False, passes: str = "instant", backfill: str = "easy", wait: str = "real"
    ) -> None:
        """The rules between the parameters (ValueError: the user's message)."""
        if backfill == RLSCHEDULER and not cls.backfill:
            raise ValueError(f'backfill = "rlscheduler": {cls.name} does not backfill (its +EASY variant does)')
        if backfill == RLSCHEDULER and not commit:
            raise ValueError('backfill = "rlscheduler" needs commit = true (its shadow time is the committed head\'s)')
        if passes == EVENT and cls.backfill and backfill != RLSCHEDULER:
            raise ValueError(
                'passes = "event" with backfilling needs backfill = "rlscheduler" (EASY\'s is per instant)'
            )
        if wait == RLSCHEDULER and not cls.reads_wait:
            raise ValueError(f'wait = "rlscheduler": {cls.name}\'s key does not read the wait (WFP3 and UNICEP do)')

    def key(self, job: int, now: float) -> float:
        """Priority of ``job`` at ``now``: lower starts first."""
        return 0.0

    def rlscheduler_key(self, job: int, now: float) -> Any:
        """The order RLScheduler's loop sorts its queue by: :meth:`key`
        (SJF adds the submit time, as its ``sjf_score`` does)."""
        return self.key(job, now)

    def waiting(self) -> Collection[int]:
        """The waiting jobs a :meth:`choose` picks among, in the order it reads
        them: arrival order (under RLScheduler's loop, its queue list)."""
        return self.queue if self.loop is None else self.loop.jobs

    def _loop_choose(self, now: float) -> int:
        """A subclass's own :meth:`choose` asked by RLScheduler's loop (its free units first)."""
        assert self.loop is not None
        self.free = self.loop.free
        return self.choose(now)

    def arrive(self, job: int) -> None:
        if self.loop is not None:
            self.loop.arrive(job)
            return
        self.queue[job] = None

    def complete(self, job: int) -> None:
        if self.loop is not None:
            self.loop.complete(job)
            return
        if self.backfill:
            self.running.remove((self.req_end.pop(job), job))

    def choose(self, now: float) -> int:
        """The waiting job of smallest key, the first in arrival order on ties."""
        it = iter(self.queue)
        best = next(it)
        best_key = self.key(best, now)
        for job in it:
            k = self.key(job, now)
            if k < best_key:
                best, best_key = job, k
        return best

    def _start(self, job: int, now: float) -> None:
        del self.queue[job]
        if self.backfill:
            e = now + self.machine.requested[job]
            self.req_end[job] = e
            self.running.add((e, job))

    def decisions(self, now: float) -> Generator[None, int, list[int]]:
        """One pass (the module docstring's rule) as a coroutine: it yields
        whenever a head must be chosen among ``self.queue`` and some waiting
        job fits (``self.free`` is then the free units), and is sent the
        chosen job; it returns the jobs started, in order."""
        out: list[int] = []
        need = self.machine.need
        free = self.machine.free
        queue = self.queue
        while queue:
            if self.head is not None:  # committed (commit=True)
                head = self.head
            elif not self.commit and min(need[j] for j in queue) > free:
                break  # nothing fits: no choice could change this pass
            else:
                self.free = free
                head = yield
                if self.commit:
                    self.head = head
            nh = need[head]
            if nh <= free:
                free -= nh
                self._start(head, now)
                out.append(head)
                self.head = None
                continue
            if self.backfill:
                shadow, extra = reservation(self.running, need, free, now, nh)
                others = (j for j in queue if j != head)
                started = backfill(others, need, self.machine.requested, free, now, shadow, extra)
                for job in started:
                    self._start(job, now)
                out.extend(started)
            break
        self.free = free
        return out

    def schedule(self, now: float) -> list[int]:
        if self.loop is not None:
            return self.loop.schedule(now)
        return run_pass(self.decisions(now), lambda: self.choose(now))


def _log10_submit(s: float) -> float:
    return math.log10(s if s > 0 else F_SUBMIT_FLOOR)


class SJF(PriorityPolicy):
    name = "SJF"
    summary = "shortest requested time first; the head blocks the queue (no backfilling)"
    kind = 1

    def key(self, job: int, now: float) -> float:
        return self.machine.requested[job]

    def rlscheduler_key(self, job: int, now: float) -> Any:
        return (self.machine.requested[job], self.machine.submit[job])


class WFP3(PriorityPolicy):
    name = "WFP3"
    summary = "largest (wait / requested)^3 x need first (Tang et al. 2009); no backfilling"
    kind = 2
    reads_wait = True

    def key(self, job: int, now: float) -> float:
        m = self.machine
        if self.wait_rlscheduler:
            q = (-1.0 - m.submit[job]) / m.requested[job]
            return -(q**3 * m.need[job])  # a power, as RLScheduler's np.power
        q = (now - m.submit[job]) / m.requested[job]
        return -(q * q * q * m.need[job])


class UNICEP(PriorityPolicy):
    name = "UNICEP"
    summary = "largest wait / (log2(need) x requested) first (Tang et al. 2009); no backfilling"
    kind = 3
    reads_wait = True

    def key(self, job: int, now: float) -> float:
        m = self.machine
        w = -1.0 - m.submit[job] if self.wait_rlscheduler else now - m.submit[job]
        return -((w + UNICEP_EPS) / (math.log2(m.need[job] + UNICEP_EPS) * m.requested[job]))


class F1(PriorityPolicy):
    name = "F1"
    summary = "smallest log10(r) n + 870 log10(s) first (Carastan-Santos & de Camargo 2017); no backfilling"
    kind = 4

    def key(self, job: int, now: float) -> float:
        m = self.machine
        return math.log10(m.requested[job]) * m.need[job] + 870.0 * _log10_submit(m.submit[job])


class F2(PriorityPolicy):
    name = "F2"
    summary = "smallest sqrt(r) n + 25600 log10(s) first (Carastan-Santos & de Camargo 2017); no backfilling"
    kind = 5

    def key(self, job: int, now: float) -> float:
        m = self.machine
        return math.sqrt(m.requested[job]) * m.need[job] + 25600.0 * _log10_submit(m.submit[job])


class F3(PriorityPolicy):
    name = "F3"
    summary = "smallest r n + 6860000 log10(s) first (Carastan-Santos & de Camargo 2017); no backfilling"
    kind = 6

    def key(self, job: int, now: float) -> float:
        m = self.machine
        return m.requested[job] * m.need[job] + 6860000.0 * _log10_submit(m.submit[job])


class F4(PriorityPolicy):
    name = "F4"
    summary = "smallest r sqrt(n) + 530000 log10(s) first (Carastan-Santos & de Camargo 2017); no backfilling"
    kind = 7

    def key(self, job: int, now: float) -> float:
        m = self.machine
        return m.requested[job] * math.sqrt(m.need[job]) + 530000.0 * _log10_submit(m.submit[job])


def _with_easy(cls: type[PriorityPolicy]) -> type[PriorityPolicy]:
    """``cls`` with EASY backfilling around its head, named ``<name>+EASY``."""
    summary = f"{cls.name}'s head keeps an EASY reservation; the other jobs backfill around it in submit order"
    ns = {"name": f"{cls.name}+EASY", "summary": summary, "backfill": True, "__module__": __name__}
    return type(f"{cls.__name__}_EASY", (cls,), ns)


SJF_EASY = _with_easy(SJF)
WFP3_EASY = _with_easy(WFP3)
UNICEP_EASY = _with_easy(UNICEP)
F1_EASY = _with_easy(F1)
F2_EASY = _with_easy(F2)
F3_EASY = _with_easy(F3)
F4_EASY = _with_easy(F4)

#: Every built-in priority policy, without then with backfilling.
PRIORITY_POLICIES: tuple[type[PriorityPolicy], ...] = (
    SJF,
    WFP3,
    UNICEP,
    F1,
    F2,
    F3,
    F4,
    SJF_EASY,
    WFP3_EASY,
    UNICEP_EASY,
    F1_EASY,
    F2_EASY,
    F3_EASY,
    F4_EASY,
)
