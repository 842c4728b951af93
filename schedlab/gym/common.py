"""What the three environments share: argument checks (one clear error),
trace lookup, episode sampling, the invalid-action error and (Packing-v0,
Queue-v0) the agent-step plumbing :class:`AgentSteps`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import UserError

#: The environment variable naming the data folder a bare trace name is looked up in (in its subfolders:
#: ``lublin_256.swf`` finds ``$SCHEDLAB_DATA/lublin/lublin_256.swf.gz``); the library assumes no folder of its own.
DATA_ENV = "SCHEDLAB_DATA"

#: The bounded-slowdown threshold tau (s): the engines' ``BOUNDED_STRETCH_THRESHOLD``.
TAU = 10.0

REWARD_MODES = ("final", "step")


class InvalidAction(UserError):
    """An action outside ``info["action_mask"]`` (an empty slot, or out of range)."""


def check_choice(env: str, name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise UserError(f"{env}: {name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return str(value)


def check_int(env: str, name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise UserError(f"{env}: {name} must be an integer >= {low}; got {value!r}")
    return int(value)


def data_folder() -> Path | None:
    """The data folder ``$SCHEDLAB_DATA`` names (``~`` expanded), or None when it is unset."""
    value = os.environ.get(DATA_ENV, "")
    return Path(value).expanduser() if value else None


def resolve_trace(env: str, trace: str | Path) -> Path:
    """``trace`` as given if it exists, else a bare file name looked up in the
    subfolders of the data folder ``$SCHEDLAB_DATA`` (``lublin_256.swf`` finds
    ``lublin/lublin_256.swf.gz``); not found is one error naming the variable."""
    path = Path(trace)
    if path.is_file():
        return path
    if path.name != str(trace):
        raise UserError(f"{env}: trace {str(trace)!r}: no such file")
    folder = data_folder()
    if folder is None:
        raise UserError(
            f"{env}: trace {str(trace)!r}: no such file, and {DATA_ENV} is not set "
            "(give a path, or set it to the folder whose subfolders hold the traces)"
        )
    if not folder.is_dir():
        raise UserError(f"{env}: trace {str(trace)!r}: {DATA_ENV}={folder} is not a folder")
    for sub in sorted(folder.iterdir()):
        for name in (path.name, path.name + ".gz"):
            if (sub / name).is_file():
                return sub / name
    raise UserError(f"{env}: trace {str(trace)!r}: no such file (nor in the subfolders of {DATA_ENV}={folder})")


def episode_start(env: str, rng: np.random.Generator, total: int, length: int, options: dict[str, Any] | None) -> int:
    """First job of an episode of ``length`` consecutive jobs out of
    ``total``: ``options["start"]`` when given, else uniform from ``rng``."""
    last = total - length
    if options and "start" in options:
        start = options["start"]
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or not 0 <= start <= last:
            raise UserError(f"{env}: options['start'] must be an integer in 0..{last}; got {start!r}")
        return int(start)
    return int(rng.integers(0, last + 1))


def check_action(env: str, action: Any, mask: np.ndarray) -> int:
    """``action`` as an int if ``mask`` allows it; else one clear error."""
    try:
        a = int(action)
    except (TypeError, ValueError):
        raise InvalidAction(f"{env}: action must be an integer; got {action!r}") from None
    if a != action or not 0 <= a < len(mask) or not mask[a]:
        valid = np.flatnonzero(mask)
        shown = f"0..{valid[-1]}" if len(valid) and valid[-1] == len(valid) - 1 else valid.tolist()
        raise InvalidAction(f"{env}: action {action!r} is outside info['action_mask'] (valid: {shown})")
    return a


#: What an action outside ``info["action_mask"]`` (but inside the action
#: space) means, option ``invalid_action``: ``"nearest"`` -- the valid action
#: of nearest index (the lower one on ties); ``"penalty"`` -- a no-op (the
#: state does not change) rewarded ``-INVALID_ACTION_PENALTY``; ``"raise"`` --
#: :class:`InvalidAction`. An action outside the action space always raises.
INVALID_ACTIONS = ("nearest", "penalty", "raise")
#: The reward of an ignored action under ``invalid_action="penalty"``.
INVALID_ACTION_PENALTY = 1.0


def nearest_valid(a: int, mask: np.ndarray) -> int:
    """The index of ``mask`` nearest to ``a`` that is True (the lower on ties)."""
    valid = np.flatnonzero(mask)
    return int(valid[np.argmin(np.abs(valid - a))])


def resolve_action(env: str, action: Any, mask: np.ndarray, mode: str) -> int | None:
    """The action to apply for ``action`` under ``invalid_action = mode``:
    itself if ``mask`` allows it, else the nearest valid one (``"nearest"``),
    None for a penalised no-op (``"penalty"``), or :class:`InvalidAction`
    (``"raise"``, and for an action outside the action space whatever the mode)."""
    try:
        a = int(action)
    except (TypeError, ValueError):
        raise InvalidAction(f"{env}: action must be an integer; got {action!r}") from None
    if a != action or not 0 <= a < len(mask) or mode == "raise" or not mask.any():
        return check_action(env, action, mask)
    if mask[a]:
        return a
    return nearest_valid(a, mask) if mode == "nearest" else None


class AgentSteps:
    """What the environments that step their engine's run to the agent's
    next question (Packing-v0, Queue-v0) share: the current action mask
    (``_mask``, set at each question), `action_masks` for sb3-contrib,
    ``info``, and the start of a step: refuse a step after the episode and
    check the action against the mask."""

    env_id: str
    _obs: Any
    _mask: Any
    #: `INVALID_ACTIONS`: what an action outside the mask means.
    invalid_action: str = "nearest"

    def action_masks(self) -> Any:
        return self._mask.copy()

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks()}

    def _checked(self, action: Any, run: object) -> int | None:
        """``action`` as an int, for the episode's ``run`` (None: it has ended),
        under ``invalid_action`` (`resolve_action`); None: a penalised no-op."""
        if run is None:
            raise UserError(f"{self.env_id}: step() after the episode ended; call reset()")
        return resolve_action(self.env_id, action, self._mask, self.invalid_action)

    def _no_op(self) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The step of a penalised no-op: the same observation, ``-INVALID_ACTION_PENALTY``."""
        return self._obs.copy(), -INVALID_ACTION_PENALTY, False, False, self._info()
