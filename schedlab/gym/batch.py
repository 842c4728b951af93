"""``schedlab/Batch-v0``: RLScheduler's setting (Zhang et al., SC'20) on the
batch engine itself.

The environment is the engine
-----------------------------
An episode replays ``sequence`` consecutive jobs on a machine of ``nodes``
units (model procs: a job holds its ``procs``) through the batch engine's own
event loop (:class:`schedlab.sim.batch.engine.BatchRun`) and the priority
policies' own pass (:meth:`schedlab.policies.batch.priority.PriorityPolicy.decisions`):
wherever that pass would choose the head of the queue, the agent chooses.
So an agent that always picks slot 0 (the oldest waiting job) gives FCFS's
schedule (EASY's with ``backfill="easy"``) bit for bit, one that picks the
shortest requested time gives SJF's (SJF+EASY's), and so on (tests).

Decisions. At each event instant (completions, then arrivals), while some
waiting job fits in the free units the agent picks one of the first
``window`` waiting jobs (oldest first); if it fits it starts now and the
agent picks again, otherwise it is the head: nothing else starts
(``backfill="none"``), or EASY backfilling starts the other waiting jobs
that do not delay its reservation (``"easy"``), and time moves on. When no
waiting job fits nothing is asked (the choice could not change anything).

Observation (``float32``, in [0, 1]; :func:`schedlab.gym.features.batch_observation`,
which an exported agent calls too): for each of the ``window`` slots
five numbers -- present (1) or empty (all 0), wait so far /
``WAIT_SCALE`` (12 h, RLScheduler's), requested time / the source's largest
requested time, units needed / nodes, fits in the free units now -- then
the machine: free units / nodes, waiting jobs beyond the window / window
(at most 1). ``info["action_mask"]``: the slots holding a job (also
:meth:`action_masks`, for sb3-contrib's MaskablePPO); ``info["jobs"]``: each
slot's job row in :attr:`episode`, -1 if empty (scripted agents read exact
values there).

Rewards (``reward``; ``reward_mode``): ``"bsld"`` -- minus the mean bounded
slowdown max(end - submit, tau) / max(runtime, tau), tau = 10 s (the
engine's ``stretch_mean``); ``"wait"`` -- minus the mean wait (s);
``"utilisation"`` -- the engine's utilisation (final only). ``"final"``:
the whole reward at the last step, computed as the engine computes its
metric (equal to it bit for bit); ``"step"``: at each step minus the new
jobs' bounded slowdowns (or waits) / ``sequence``, so the episode sums to
minus the metric up to float summation order.

Episodes: ``sequence`` consecutive jobs (submit order) of the trace (of its
jobs ``span = (lo, hi)`` only, if given: the others are held out), the
first drawn uniformly by the environment's seeded RNG (``reset(seed=...)``;
``options={"start": k}`` fixes it), submit times as in the trace (F1..F4
read them); with no trace and no job table, ``sequence`` fresh jobs of the
Lublin-Feitelson model (``schedlab.workloads.lublin``) for ``nodes`` nodes,
drawn from the same RNG. An episode ends when its last job has started.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import gymnasium
import numpy as np
import polars as pl
from gymnasium import spaces

from schedlab.errors import UserError
from schedlab.gym import features
from schedlab.gym.common import REWARD_MODES, check_action, check_choice, check_int, episode_start, resolve_trace
from schedlab.gym.features import batch_observation
from schedlab.policies.batch.priority import PriorityPolicy
from schedlab.sim.batch.engine import BatchRun, Machine
from schedlab.sim.bound.stretch_bound import BOUNDED_STRETCH_THRESHOLD, bounded_stretch
from schedlab.sim.system.jobs import BATCH_JOBS

ENV = "schedlab/Batch-v0"
#: The generator's requested times are scaled by its runtime cap, e^12 s.
LUBLIN_RUNTIME_CAP = float(np.exp(12.0))
REWARDS = ("bsld", "wait", "utilisation")
BACKFILL = ("none", "easy")


class _AgentHead(PriorityPolicy):
    """The priority pass with the head chosen from outside; logs its starts."""

    name = "agent"

    def __init__(self, machine: Machine) -> None:
        super().__init__(machine)
        self.log: list[int] = []

    def _start(self, job: int, now: float) -> None:
        super()._start(job, now)
        self.log.append(job)


class _AgentHeadEASY(_AgentHead):
    name = "agent+EASY"
    backfill: ClassVar[bool] = True


def load_jobs(env: str, trace: str | Path | None, jobs: pl.DataFrame | None) -> tuple[pl.DataFrame | None, int | None]:
    """The source's job table (None: the generator) and its machine size (None: unknown)."""
    if trace is not None and jobs is not None:
        raise UserError(f"{env}: give a trace or a job table, not both")
    if trace is not None:
        from schedlab.workloads.traces.swf import read

        path = resolve_trace(env, trace)
        if not (path.name.endswith(".swf") or path.name.endswith(".swf.gz")):
            raise UserError(f"{env}: trace {str(trace)!r}: the batch environment reads .swf or .swf.gz files")
        t = read(path)
        size = t.meta.get("machine_procs")
        return t.jobs, int(size) if size else None
    if jobs is not None:
        missing = [c for c in BATCH_JOBS.required if c not in jobs.columns]
        if missing:
            raise UserError(f"{env}: the job table needs the columns {', '.join(missing)}")
        size = int(jobs["machine_procs"][0]) if "machine_procs" in jobs.columns and jobs.height else None
        return jobs.sort("submit", maintain_order=True), size
    return None, None


class BatchEnv(gymnasium.Env[np.ndarray, np.int64]):
    """``schedlab/Batch-v0`` (module docstring)."""

    metadata = {"render_modes": []}  # noqa: RUF012 (Gymnasium declares it so)

    def __init__(
        self,
        trace: str | Path | None = None,
        *,
        jobs: pl.DataFrame | None = None,
        nodes: int | None = None,
        sequence: int = 256,
        window: int = 128,
        backfill: str = "none",
        reward: str = "bsld",
        reward_mode: str = "final",
        span: tuple[int, int] | None = None,
    ) -> None:
        self.window = check_int(ENV, "window", window)
        self.sequence = check_int(ENV, "sequence", sequence)
        self.backfill = check_choice(ENV, "backfill", backfill, BACKFILL)
        self.reward_kind = check_choice(ENV, "reward", reward, REWARDS)
        self.reward_mode = check_choice(ENV, "reward_mode", reward_mode, REWARD_MODES)
        if self.reward_kind == "utilisation" and self.reward_mode == "step":
            raise UserError(f"{ENV}: reward 'utilisation' is given at the end only (reward_mode='final')")
        table, size = load_jobs(ENV, trace, jobs)
        if span is not None:
            if table is None:
                raise UserError(f"{ENV}: span needs a trace or a job table")
            lo, hi = span
            if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo < hi <= table.height):
                raise UserError(f"{ENV}: span must be two job indices 0 <= lo < hi <= {table.height}; got {span!r}")
            table = table.slice(lo, hi - lo)
        self.source = table
        if nodes is None:
            nodes = size if table is not None else 256
            if nodes is None:
                raise UserError(f"{ENV}: the trace gives no machine size (MaxProcs / MaxNodes): give nodes")
        self.nodes = check_int(ENV, "nodes", nodes)
        where = str(trace) if trace is not None else "the job table"
        if table is not None:
            if table.height < self.sequence:
                raise UserError(f"{ENV}: sequence {self.sequence} is longer than {where} ({table.height} jobs)")
            wide = table.filter(pl.col("procs") > self.nodes)
            if wide.height:
                row = wide.row(0, named=True)
                raise UserError(
                    f"{ENV}: {where}: job {row['job_id']} needs {row['procs']} processors but the machine has "
                    f"{self.nodes} (give nodes >= {int(table['procs'].to_numpy().max())}, or another trace)"
                )
            req = table["requested_time"] if "requested_time" in table.columns else table["runtime"]
            self.runtime_scale = max(float(req.to_numpy().max()), 1.0)
        else:
            self.runtime_scale = LUBLIN_RUNTIME_CAP
        self.action_space = spaces.Discrete(self.window)
        self.obs_size = features.size(self.window)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.obs_size,), dtype=np.float32)
        self.episode: pl.DataFrame = pl.DataFrame()
        self._run: BatchRun | None = None

    # ---- episodes ---------------------------------------------------------------------------

    def _draw(self, options: dict[str, Any] | None) -> pl.DataFrame:
        if self.source is None:
            from schedlab.workloads.lublin import lublin_workload

            return lublin_workload(self.np_random, njobs=self.sequence, nodes=self.nodes)
        k = episode_start(ENV, self.np_random, self.source.height, self.sequence, options)
        return self.source.slice(k, self.sequence)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        ep = self._draw(options)
        self.episode = ep
        self._submit = ep["submit"].to_numpy().astype(float)
        self._runtime = ep["runtime"].to_numpy().astype(float)
        col = "requested_time" if "requested_time" in ep.columns else "runtime"
        self._requested = ep[col].to_numpy().astype(float)
        self._need = ep["procs"].to_numpy().astype(np.int64)
        policy = _AgentHeadEASY if self.backfill == "easy" else _AgentHead
        self._run = BatchRun(self._submit, self._runtime, self._requested, self._need, self.nodes, policy)
        self._policy: _AgentHead = self._run.policy
        self._gen: Any = None
        self._t = 0.0
        self._started = 0
        self._to_decision()
        return self._observe(), self._info()

    def _to_decision(self) -> None:
        """Run the engine until the pass asks for a head (or every job has started)."""
        run = self._run
        assert run is not None
        while self._started < self.sequence:
            t = run.advance()
            if t is None:  # pragma: no cover - every job starts before the loop ends
                break
            gen = self._policy.decisions(t)
            try:
                next(gen)
            except StopIteration as stop:
                run.start(stop.value, t)
                self._started += len(stop.value)
                continue
            self._gen, self._t = gen, t
            return
        self._gen = None

    # ---- observations -------------------------------------------------------------------------

    def _window(self) -> list[int]:
        if self._gen is None:
            return []
        out = []
        for job in self._policy.queue:
            out.append(job)
            if len(out) == self.window:
                break
        return out

    def action_masks(self) -> np.ndarray:
        mask = np.zeros(self.window, dtype=bool)
        mask[: len(self._window())] = True
        return mask

    def _observe(self) -> np.ndarray:
        return batch_observation(
            self._window(),
            len(self._policy.queue),
            self._t,
            self._submit,
            self._requested,
            self._need,
            self._policy.free,
            self.nodes,
            self.runtime_scale,
            self.window,
        )

    def _info(self) -> dict[str, Any]:
        jobs = np.full(self.window, -1, dtype=np.int64)
        w = self._window()
        jobs[: len(w)] = w
        return {"action_mask": self.action_masks(), "jobs": jobs, "time": self._t}

    # ---- steps --------------------------------------------------------------------------------

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._gen is None:
            raise UserError(f"{ENV}: step() after the episode ended; call reset()")
        jobs = self._window()
        a = check_action(ENV, action, self.action_masks())
        log = self._policy.log
        seen = len(log)
        now = self._t  # every job this action starts, starts in this pass (the decisions' pass)
        try:
            self._gen.send(jobs[a])
        except StopIteration as stop:
            assert self._run is not None
            self._run.start(stop.value, self._t)
            self._started += len(stop.value)
            self._to_decision()
        new = log[seen:]
        terminated = self._gen is None
        return self._observe(), self._reward(new, now, terminated), terminated, False, self._info()

    def _reward(self, new: list[int], now: float, terminated: bool) -> float:
        if self.reward_mode == "step":
            if not new:
                return 0.0
            j = np.asarray(new)
            start = np.full(len(j), now)
            if self.reward_kind == "wait":
                return -float(np.sum(start - self._submit[j])) / self.sequence
            end = start + self._runtime[j]
            s = bounded_stretch(self._submit[j], self._runtime[j], end, threshold=BOUNDED_STRETCH_THRESHOLD)
            return -float(np.sum(s)) / self.sequence
        if not terminated:
            return 0.0
        return self.metric() * (1.0 if self.reward_kind == "utilisation" else -1.0)

    # ---- the episode's schedule ---------------------------------------------------------------------

    def schedule(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of the episode's jobs so far, in :attr:`episode` row order (NaN: not started)."""
        assert self._run is not None
        return np.array(self._run.start_l, dtype=float), np.array(self._run.end_l, dtype=float)

    def metric(self) -> float:
        """The episode's ``reward`` metric over its jobs, computed as the batch
        engine computes its summary (``stretch_mean``, ``wait_mean``, ``utilisation``)."""
        start, end = self.schedule()
        if self.reward_kind == "bsld":
            return float(bounded_stretch(self._submit, self._runtime, end, threshold=BOUNDED_STRETCH_THRESHOLD).mean())
        if self.reward_kind == "wait":
            return float((start - self._submit).mean())
        horizon = float(end.max() - self._submit.min())
        used = float(np.dot(self._need.astype(float), self._runtime))
        return used / (self.nodes * horizon) if horizon > 0 else float("nan")
