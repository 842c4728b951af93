"""Batch-v0's observation: the batch engine's decision point as numbers, built
from what a batch policy may read (submit, requested, need, free units; never
runtimes). The environment (``gym.py``, its compiled ``gym_kernel.py``) and an
exported agent (``schedlab.api.agent.MLPAgent``, numpy only) build it with the
same function, so an agent sees in a sweep what it saw in training."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

JOB_FEATURES = 5
MACHINE_FEATURES = 2
#: Waits are scaled by 12 h (RLScheduler's MAX_WAIT_TIME) and clipped at 1.
WAIT_SCALE = 12 * 3600.0


def size(window: int) -> int:
    """Length of the observation for ``window`` slots."""
    return window * JOB_FEATURES + MACHINE_FEATURES


def batch_observation(
    jobs: Sequence[int],
    waiting: int,
    now: float,
    submit: np.ndarray,
    requested: np.ndarray,
    need: np.ndarray,
    free: int,
    nodes: int,
    runtime_scale: float,
    window: int,
) -> np.ndarray:
    """Slots (``jobs``: the first ``window`` waiting jobs, oldest first):
    present, wait / WAIT_SCALE (at most 1), requested / ``runtime_scale`` (at
    most 1), need / nodes, fits in ``free``; then free / nodes and the
    ``waiting`` jobs beyond the window / window (at most 1). float32."""
    obs = np.zeros(size(window), dtype=np.float32)
    k = len(jobs)
    if k:
        j = np.asarray(jobs)
        f = obs[: window * JOB_FEATURES].reshape(window, JOB_FEATURES)
        f[:k, 0] = 1.0
        f[:k, 1] = np.minimum((now - submit[j]) / WAIT_SCALE, 1.0)
        f[:k, 2] = np.minimum(requested[j] / runtime_scale, 1.0)
        f[:k, 3] = need[j] / nodes
        f[:k, 4] = need[j] <= free
        obs[-2] = free / nodes
        obs[-1] = min((waiting - k) / window, 1.0)
    return obs


# ---- per-slot features: what a slot-scoring agent reads (schedlab.api.agent.SlotAgent) ----------------------------

#: Numbers per waiting job that a slot-scoring network reads (:func:`slot_features`).
SLOT_FEATURES = 8
#: log10 of times (s) is divided by this (log10 of about 11.6 days): requested times land in [0, 1].
LOG_TIME_SCALE = 6.0
#: The submit time that a log10 reads when s <= 0, as F1..F4 read it (``policies.priority.F_SUBMIT_FLOOR``).
SUBMIT_FLOOR = 0.1
#: The slot feature sets (:func:`slot_features`' ``features``): the first reads absolute submit times, as F1 does.
FEATURE_SETS = ("submit", "invariant")
#: The bounded slowdown's floor on run times (s), as ``stretch_mean`` bounds it: the "invariant" set's sixth feature.
BSLD_FLOOR = 10.0


def slot_features(
    submit: np.ndarray,
    requested: np.ndarray,
    need: np.ndarray,
    now: np.ndarray | float,
    free: np.ndarray | float,
    nodes: int,
    features: str = "submit",
) -> np.ndarray:
    """Per waiting job, what the priority heuristics read, scaled to about
    [0, 1]: log10 requested, need / nodes, log2 need / log2 nodes, F1's
    product log10(requested) x need / nodes, log10(1 + wait), log10(now /
    submit) (F1's submit term, up to a constant shared by all slots: the
    slots' order under ``a log10(r) n + b log10(s)`` is that of a linear
    score of two features), fits in ``free``, free / nodes.

    ``features="invariant"`` replaces log10(now / submit) by log10 of the
    job's bounded slowdown were it started now, by its requested time
    (``max(wait + r, 10) / max(r, 10)``): every feature then reads
    differences of times only, so the scores do not move with where the
    sequence sits in its log (F1's do: its submit term weighs more at the
    head of a log, where submit times are small). F1's order is then not
    exactly representable.

    ``submit``, ``requested``, ``need``: arrays of any shape ``(..., slots)``;
    ``now`` and ``free`` broadcast against them (``(..., 1)`` for a batch of
    decisions). Returns ``(..., slots, SLOT_FEATURES)`` float32, computed in
    float64 (F1's submit differences are small at late times)."""
    submit = np.asarray(submit, dtype=np.float64)
    requested = np.maximum(np.asarray(requested, dtype=np.float64), 1.0)
    need = np.asarray(need, dtype=np.float64)
    now = np.asarray(now, dtype=np.float64)
    free = np.asarray(free, dtype=np.float64)
    log_r = np.log10(requested) / LOG_TIME_SCALE
    out = np.empty((*np.broadcast(submit, now).shape, SLOT_FEATURES), dtype=np.float32)
    out[..., 0] = log_r
    out[..., 1] = need / nodes
    out[..., 2] = np.log2(np.maximum(need, 1.0)) / np.log2(max(nodes, 2))
    out[..., 3] = log_r * need / nodes
    out[..., 4] = np.log10(1.0 + np.maximum(now - submit, 0.0)) / LOG_TIME_SCALE
    if features == "invariant":
        wait = np.maximum(now - submit, 0.0)
        out[..., 5] = np.log10(np.maximum(wait + requested, BSLD_FLOOR) / np.maximum(requested, BSLD_FLOOR))
        out[..., 5] /= LOG_TIME_SCALE
    elif features == "submit":
        out[..., 5] = np.log10(np.maximum(now, SUBMIT_FLOOR)) - np.log10(np.where(submit > 0, submit, SUBMIT_FLOOR))
    else:
        raise ValueError(f"slot_features: features must be one of {FEATURE_SETS}; got {features!r}")
    out[..., 6] = need <= free
    out[..., 7] = free / nodes
    return out


def slot_scores(layers: Sequence[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """A slot-scoring network's score of each slot (higher: chosen first): the
    same small network applied to every slot's features ``x`` (``(...,
    SLOT_FEATURES)``) -- tanh hidden layers then a linear output -- plus a
    linear term of the features (``layers[-1]``: its (1, SLOT_FEATURES)
    weights and bias), so that a linear score such as F1's is exactly
    representable. Returns ``x.shape[:-1]`` float32."""
    h = x
    for w, b in layers[:-2]:
        h = np.tanh(h @ w.T + b)
    w, b = layers[-2]
    ws, bs = layers[-1]
    out: np.ndarray = (h @ w.T + b + x @ ws.T + bs)[..., 0]
    return out
