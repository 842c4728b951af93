"""``schedlab/Batch-v0``'s ``loop="reference"``: an episode on the batch
engine's own run. :class:`ReferenceEpisode` is the ``BatchRun`` that
``schedlab.api.start_instance`` builds from the episode's job table, with
the agent as its policy (:class:`AgentHead`), driven through the run's
halves -- ``advance()``, the agent's pass, ``start()`` -- with no thread and
no coroutine. It makes the compiled kernel's decisions
(:mod:`schedlab.engines.batch.gym_kernel`) in Python, the engine's own
operations, so that the kernel is checked against it step for step
(tests/test_batch_gym_reference.py) and a researcher changing the batch
engine's Python loop sees the environment change with it."""

from __future__ import annotations

from itertools import islice
from typing import Any

import numpy as np
import polars as pl

from schedlab.engines.batch import features
from schedlab.engines.batch import gym_kernel as K
from schedlab.engines.batch.policies.easy import backfill, reservation
from schedlab.engines.batch.policies.priority import PriorityPolicy
from schedlab.engines.instance import start_instance

#: The engine whose instance an episode is (``schedlab.engines.instance.start_instance``).
ENGINE = "batch"


class AgentHead(PriorityPolicy):
    """The priority pass with the agent choosing the head (``loop="reference"``):
    the decisions of the compiled kernel (:mod:`schedlab.engines.batch.gym_kernel`,
    ``_run`` and ``_head``) as an explicit ask / answer state machine that
    the environment drives, no coroutine: after the engine's ``advance()``
    the environment calls :meth:`open`, then :meth:`ask` runs the pass to the
    agent's next question (True: the waiting jobs in :attr:`queue`, the free
    units in :attr:`free`) or to its end (False), :meth:`answer` takes the
    head, and the pass's ``schedule()`` returns the jobs started, in order,
    for the engine's ``start()``. The queue, the running jobs' requested ends
    and the reservation and backfill scan are the priority policies' own
    (:class:`PriorityPolicy`, ``policies.easy``); what is asked and what is
    not is the kernel's rule (its module docstring). ``backfill`` is set per
    environment (a subclass built at reset)."""

    name = "agent"

    def __init__(self, machine: Any) -> None:
        super().__init__(machine)
        self.passing = False  # a pass is open (after open(), until its head blocks or nothing fits)
        self.out: list[int] = []  # the open pass's starts, in order
        #: Starts since the environment last took them: (job, instant), in start order (its step rewards).
        self.launched: list[tuple[int, float]] = []

    def open(self) -> None:
        """Open the pass of the instant the engine has just advanced to."""
        self.passing = True
        self.free = self.machine.free

    def _launch(self, job: int, now: float) -> None:
        self._start(job, now)
        self.free -= self.machine.need[job]
        self.out.append(job)
        self.launched.append((job, now))

    def ask(self) -> bool:
        """Run the open pass to the agent's next question (True) or to its end
        (False). Nothing is asked when no waiting job fits; when one job waits
        or every waiting job fits at once, the oldest starts; with EASY, when
        the one job that fits ends (by its requested time) by the shadow time
        of the narrowest job that does not, it starts (any head would start or
        backfill it) -- the kernel's ``_run``."""
        queue, need, requested = self.queue, self.machine.need, self.machine.requested
        now = self.machine.now
        while self.passing and queue:
            free = self.free
            fits = total = 0
            only = -1  # the first waiting job that fits; the least need of those that do not
            least = self.machine.capacity + 1
            for q in queue:
                nq = need[q]
                total += nq
                if nq <= free:
                    fits += 1
                    if only < 0:
                        only = q
                elif nq < least:
                    least = nq
            if fits == 0:
                break  # nothing fits: no choice could change this pass
            if len(queue) == 1 or total <= free:
                self._launch(next(iter(queue)), now)
                continue
            if (
                self.backfill
                and fits == 1
                and now + requested[only] <= reservation(self.running, need, free, now, least)[0]
            ):
                self._launch(only, now)
                continue
            return True
        self.passing = False
        return False

    def answer(self, head: int) -> None:
        """The agent's head: it starts if it fits (the pass goes on); else
        EASY's reservation and backfill scan with ``backfill`` and the pass
        ends (``PriorityPolicy.decisions``' rule, the kernel's ``_head``)."""
        need, now = self.machine.need, self.machine.now
        nh = need[head]
        if nh <= self.free:
            self._launch(head, now)
            return
        if self.backfill:
            shadow, extra = reservation(self.running, need, self.free, now, nh)
            others = (j for j in self.queue if j != head)
            for job in backfill(others, need, self.machine.requested, self.free, now, shadow, extra):
                self._launch(job, now)
        self.passing = False

    def schedule(self, now: float) -> list[int]:
        """The pass's starts, in order (the engine's ``start()`` applies them);
        after the episode's last start the engine's own loop finishes the run,
        and its passes find the queue empty."""
        out, self.out = self.out, []
        self.passing = False
        return out


class ReferenceEpisode:
    """One episode of ``loop="reference"``: the ``BatchRun``
    ``start_instance`` builds from the episode's job table, with the agent
    as its policy, driven here through the run's halves (``advance()``, the
    agent's pass, ``start()``); after the last start the run is stepped to
    its end (``step_to_end``) and :attr:`result` is the engine's rows."""

    def __init__(self, table: pl.DataFrame, nodes: int, easy: bool) -> None:
        cls: type[AgentHead] = type("Agent", (AgentHead,), {"backfill": easy})
        self.instance = start_instance(ENGINE, table, cls, None, {"model": "procs", "procs": nodes})
        self.run = run = self.instance.run
        self.agent: AgentHead = run.policy
        self.submit = np.array(run.sub_l)
        self.runtime = np.array(run.run_l)
        self.requested = np.array(run.machine.requested)
        self.need = np.array(run.need_l, dtype=np.int64)
        self.now = 0.0
        self.result: Any = None
        self.pending = self.advance()

    def advance(self) -> bool:
        """Run to the agent's next question (True) or, every job started, to the run's end (False)."""
        run, agent = self.run, self.agent
        while True:
            if agent.ask():
                return True
            run.start(agent.schedule(self.now), self.now)
            if run.started == run.n:
                run.step_to_end()
                self.result = self.instance.rows()
                return False
            t = run.advance()
            assert t is not None  # a job not started yet: an arrival, or a running job's end, is left
            self.now = t
            agent.open()

    def answer(self, job: int) -> None:
        self.agent.answer(job)
        self.pending = self.advance()

    def job_at(self, slot: int) -> int:
        """The job in ``slot`` of the question's observation (the queue's ``slot``-th, oldest first);
        -1 if none is asked."""
        return next(islice(self.agent.queue, slot, None)) if self.pending else -1

    def observe(self, obs: np.ndarray, mask: np.ndarray, slots: np.ndarray, nodes: int, scale: float) -> None:
        """The question's observation, mask and slots into these rows (the
        kernel's ``_observe``: slot 0 alone, a no-op, when nothing is asked)."""
        mask[:] = False
        slots[:] = -1
        if not self.pending:
            obs[:] = 0.0
            mask[0] = True
            return
        queue = self.agent.queue
        jobs = list(islice(queue, len(mask)))
        obs[:] = features.batch_observation(
            jobs, len(queue), self.now, self.submit, self.requested, self.need, self.agent.free, nodes, scale, len(mask)
        )
        mask[: len(jobs)] = True
        slots[: len(jobs)] = jobs

    def reward_terms(self, term: int, tau: float) -> float:
        """The summed reward terms of the starts since the last call, in start order (the kernel's ``_launch``)."""
        total = 0.0
        submit, runtime = self.run.sub_l, self.run.run_l
        for j, t in self.agent.launched:
            if term == K.TERM_BSLD:
                d = (t + runtime[j]) - submit[j]
                p = runtime[j]
                total += (d if d > tau else tau) / (p if p > tau else tau)
            elif term == K.TERM_WAIT:
                total += t - submit[j]
        self.agent.launched = []
        return total

    def schedule(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of the jobs started so far (those of the open pass included; NaN: not started)."""
        start, end = np.array(self.run.start_l), np.array(self.run.end_l)
        for j in self.agent.out:
            start[j] = self.now
            end[j] = self.now + self.runtime[j]
        return start, end
