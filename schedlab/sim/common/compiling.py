"""Kernels being compiled by another process right now: the gate the
engines' fast paths consult before they call a kernel.

Why: on a machine whose kernel cache is empty (a fresh install), compiling a
kernel costs seconds of CPU (the queue engine's three: ~8 s), more than a
small sweep's whole simulation. A sweep run in the driver's process therefore
has the kernels it lacks compiled by a process beside it
(`schedlab.platform.execution.precompile`), which writes numba's on-disk
cache, and runs each simulation whose kernel is not there yet on the readable
reference loop instead -- the same numbers to the bit (the kernels are
transcriptions of the reference; the engines' tests check it) -- so no
simulation waits for a compile. Once the other process reports a kernel
compiled, the next simulation loads it from the cache (a fraction of a
second) and runs on it.

A *unit* names one compiled function as the fast paths' Python sides name it
(``queue._fsp``, ``batch._easy``, ``packing.fast``, ...: their ``unit``
functions). Only this process's own background compile registers units here:
in a pool or Ray worker, or with nothing being compiled, every unit is ready
(the kernel is compiled or loaded on first use, as always). This module
imports nothing: the reference engines consult it without loading numba.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

_LOCK = threading.Lock()


@dataclass
class _State:
    #: unit -> when its compile started (monotonic), while it is being compiled elsewhere.
    pending: dict[str, float] = field(default_factory=dict)
    #: unit -> seconds its compile took, for those that finished.
    compiled: dict[str, float] = field(default_factory=dict)
    #: Simulations that ran on the reference loop because their kernel was pending.
    reference_runs: int = 0


_STATE = _State()


def begin(units: list[str]) -> None:
    """``units`` are being compiled by another process from now on."""
    now = time.monotonic()
    with _LOCK:
        for unit in units:
            _STATE.pending[unit] = now


def finished(unit: str, seconds: float) -> None:
    """The other process compiled ``unit`` (in ``seconds``): its cache entry is there."""
    with _LOCK:
        _STATE.pending.pop(unit, None)
        _STATE.compiled[unit] = seconds


def stopped() -> list[str]:
    """The other process is gone: every unit still pending is ready again (a
    simulation compiles or loads it itself); returns those units."""
    with _LOCK:
        left = sorted(_STATE.pending)
        _STATE.pending.clear()
        return left


def ready(unit: str | None) -> bool:
    """False while ``unit`` is being compiled by another process (the caller
    runs the reference loop; counted in `reference_runs`), else True."""
    if unit is None:
        return True
    with _LOCK:
        if unit not in _STATE.pending:
            return True
        _STATE.reference_runs += 1
        return False


def is_pending(unit: str) -> bool:
    """Whether ``unit`` is being compiled by another process now (not counted)."""
    with _LOCK:
        return unit in _STATE.pending


def compiling() -> bool:
    """Whether any unit is being compiled by another process now."""
    with _LOCK:
        return bool(_STATE.pending)


def reference_runs() -> int:
    """Simulations run on the reference loop because their kernel was being compiled."""
    with _LOCK:
        return _STATE.reference_runs


def compiled() -> dict[str, float]:
    """Units the other process compiled so far, with their seconds."""
    with _LOCK:
        return dict(_STATE.compiled)


def reset() -> None:
    """Forget everything (a new sweep starts counting from zero)."""
    with _LOCK:
        _STATE.pending.clear()
        _STATE.compiled.clear()
        _STATE.reference_runs = 0
