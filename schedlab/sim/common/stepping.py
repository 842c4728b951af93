"""The surface every engine's reference loop offers an outside driver (a
Gymnasium environment, a view's recorder, a test, a notebook): the shape of
SimPy's ``Environment.peek()`` / ``step()``.

A run (``QueueRun``, ``PackingRun``, ``DfrsRun``, ``BatchRun``) is built
with the workload and the policy, then advanced by its holder:
``peek()`` is the time of the next event (``inf`` when none is left),
``step()`` processes the next event (an event of the queue engine; a
decision epoch of the packing engine; an instant of DFRS and batch), and the
step that finds nothing left sets ``done``; ``step_to_end()`` steps until
then (each built-in run's ``step()`` and ``step_to_end()`` are one loop,
stopped after one event or not; a run without ``step_to_end``, a researcher's
engine's say, is stepped one ``step()`` at a time); ``result()`` is then what the
engine's ``simulate*`` function returns -- that function is the same run
stepped to its end, so there is one loop per engine.

A driver that wants to act between events (an agent choosing what the
policy does) gives the run a policy that *records* its question instead of
answering it, and steps with :func:`run_until` until the question is there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

R = TypeVar("R", covariant=True)
T = TypeVar("T")


class SteppableRun(Protocol[R]):
    """What every engine's run offers (see the module docstring); ``R`` is its result."""

    @property
    def done(self) -> bool: ...
    def peek(self) -> float: ...
    def step(self) -> None: ...
    def result(self) -> R: ...


def run_until(run: SteppableRun[object], stop: Callable[[], bool]) -> bool:
    """Step ``run`` until ``stop()`` holds (tested before each step) or the
    run is done; return whether it stopped on ``stop()`` (False: done). The
    "run until the next decision" of a driver whose policy leaves a question
    for it (``stop = lambda: policy.asking is not None``)."""
    while not run.done:
        if stop():
            return True
        run.step()
    return False


def run_to_end(run: SteppableRun[T]) -> T:
    """Step ``run`` until it is done and return its result: every engine's
    ``simulate*`` function is this over a fresh run, so each engine has one loop.
    ``step_to_end()`` is that loop run to the end in one call: the same
    events as ``while not run.done: run.step()``, without a method call and
    the run's state loaded and stored again per event."""
    to_end = getattr(run, "step_to_end", None)  # optional: a run may offer only step()
    if to_end is not None:
        if not run.done:
            to_end()
    else:
        while not run.done:
            run.step()
    return run.result()
