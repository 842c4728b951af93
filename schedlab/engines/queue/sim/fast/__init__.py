"""The queue engine's compiled fast path: numba kernels for the built-in policies.

Why it exists
-------------
The reference engine (``schedlab.engines.queue.sim.engine`` with the policies of
``schedlab.engines.queue.policies``) is readable Python and the seam for user policies;
it runs ~0.3 M events/s. These kernels run the same schedules at tens of
millions of events/s: one ``@njit(cache=True)`` event loop per policy family
over numpy arrays, no Python object in the loop.

=================  ==========  ==============================================
module             kernel      policies
=================  ==========  ==============================================
``basic``          ``_basic``  FIFO, PS, GPS, LAS
``srpt``           ``_srpt``   SRPT, SRPTE, SRPTE+PS, SRPTE+LAS
``fsp``            ``_fsp``    FSP, FSPE, FSPE+PS, FSPE+LAS, PSBS (Algorithm 1's
                               virtual lag)
=================  ==========  ==============================================

Their shared machinery: ``server`` (the engine's ``Server``: job and pool
tables, pools' pairing heaps, ``tie_key``, status codes) and ``las``
(``LeastAttained``, used by LAS, SRPTE+LAS and FSPE+LAS); a run's summary is
one more kernel (``outcome``: the summary metrics to the bit). This package's
``__init__`` is the Python side: :func:`simulate`, :func:`kernel_for`,
:func:`warm`, :func:`compile_all`.

Same numbers as the reference: bit-identical, for every policy
---------------------------------------------------------------
Each kernel is a transcription of the reference, operation for operation: the
same ``Server`` arithmetic (a pool's clock anchored as ``v_ref`` at ``t_ref``
and re-anchored only when its membership or its possession of the server
changes; finish tags ``F = V0 + (size - a0) / w``; weights added to and
subtracted from a pool's total in the same order; an emptied pool reset to
exactly 0), the same main loop (completions, then internal events, then
arrivals; the ``DONE_REL_TOL`` completion snapping), the same ``tie_key``
(``TIE_BITS``, round half to even) and the same heap orders: a pool's members
by (finish tag, entry sequence number), SRPT's waiting jobs by (tie key,
job), the virtual lag's O and E by (tie key of g_i, job), LAS's paused groups
by (tie key of level, creation order). Every float operation is IEEE double
in the reference's order (numba does not reassociate or contract without
``fastmath``), so the completion times are **bit-identical** for all 13
built-ins, and so is the event count; no policy needs the 1e-12 allowance.
``tests/test_queue_fast.py`` checks it with hypothesis over workloads full of
ties and coincidences, and every queue test runs on both paths.

Data structures: a pool's members sit in a pairing heap whose nodes are the
jobs (a job is in one pool at a time), so a member leaves in O(log n)
amortised without lazy deletion; the other priority queues are array-based
binary heaps. Each order above is a total order, so the heap top -- all that
the reference ever reads -- is the same whatever the heap's shape.

The one thing no transcription can copy, and what happens then
--------------------------------------------------------------
LAS (and SRPTE+LAS, FSPE+LAS) moves a whole group's members into another pool
when two groups meet, iterating over a Python ``set``: the moved jobs get
consecutive entry sequence numbers in set-iteration order, which this module
does not emulate (it moves them in the order they joined the group). That
order decides which of two members with *bit-equal* finish tags completes
first; both complete at the same instant either way, and only the
completion-snapping test (which reads the first job's size) could tell them
apart -- so results can differ only if two jobs moved together get equal
finish tags and different sizes. The kernel detects exactly that after every
move and then returns ``AMBIGUOUS``: :func:`simulate` gives up and the engine
runs the reference instead. In practice it never fires on real workloads (it
needs remaining works equal to the last bit with different sizes).

When the fast path is not used
------------------------------
A kernel is named by its id, the built-in policy's registry name: the engine
registry (``schedlab.engines.queue.kernel_id``) gives it for the built-in
classes themselves, by identity, so a subclass of a built-in (a user's
policy) always runs on the reference; this package never sees a policy
class. :func:`simulate`
also declines (returns None: the engine runs the reference) for inputs that
are not float64, not finite, not positive (sizes, estimates, weights), not
sorted by submit time, and for policy parameters (built-ins take none); the
reference then gives its usual answer or error.

Compiled code is cached on disk (``cache=True``, set up in
``schedlab.sim.common.jit``) in ``$NUMBA_CACHE_DIR`` if the user set it, else
``$SCHEDLAB_CACHE_DIR/numba/<digest>``, else ``~/.cache/schedlab/numba/<digest>``;
``<digest>`` covers ``jit.py`` and every module of this package, because
numba invalidates a cached kernel only when *its own* file changes, not when
a helper it calls from ``server`` or ``las`` does. The first use on a machine
compiles every kernel (~10 s of CPU, see ``benchmarks/queue_engine.py``);
later processes, Ray workers included, load them in well under a second.
This package imports numba; only the queue engine's fast path imports it.
"""

from __future__ import annotations

import numpy as np

from schedlab.engines.queue.sim.fast import outcome
from schedlab.engines.queue.sim.fast.basic import B_FIFO, B_GPS, B_LAS, B_PS, _basic
from schedlab.engines.queue.sim.fast.fsp import FSP_GPS, FSP_LAS, FSP_ONE, _fsp
from schedlab.engines.queue.sim.fast.las import SCR, _ambiguous  # noqa: F401  (for the tests)
from schedlab.engines.queue.sim.fast.server import AMBIGUOUS, FT, OK, POOLS_FULL, STALLED, SZ, tie_key  # noqa: F401  (for the tests)  # noqa: F401  (status codes)
from schedlab.engines.queue.sim.fast.srpt import SRPT_LAS, SRPT_PLAIN, SRPT_PS, _srpt
from schedlab.sim.common.jit import cache_dir  # noqa: F401  (kept in this package's API)
from schedlab.sim.common.jit import cached as _cached

# ---- the Python side ------------------------------------------------------------------

#: Kernel id -> (kernel, mode, sees the true sizes). The id is the built-in
#: policy's registry name: the engine registry (``schedlab.engines.queue``)
#: gives it for the built-in classes themselves (see the module docstring);
#: the third field is the class's ``exact_size`` (a test checks they agree).
_KERNELS = {
    "FIFO": ("fifo", B_FIFO, False),
    "PS": ("ps", B_PS, False),
    "GPS": ("ps", B_GPS, False),
    "LAS": ("las", B_LAS, False),
    "SRPT": ("srpt", SRPT_PLAIN, True),
    "SRPTE": ("srpt", SRPT_PLAIN, False),
    "SRPTE+PS": ("srpt", SRPT_PS, False),
    "SRPTE+LAS": ("srpt", SRPT_LAS, False),
    "FSP": ("fsp", FSP_ONE, True),
    "FSPE": ("fsp", FSP_ONE, False),
    "FSPE+PS": ("fsp", FSP_GPS, False),
    "FSPE+LAS": ("fsp", FSP_LAS, False),
    "PSBS": ("fsp", FSP_GPS + 8, False),
}

#: Policy family -> its kernel (FIFO, PS/GPS and LAS share one: see basic.py).
_FUNCTIONS = {"fifo": _basic, "ps": _basic, "las": _basic, "srpt": _srpt, "fsp": _fsp}


def kernel_for(kernel: str | None) -> tuple[str, int] | None:
    """(kernel, mode) of kernel id ``kernel`` (a built-in policy's name), else None."""
    found = _KERNELS.get(kernel) if kernel is not None else None
    return None if found is None else (found[0], found[1])


def writable(a: np.ndarray) -> np.ndarray:
    # A writable C float64 array: the one type the kernels are compiled for (a
    # read-only array, as polars hands out, would compile a second version).
    # (np.require's answer without its bookkeeping: the same array or a C copy.)
    if a.dtype == np.float64:
        return a if a.flags.c_contiguous and a.flags.writeable else a.copy(order="C")
    return np.require(a, np.float64, ["C", "W"])


def simulate(
    kernel: str | None,
    submit: np.ndarray,
    size: np.ndarray,
    estimate: np.ndarray,
    weight: np.ndarray,
    params=None,
) -> tuple[np.ndarray, int] | None:
    """(completion times, events) of kernel ``kernel`` (a built-in policy's
    name), bit-identical to ``schedlab.engines.queue.sim.engine.simulate`` with that
    policy; or None when the fast path declines (no such kernel, policy
    parameters, inputs outside the kernels' remit, an AMBIGUOUS or STALLED
    run): then run the reference."""
    found = _KERNELS.get(kernel) if kernel is not None else None
    if found is None or params:
        return None
    arrays = [np.asarray(a) for a in (submit, size, estimate, weight)]
    n = len(arrays[0])
    for a in arrays:
        if a.dtype != np.float64 or a.ndim != 1 or len(a) != n:
            return None
    if n == 0:
        return None
    submit, size, estimate, weight = (writable(a) for a in arrays)
    if not outcome.inputs_ok(submit, size, estimate, weight):  # finite, positive, in submit order
        return None
    family, mode, exact_size = found
    args = (submit, size, size if exact_size else estimate, weight)
    completion, events, status = _FUNCTIONS[family](*args, mode, _pool_rows(n))
    if status == POOLS_FULL:  # rare (many preemptions): again with room for every pool a run can create
        completion, events, status = _FUNCTIONS[family](*args, mode, _pool_rows(n, enough=True))
    if status != OK:
        return None
    return completion, int(events)


def _pool_rows(n: int, enough: bool = False) -> int:
    """Rows of the pool table. Rows in use at once: the jobs present (each
    in its lone pool, see server._lone_pool: a dead lone pool's row is
    recycled), the LAS groups (one per job at most) and a shared pool: at most
    2 n + 2, so the first size always suffices. The second, a bound on the
    pools a run creates without recycling (7 n + 2), is a safety net: a kernel
    that ran out would return POOLS_FULL and run again with it."""
    return 8 * n + 16 if enough else 2 * n + 16


def unit(kernel: str | None) -> str | None:
    """The compiled function kernel id ``kernel`` runs on, named for
    ``schedlab.sim.common.compiling`` ("queue._fsp"), else None."""
    found = _KERNELS.get(kernel) if kernel is not None else None
    return None if found is None else f"queue.{_FUNCTIONS[found[0]].__name__}"


def cached(kernel: str | None) -> bool:
    """Whether kernel ``kernel``'s compiled code is in the on-disk cache
    (`schedlab.sim.common.jit.cached`); True for no kernel."""
    found = _KERNELS.get(kernel) if kernel is not None else None
    return found is None or all(_cached(f) for f in (_FUNCTIONS[found[0]], outcome._outcome, outcome.inputs_ok))


_WARM: set[str] = set()


def warm(kernel: str | None) -> None:
    """Compile (or load from the cache) kernel ``kernel`` now, so that a
    timed run excludes it."""
    found = kernel_for(kernel)
    if found is not None and found[0] not in _WARM:
        one = np.ones(3)
        _FUNCTIONS[found[0]](np.array([0.0, 0.5, 0.5]), one, one * 0.5, one, found[1], _pool_rows(3))
        if not _WARM:
            outcome.warm()  # the summary kernel every kernel's run ends with
        _WARM.add(found[0])


def compile_all() -> None:
    """Compile every kernel (or load it from the on-disk cache)."""
    one = np.ones(3)
    sub = np.array([0.0, 0.5, 0.5])
    for kernel in dict.fromkeys(_FUNCTIONS.values()):
        kernel(sub, one, one * 0.5, one, 0, _pool_rows(3))
    outcome.warm()
