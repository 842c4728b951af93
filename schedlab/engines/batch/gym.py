"""``schedlab/Batch-v0``: RLScheduler's setting (Zhang et al., SC'20) on the
batch engine itself.

The environment is the engine
-----------------------------
An episode replays ``sequence`` consecutive jobs on a machine of ``nodes``
units (model procs: a job holds its ``procs``) through the batch engine's
event loop and the priority policies' pass: wherever that pass would choose
the head of the queue, the agent chooses. So an agent that always picks
slot 0 (the oldest waiting job) gives FCFS's schedule (EASY's with
``backfill="easy"``) bit for bit, one that picks the shortest requested time
gives SJF's (SJF+EASY's), and so on (tests).

Two loops run it (``loop``), with identical observations, masks, rewards,
ends and schedules, step for step, to the bit
(tests/test_batch_gym_reference.py, a hypothesis property among them):

* ``"kernel"`` (the default; training): the pass compiled
  (:mod:`schedlab.engines.batch.gym_kernel`, the operations of
  ``schedlab.engines.batch.sim.fast._priority``), one numba call per step,
  many episodes per call in the vector environment (:class:`BatchVectorEnv`,
  kernel only). Its inputs are read from the episode's job table by the batch
  engine's own ``table_inputs`` (:func:`job_arrays`), the function
  ``start_instance`` builds its ``BatchRun`` from (tests: the same arrays).
* ``"reference"``: the engine's own run. Each episode is the ``BatchRun``
  ``schedlab.engines.instance.start_instance`` builds from the episode's job
  table with the agent as its policy (:class:`schedlab.engines.batch.gym_reference.AgentHead`, an explicit
  ask / answer state machine, as ``schedlab/Packing-v0``'s ``_AgentPlace``:
  no thread, no coroutine), driven here through the run's halves
  (``advance()``, the pass, ``start()``), and stepped to its end after the
  last start (:attr:`BatchEnv.result`: the engine's rows). It is the
  kernel's check, and the loop a researcher changing the batch engine's
  Python loop or the priority pass sees: the queue, the running jobs'
  requested ends and EASY's reservation and backfill scan are the priority
  policies' own (``policies.priority``, ``policies.easy``). It costs about
  3.6x (no backfilling) to 4.7x (EASY) the kernel's CPU time per decision
  (one run alternating the loops, a random valid agent, Lublin's log,
  ``sequence`` 256, ``window`` 128; 2 cores at load 9.9; docs/gym.md).

``setting="rlscheduler"`` (RLScheduler's committed pick, its pass per event,
backfilling, decision points and observation fill:
:mod:`schedlab.engines.batch.gym_rlscheduler`) runs on the same two loops: the
kernel's :func:`schedlab.engines.batch.gym_kernel._rl_run` (the default, and
the vector environment's) and, as its check, the engine's run under
``RLSchedulerLoop`` (tests/test_gym_batch_rlscheduler_kernel.py).

Decisions (schedlab's setting). At each event instant (completions, then arrivals), while some
waiting job fits in the free units the agent picks one of the first
``window`` waiting jobs (oldest first); if it fits it starts now and the
agent picks again, otherwise it is the head: nothing else starts
(``backfill="none"``), or EASY backfilling starts the other waiting jobs
that do not delay its reservation (``"easy"``), and time moves on. Nothing
is asked when the choice could not change anything: no waiting job fits,
one job waits, every waiting job fits at once (all start now), or, with
EASY, the one job that fits would start whatever the head (the kernel's
module docstring, rule (c); both loops apply the same rule).

Observation (``float32``, in [0, 1]; :func:`schedlab.engines.batch.features.batch_observation`,
which an exported agent calls too): for each of the ``window`` slots
five numbers -- present (1) or empty (all 0), wait so far /
``WAIT_SCALE`` (12 h, RLScheduler's), requested time / the source's largest
requested time, units needed / nodes, fits in the free units now -- then
the machine: free units / nodes, waiting jobs beyond the window / window
(at most 1). ``info["action_mask"]``: the slots holding a job (also
:meth:`action_masks`, for sb3-contrib's MaskablePPO); ``info["jobs"]``: each
slot's job row in :attr:`episode`, -1 if empty (scripted agents read exact
values there). An action on an empty slot means what ``invalid_action``
says (:data:`schedlab.gym.common.INVALID_ACTIONS`; default the nearest
filled slot), so a library without masking runs.

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
from typing import Any

import gymnasium
import numpy as np
import polars as pl
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from schedlab.engines.batch import features
from schedlab.engines.batch import gym_kernel as K
from schedlab.engines.batch.gym_reference import ReferenceEpisode
from schedlab.engines.batch.gym_rlscheduler import RLSchedulerEpisode
from schedlab.errors import UserError
from schedlab.gym.common import (
    INVALID_ACTION_PENALTY,
    INVALID_ACTIONS,
    REWARD_MODES,
    check_choice,
    check_int,
    episode_start,
    resolve_action,
    resolve_trace,
)
from schedlab.sim.bound.stretch_bound import BOUNDED_STRETCH_THRESHOLD, bounded_stretch
from schedlab.sim.common.portable import dot
from schedlab.sim.system.jobs import BATCH_JOBS

ENV = "schedlab/Batch-v0"
#: The generator's requested times are scaled by its runtime cap, e^12 s.
LUBLIN_RUNTIME_CAP = float(np.exp(12.0))
REWARDS = ("bsld", "wait", "utilisation")
BACKFILL = ("none", "easy")
#: ``loop``: the compiled kernel (training) or the batch engine's own reference run (module docstring).
KERNEL, REFERENCE = "kernel", "reference"
LOOPS = (KERNEL, REFERENCE)
#: ``setting``: schedlab's (the default) or RLScheduler's (``schedlab.engines.batch.gym_rlscheduler``).
SCHEDLAB, RLSCHEDULER = "schedlab", "rlscheduler"
SETTINGS = (SCHEDLAB, RLSCHEDULER)


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
        missing = BATCH_JOBS.missing(jobs.columns)  # the engine's declaration (``Engine.jobs``)
        if missing:
            raise UserError(f"{env}: the job table needs the columns {', '.join(missing)}")
        size = int(jobs["machine_procs"][0]) if "machine_procs" in jobs.columns and jobs.height else None
        return jobs.sort("submit", maintain_order=True), size
    return None, None


def job_arrays(table: pl.DataFrame, nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """submit, runtime, requested time (the runtime where there is none), need
    (float64, int64) of ``table`` on a machine of ``nodes`` processors: the
    batch engine's own reading of a job table (its ``table_inputs``: the
    checks, the requested-time and machine-model rules) that
    ``schedlab.engines.instance.start_instance`` builds a ``BatchRun`` from:
    the compiled kernel's inputs (``loop="kernel"``; ``loop="reference"``
    runs that ``BatchRun`` itself, module docstring)."""
    from schedlab.engines.batch.sim.engine import table_inputs

    t = table_inputs(table, model="procs", procs=nodes)
    return t.submit, t.runtime, t.requested, t.need


def dense_rank(*keys: np.ndarray) -> np.ndarray:
    """Each job's rank (0, 1, ...) in the order of ``keys`` (the first the primary), jobs of
    equal keys sharing one: the compiled kernel's counting sorts in RLScheduler's setting read
    them for its observation's stable sorts by (requested, submit) and (need, submit, requested)."""
    idx = np.lexsort(keys[::-1])
    change = np.zeros(len(idx), dtype=np.int64)
    for k in keys:
        s = k[idx]
        change[1:] |= s[1:] != s[:-1]
    rank = np.empty(len(idx), dtype=np.int64)
    rank[idx] = np.cumsum(change)
    return rank


def episode_metric(
    kind: str, submit: np.ndarray, runtime: np.ndarray, need: np.ndarray, start: np.ndarray, end: np.ndarray, nodes: int
) -> float:
    """The episode's ``reward`` metric over its jobs, computed as the batch
    engine computes its summary (``stretch_mean``, ``wait_mean``, ``utilisation``)."""
    if kind == "bsld":
        return float(bounded_stretch(submit, runtime, end, threshold=BOUNDED_STRETCH_THRESHOLD).mean())
    if kind == "wait":
        return float((start - submit).mean())
    horizon = float(end.max() - submit.min())
    used = dot(need, runtime)
    return used / (nodes * horizon) if horizon > 0 else float("nan")


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
        invalid_action: str = "nearest",
        loop: str = KERNEL,
        setting: str = SCHEDLAB,
    ) -> None:
        self.loop = check_choice(ENV, "loop", loop, LOOPS)
        self.setting = check_choice(ENV, "setting", setting, SETTINGS)
        self.window = check_int(ENV, "window", window)
        self.sequence = check_int(ENV, "sequence", sequence)
        self.backfill = check_choice(ENV, "backfill", backfill, BACKFILL)
        self.reward_kind = check_choice(ENV, "reward", reward, REWARDS)
        self.reward_mode = check_choice(ENV, "reward_mode", reward_mode, REWARD_MODES)
        self.invalid_action = check_choice(ENV, "invalid_action", invalid_action, INVALID_ACTIONS)
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
            self._source_arrays = job_arrays(table, self.nodes)
            self.runtime_scale = max(float(self._source_arrays[2].max()), 1.0)
        else:
            self.runtime_scale = LUBLIN_RUNTIME_CAP
        self.action_space = spaces.Discrete(self.window)
        self.obs_size = features.size(self.window)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.obs_size,), dtype=np.float32)
        #: The kernel's settings, written into an episode's state by ``K.load``: backfilling, the reward
        #: terms, tau, the observation's requested-time scale.
        self._kernel_args = (
            self.backfill == "easy",
            {"bsld": K.TERM_BSLD, "wait": K.TERM_WAIT}.get(self.reward_kind, K.TERM_NONE)
            if self.reward_mode == "step"
            else K.TERM_NONE,
            BOUNDED_STRETCH_THRESHOLD,
            self.runtime_scale,
        )
        self._kernel_setting = K.SETTING_RLSCHEDULER if self.setting == RLSCHEDULER else K.SETTING_SCHEDLAB
        self._state = K.allocate(1, self.sequence)
        self._episode: pl.DataFrame | None = pl.DataFrame()
        self._start = 0
        self._loaded = False
        #: Slots of the current question's mask (a prefix; 1 when none is pending: slot 0, a no-op).
        self._valid = 0
        #: ``loop="kernel"`` and the episode running: the slots a step may take without a check (else 0).
        self._fast = 0
        self._time = 0.0  # the current instant (info["time"]) for the no-op's info
        self._step_terms = self.reward_mode == "step"  # rewards at each step: the kernel's summed terms
        self._ref: ReferenceEpisode | RLSchedulerEpisode | None = None  # loop="reference": the episode's run

    def _buffers(self, envs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Observation, mask and slot buffers for ``envs`` episodes."""
        return (
            np.zeros((envs, self.obs_size), dtype=np.float32),
            np.zeros((envs, self.window), dtype=bool),
            np.full((envs, self.window), -1, dtype=np.int64),
        )

    def _fresh(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A new observation, mask and slots, each written in full by the loop and then handed to the user:
        nothing the environment returns is written again (Gymnasium's rule; no copy needed)."""
        return _empty(self.obs_size, _OBS), _empty(self.window, _MASK), _empty(self.window, _SLOT)

    # ---- episodes ---------------------------------------------------------------------------

    def draw(
        self, rng: np.random.Generator, options: dict[str, Any] | None
    ) -> tuple[int, pl.DataFrame | None, tuple[np.ndarray, ...]]:
        """An episode's first job (0 for the generator), its generated table (None
        for a source: :attr:`episode` slices it when read) and its job arrays."""
        if self.source is None:
            from schedlab.workloads.lublin import lublin_workload

            table = lublin_workload(rng, njobs=self.sequence, nodes=self.nodes)
            return 0, table, job_arrays(table, self.nodes)
        k = episode_start(ENV, rng, self.source.height, self.sequence, options)
        return k, None, tuple(a[k : k + self.sequence] for a in self._source_arrays)

    def load(self, state: tuple[np.ndarray, ...], e: int, arrays: tuple[np.ndarray, ...]) -> None:
        """Start episode ``e`` of ``state`` on ``arrays`` and run it to its first decision."""
        submit, runtime, requested, need = arrays
        order = np.argsort(submit, kind="stable")
        if self._kernel_setting == K.SETTING_RLSCHEDULER:
            ranks = dense_rank(requested, submit), dense_rank(need, submit, requested)
        else:
            ranks = _NO_RANKS, _NO_RANKS
        K.load(
            *state,
            e,
            submit,
            runtime,
            requested,
            need,
            order,
            self.nodes,
            *self._kernel_args,
            self._kernel_setting,
            self.window,
            *ranks,
        )

    @property
    def episode(self) -> pl.DataFrame:
        """The current episode's job table (rows = the jobs the environment indexes)."""
        if self._episode is None:
            assert self.source is not None
            self._episode = self.source.slice(self._start, self.sequence)
        return self._episode

    @property
    def requested(self) -> np.ndarray:
        """The current episode's requested times (s), by job row (scripted agents read them)."""
        if self._ref is not None:
            return self._ref.requested
        return self._state[0][0, K.REQUESTED]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._start, self._episode, arrays = self.draw(self.np_random, options)
        self._loaded = True
        if self.setting == RLSCHEDULER and self.loop == REFERENCE:
            self._ref = RLSchedulerEpisode(self.episode, self.nodes, self.backfill == "easy", self.window)
        elif self.loop == REFERENCE:
            self._ref = ReferenceEpisode(self.episode, self.nodes, self.backfill == "easy")
        else:
            self.load(self._state, 0, arrays)
        obs, mask, slots = self._observe()
        return obs, self._info(mask, slots)

    @property
    def result(self) -> Any:
        """``loop="reference"``: the engine's rows of the episode's run once it has ended
        (``StartedRun.rows()``: per-job columns and summary), else None."""
        return self._ref.result if self._ref is not None else None

    # ---- observations -------------------------------------------------------------------------

    def action_masks(self) -> np.ndarray:
        mask = np.zeros(self.window, dtype=bool)
        mask[: self._valid] = True
        return mask

    def _observe(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The current question's observation, mask and slots, fresh (after a reset or a no-op step)."""
        obs, mask, slots = out = self._fresh()
        if self._ref is not None:
            self._ref.observe(obs, mask, slots, self.nodes, self.runtime_scale)
            k = int(mask.sum()) if self._ref.pending else 0
            self._time = self._ref.now
        else:
            k = K.observe(*self._state, 0, obs, mask, slots)
            self._time = float(self._state[3][0, K.NOW])
        self._valid = k or 1
        self._fast = k if self._loaded and self._ref is None else 0
        return out

    def _info(self, mask: np.ndarray, slots: np.ndarray) -> dict[str, Any]:
        return {"action_mask": mask, "jobs": slots, "time": self._time}

    # ---- steps --------------------------------------------------------------------------------

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        a = action if type(action) in _INTS else -1
        if 0 <= a < self._fast:  # the common case: a slot of the mask, the compiled loop (checked without a call)
            window = self.window  # self._fresh(), inlined
            obs, mask, slots = _empty(self.obs_size, _OBS), _empty(window, _MASK), _empty(window, _SLOT)
            F, N, S, T = self._state
            k = K.step_one(F, N, S, T, a, obs, mask, slots)
            self._valid = k or 1
            self._fast = k
            terminated = k == 0
            self._loaded = not terminated
            self._time = now = T.item(0, K.NOW)
            if self._step_terms:  # self._reward(0, terminated), inlined
                reward = -T.item(0, K.REW) / self.sequence
                T[0, K.REW] = 0.0
            else:
                reward = self._reward(0, terminated) if terminated else 0.0
            return obs, reward, terminated, False, {"action_mask": mask, "jobs": slots, "time": now}
        if not self._loaded:
            raise UserError(f"{ENV}: step() after the episode ended; call reset()")
        a = resolve_action(ENV, action, self.action_masks(), self.invalid_action)
        if a is None:
            obs, mask, slots = self._observe()
            return obs, -INVALID_ACTION_PENALTY, False, False, self._info(mask, slots)
        if self._ref is not None:
            return self._step_reference(self._ref.job_at(a))
        self._fast = self._valid  # a slot of the mask now: the step above
        return self.step(a)

    def _step_reference(self, job: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """``loop="reference"``: answer the question with ``job`` (-1: none was
        asked; the episode ends) and run the engine's run to the next one."""
        ref = self._ref
        assert ref is not None
        if ref.pending:
            ref.answer(job)
        terminated = not ref.pending
        self._loaded = not terminated
        obs, mask, slots = self._observe()
        if self.reward_mode == "step":
            reward = -ref.reward_terms(self._kernel_args[1], self._kernel_args[2]) / self.sequence
        elif terminated:
            reward = self.metric() * (1.0 if self.reward_kind == "utilisation" else -1.0)
        else:
            reward = 0.0
        return obs, reward, terminated, False, self._info(mask, slots)

    def _reward(self, e: int, terminated: bool) -> float:
        if self.reward_mode == "step":
            T = self._state[3]
            r = -float(T[e, K.REW]) / self.sequence
            T[e, K.REW] = 0.0
            return r
        if not terminated:
            return 0.0
        return self.metric(e) * (1.0 if self.reward_kind == "utilisation" else -1.0)

    # ---- the episode's schedule ---------------------------------------------------------------------

    def schedule(self, e: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of the episode's jobs so far, in :attr:`episode` row order (NaN: not started)."""
        if self._ref is not None:
            return self._ref.schedule()
        F = self._state[0]
        return F[e, K.START].copy(), F[e, K.END].copy()

    def metric(self, e: int = 0) -> float:
        """The episode's ``reward`` metric over its jobs, computed as the batch
        engine computes its summary (``stretch_mean``, ``wait_mean``, ``utilisation``)."""
        if self._ref is not None:
            ref = self._ref
            return episode_metric(self.reward_kind, ref.submit, ref.runtime, ref.need, *ref.schedule(), self.nodes)
        F, N = self._state[0], self._state[1]
        return episode_metric(
            self.reward_kind, F[e, K.SUBMIT], F[e, K.RUNTIME], N[e, K.NEED], F[e, K.START], F[e, K.END], self.nodes
        )


#: The action types the single environment's step takes without a call (a Python int, numpy's int64).
_INTS = (int, np.int64)
#: The dtypes of an observation, a mask, the slots' jobs.
_OBS, _MASK, _SLOT = np.dtype(np.float32), np.dtype(np.bool_), np.dtype(np.int64)
#: numpy's ``empty``, bound once (a step allocates three arrays: dtype objects and a bound name halve the cost).
_empty = np.empty
#: The kernel's rank arrays in schedlab's setting (unread there).
_NO_RANKS = np.zeros(0, dtype=np.int64)
#: ``invalid_action`` -> the kernel's code.
INVALID_CODES = {"nearest": K.NEAREST, "penalty": K.PENALTY, "raise": K.RAISE}


class BatchVectorEnv(VectorEnv):
    """``num_envs`` episodes of ``schedlab/Batch-v0`` stepped by one compiled
    call (``gymnasium.make_vec("schedlab/Batch-v0", num_envs=...)``; the
    keyword arguments are :class:`BatchEnv`'s). Sub-environment ``i`` is
    seeded ``seed + i`` (as Gymnasium's ``SyncVectorEnv``; ``reset(options={"start":
    [k0, k1, ...]})`` fixes each one's first job); an episode that
    ends is reset at the next step (``AutoresetMode.NEXT_STEP``: that step's
    action is ignored, its reward is 0). ``info["action_mask"]``: the
    ``(num_envs, window)`` masks (also :meth:`action_masks`); ``info["jobs"]``:
    each slot's job row. The compiled kernel only: ``loop="reference"`` is
    refused (one UserError line); its episodes run one at a time
    (``gymnasium.make``, or ``make_vec``'s ``vectorization_mode="sync"``)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}  # noqa: RUF012 (Gymnasium declares it so)

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        self.num_envs = check_int(ENV, "num_envs", num_envs)
        self.env = env = BatchEnv(**kwargs)
        if env.loop != KERNEL:
            raise UserError(
                f"{ENV}: the vector environment steps its episodes in the compiled kernel only (loop={KERNEL!r}); "
                f"loop={env.loop!r} is one episode at a time (gymnasium.make, or make_vec's vectorization_mode='sync')"
            )
        self.single_observation_space = env.observation_space
        self.single_action_space = env.action_space
        self.observation_space = batch_space(env.observation_space, self.num_envs)
        self.action_space = batch_space(env.action_space, self.num_envs)
        self._state = K.allocate(self.num_envs, env.sequence)
        self._out = env._buffers(self.num_envs)
        self._rngs = [np.random.default_rng(i) for i in range(self.num_envs)]
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._every = np.ones(self.num_envs, dtype=bool)
        self._loaded = False

    def _load(self, e: int, options: dict[str, Any] | None = None) -> None:
        _, _, arrays = self.env.draw(self._rngs[e], options)
        self.env.load(self._state, e, arrays)
        obs, mask, slots = self._out
        K.observe(*self._state, e, obs[e], mask[e], slots[e])

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            seeds = [seed + i for i in range(self.num_envs)] if isinstance(seed, int) else list(seed)
            self._rngs = [gymnasium.utils.seeding.np_random(s)[0] for s in seeds]
        for e in range(self.num_envs):
            self._load(e, self._options(e, options))
        self._autoreset[:] = False
        self._loaded = True
        return self._out[0].copy(), self._info()

    def _options(self, e: int, options: dict[str, Any] | None) -> dict[str, Any] | None:
        """Sub-environment ``e``'s reset options: ``options["start"]`` may give one start per sub-environment."""
        if options and isinstance(options.get("start"), (list, tuple, np.ndarray)):
            starts = options["start"]
            if len(starts) != self.num_envs:
                raise UserError(f"{ENV}: options['start'] gives {len(starts)} starts for {self.num_envs} environments")
            return {**options, "start": starts[e]}
        return options

    def action_masks(self) -> np.ndarray:
        return self._out[1].copy()

    def _info(self) -> dict[str, Any]:
        every = self._every
        return {"action_mask": self._out[1].copy(), "_action_mask": every, "jobs": self._out[2].copy(), "_jobs": every}

    def step(self, actions: Any):
        if not self._loaded:
            raise UserError(f"{ENV}: step() before reset()")
        env = self.env
        F, N, S, T = self._state
        obs, mask, slots = self._out
        a = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)
        rewards = np.empty(self.num_envs)
        skip = self._autoreset
        invalid = INVALID_CODES[env.invalid_action]
        factor = -1.0 / env.sequence if env.reward_mode == "step" else 0.0
        bad = K.vstep(F, N, S, T, a, skip, invalid, INVALID_ACTION_PENALTY, factor, obs, mask, slots, rewards)
        if bad >= 0:
            resolve_action(f"{ENV} (sub-environment {bad})", int(a[bad]), mask[bad], "raise")
        terminated = S[:, K.PENDING] == 0
        terminated &= ~skip
        if env.reward_mode == "final":
            sign = 1.0 if env.reward_kind == "utilisation" else -1.0
            for e in np.flatnonzero(terminated):
                sub, run, need = F[e, K.SUBMIT], F[e, K.RUNTIME], N[e, K.NEED]
                rewards[e] = sign * episode_metric(
                    env.reward_kind, sub, run, need, F[e, K.START], F[e, K.END], env.nodes
                )
        for e in np.flatnonzero(skip):
            self._load(int(e))
        self._autoreset = terminated
        return obs.copy(), rewards, terminated, np.zeros(self.num_envs, dtype=bool), self._info()
