"""Inversion of control for the engines whose loop is one function
(``simulate_packing``, the queue engine's ``simulate``): the engine runs in
a worker thread, unchanged, with a policy that hands each decision to the
environment and waits for the action. Exactly one of the two threads runs at
any time (two one-slot queues), so the run is as deterministic as a direct
call. An abandoned episode (``reset`` again, ``close``) is unwound by
raising :class:`Abort` inside the engine thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any


class Abort(BaseException):
    """Raised in the engine thread to end an abandoned episode (not an Exception: no policy catches it)."""


_ABORT = object()


class EngineThread:
    """``target()`` (an engine run whose policy calls :meth:`ask`) in a thread.

    The environment calls :meth:`begin` then :meth:`answer`; each returns the
    engine's next message: ``("ask", request)`` (a decision is wanted) or
    ``("done", result)`` (``target``'s return value). An exception of the
    engine is re-raised in the environment's thread."""

    def __init__(self, target: Callable[[], Any]) -> None:
        self._to_engine: queue.Queue[Any] = queue.Queue(1)
        self._to_env: queue.Queue[tuple[str, Any]] = queue.Queue(1)
        self._thread = threading.Thread(target=self._main, args=(target,), daemon=True)

    def _main(self, target: Callable[[], Any]) -> None:
        try:
            result = target()
        except Abort:
            return
        except BaseException as exc:  # handed to the environment's thread
            self._to_env.put(("error", exc))
            return
        self._to_env.put(("done", result))

    def _receive(self) -> tuple[str, Any]:
        kind, payload = self._to_env.get()
        if kind == "error":
            self._thread.join()
            raise payload
        if kind == "done":
            self._thread.join()
        return kind, payload

    def begin(self) -> tuple[str, Any]:
        self._thread.start()
        return self._receive()

    def answer(self, action: Any) -> tuple[str, Any]:
        self._to_engine.put(action)
        return self._receive()

    def ask(self, request: Any) -> Any:
        """Engine side: hand ``request`` to the environment, return its action."""
        self._to_env.put(("ask", request))
        action = self._to_engine.get()
        if action is _ABORT:
            raise Abort
        return action

    def close(self) -> None:
        if self._thread.is_alive():
            self._to_engine.put(_ABORT)
            self._thread.join()


class AgentSteps:
    """What the environments that run their engine's loop in an `EngineThread`
    (Packing-v0, Queue-v0) share: the current action mask (``_mask``, set when
    the engine asks), `action_masks` for sb3-contrib, ``info``, and the start
    of a step: refuse a step after the episode, check the action against the
    mask, hand it to the engine and take the engine's next question."""

    env_id: str
    _obs: Any
    _mask: Any
    _thread: EngineThread | None
    #: ``schedlab.gym.common.INVALID_ACTIONS``: what an action outside the mask means.
    invalid_action: str = "nearest"

    def action_masks(self) -> Any:
        return self._mask.copy()

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks()}

    def _answer(self, action: Any) -> tuple[str, Any] | None:
        """The engine's next message after ``action``; None: a penalised no-op
        (``invalid_action="penalty"`` and an action outside the mask)."""
        from schedlab.errors import UserError
        from schedlab.gym.common import resolve_action

        if self._thread is None:
            raise UserError(f"{self.env_id}: step() after the episode ended; call reset()")
        a = resolve_action(self.env_id, action, self._mask, self.invalid_action)
        return None if a is None else self._thread.answer(a)

    def _no_op(self) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The step of a penalised no-op: the same observation, ``-INVALID_ACTION_PENALTY``."""
        from schedlab.gym.common import INVALID_ACTION_PENALTY

        return self._obs.copy(), -INVALID_ACTION_PENALTY, False, False, self._info()
