"""A wall-clock budget per simulation: a runaway becomes a failure, never a hang.

The engines guard against what ``schedlab check-policy`` detects (a clock
that stops, a stall, a capacity breach) and raise ``PolicyError`` at once.
What no rule can tell from a slow but correct run -- a policy whose loop
advances the clock by ever smaller steps, or that spins inside its own
method -- is stopped by time: :func:`sim_budget` arms ``SIGALRM`` for the
length of one simulation, and its handler raises :class:`BudgetExceeded` in
the code that is running (the engine's loop or the policy's method). The
caller records it like any other failure (``tasks.run_instances``: a
failure record naming the configuration, the other configurations' rows
kept; ``schedlab simulate``: one line, exit 1).

Why a signal and not a clock read in the loop: it costs nothing per event,
on the compiled built-in paths too, and it also stops a loop that never
returns to the engine. ``BudgetExceeded`` derives from ``BaseException`` so
that a policy's ``except Exception`` cannot swallow it, and the timer
repeats every ``REARM_SECONDS`` until the block exits, in case a bare
``except`` did. Signals reach the main thread only: elsewhere (a thread
pool) the block runs without a budget. A timer the process had armed
(``ITIMER_REAL``) is given back when the block exits. Numba kernels are not interrupted
(the signal is handled when they return); they are the trusted built-ins.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType
from typing import Any

#: Default of ``[execution] sim_budget_seconds`` and of ``schedlab simulate
#: --budget``: far above any simulation the repository runs (the largest DFRS
#: trace replays take minutes), so it only ever stops a runaway.
DEFAULT_SIM_BUDGET_SECONDS = 3600.0
#: After the budget, the alarm fires again this often until the block exits
#: (a policy that caught the first one with a bare ``except``).
REARM_SECONDS = 1.0


class BudgetExceeded(BaseException):
    """A simulation ran past its wall-clock budget (see the module docstring)."""


def budget_message(seconds: float, where: str) -> str:
    return (
        f"the simulation ran past its budget of {seconds:g} s of wall-clock time ({where}): "
        f"the policy never finishes (a loop that does not end?)"
    )


try:  # the C function ``signal.signal`` wraps: its enum conversion of the old handler is most of its cost
    from _signal import signal as _set_handler
except ImportError:  # pragma: no cover - not CPython
    _set_handler = signal.signal


class sim_budget:  # noqa: N801 - used as a function: ``with sim_budget(seconds):``
    """Run the block under a budget of ``seconds`` (None or 0: none);
    :class:`BudgetExceeded` (message naming ``where``, the setting that
    gives the budget) is raised in it when the time is up.

    A class rather than a generator context manager, and the handler set
    through ``_signal``: a sweep's task enters two of these per
    configuration, and at 50 jobs a configuration (issue 42) the generator
    and the enum round trip of ``signal.signal`` were a tenth of its
    platform time. What it does is unchanged."""

    __slots__ = ("_outer", "_previous", "_started", "seconds", "where")

    def __init__(self, seconds: float | None, where: str = "[execution] sim_budget_seconds") -> None:
        self.seconds = seconds
        self.where = where
        self._previous: Any = None
        self._outer = (0.0, 0.0)
        self._started = 0.0

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        raise BudgetExceeded(budget_message(self.seconds or 0.0, self.where))

    def __enter__(self) -> None:
        if not self.seconds or threading.current_thread() is not threading.main_thread():
            self.seconds = None  # nothing armed: nothing to undo
            return
        self._previous = _set_handler(signal.SIGALRM, self._on_alarm)
        self._outer = signal.setitimer(signal.ITIMER_REAL, self.seconds, REARM_SECONDS)  # someone else's timer
        self._started = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        if not self.seconds:
            return
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        _set_handler(signal.SIGALRM, self._previous)
        outer, outer_every = self._outer
        if outer > 0:  # give it back, less the time spent here (at least a moment: it fires, late)
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - self._started), 1e-3), outer_every)


__all__ = ["DEFAULT_SIM_BUDGET_SECONDS", "REARM_SECONDS", "BudgetExceeded", "budget_message", "sim_budget"]
