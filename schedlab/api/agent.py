"""A trained network as a batch policy, with numpy only: what an exported
agent (``schedlab.gym.train`` writes ``agent.py`` beside ``agent.npz``)
imports, so that sweeping it needs neither Gymnasium nor torch.

:class:`MLPAgent` is a priority policy (``schedlab.engines.batch.policies.priority``)
whose head is chosen by the network, exactly where ``schedlab/Batch-v0``
asks its agent: it builds the environment's observation with
:func:`batch_observation` (the environment builds its own with the same
function) from what a batch policy may read (submit, requested, need, free
units; never runtimes) and takes the slot of the largest logit among the
filled ones (the first on ties). The forward pass is Linear + tanh layers,
then the action layer: Stable-Baselines3's default MLP policy.

The weights are a data file (``W0, b0, W1, b1, ...`` in an ``.npz``) that the
agent's module declares (``DATA_FILES = ("agent.npz",)``) and names with
``weights = data_file(__file__, "agent.npz")``: hashed into the code's digest
and shipped with it (``schedlab.usercode``), so new weights re-run the
agent's configurations as an edit of its code does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from schedlab.engines.batch.features import batch_observation, size, slot_features, slot_scores
from schedlab.engines.batch.policies.priority import PriorityPolicy
from schedlab.errors import UserError

Layers = list[tuple[np.ndarray, np.ndarray]]


#: The time stamp of every member of a written ``.npz`` (zip's earliest): the same weights, the same bytes.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def save_layers(layers: Layers, path: Path) -> Path:
    """Write (W, b) per layer to ``path`` as an ``.npz`` (``np.load`` reads it)
    of float32 ``W0, b0, W1, b1, ...``, deflated, with fixed time stamps: the
    same weights give the same bytes, hence the same code digest."""
    import io
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for i, (w, b) in enumerate(layers):
            for key, value in ((f"W{i}", w), (f"b{i}", b)):
                buf = io.BytesIO()
                np.lib.format.write_array(buf, np.ascontiguousarray(value, dtype=np.float32), allow_pickle=False)
                z.writestr(zipfile.ZipInfo(f"{key}.npy", date_time=ZIP_TIME), buf.getvalue(), zipfile.ZIP_DEFLATED)
    return path


def load_layers(path: str | Path) -> Layers:
    """(W, b) per layer from an ``.npz`` holding W0, b0, W1, b1, ... (float32);
    a file that is not one is a `UserError` naming it."""
    try:
        with np.load(path) as z:
            n = len(z.files) // 2
            layers = [(z[f"W{i}"].astype(np.float32), z[f"b{i}"].astype(np.float32)) for i in range(n)]
    except (OSError, ValueError, KeyError) as err:
        raise UserError(f"{path}: not an agent's weights (an .npz of W0, b0, W1, b1, ...): {err}") from None
    if not layers:
        raise UserError(f"{path}: not an agent's weights: no W0, b0 arrays")
    return layers


def logits(layers: Layers, obs: np.ndarray) -> np.ndarray:
    """tanh hidden layers, a linear last layer."""
    h = obs.astype(np.float32)
    for w, b in layers[:-1]:
        h = np.tanh(h @ w.T + b)
    w, b = layers[-1]
    out: np.ndarray = h @ w.T + b
    return out


class MLPAgent(PriorityPolicy):
    """Subclasses set ``weights`` (the ``.npz`` path: ``data_file(__file__,
    "agent.npz")``), ``window``, ``runtime_scale`` (the training source's
    scale of requested times) and ``backfill``."""

    name = "agent"
    weights: ClassVar[str | Path] = ""
    window: ClassVar[int] = 128
    runtime_scale: ClassVar[float] = 1.0
    #: (path, modification time, size) -> layers: read once per process and file version
    _cache: ClassVar[dict[tuple[str, int, int], Layers]] = {}

    def __init__(
        self,
        machine: Any,
        *,
        commit: bool = False,
        passes: Literal["instant", "event"] = "instant",
        backfill: Literal["easy", "rlscheduler"] = "easy",
    ) -> None:
        # RLScheduler's rules, as for the built-in priority policies (docs/gym.md): the agent then picks
        # where its loop picks (commit = true: once per head, kept until it starts).
        super().__init__(machine, commit=commit, passes=passes, backfill=backfill)
        m = self.machine
        self._submit = np.asarray(m.submit, dtype=float)
        self._requested = np.asarray(m.requested, dtype=float)
        self._need = np.asarray(m.need, dtype=np.int64)
        self._layers = _layers_of(type(self).__name__, self.weights)

    def choose(self, now: float) -> int:
        jobs = []
        waiting = self.waiting()
        for job in waiting:
            jobs.append(job)
            if len(jobs) == self.window:
                break
        obs = batch_observation(
            jobs,
            len(waiting),
            now,
            self._submit,
            self._requested,
            self._need,
            self.free,
            self.machine.capacity,
            self.runtime_scale,
            self.window,
        )
        out = logits(self._layers, obs)[: len(jobs)]
        return jobs[int(np.argmax(out))]


class SlotAgent(MLPAgent):
    """A slot-scoring network as a batch policy (``schedlab.gym.slot_scorer``
    trains it): the same small network scores each of the first ``window``
    waiting jobs from its own features
    (:func:`schedlab.engines.batch.features.slot_features`: what SJF and F1
    read, its wait, whether it fits) and the head is the job of the highest
    score (the first on ties). Weights as :class:`MLPAgent`'s (``W0, b0,
    ...``; the last pair is the linear term, :func:`slot_scores`);
    ``features`` names the feature set it was trained on (``slot_features``'
    ``features``)."""

    features: ClassVar[str] = "submit"

    def choose(self, now: float) -> int:
        jobs = []
        for job in self.waiting():  # arrival order (under RLScheduler's loop, its queue list)
            jobs.append(job)
            if len(jobs) == self.window:
                break
        j = np.asarray(jobs)
        x = slot_features(
            self._submit[j], self._requested[j], self._need[j], now, self.free, self.machine.capacity, self.features
        )
        return jobs[int(np.argmax(slot_scores(self._layers, x)))]


def _layers_of(owner: str, weights: str | Path) -> Layers:
    if not weights:
        raise UserError(f"{owner}: set weights = data_file(__file__, 'agent.npz') (the network's .npz)")
    path = Path(weights)
    try:
        stat = path.stat()
    except OSError as err:
        raise UserError(f"{owner}: weights {path}: {err.strerror or err}") from None
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in MLPAgent._cache:
        MLPAgent._cache[key] = load_layers(path)
    return MLPAgent._cache[key]


__all__ = [
    "MLPAgent",
    "SlotAgent",
    "batch_observation",
    "load_layers",
    "logits",
    "save_layers",
    "size",
    "slot_features",
    "slot_scores",
]
