"""``schedlab/Queue-v0``: which present job the server serves, on the queue engine.

The environment is the engine: an episode is one run of the queue engine's
reference loop (:class:`schedlab.engines.queue.sim.engine.QueueRun`, built by
``schedlab.engines.instance.start_instance`` as a sweep's reference path
builds it, its rows the engine's own; stepped here until the policy has a
question) with a policy that, after every arrival and
every departure while jobs are present, asks the agent which job holds the
whole server (``server.serve_job``; the server is switched only when the
choice changes). The question is left in the policy (``asking``) and the
step that raised it ends there; the answer is applied before the next step,
so the run is the one an in-line policy would have made. With one job present there
is no choice and nothing is asked (it is served); an episode without any
decision is drawn again (an error for a fixed start). An agent always choosing
slot 0 (the oldest present job) is FIFO, bit for bit; the final reward is
minus the engine's own summary metric of the run (tests).

Actions: ``Discrete(window)``, a slot among the first ``window`` present
jobs (arrival order); ``info["action_mask"]`` marks the filled slots.
Observation (``float32``): per slot present, and x / (x + scale) of the
job's estimate, attained service and age (now - submit), ``scale`` the
source's mean size; then present jobs beyond the window / window (at most
1). The agent sees estimates, never sizes (as every queue policy).
Rewards: ``"sojourn"`` (minus the mean sojourn time, the engine's ``mst``)
or ``"slowdown"`` (minus ``slowdown_mean``); ``"final"`` at the last step,
``"step"``: minus the sojourns (slowdowns) of the jobs completed since the
previous decision / ``sequence``. Episodes: ``sequence`` consecutive jobs
of a job table (``trace``: a CSV / Parquet file with job_id, submit, size
[, estimate, weight]; or ``jobs``), the first drawn by the seeded RNG, or
without either ``sequence`` jobs of the PSBS paper's generator
(``schedlab.workloads.synthetic.queue_workload``, its defaults) drawn from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import polars as pl
from gymnasium import spaces

from schedlab.engines.instance import start_instance
from schedlab.engines.queue.policies.base import QueuePolicy
from schedlab.engines.queue.sim.engine import QueueRun, Server
from schedlab.errors import UserError
from schedlab.gym.common import (
    INVALID_ACTIONS,
    REWARD_MODES,
    AgentSteps,
    check_choice,
    check_int,
    episode_start,
    resolve_trace,
)
from schedlab.sim.common.metrics import slowdown
from schedlab.sim.common.stepping import run_until
from schedlab.sim.system.jobs import QUEUE_JOBS

ENV = "schedlab/Queue-v0"
#: The engine whose instance an episode is (``schedlab.engines.instance.start_instance``).
ENGINE = "queue"
JOB_FEATURES = 4
REWARDS = ("sojourn", "slowdown")
METRIC = {"sojourn": "mst", "slowdown": "slowdown_mean"}
#: Episodes drawn again when one has no decision (no two jobs ever present at once).
NO_DECISION_RETRIES = 100


class _AgentServe(QueuePolicy):
    """Serve the job the environment names after every arrival and departure:
    the question (observation, filled slots, jobs departed since the last
    one) waits in ``asking`` until :meth:`answer`."""

    name = "agent"
    window: int
    scale: float

    def __init__(self, server: Server) -> None:
        super().__init__(server)
        self.present: dict[int, tuple[float, float]] = {}  # job -> (estimate, submit), arrival order
        self.serving: int | None = None
        self.departed: list[tuple[int, float]] = []
        self.asking: tuple[np.ndarray, int, list[tuple[int, float]]] | None = None
        self._slots: list[int] = []

    def arrive(self, job: int, estimate: float, weight: float) -> None:
        self.present[job] = (estimate, self.server.now)
        self._decide()

    def depart(self, job: int) -> None:
        del self.present[job]
        self.departed.append((job, self.server.now))
        if self.serving == job:
            self.serving = None
        if self.present:
            self._decide()
        else:
            self.server.serve_job(None)

    def _decide(self) -> None:
        slots = list(self.present)[: self.window]
        if len(slots) == 1:  # one job present: no choice to ask about
            self._serve(slots[0])
        else:
            self.asking = (self._observe(slots), len(slots), self.departed)
            self.departed = []
            self._slots = slots

    def answer(self, a: int) -> None:
        """Serve the job in slot ``a`` of the question asked."""
        self.asking = None
        self._serve(self._slots[a])

    def _serve(self, job: int) -> None:
        if job != self.serving:
            self.server.serve_job(job)
            self.serving = job

    def _observe(self, slots: list[int]) -> np.ndarray:
        obs = np.zeros(self.window * JOB_FEATURES + 1, dtype=np.float32)
        f = obs[:-1].reshape(self.window, JOB_FEATURES)
        now, s = self.server.now, self.scale
        for k, job in enumerate(slots):
            est, sub = self.present[job]
            att = self.server.attained(job)
            age = now - sub
            f[k] = (1.0, est / (est + s), att / (att + s), age / (age + s))
        obs[-1] = min((len(self.present) - len(slots)) / self.window, 1.0)
        return obs


def _load(trace: str | Path | None, jobs: pl.DataFrame | None) -> pl.DataFrame | None:
    if trace is not None and jobs is not None:
        raise UserError(f"{ENV}: give a trace or a job table, not both")
    if trace is not None:
        from schedlab.workloads.files import read_job_table

        jobs = read_job_table(resolve_trace(ENV, trace))
    if jobs is None:
        return None
    missing = [c for c in QUEUE_JOBS.required if c not in jobs.columns]
    if missing:
        raise UserError(f"{ENV}: the job table needs the columns {', '.join(missing)}")
    if "estimate" not in jobs.columns:
        jobs = jobs.with_columns(pl.col("size").alias("estimate"))
    if "weight" not in jobs.columns:
        jobs = jobs.with_columns(pl.lit(1.0).alias("weight"))
    return jobs.sort("submit", maintain_order=True)


class QueueEnv(AgentSteps, gymnasium.Env[np.ndarray, np.int64]):
    """``schedlab/Queue-v0`` (module docstring)."""

    env_id = ENV

    metadata = {"render_modes": []}  # noqa: RUF012 (Gymnasium declares it so)

    def __init__(
        self,
        trace: str | Path | None = None,
        *,
        jobs: pl.DataFrame | None = None,
        sequence: int = 200,
        window: int = 16,
        reward: str = "sojourn",
        reward_mode: str = "final",
        load: float = 0.9,
        invalid_action: str = "nearest",
    ) -> None:
        self.window = check_int(ENV, "window", window)
        self.sequence = check_int(ENV, "sequence", sequence)
        self.reward_kind = check_choice(ENV, "reward", reward, REWARDS)
        self.reward_mode = check_choice(ENV, "reward_mode", reward_mode, REWARD_MODES)
        self.invalid_action = check_choice(ENV, "invalid_action", invalid_action, INVALID_ACTIONS)
        self.load = float(load)
        self.source = _load(trace, jobs)
        if self.source is not None:
            if self.source.height < self.sequence:
                raise UserError(f"{ENV}: sequence {self.sequence} is longer than the job table ({self.source.height})")
            self.scale = max(float(self.source["size"].to_numpy().mean()), 1e-12)
        else:
            self.scale = 1.0  # the generator's sizes have mean 1
        self.action_space = spaces.Discrete(self.window)
        self.obs_size = self.window * JOB_FEATURES + 1
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.obs_size,), dtype=np.float32)
        self.episode: pl.DataFrame = pl.DataFrame()
        self._run: QueueRun | None = None
        self.result: Any = None

    def _draw(self, options: dict[str, Any] | None) -> pl.DataFrame:
        if self.source is None:
            from schedlab.workloads.synthetic import queue_workload

            return queue_workload(self.np_random, njobs=self.sequence, load=self.load)
        k = episode_start(ENV, self.np_random, self.source.height, self.sequence, options)
        return self.source.slice(k, self.sequence)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return self._reset(options, 0)

    def _reset(self, options: dict[str, Any] | None, attempt: int) -> tuple[np.ndarray, dict]:
        self.close()
        self.episode = ep = self._draw(options)
        self._submit = ep["submit"].to_numpy().astype(float)
        self._size = ep["size"].to_numpy().astype(float)
        cls: type[_AgentServe] = type("Agent", (_AgentServe,), {"window": self.window, "scale": self.scale})
        self._instance = start_instance(ENGINE, ep, cls)  # the run a sweep's reference path runs, the agent its policy
        run: QueueRun = self._instance.run
        self._run = run
        self._agent: _AgentServe = run.policy
        self.result = None
        self._departed_so_far: list[tuple[int, float]] = []
        if not self._advance():  # no two jobs ever present together: no decision at all
            if (options and "start" in options) or attempt >= NO_DECISION_RETRIES:
                raise UserError(f"{ENV}: an episode of {self.sequence} jobs without any decision (jobs never overlap)")
            return self._reset(options, attempt + 1)
        return self._take()[0], self._info()

    def _advance(self) -> bool:
        """Step the run to the agent's next question (False: the run ended first)."""
        assert self._run is not None
        return run_until(self._run, lambda: self._agent.asking is not None)

    def _take(self) -> tuple[np.ndarray, list[tuple[int, float]]]:
        """The observation and departures of the question asked, or, when the
        run has ended, the engine's result and an empty observation."""
        run = self._run
        assert run is not None
        self._mask = np.zeros(self.window, dtype=bool)
        if run.done:
            self.result = self._instance.rows()
            self._run = None
            return np.zeros(self.obs_size, dtype=np.float32), []
        assert self._agent.asking is not None
        obs, filled, departed = self._agent.asking
        self._mask[:filled] = True
        self._obs = obs
        return obs, departed

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        a = self._checked(action, self._run)
        if a is None:
            return self._no_op()
        self._agent.answer(a)
        self._advance()
        obs, departed = self._take()
        terminated = self.result is not None
        if self.reward_mode == "step":
            if terminated:
                done = self.result.jobs["completion"]
                seen = {j for j, _ in self._departed_so_far}
                departed = [(j, float(done[j])) for j in range(self.sequence) if j not in seen]
            self._departed_so_far.extend(departed)
            reward = self._step_reward(departed)
        else:
            reward = -float(self.result.summary[METRIC[self.reward_kind]]) if terminated else 0.0
        return obs, reward, terminated, False, self._info()

    def _step_reward(self, departed: list[tuple[int, float]]) -> float:
        if not departed:
            return 0.0
        j = np.array([d[0] for d in departed])
        sojourn = np.array([d[1] for d in departed]) - self._submit[j]
        if self.reward_kind == "slowdown":
            sojourn = slowdown(sojourn, self._size[j])
        return -float(np.sum(sojourn)) / self.sequence

    def close(self) -> None:
        self._run = None
