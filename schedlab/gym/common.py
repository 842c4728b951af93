"""What the three environments share: argument checks (one clear error),
trace lookup, episode sampling, the invalid-action error and (Packing-v0,
Queue-v0) the agent-step plumbing :class:`AgentSteps`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import UserError

#: The shared data folder the code reads traces from (``../shared/data`` beside the repository).
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

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


def resolve_trace(env: str, trace: str | Path) -> Path:
    """``trace`` as given if it exists, else a bare file name looked up in the
    shared data folders (``lublin_256.swf`` finds ``lublin/lublin_256.swf.gz``)."""
    path = Path(trace)
    if path.is_file():
        return path
    if path.name == str(trace) and DATA.is_dir():
        for folder in sorted(DATA.iterdir()):
            for name in (path.name, path.name + ".gz"):
                if (folder / name).is_file():
                    return folder / name
    raise UserError(f"{env}: trace {str(trace)!r}: no such file (nor in {DATA})")


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


class AgentSteps:
    """What the environments that step their engine's run to the agent's
    next question (Packing-v0, Queue-v0) share: the current action mask
    (``_mask``, set at each question), `action_masks` for sb3-contrib,
    ``info``, and the start of a step: refuse a step after the episode and
    check the action against the mask."""

    env_id: str
    _mask: Any

    def action_masks(self) -> Any:
        return self._mask.copy()

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks()}

    def _checked(self, action: Any, run: object) -> int:
        """``action`` as an int, for the episode's ``run`` (None: it has ended)."""
        if run is None:
            raise UserError(f"{self.env_id}: step() after the episode ended; call reset()")
        return check_action(self.env_id, action, self._mask)
