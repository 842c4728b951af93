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
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

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


@contextmanager
def sim_budget(seconds: float | None, where: str = "[execution] sim_budget_seconds") -> Iterator[None]:
    """Run the block under a budget of ``seconds`` (None or 0: none);
    :class:`BudgetExceeded` (message naming ``where``, the setting that
    gives the budget) is raised in it when the time is up."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise BudgetExceeded(budget_message(seconds, where))

    previous = signal.signal(signal.SIGALRM, on_alarm)
    outer, outer_every = signal.setitimer(signal.ITIMER_REAL, seconds, REARM_SECONDS)  # someone else's timer
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:  # give it back, less the time spent here (at least a moment: it fires, late)
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 1e-3), outer_every)


__all__ = ["DEFAULT_SIM_BUDGET_SECONDS", "REARM_SECONDS", "BudgetExceeded", "budget_message", "sim_budget"]
