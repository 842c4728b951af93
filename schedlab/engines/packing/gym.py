"""``schedlab/Packing-v0``: place jobs on servers, on the packing engine.

The environment is the engine: an episode is one run of the packing engine's
reference loop (``schedlab.engines.packing.run`` on ``path="reference"``, in
a worker thread, :mod:`schedlab.gym.bridge`) with a policy whose
``schedule()`` asks the agent for each placement of a decision epoch.

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
jobs of a job table (``trace``: CSV / Parquet with job_id, submit, duration,
demand; or ``jobs``), the first drawn by the seeded RNG, or without either
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

from schedlab.engines.packing.policies.base import PackingPolicy
from schedlab.engines.packing.sim.engine import FIT_TOL, Cluster
from schedlab.errors import UserError
from schedlab.gym.bridge import AgentSteps, EngineThread
from schedlab.gym.common import INVALID_ACTIONS, REWARD_MODES, check_choice, check_int, episode_start, resolve_trace

ENV = "schedlab/Packing-v0"
MODES = ("head", "pair")
REWARDS = ("wait", "utilisation")
#: The default generator (Psychas & Ghaderi's slotted model, one resource).
GEN_DEMAND = (0.1, 0.5)
GEN_MEAN_SERVICE = 20


class _AgentPlace(PackingPolicy):
    """Ask the environment for each placement of an epoch."""

    name = "agent"
    bridge: EngineThread
    window: int
    pair: bool
    scale: float

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(cluster)
        self.queue: dict[int, float] = {}  # job -> arrival epoch, arrival order
        self.placed: list[tuple[int, float]] = []

    def arrive(self, job: int) -> None:
        self.queue[job] = self.cluster.now

    def depart(self, job: int, server: int) -> None:
        pass

    def schedule(self) -> list[tuple[int, int]]:
        c = self.cluster
        L = c.servers
        free = np.array([c.free(s) for s in range(L)])  # this epoch's copy, as placements go
        cap = np.array([c.capacity(s) for s in range(L)])
        out: list[tuple[int, int]] = []
        while self.queue:
            jobs = list(self.queue)[: self.window]
            demand = np.array([c.demand(j) for j in jobs])
            fits = np.all(demand[:, None, :] <= free[None, :, :] + FIT_TOL, axis=2)  # job x server
            if not self.pair:
                fits = fits[:1]
            if not fits.any():
                break
            a = self.bridge.ask((self._observe(jobs, demand, free, cap), fits.ravel(), self.placed))
            self.placed = []
            k, s = divmod(a, L)
            job = jobs[k]
            free[s] -= demand[k]
            del self.queue[job]
            self.placed.append((job, c.now))
            out.append((job, s))
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
    missing = [c for c in ("job_id", "submit", "duration", "demand") if c not in jobs.columns]
    if missing:
        raise UserError(f"{ENV}: the job table needs the columns {', '.join(missing)}")
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
            self.scale = max(float(self.source["duration"].to_numpy().mean()), 1e-12)
        else:
            self.scale = float(GEN_MEAN_SERVICE)
        self.action_space = spaces.Discrete(self.window * self.servers)
        self.obs_size = self.servers + self.window * 3 + 1
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.obs_size,), dtype=np.float32)
        self.episode: pl.DataFrame = pl.DataFrame()
        self._thread: EngineThread | None = None
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
        system = self.system()

        def run() -> Any:
            from schedlab.engines.packing import run as run_packing

            return run_packing(ep, cls, None, system, path="reference")

        thread = EngineThread(run)
        cls.bridge = thread
        self._thread = thread
        self.result = None
        self._placed: list[tuple[int, float]] = []
        kind, payload = thread.begin()
        return self._take(kind, payload)[0], self._info()

    def _take(self, kind: str, payload: Any) -> tuple[np.ndarray, list[tuple[int, float]]]:
        if kind == "done":
            self.result = payload
            self._thread = None
            self._mask = np.zeros(self.window * self.servers, dtype=bool)
            self._obs = np.zeros(self.obs_size, dtype=np.float32)
            return self._obs, []
        obs, mask, placed = payload
        self._mask = np.zeros(self.window * self.servers, dtype=bool)
        self._mask[: len(mask)] = mask
        self._obs = obs
        return obs, placed

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        message = self._answer(action)
        if message is None:
            return self._no_op()
        kind, payload = message
        obs, placed = self._take(kind, payload)
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
        if self._thread is not None:
            self._thread.close()
            self._thread = None
