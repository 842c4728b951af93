"""``schedlab/Packing-v0``: place jobs on servers, on the packing engine.

The environment is the engine: an episode is one run of the packing engine's
reference loop (:class:`schedlab.engines.packing.sim.engine.PackingRun`, built by
``schedlab.engines.instance.start_instance`` as a sweep's reference path
builds it, its rows the engine's own) with a
policy that asks the agent for each placement of a decision epoch: the
environment opens each epoch (``run.advance()``: departures, arrivals),
lets the agent place jobs through the policy while one fits, and then steps
the epoch's decision, whose ``schedule()`` returns those placements.

Two action modes (``mode``):

* ``"head"`` -- the oldest waiting job goes to the server the agent names
  (``Discrete(servers)``; the mask marks the servers it fits on, demand <=
  free + ``FIT_TOL`` in every resource); while the head fits somewhere it
  must be placed, when it fits nowhere the epoch ends (the queue waits behind
  it). An agent always naming the first server of the mask is FIFO-FF, bit
  for bit (test).
* ``"pair"`` -- a (job, server) pair: ``Discrete(window x servers)``, action
  ``k * servers + s`` places the k-th oldest waiting job on server s; the
  mask marks the pairs that fit; the epoch ends when none does.

Observation (``float32`` in [0, 1]): each server's free capacity /
capacity per resource; then the window's jobs (``window`` = 1 in head
mode): present, demand / capacity per resource, wait / (wait + scale) with
``scale`` the source's mean duration; then waiting jobs beyond the window /
window (at most 1). Rewards: ``"wait"`` (minus the engine's ``wait_mean``)
or ``"utilisation"`` (the engine's ``utilisation``, one resource, final
only); ``"final"`` at the last step or ``"step"`` (minus the waits of the
jobs each step placed / ``sequence``). Episodes: ``sequence`` consecutive
jobs of a job table (``trace``: CSV / Parquet; or ``jobs``) with the columns
the engine declares (``Engine.jobs``: job_id, submit, duration or runtime,
read as the engine reads them) and one resource, ``demand``; the first drawn
by the seeded RNG, or without either
the engine's slotted generator (Psychas & Ghaderi: Poisson(``rate``)
arrivals per slot, demands uniform in [0.1, 0.5], geometric durations of
mean 20) until ``sequence`` jobs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import polars as pl
from gymnasium import spaces

from schedlab.engines.instance import start_instance
from schedlab.engines.packing.policies.base import PackingPolicy
from schedlab.engines.packing.sim.engine import FIT_TOL, Cluster, PackingRun
from schedlab.engines.packing.sim.system import resources
from schedlab.engines.packing.sim.table import table_inputs
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
from schedlab.sim.system.jobs import PACKING_JOBS

ENV = "schedlab/Packing-v0"
#: The engine whose instance an episode is (``schedlab.engines.instance.start_instance``).
ENGINE = "packing"
MODES = ("head", "pair")
REWARDS = ("wait", "utilisation")
#: The default generator (Psychas & Ghaderi's slotted model, one resource).
GEN_DEMAND = (0.1, 0.5)
GEN_MEAN_SERVICE = 20


class _AgentPlace(PackingPolicy):
    """Place the jobs the environment names in an epoch: :meth:`ask` leaves
    the question (observation, mask, jobs placed since the last one) in
    ``asking`` while some waiting job fits, :meth:`answer` takes a placement,
    and the epoch's ``schedule()`` returns the placements taken."""

    name = "agent"
    window: int
    pair: bool
    scale: float

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(cluster)
        self.queue: dict[int, float] = {}  # job -> arrival epoch, arrival order
        self.placed: list[tuple[int, float]] = []
        self.asking: tuple[np.ndarray, np.ndarray, list[tuple[int, float]]] | None = None
        self._free: np.ndarray | None = None  # this epoch's copy of the free capacities, as placements go
        self._cap = np.array([cluster.capacity(s) for s in range(cluster.servers)])
        self._out: list[tuple[int, int]] = []
        self._jobs: list[int] = []
        self._demand = np.zeros((0, cluster.resources))

    def arrive(self, job: int) -> None:
        self.queue[job] = self.cluster.now

    def depart(self, job: int, server: int) -> None:
        pass

    def ask(self) -> bool:
        """Leave the next question of this epoch in ``asking``; False: no waiting job fits (the epoch's end)."""
        c = self.cluster
        if self._free is None:
            self._free = np.array([c.free(s) for s in range(c.servers)])
        if not self.queue:
            return False
        free = self._free
        jobs = list(self.queue)[: self.window]
        demand = np.array([c.demand(j) for j in jobs])
        fits = np.all(demand[:, None, :] <= free[None, :, :] + FIT_TOL, axis=2)  # job x server
        if not self.pair:
            fits = fits[:1]
        if not fits.any():
            return False
        self.asking = (self._observe(jobs, demand, free, self._cap), fits.ravel(), self.placed)
        self.placed = []
        self._jobs, self._demand = jobs, demand
        return True

    def answer(self, a: int) -> None:
        """Place job ``a // servers`` of the window on server ``a % servers``."""
        assert self._free is not None
        self.asking = None
        k, s = divmod(a, self.cluster.servers)
        job = self._jobs[k]
        self._free[s] -= self._demand[k]
        del self.queue[job]
        self.placed.append((job, self.cluster.now))
        self._out.append((job, s))

    def schedule(self) -> list[tuple[int, int]]:
        out, self._out, self._free = self._out, [], None
        return out

    def _observe(self, jobs: list[int], demand: np.ndarray, free: np.ndarray, cap: np.ndarray) -> np.ndarray:
        L, d = free.shape
        parts = [(free / cap).ravel()]
        slots = np.zeros((self.window, 1 + d + 1))
        k = len(jobs)
        slots[:k, 0] = 1.0
        slots[:k, 1 : 1 + d] = demand / cap.max(axis=0)
        wait = self.cluster.now - np.array([self.queue[j] for j in jobs])
        slots[:k, -1] = wait / (wait + self.scale)
        parts += [slots.ravel(), [min((len(self.queue) - k) / self.window, 1.0)]]
        return np.clip(np.concatenate(parts), 0.0, 1.0).astype(np.float32)


def _load(trace: str | Path | None, jobs: pl.DataFrame | None) -> pl.DataFrame | None:
    if trace is not None and jobs is not None:
        raise UserError(f"{ENV}: give a trace or a job table, not both")
    if trace is not None:
        from schedlab.workloads.files import read_job_table

        jobs = read_job_table(resolve_trace(ENV, trace))
    if jobs is None:
        return None
    missing = PACKING_JOBS.missing(jobs.columns)  # the engine's declaration (``Engine.jobs``)
    if missing:
        raise UserError(f"{ENV}: the job table needs the columns {', '.join(missing)}")
    names = resources(jobs.columns)
    if names != [""]:  # cpu / mem: the observation and the utilisation reward are of one resource
        raise UserError(f"{ENV}: one resource: the job table needs a 'demand' column, not {', '.join(names)}")
    return jobs.sort("submit", maintain_order=True)


class PackingEnv(AgentSteps, gymnasium.Env[np.ndarray, np.int64]):
    """``schedlab/Packing-v0`` (module docstring)."""

    env_id = ENV

    metadata = {"render_modes": []}  # noqa: RUF012 (Gymnasium declares it so)

    def __init__(
        self,
        trace: str | Path | None = None,
        *,
        jobs: pl.DataFrame | None = None,
        servers: int = 10,
        capacity: float = 1.0,
        epoch: float = 1.0,
        sequence: int = 200,
        mode: str = "head",
        window: int = 8,
        reward: str = "wait",
        reward_mode: str = "final",
        rate: float = 1.5,
        invalid_action: str = "nearest",
    ) -> None:
        self.servers = check_int(ENV, "servers", servers)
        self.sequence = check_int(ENV, "sequence", sequence)
        self.mode = check_choice(ENV, "mode", mode, MODES)
        self.window = check_int(ENV, "window", window) if self.mode == "pair" else 1
        self.reward_kind = check_choice(ENV, "reward", reward, REWARDS)
        self.reward_mode = check_choice(ENV, "reward_mode", reward_mode, REWARD_MODES)
        self.invalid_action = check_choice(ENV, "invalid_action", invalid_action, INVALID_ACTIONS)
        if self.reward_kind == "utilisation" and self.reward_mode == "step":
            raise UserError(f"{ENV}: reward 'utilisation' is given at the end only (reward_mode='final')")
        if not (capacity > 0) or not (epoch >= 0) or not (rate > 0):
            raise UserError(f"{ENV}: capacity and rate must be > 0 and epoch >= 0 (0: at every event)")
        self.capacity, self.epoch, self.rate = float(capacity), float(epoch), float(rate)
        self.source = _load(trace, jobs)
        if self.source is not None:
            if self.source.height < self.sequence:
                raise UserError(f"{ENV}: sequence {self.sequence} is longer than the job table ({self.source.height})")
            wide = self.source.filter(pl.col("demand") > self.capacity + FIT_TOL)
            if wide.height:
                row = wide.row(0, named=True)
                raise UserError(
                    f"{ENV}: job {row['job_id']} demands {row['demand']} but a server's capacity is {self.capacity}"
                )
            duration = table_inputs(self.source, self.system()).duration  # as the engine reads it
            self.scale = max(float(duration.mean()), 1e-12)
        else:
            self.scale = float(GEN_MEAN_SERVICE)
        self.action_space = spaces.Discrete(self.window * self.servers)
        self.obs_size = self.servers + self.window * 3 + 1
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.obs_size,), dtype=np.float32)
        self.episode: pl.DataFrame = pl.DataFrame()
        self._run: PackingRun | None = None
        self.result: Any = None

    def system(self) -> dict[str, Any]:
        """The packing engine's ``[system]`` of this environment."""
        return {"servers": self.servers, "capacity": self.capacity, "epoch": self.epoch}

    def _draw(self, options: dict[str, Any] | None) -> pl.DataFrame:
        if self.source is None:
            from schedlab.workloads.packing_synthetic import packing_workload

            slots = int(np.ceil(self.sequence / self.rate)) + 1
            while True:
                jobs = packing_workload(
                    self.np_random, slots=slots, rate=self.rate, uniform=GEN_DEMAND, mean_service=GEN_MEAN_SERVICE
                )
                if jobs.height >= self.sequence:
                    return jobs.head(self.sequence)
                slots *= 2
        k = episode_start(ENV, self.np_random, self.source.height, self.sequence, options)
        return self.source.slice(k, self.sequence)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.close()
        self.episode = ep = self._draw(options)
        self._submit = ep["submit"].to_numpy().astype(float)
        attrs = {"window": self.window, "pair": self.mode == "pair", "scale": self.scale}
        cls: type[_AgentPlace] = type("Agent", (_AgentPlace,), attrs)
        self._instance = start_instance(ENGINE, ep, cls, None, self.system())  # the agent is its policy
        self._run = run = self._instance.run
        self._agent: _AgentPlace = run.policy
        self.result = None
        self._placed: list[tuple[int, float]] = []
        self._advance()
        return self._take()[0], self._info()

    def _advance(self) -> None:
        """Run to the agent's next question, or to the end: each epoch is
        opened, asked about while a job fits, and then decided."""
        run, agent = self._run, self._agent
        assert run is not None
        while not run.done:
            if run.deciding and agent.ask():
                return
            if not run.deciding and run.advance():
                continue
            run.step()  # the open epoch's decision (the agent's placements), or the end of the run

    def _take(self) -> tuple[np.ndarray, list[tuple[int, float]]]:
        """The observation and placements of the question asked, or, when
        the run has ended, the engine's result and an empty observation."""
        run = self._run
        assert run is not None
        self._mask = np.zeros(self.window * self.servers, dtype=bool)
        if run.done:
            self.result = self._instance.rows()  # the environment's system samples no series
            self._run = None
            return np.zeros(self.obs_size, dtype=np.float32), []
        assert self._agent.asking is not None
        obs, mask, placed = self._agent.asking
        self._mask[: len(mask)] = mask
        self._obs = obs
        return obs, placed

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        a = self._checked(action, self._run)
        if a is None:
            return self._no_op()
        self._agent.answer(a)
        self._advance()
        obs, placed = self._take()
        terminated = self.result is not None
        if self.reward_mode == "step":
            if terminated:  # the placements after the last decision
                seen = {j for j, _ in self._placed}
                start = self.result.jobs["start"]
                placed = [(j, float(start[j])) for j in range(self.sequence) if j not in seen]
            self._placed.extend(placed)
            if placed:
                j = np.array([p[0] for p in placed])
                reward = -float(np.sum(np.array([p[1] for p in placed]) - self._submit[j])) / self.sequence
            else:
                reward = 0.0
        elif terminated:
            metric = float(self.result.summary["utilisation" if self.reward_kind == "utilisation" else "wait_mean"])
            reward = metric if self.reward_kind == "utilisation" else -metric
        else:
            reward = 0.0
        return obs, reward, terminated, False, self._info()

    def close(self) -> None:
        self._run = None
