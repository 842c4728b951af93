"""``schedlab/Batch-v0`` in RLScheduler's setting (``setting="rlscheduler"``),
its reference loop (``loop="reference"``): its ``HPCEnv`` (DIR-LAB/deep-batch-scheduler,
``HPCSimPickJobs.py``) as the batch engine's own run, the agent choosing
where RLScheduler's loop chooses (docs/gym.md):

* **Its loop** (``schedlab.engines.batch.policies.rlscheduler``): a pass per
  arrival and per completion, the agent's pick committed until it starts, and
  with ``backfill="easy"`` its backfilling (``backfill = "rlscheduler"``: the
  shadow time kept from when the head blocks, strict ``<``, no extra units),
  not EASY.
* **Its decision points**: the agent is asked whenever a head must be chosen,
  even when one job waits or none fits (RLScheduler's ``step`` schedules the
  job it is given, waiting for the units): once per job that is not
  backfilled.
* **Its observation's fill**: with at most ``window`` waiting jobs the slots
  hold them oldest first (its queue sorted by submit time); with more, the
  slots take, in turn, the next of the waiting jobs by shortest requested time
  (ties: submit) and the next by fewest processors (ties: submit), each job
  once, until ``window`` are filled (its ``build_observation``: its third,
  "random", list reads the shortest-requested list again, so nothing random
  reaches the slots). Its queue is sorted in place by those orders, as its own
  is (its later ties read that order). Each slot's numbers are Batch-v0's own
  (:func:`schedlab.engines.batch.features.batch_observation`), not its eight.

This is the setting's reference loop (``loop="reference"``): the compiled
kernel's (``loop="kernel"``, the default: ``gym_kernel._rl_run``) check, step
for step to the bit (tests/test_gym_batch_rlscheduler_kernel.py). This class has the
surface of :class:`schedlab.engines.batch.gym_reference.ReferenceEpisode`
(``pending``, ``now``, ``answer``, ``job_at``, ``observe``,
``reward_terms``, ``schedule``, ``result``), so :class:`BatchEnv` drives both alike."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import polars as pl

from schedlab.engines.batch import features
from schedlab.engines.batch import gym_kernel as K
from schedlab.engines.batch.policies.priority import PriorityPolicy
from schedlab.engines.batch.policies.rlscheduler import RLSchedulerLoop
from schedlab.engines.instance import start_instance

ENGINE = "batch"


class AgentPick(PriorityPolicy):
    """The agent as a policy under RLScheduler's loop: the environment answers
    the loop's questions itself (:class:`RLSchedulerEpisode`), so ``choose``
    is never asked."""

    name = "agent"

    def choose(self, now: float) -> int:
        raise RuntimeError("setting='rlscheduler': the environment answers the loop's questions")


def fill(jobs: list[int], window: int, submit: np.ndarray, requested: np.ndarray, need: np.ndarray) -> list[int]:
    """The jobs of RLScheduler's observation slots (module docstring), sorting
    ``jobs`` (its queue) in place as its ``build_observation`` does."""
    jobs.sort(key=lambda j: submit[j])
    if len(jobs) <= window:
        return list(jobs)
    jobs.sort(key=lambda j: (requested[j], submit[j]))
    shortest = jobs[:window]
    jobs.sort(key=lambda j: (need[j], submit[j]))
    fewest = jobs[:window]
    slots: list[int] = []
    seen: set[int] = set()
    for pair in zip(shortest, fewest, strict=True):
        for j in pair:
            if j not in seen and len(slots) < window:
                seen.add(j)
                slots.append(j)
        if len(slots) == window:
            break
    return slots


class RLSchedulerEpisode:
    """One episode of ``setting="rlscheduler"``: the ``BatchRun`` that
    ``start_instance`` builds with :class:`AgentPick` under RLScheduler's rules,
    driven through the run's ``advance()`` and ``start()`` and its loop's
    ``decisions`` coroutine (sent the agent's job); stepped to its end after
    the last start (:attr:`result`: the engine's rows)."""

    def __init__(self, table: pl.DataFrame, nodes: int, easy: bool, window: int) -> None:
        cls: type[AgentPick] = type("Agent", (AgentPick,), {"backfill": easy})
        params = {"commit": True, "passes": "event", **({"backfill": "rlscheduler"} if easy else {})}
        self.instance = start_instance(ENGINE, table, cls, params, {"model": "procs", "procs": nodes})
        self.run = run = self.instance.run
        loop = run.policy.loop
        assert isinstance(loop, RLSchedulerLoop)
        self.loop = loop
        self.window = window
        self.submit = np.array(run.sub_l)
        self.runtime = np.array(run.run_l)
        self.requested = np.array(run.machine.requested)
        self.need = np.array(run.need_l, dtype=np.int64)
        self.now = 0.0
        self.result: Any = None
        self.gen: Generator[None, int, list[int]] | None = None
        self.slots: list[int] = []
        self.rewarded = 0  # entries of loop.launched already rewarded
        self.pending = self.advance(None)

    def _resume(self, job: int | None) -> bool:
        """Run the open instant's passes to the next question (True) or their end (False: starts applied)."""
        assert self.gen is not None
        try:
            if job is None:
                next(self.gen)
            else:
                self.gen.send(job)
        except StopIteration as stop:
            self.run.start(stop.value, self.now)
            self.gen = None
            return False
        self.slots = fill(self.loop.jobs, self.window, self.submit, self.requested, self.need)
        return True

    def advance(self, job: int | None) -> bool:
        """Answer the open question with ``job`` (None: none is open) and run to the
        next question (True) or, every job started, to the run's end (False)."""
        if self.gen is not None and self._resume(job):
            return True
        run = self.run
        while run.started < run.n:
            t = run.advance()
            assert t is not None  # a job not started yet: an arrival, or a running job's end, is left
            self.now = t
            self.gen = self.loop.decisions(t)
            if self._resume(None):
                return True
        run.step_to_end()
        self.result = self.instance.rows()
        return False

    def answer(self, job: int) -> None:
        self.pending = self.advance(job)

    def job_at(self, slot: int) -> int:
        """The job in ``slot`` of the question's observation; -1 if none is asked."""
        return self.slots[slot] if self.pending else -1

    def observe(self, obs: np.ndarray, mask: np.ndarray, slots: np.ndarray, nodes: int, scale: float) -> None:
        """The question's observation, mask and slots (slot 0 alone, a no-op, when nothing is asked)."""
        mask[:] = False
        slots[:] = -1
        if not self.pending:
            obs[:] = 0.0
            mask[0] = True
            return
        jobs = self.slots
        obs[:] = features.batch_observation(
            jobs,
            len(self.loop.jobs),
            self.now,
            self.submit,
            self.requested,
            self.need,
            self.loop.free,
            nodes,
            scale,
            len(mask),
        )
        mask[: len(jobs)] = True
        slots[: len(jobs)] = jobs

    def reward_terms(self, term: int, tau: float) -> float:
        """The summed reward terms of the starts since the last call, in start order."""
        total = 0.0
        submit, runtime, started = self.run.sub_l, self.run.run_l, self.run.start_l
        launched = self.loop.launched
        for j in launched[self.rewarded :]:
            t = started[j] if started[j] == started[j] else self.now  # NaN: started by the open instant
            if term == K.TERM_BSLD:
                d = (t + runtime[j]) - submit[j]
                p = runtime[j]
                total += (d if d > tau else tau) / (p if p > tau else tau)
            elif term == K.TERM_WAIT:
                total += t - submit[j]
        self.rewarded = len(launched)
        return total

    def schedule(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of the jobs started so far (the open instant's included; NaN: not started)."""
        start, end = np.array(self.run.start_l), np.array(self.run.end_l)
        for j in self.loop.launched:
            if np.isnan(start[j]):
                start[j] = self.now
                end[j] = self.now + self.runtime[j]
        return start, end
