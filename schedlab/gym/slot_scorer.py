"""Train a slot-scoring agent on ``schedlab/Batch-v0``: clone a heuristic,
then improve on it by evolution strategies, and export it as a batch policy.

    python -m schedlab.gym.slot_scorer --trace lublin_256.swf --span 3000 10000 \\
        --generations 40 --out runs/slot-lublin1

The agent (:class:`schedlab.api.agent.SlotAgent`) scores every waiting job
in the window with the same small network over that job's own features
(:func:`schedlab.engines.batch.features.slot_features`: what SJF and F1 read,
its wait, whether it fits now) and takes the best: RLScheduler's "kernel"
network, a masked argmax over slots. A linear term of the features beside
the hidden layer makes F1's order exactly representable.

1. **Clone** (behaviour cloning): the heuristic (``--teacher``, F1 by
   default) runs ``--clone-episodes`` training episodes in the vector
   environment; at each decision its pick, the slots' features and the mask
   are recorded, and the network is fitted to the picks by cross-entropy
   over the filled slots (torch, Adam). The clone's agreement with the
   teacher's picks on a fresh set of episodes is recorded.
2. **Evolve**: CMA-ES (the ``cmaes`` package) on the network's weights from
   the clone. Each generation draws ``--batch`` training episodes (seeded by
   the seed and the generation: common random numbers within a generation)
   and scores every candidate by its mean bounded slowdown there, divided by
   the teacher's on the same episodes. After each generation the state (the
   CMA-ES object, the generation, the clone) is saved in ``OUT/checkpoint.pkl``:
   running the same command again resumes from it (``--generations`` is the
   total).
3. **Choose and export**: the clone and the CMA-ES mean are scored on
   ``--validation`` training episodes (the same for both and for the
   teacher), and the better one is written as ``OUT/agent.py`` +
   ``agent.npz`` + ``training.json`` (spec, seeds, commit, CPU seconds, the
   curve, the validation figures).

Every generation logs to MLflow (experiment ``schedlab-rl``; ``--tracking-uri``,
default a SQLite store in OUT): the candidates' best and mean ratio to the
teacher, CMA-ES's step size, CPU seconds. ``--span LO HI`` keeps every
episode among jobs LO..HI-1 (the others held out for the sweep).

F1 reads absolute submit times, which are small at the head of a log: a
network trained among later jobs meets other times there. ``--offsets S``
reads every episode as if its log were shifted to a random first submit in
1..S (the schedule does not change, only what F1 and the features read);
``--features invariant`` gives the network features that read differences of
times only (:func:`schedlab.engines.batch.features.slot_features`).
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.engines.batch.features import FEATURE_SETS, SLOT_FEATURES, slot_features, slot_scores
from schedlab.errors import UserError

Layers = list[tuple[np.ndarray, np.ndarray]]
#: A decision's picks: (features (E, W, F), mask (E, W), the environments' state) -> slot per environment.
Chooser = Callable[[np.ndarray, np.ndarray, "Decision"], np.ndarray]

#: The priority keys a teacher may be (smallest first), as ``schedlab.engines.batch.policies.priority`` computes them.
TEACHERS = ("F1", "SJF")
CHECKPOINT = "checkpoint.pkl"
#: A masked slot's logit in the clone's cross-entropy (exp of it is 0 in float32).
MASKED_LOGIT = -1e9


class Decision:
    """The pending decisions of a :class:`~schedlab.engines.batch.gym.BatchVectorEnv`:
    each slot's job's submit, requested time and need, each environment's now
    and free processors (read from the vector environment's kernel state)."""

    def __init__(self, venv: Any, slots: np.ndarray, delta: np.ndarray | None = None) -> None:
        from schedlab.engines.batch import gym_kernel as K

        F, N, S, T = venv._state  # the kernel's state (gym_kernel's layout): read only
        e = np.arange(slots.shape[0])[:, None]
        rows = np.maximum(slots, 0)
        self.submit = F[e, K.SUBMIT, rows]
        self.requested = F[e, K.REQUESTED, rows]
        self.need = N[e, K.NEED, rows]
        self.now = T[:, K.NOW][:, None]
        if delta is not None:  # the episode as if its log were shifted by delta (episode_deltas): times read only
            self.submit = self.submit + delta[:, None]
            self.now = self.now + delta[:, None]
        self.free = S[:, K.FREE][:, None]
        self.nodes = venv.env.nodes

    def features(self, features: str = "submit") -> np.ndarray:
        return slot_features(self.submit, self.requested, self.need, self.now, self.free, self.nodes, features)

    def keys(self, teacher: str) -> np.ndarray:
        """The teacher's priority key of each slot (smallest first), as the policy computes it."""
        r = np.maximum(self.requested, 1e-300)
        if teacher == "SJF":
            return self.requested.astype(np.float64)
        s = np.where(self.submit > 0, self.submit, 0.1)
        return np.log10(r) * self.need + 870.0 * np.log10(s)


def teacher_chooser(teacher: str) -> Chooser:
    """The teacher's pick: the filled slot of smallest key, the first (oldest) on ties."""

    def choose(x: np.ndarray, mask: np.ndarray, d: Decision) -> np.ndarray:
        keys = np.where(mask, d.keys(teacher), np.inf)
        return np.argmin(keys, axis=1)

    return choose


def network_chooser(layers: Layers) -> Chooser:
    """The network's pick: the filled slot of highest score, the first on ties (as :class:`SlotAgent`)."""

    def choose(x: np.ndarray, mask: np.ndarray, d: Decision) -> np.ndarray:
        return np.argmax(np.where(mask, slot_scores(layers, x), -np.inf), axis=1)

    return choose


def sources(env_kwargs: dict[str, Any], shift: bool) -> list[dict[str, Any]]:
    """The environments' settings episodes are drawn from: ``env_kwargs``,
    and with ``shift`` also the same jobs with their submit times shifted so
    that the span's first job is submitted at 0. F1 (and the slot features)
    read absolute submit times, and the held-out head of a log has small
    ones: the shifted copy shows the training such times, with the training
    jobs only."""
    if not shift:
        return [env_kwargs]
    import polars as pl

    from schedlab.engines.batch.gym import BatchEnv

    probe = BatchEnv(**env_kwargs)
    assert probe.source is not None
    table = probe.source.with_columns(pl.col("submit") - probe.source["submit"].min())
    rest = {k: v for k, v in env_kwargs.items() if k not in ("trace", "span", "nodes")}
    return [env_kwargs, {**rest, "jobs": table, "nodes": probe.nodes}]


def total_bsld(
    venvs: list[Any],
    starts: list[np.ndarray],
    choose: Chooser,
    steps: list[int],
    firsts: list[np.ndarray | None] | None = None,
    features: str = "submit",
) -> float:
    """The summed mean bounded slowdowns of the episodes at ``starts`` of each
    of ``venvs`` (with ``firsts``, each episode's first submit time as the
    chooser reads it: :func:`run_episodes`)."""
    firsts = firsts or [None] * len(venvs)
    return float(
        sum(
            run_episodes(v, s, choose, steps=steps, firsts=f, features=features).sum()
            for v, s, f in zip(venvs, starts, firsts, strict=True)
        )
    )


def draw_firsts(venv: Any, rng: np.random.Generator, offsets: float | None) -> np.ndarray | None:
    """With ``offsets``, one first submit time per sub-environment, uniform
    among the whole seconds 1..``offsets`` (else None: the log's own times)."""
    if offsets is None:
        return None
    return rng.integers(1, int(offsets) + 1, size=venv.num_envs).astype(np.float64)


def episode_deltas(venv: Any, firsts: np.ndarray) -> np.ndarray:
    """The shift of each sub-environment's episode that puts its first submit
    at ``firsts``: whole seconds (the log's times are), so the shifted times
    are exact in float64. A schedule reads only differences of times (waits,
    ends, the shadow time), so it is that of the shifted log; what the
    shift changes is what F1 and the slot features read of absolute times."""
    from schedlab.engines.batch import gym_kernel as K

    first = venv._state[0][:, K.SUBMIT, : venv.env.sequence].min(axis=1)
    return np.asarray(firsts, dtype=np.float64) - first


def make_vec(env_kwargs: dict[str, Any], n: int) -> Any:
    from schedlab.engines.batch.gym import BatchVectorEnv

    return BatchVectorEnv(num_envs=n, **{**env_kwargs, "reward": "bsld", "reward_mode": "final"})


def run_episodes(
    venv: Any,
    starts: np.ndarray,
    choose: Chooser,
    record: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None,
    schedules: dict[int, np.ndarray] | None = None,
    steps: list[int] | None = None,
    firsts: np.ndarray | None = None,
    features: str = "submit",
) -> np.ndarray:
    """Each episode's mean bounded slowdown (the environment's final reward,
    the engine's ``stretch_mean``), the episodes starting at ``starts`` (one
    per sub-environment of ``venv``), every decision answered by
    ``choose``; ``record(features, mask, picks)`` sees the decisions of the
    episodes not yet ended; ``schedules[e]``, if given, is set to episode
    ``e``'s start times (by row) when it ends; ``steps[0]``, if given, is
    increased by the decisions answered in the episodes (the environment
    steps a training budget counts); ``firsts``, if given, is each episode's
    first submit time as ``choose`` reads the times (:func:`episode_deltas`:
    the schedule is the same, only what F1 and the features read moves);
    ``features`` the slot feature set ``choose`` and ``record`` see."""
    obs, info = venv.reset(options={"start": [int(s) for s in starts]})
    delta = None if firsts is None else episode_deltas(venv, firsts)
    n = len(starts)
    result = np.full(n, np.nan)
    done = np.zeros(n, dtype=bool)
    while not done.all():
        width = max(int(info["action_mask"].sum(axis=1).max()), 1)  # the masks are prefixes: the rest is empty
        mask = info["action_mask"][:, :width]
        d = Decision(venv, info["jobs"][:, :width], delta)
        x = d.features(features)
        picks = choose(x, mask, d)
        if record is not None:
            live = ~done & (mask.sum(axis=1) > 1)  # a decision with one filled slot teaches nothing
            record(x[live], mask[live], picks[live])
        if steps is not None:
            steps[0] += int(np.count_nonzero(~done))
        obs, reward, terminated, _, info = venv.step(picks)
        ended = terminated & ~done
        result[ended] = -reward[ended]
        if schedules is not None:
            from schedlab.engines.batch import gym_kernel as K

            for e in np.flatnonzero(ended):
                schedules[int(e)] = venv._state[0][e, K.START].copy()
        done |= terminated
    return result


def draw_starts(venv: Any, rng: np.random.Generator) -> np.ndarray:
    """One first job per sub-environment, uniform over the span (as the environment draws them)."""
    env = venv.env
    return rng.integers(0, env.source.height - env.sequence + 1, size=venv.num_envs)


# ---- the network: numpy layers <-> a flat vector <-> torch -----------------------------------------------------


def init_layers(hidden: int, rng: np.random.Generator) -> Layers:
    """A fresh network: ``hidden`` tanh units, its output, the linear term (zero)."""
    f = SLOT_FEATURES
    return [
        (rng.normal(0, 1 / np.sqrt(f), (hidden, f)).astype(np.float32), np.zeros(hidden, np.float32)),
        (rng.normal(0, 1 / np.sqrt(hidden), (1, hidden)).astype(np.float32), np.zeros(1, np.float32)),
        (np.zeros((1, f), np.float32), np.zeros(1, np.float32)),
    ]


def flatten(layers: Layers) -> np.ndarray:
    return np.concatenate([a.ravel() for wb in layers for a in wb]).astype(np.float64)


def unflatten(vector: np.ndarray, like: Layers) -> Layers:
    out, i = [], 0
    for w, b in like:
        parts = []
        for a in (w, b):
            parts.append(vector[i : i + a.size].reshape(a.shape).astype(np.float32))
            i += a.size
        out.append((parts[0], parts[1]))
    return out


def clone(
    x: np.ndarray,
    mask: np.ndarray,
    picks: np.ndarray,
    *,
    hidden: int,
    epochs: int,
    seed: int,
    lr: float = 1e-2,
    batch: int = 256,
) -> tuple[Layers, list[float]]:
    """Fit the network to the recorded picks: cross-entropy of the masked
    softmax over slots, Adam; returns the layers and each epoch's mean loss."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    layers = init_layers(hidden, np.random.default_rng(seed))
    params = [torch.tensor(a, requires_grad=True) for wb in layers for a in wb]
    w0, b0, w1, b1, ws, bs = params
    opt = torch.optim.Adam(params, lr=lr)
    width = int(mask.sum(axis=1).max())  # the mask is a prefix of the slots: the empty tail is left out
    X, M = torch.from_numpy(np.ascontiguousarray(x[:, :width])), torch.from_numpy(np.ascontiguousarray(mask[:, :width]))
    Y = torch.from_numpy(picks.astype(np.int64))
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(epochs):
        order = torch.randperm(len(Y), generator=gen)
        total = 0.0
        for i in range(0, len(Y), batch):
            idx = order[i : i + batch]
            xb = X[idx]
            score = (torch.tanh(xb @ w0.T + b0) @ w1.T + b1 + xb @ ws.T + bs)[..., 0]
            score = score.masked_fill(~M[idx], MASKED_LOGIT)
            loss = torch.nn.functional.cross_entropy(score, Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / len(Y))
    trained = [p.detach().numpy().copy() for p in params]
    return [(trained[i], trained[i + 1]) for i in range(0, len(trained), 2)], losses


def agreement(layers: Layers, x: np.ndarray, mask: np.ndarray, picks: np.ndarray) -> float:
    """The share of recorded decisions where the network picks the recorded slot."""
    chosen = np.argmax(np.where(mask, slot_scores(layers, x), -np.inf), axis=1)
    return float(np.mean(chosen == picks))


def record_teacher(
    venv: Any,
    starts: np.ndarray,
    teacher: str,
    steps: list[int] | None = None,
    firsts: np.ndarray | None = None,
    features: str = "submit",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The teacher's decisions on the episodes at ``starts`` (features, masks,
    picks; with ``firsts``, the episodes' times shifted: :func:`run_episodes`)
    and its per-episode bounded slowdowns."""
    xs: list[np.ndarray] = []
    ms: list[np.ndarray] = []
    ps: list[np.ndarray] = []

    window = venv.env.window

    def keep(x: np.ndarray, m: np.ndarray, p: np.ndarray) -> None:  # padded back to the window's width
        xs.append(np.pad(x, ((0, 0), (0, window - x.shape[1]), (0, 0))))
        ms.append(np.pad(m, ((0, 0), (0, window - m.shape[1]))))
        ps.append(p)

    bsld = run_episodes(venv, starts, teacher_chooser(teacher), keep, steps=steps, firsts=firsts, features=features)
    return np.concatenate(xs), np.concatenate(ms), np.concatenate(ps), bsld


# ---- the training run ----------------------------------------------------------------------------------------


def train(
    env_kwargs: dict[str, Any],
    *,
    out: Path,
    teacher: str = "F1",
    hidden: int = 16,
    seed: int = 0,
    clone_episodes: int = 32,
    clone_epochs: int = 30,
    generations: int = 30,
    population: int | None = None,
    sigma: float = 0.05,
    batch: int = 16,
    validation: int = 32,
    tracking_uri: str | None = None,
    name: str = "RL",
    shift: bool = False,
    offsets: float | None = None,
    features: str = "submit",
) -> dict[str, Any]:
    """Clone, evolve (resuming from OUT/checkpoint.pkl), choose, export (module docstring); returns the record."""
    import mlflow
    from cmaes import CMA

    from schedlab.gym.train import _json_values, export, provenance

    if features not in FEATURE_SETS:
        raise UserError(f"slot_scorer: features must be one of {', '.join(FEATURE_SETS)}; got {features!r}")
    if teacher not in TEACHERS:
        raise UserError(f"slot_scorer: teacher must be one of {', '.join(TEACHERS)}; got {teacher!r}")
    out.mkdir(parents=True, exist_ok=True)
    env_kwargs = {**env_kwargs}
    cpu0 = time.process_time()
    path = out / CHECKPOINT
    spec = _spec(env_kwargs, teacher, hidden, seed, sigma, batch, population, shift, offsets, features)
    state: dict[str, Any]
    if path.exists():
        state = pickle.loads(path.read_bytes())
        if state["spec"] != spec:
            raise UserError(f"{path}: a checkpoint of another training spec; use another --out or remove it")
        state.setdefault("resumed", []).append({"generation": state["generation"], **provenance()})
    else:
        state = {
            "spec": spec,
            "cpu_seconds": 0.0,
            "wall_seconds": 0.0,
            "steps": [0],
            "provenance": provenance(),  # the code that starts the training (a resume adds its own below)
        }
    steps = state["steps"]  # decisions answered so far, all episodes (updated in place)
    wall0 = time.perf_counter()
    mlflow.set_tracking_uri(tracking_uri or f"sqlite:///{(out / 'mlflow.db').resolve()}")
    mlflow.set_experiment("schedlab-rl")
    with mlflow.start_run(
        run_id=state.get("mlflow_run_id"), run_name=None if "mlflow_run_id" in state else f"{name}-slot-seed{seed}"
    ) as run:
        if "mlflow_run_id" not in state:
            mlflow.log_params({**{k: str(v) for k, v in state["spec"].items()}})
        state["mlflow_run_id"] = run.info.run_id
        if "clone" not in state:
            rng = np.random.default_rng([seed, 1])
            venv = make_vec(env_kwargs, clone_episodes)
            cstarts = draw_starts(venv, rng)
            cfirsts = draw_firsts(venv, rng, offsets)
            x, m, p, teacher_bsld = record_teacher(venv, cstarts, teacher, steps, cfirsts, features)
            layers, losses = clone(x, m, p, hidden=hidden, epochs=clone_epochs, seed=seed)
            cstarts = draw_starts(venv, rng)  # fresh episodes
            hx, hm, hp, _ = record_teacher(venv, cstarts, teacher, steps, draw_firsts(venv, rng, offsets), features)
            state["clone"] = layers
            state["clone_record"] = {
                "decisions": len(p),
                "epochs": clone_epochs,
                "loss": losses,
                "agreement_train": agreement(layers, x, m, p),
                "agreement_fresh": agreement(layers, hx, hm, hp),
            }
            for i, loss in enumerate(losses):
                mlflow.log_metric("clone_loss", loss, step=i)
            mlflow.log_metrics({k: v for k, v in state["clone_record"].items() if isinstance(v, float)})
            state["curve"] = []
            state["generation"] = 0
            state["cpu_seconds"] += time.process_time() - cpu0
            state["wall_seconds"] += time.perf_counter() - wall0
            cpu0, wall0 = time.process_time(), time.perf_counter()
            _save(path, state)
        like = state["clone"]
        if "cma" not in state:
            state["cma"] = CMA(mean=flatten(like), sigma=sigma, seed=seed, population_size=population)
        es = state["cma"]
        venvs = [make_vec(kw, batch) for kw in sources(env_kwargs, shift)]
        reference = teacher_chooser(teacher)
        while state["generation"] < generations:
            g = state["generation"]
            rng = np.random.default_rng([seed, 2, g])
            starts = [draw_starts(v, rng) for v in venvs]
            firsts = [draw_firsts(v, rng, offsets) for v in venvs]
            base = total_bsld(venvs, starts, reference, steps, firsts, features)
            told = []
            for _ in range(es.population_size):
                z = es.ask()
                bsld = total_bsld(venvs, starts, network_chooser(unflatten(z, like)), steps, firsts, features)
                told.append((z, bsld / base))
            es.tell(told)
            ratios = [r for _, r in told]
            state["generation"] = g + 1
            state["cpu_seconds"] += time.process_time() - cpu0
            state["wall_seconds"] += time.perf_counter() - wall0
            cpu0, wall0 = time.process_time(), time.perf_counter()
            state["curve"].append([g + 1, float(np.min(ratios)), float(np.mean(ratios))])
            mlflow.log_metrics(
                {
                    "ratio_best": float(np.min(ratios)),
                    "ratio_mean": float(np.mean(ratios)),
                    "teacher_bsld": float(base) / (batch * len(venvs)),
                    "sigma": float(es._sigma),
                    "cpu_seconds": state["cpu_seconds"],
                },
                step=g + 1,
            )
            _save(path, state)
        evolved = unflatten(es._mean, like)
        vvenvs = [make_vec(kw, validation) for kw in sources(env_kwargs, shift)]
        vrng = np.random.default_rng([seed, 3])
        vstarts = [draw_starts(v, vrng) for v in vvenvs]
        vfirsts = [draw_firsts(v, vrng, offsets) for v in vvenvs]
        n = validation * len(vvenvs)
        scores = {
            "teacher": total_bsld(vvenvs, vstarts, reference, steps, vfirsts, features) / n,
            "clone": total_bsld(vvenvs, vstarts, network_chooser(like), steps, vfirsts, features) / n,
            "evolved": total_bsld(vvenvs, vstarts, network_chooser(evolved), steps, vfirsts, features) / n,
        }
        chosen = "evolved" if scores["evolved"] <= scores["clone"] else "clone"
        state["cpu_seconds"] += time.process_time() - cpu0
        state["wall_seconds"] += time.perf_counter() - wall0
        mlflow.log_metrics({f"validation_{k}": v for k, v in scores.items()} | {"cpu_seconds": state["cpu_seconds"]})
        _save(path, state)
    record = {
        "method": "behaviour cloning of the teacher, then CMA-ES on the weights (schedlab.gym.slot_scorer)",
        "env": _json_values(env_kwargs),
        **{k: (list(v) if isinstance(v, tuple) else v) for k, v in state["spec"].items() if k != "env"},
        "generations": state["generation"],
        "population": es.population_size,
        "timesteps": steps[0],
        "clone": state["clone_record"],
        "curve": state["curve"],
        "validation": {"episodes": validation, "bsld": scores, "chosen": chosen},
        "cpu_seconds": state["cpu_seconds"],
        "wall_seconds": state["wall_seconds"],
        "mlflow_run_id": state["mlflow_run_id"],
        **state["provenance"],
        "resumed": state.setdefault("resumed", []),
    }
    export(
        evolved if chosen == "evolved" else like,
        out,
        window=vvenvs[0].env.window,
        runtime_scale=vvenvs[0].env.runtime_scale,
        backfill=vvenvs[0].env.backfill == "easy",
        name=name,
        training=record,
        base="SlotAgent",
        attributes={"features": features} if features != "submit" else None,
    )
    return record


def _spec(
    env_kwargs: dict[str, Any],
    teacher: str,
    hidden: int,
    seed: int,
    sigma: float,
    batch: int,
    population: int | None,
    shift: bool,
    offsets: float | None = None,
    features: str = "submit",
) -> dict[str, Any]:
    return {
        "env": {k: (list(v) if isinstance(v, tuple) else v) for k, v in env_kwargs.items()},
        "teacher": teacher,
        "hidden": hidden,
        "seed": seed,
        "sigma": sigma,
        "batch": batch,
        "population_size": population,
        **({"shift": True} if shift else {}),  # absent when off: earlier checkpoints keep their spec
        **({"offsets": offsets} if offsets is not None else {}),
        **({"features": features} if features != "submit" else {}),
    }


def _save(path: Path, state: dict[str, Any]) -> None:
    """Write the checkpoint whole, then rename: an interrupted save leaves the previous one."""
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(state))
    os.replace(tmp, path)


def parser() -> argparse.ArgumentParser:
    """The command line: every option with its meaning and default (``--help``)."""
    ap = argparse.ArgumentParser(
        prog="python -m schedlab.gym.slot_scorer",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog='Writes OUT/agent.py (a batch policy: use = "OUT/agent.py:Agent"), OUT/agent.npz, '
        "OUT/training.json and OUT/checkpoint.pkl (run again to resume). Needs pip install -e '.[rl]'.",
    )
    from schedlab.gym.train import add_env_arguments

    add_env_arguments(ap, sequence=1024)
    ap.add_argument(
        "--teacher",
        default="F1",
        choices=list(TEACHERS),
        help="the heuristic cloned and compared with (default: %(default)s)",
    )
    ap.add_argument("--hidden", type=int, default=16, help="tanh units of the scoring network (default: %(default)s)")
    ap.add_argument(
        "--seed", type=int, default=0, help="seed of the episodes, the clone and CMA-ES (default: %(default)s)"
    )
    ap.add_argument(
        "--clone-episodes", type=int, default=32, help="teacher episodes recorded for cloning (default: %(default)s)"
    )
    ap.add_argument(
        "--clone-epochs", type=int, default=30, help="passes over the recorded decisions (default: %(default)s)"
    )
    ap.add_argument(
        "--generations",
        type=int,
        default=30,
        help="CMA-ES generations in all, resumed ones included (default: %(default)s)",
    )
    ap.add_argument(
        "--population",
        type=int,
        default=None,
        help="CMA-ES candidates per generation (default: cmaes's, 4 + 3 ln(weights))",
    )
    ap.add_argument("--sigma", type=float, default=0.05, help="CMA-ES's initial step size (default: %(default)s)")
    ap.add_argument(
        "--batch",
        type=int,
        default=16,
        help="episodes each candidate is scored on, per generation (default: %(default)s)",
    )
    ap.add_argument(
        "--validation",
        type=int,
        default=32,
        help="episodes the clone and the evolved network are compared on (default: %(default)s)",
    )
    ap.add_argument(
        "--shift",
        action="store_true",
        help="also draw episodes from the span with its submit times shifted to start at 0, as many as from the "
        "span itself (F1 and the features read absolute submit times; default: off)",
    )
    ap.add_argument(
        "--offsets",
        type=float,
        default=None,
        metavar="SECONDS",
        help="shift every episode's times, as the teacher and the features read them, so that its first job is "
        "submitted at a whole second drawn uniformly in 1..SECONDS (seeded per episode; the schedule is the same, "
        "only what reads absolute times moves: e.g. the submit time of the span's first job, to train and "
        "validate in the conditions of the log's head; default: off, the log's own times)",
    )
    ap.add_argument(
        "--features",
        default="submit",
        choices=list(FEATURE_SETS),
        help="the slot features: 'submit' reads log10(now / submit), F1's submit term (F1 exactly representable); "
        "'invariant' reads the job's bounded slowdown were it started now instead, so every feature reads "
        "differences of times only (default: %(default)s)",
    )
    ap.add_argument("--out", type=Path, required=True, help="output dir (required; no default)")
    ap.add_argument("--tracking-uri", default=None, help="MLflow tracking URI (default: a SQLite store OUT/mlflow.db)")
    ap.add_argument("--name", default="RL", help="the exported policy's name (default: %(default)s)")
    return ap


def main(argv: list[str] | None = None) -> None:
    """The command line; bad input is one line naming it and exit code 2."""
    ap = parser()
    a = ap.parse_args(argv)
    try:
        run(a)
    except UserError as err:
        print(f"{ap.prog}: error: {err}", file=sys.stderr)
        sys.exit(UserError.exit_code)


def run(a: argparse.Namespace) -> None:
    """Train with the parsed options ``a`` and print what it cost and reached."""
    from schedlab.engines.batch.gym import BatchEnv
    from schedlab.gym.common import DATA_ENV

    if a.data is not None:
        os.environ[DATA_ENV] = str(a.data)
    env_kwargs: dict[str, Any] = {
        "trace": a.trace,
        "nodes": a.nodes,
        "sequence": a.sequence,
        "window": a.window,
        "backfill": a.backfill,
        "span": tuple(a.span) if a.span else None,
    }
    BatchEnv(**env_kwargs)  # bad input fails here, before any training
    record = train(
        env_kwargs,
        out=a.out,
        teacher=a.teacher,
        hidden=a.hidden,
        seed=a.seed,
        clone_episodes=a.clone_episodes,
        clone_epochs=a.clone_epochs,
        generations=a.generations,
        population=a.population,
        sigma=a.sigma,
        batch=a.batch,
        validation=a.validation,
        tracking_uri=a.tracking_uri,
        name=a.name,
        shift=a.shift,
        offsets=a.offsets,
        features=a.features,
    )
    v = record["validation"]["bsld"]
    print(
        f"{record['generations']} generations, {record['cpu_seconds']:.0f} CPU s; clone agrees with {a.teacher} on "
        f"{record['clone']['agreement_fresh']:.1%} of fresh decisions; validation mean bounded slowdown: "
        f"{a.teacher} {v['teacher']:.2f}, clone {v['clone']:.2f}, evolved {v['evolved']:.2f}; {a.out / 'agent.py'}"
    )


if __name__ == "__main__":
    main()
