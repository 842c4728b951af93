"""The Python side shared by the packing engine's compiled paths
(``packing_fast``: the single-resource policies; ``packing_multi_fast``:
Tetris and Slots-Fair): which inputs a kernel declines because the reference
rejects them, and the horizon's ends as the reference holds them; and the
kernels' ids and VQS's ``J`` they take, which ``table.run_table`` reads to
choose a path before importing either. Kept apart so that both kernels
decline and finish exactly alike; no numba here.
"""

from __future__ import annotations

import math
import numbers

#: The ids of the compiled kernels: the built-in policies' registry names,
#: which the engine registry (``schedlab.engines.packing.kernel_id``) gives
#: for those classes themselves (by identity, never a subclass).
#: ``packing_fast``, without parameters:
SINGLE_KERNELS = ("FIFO-FF", "BF-J", "BF-S", "BF-J/S")
#: ``packing_fast``, with the default or an int ``J`` (:func:`fast_vqs_J`):
VQS_KERNELS = ("VQS", "VQS-BF")
#: ``packing_multi_fast``, with any parameters (its ``simulate`` declines those
#: the policies' constructors refuse):
MULTI_KERNELS = ("Tetris", "Slots-Fair")

#: The largest VQS / VQS-BF ``J`` the compiled path takes (its configuration
#: weights k·Q, at most 3·2^(J-2) times the queue length, stay exact in int64).
FAST_VQS_MAX_J = 24


def fast_vqs_J(params) -> int | None:
    """VQS / VQS-BF's ``J`` for the compiled path: the default, or a given
    int 2 <= J <= FAST_VQS_MAX_J and no other parameter; None otherwise (the
    reference then runs, or raises its UserError)."""
    from schedlab.engines.packing.sim.vqs_partition import DEFAULT_J

    params = params or {}
    if set(params) - {"J"}:
        return None
    J = params.get("J", DEFAULT_J)
    if isinstance(J, bool) or not isinstance(J, int) or not 2 <= J <= FAST_VQS_MAX_J:
        return None
    return int(J)


def checked_inputs(submit, duration, demand, capacity, group, estimate, epoch, sample_every, until):
    """``(submit, duration, demand, capacity, group, estimate)`` as the
    reference normalises them, or None where the reference raises (its
    ``_as_inputs`` / ``_as_groups`` errors, a bad or bool Δ, a bad
    ``sample_every``, a NaN ``until`` or an int one beyond 2^53, which the
    reference compares exactly), there are no jobs, or a capacity is not
    finite: the caller then declines and the reference gives its answer."""
    import numpy as np

    from schedlab.engines.packing.sim.engine import _as_groups, _as_inputs

    try:
        submit, duration, demand, capacity = _as_inputs(submit, duration, demand, capacity)
        group, estimate = _as_groups(group, estimate, duration)
    except ValueError:
        return None  # the reference raises the same error
    if epoch is not None and (isinstance(epoch, bool) or not (epoch > 0 and math.isfinite(epoch))):
        return None
    if sample_every is not None and not (sample_every > 0 and math.isfinite(sample_every)):
        return None
    if until is not None and (math.isnan(until) or float(until) != until):
        return None
    if demand.shape[0] == 0 or not np.all(np.isfinite(capacity)):
        return None
    return submit, duration, demand, capacity, group, estimate


def horizon(floats, ints, epoch, until):
    """``(t0, t1)`` from a kernel's float times and its ``ints`` (epochs at
    [2], extended to ``until`` at [4], last epoch a departure at [5]) as the
    reference holds them: ``until`` as given, and with an integer Δ a
    departure epoch is ``math.ceil(...) * Δ``, an int (the same value: an
    integer below 2^53 in a float is exact). None if that int would not be
    exact (the caller declines)."""
    t0, t1 = float(floats[0]), float(floats[1])
    epochs, extended, at_departure = int(ints[2]), int(ints[4]), int(ints[5])
    if epochs == 0:
        t0 = 0.0 if until is None else min(0.0, until)
    if extended:
        t1 = until
    elif epochs == 0:
        t1 = t0
    elif at_departure and isinstance(epoch, numbers.Integral):
        if not abs(t1) < 2.0**53:
            return None
        t1 = int(t1) // epoch * epoch
    return t0, t1
