"""The hidden-truth guard: a read-only sequence over an engine's secret
(queue sizes, packing durations, batch runtimes, DFRS processing times) that
only the engine's own module may read.

Why a guard and not a test on results: a policy that peeks at true sizes can
produce perfectly plausible schedules -- nothing in the output betrays it. The
only way to see the read is to be there when it happens. In check mode the
engine (``hidden=`` of ``simulate`` / ``simulate_packing`` /
``simulate_batch`` / ``simulate_dfrs``) wraps its container in a
:class:`Hidden`; every read (``[i]``, iteration, ``numpy.asarray``, any
attribute such as ``.sum``) looks at the *calling* frame's module: the
engine's module (``owner``) reads freely, anything else gets a
:class:`HiddenTruthError` naming the file and line that tried. The read is
also recorded in ``reads``, so a policy that swallows the exception (a bare
``except``) is caught anyway. ``len()`` is allowed: the number of jobs is no
secret.

This is a tripwire for the natural mistakes (``self.server._size[job]``,
``state.processing[j]``, walking up to the engine's frame and indexing its
list), not a sandbox: Python code determined to read memory can. The normal
(non-check) path never builds one, so it costs nothing there.
"""

from __future__ import annotations

import sys
from typing import Any

from schedlab.errors import PolicyError


class HiddenTruthError(PolicyError):
    """A policy read a value the engine keeps from it (a true size,
    duration, runtime or processing time)."""


class Hidden:
    """``values`` readable only from code whose module is ``owner``."""

    __slots__ = ("_values", "_owner", "_what", "reads")

    def __init__(self, values: Any, owner: str, what: str) -> None:
        self._values = values
        self._owner = owner
        self._what = what
        #: "file:line (function)" of every refused read, in order.
        self.reads: list[str] = []

    def _refuse(self, frame, how: str) -> HiddenTruthError:
        code = frame.f_code
        where = f"{code.co_filename}:{frame.f_lineno} (in {code.co_name})"
        self.reads.append(where)
        return HiddenTruthError(f"{where} read {self._what} ({how}); a policy must not see it")

    def __getitem__(self, index):
        frame = sys._getframe(1)
        if frame.f_globals.get("__name__") != self._owner:
            raise self._refuse(frame, f"[{index!r}]")
        return self._values[index]

    def __iter__(self):
        frame = sys._getframe(1)
        if frame.f_globals.get("__name__") != self._owner:
            raise self._refuse(frame, "iteration")
        return iter(self._values)

    def __array__(self, dtype=None, copy=None):
        frame = sys._getframe(1)
        if frame.f_globals.get("__name__") != self._owner:
            raise self._refuse(frame, "numpy conversion")
        import numpy as np

        return np.asarray(self._values, dtype=dtype)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str):
        # Called only for names not defined above (``.sum``, ``.tolist``, ...).
        # Dunder probes (numpy's __array_interface__, copy's __deepcopy__) get
        # the ordinary AttributeError so those protocols fall back to the
        # guarded methods.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        frame = sys._getframe(1)
        if frame.f_globals.get("__name__") != self._owner:
            raise self._refuse(frame, f".{name}")
        return getattr(self._values, name)

    def __repr__(self) -> str:
        return f"<hidden: {self._what}>"


def hider(owner: str, what: str):
    """A ``hidden=`` argument for an engine: wraps the engine's container and
    keeps the guard in ``made`` so the checker can read ``reads`` after the
    run."""
    made: list[Hidden] = []

    def wrap(values: Any) -> Hidden:
        guard = Hidden(values, owner, what)
        made.append(guard)
        return guard

    wrap.made = made  # type: ignore[attr-defined]
    return wrap


__all__ = ["Hidden", "HiddenTruthError", "hider"]
