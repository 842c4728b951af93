"""numba set-up shared by every compiled fast path (``queue_fast``,
``batch_fast``, ``packing_fast``).

Why one module: the on-disk cache directory must be chosen *before* numba is
imported (numba reads ``NUMBA_CACHE_DIR`` once), and every kernel module
should compile with the same options. Importing this module imports numba;
only the engines' fast paths import it, so ``schedlab --help`` and the
reference engines never load numba.

Compiled code is cached on disk (``cache=True``) in ``$NUMBA_CACHE_DIR`` if
the user set it, else ``$SCHEDLAB_CACHE_DIR/numba/<digest>``, else
``~/.cache/schedlab/numba/<digest>``: one directory shared by every process of
a user on a machine, Ray workers included, so the first-call compile is paid
once per machine, not once per task. ``<digest>`` is that of this module's
own source: numba invalidates a cached kernel when *its* file changes, not
when a helper it calls from another file does, so a change to the shared
helpers below moves every kernel to a fresh cache directory.

The helpers shared by several kernel modules live here: `hpush` / `hpop`, a
binary heap of (key, item) pairs in two arrays, ordered by key then item (a
total order, so the top is the same whatever the heap's shape -- all a
transcription of Python's ``heapq`` of tuples needs).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any
from pathlib import Path

#: Digest of this module's source: the cache subdirectory (see the module docstring).
SHARED_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]


def cache_dir() -> Path:
    """Where numba's compiled kernels are cached: ``$NUMBA_CACHE_DIR`` if set,
    else ``$SCHEDLAB_CACHE_DIR/numba/<digest>``, else
    ``~/.cache/schedlab/numba/<digest>``."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    base = os.environ.get("SCHEDLAB_CACHE_DIR")
    root = Path(base) / "numba" if base else Path.home() / ".cache" / "schedlab" / "numba"
    return root / SHARED_DIGEST


if not os.environ.get("NUMBA_CACHE_DIR"):
    os.environ["NUMBA_CACHE_DIR"] = str(cache_dir())

import numba  # noqa: E402  (after NUMBA_CACHE_DIR is set)
import numpy as np  # noqa: E402
from numba import njit  # noqa: E402  (re-exported for the kernel modules)

# numba's config attributes are set at run time from the environment (no
# static declaration for a type checker to see).
if not getattr(numba.config, "CACHE_DIR", ""):  # numba was imported before us: its config missed the variable
    setattr(numba.config, "CACHE_DIR", os.environ["NUMBA_CACHE_DIR"])

#: Kernels (called from Python): cached on disk, no GIL, IEEE division
#: semantics (no zero-division checks: the reference engines never divide by
#: zero where a kernel does).
JIT: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy", no_cfunc_wrapper=True)
#: Helpers that allocate nothing run without numba's reference counting: a
#: call to a separately compiled function would otherwise pay an atomic
#: incref/decref per array argument, more than most helpers' bodies cost.
HOT: dict[str, Any] = dict(nogil=True, error_model="numpy", _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
#: Helpers that allocate: reference counting on; like HOT, never called from
#: Python (no wrappers) and cached only as part of the kernels.
ALLOC: dict[str, Any] = dict(nogil=True, error_model="numpy", no_cpython_wrapper=True, no_cfunc_wrapper=True)

#: numpy scalars, not Python ints: numba types a Python int constant as a
#: literal, and a helper called with one would be compiled once more for it.
NONE = np.int64(-1)
ZERO = np.int64(0)


@njit(**HOT)
def hpush(hk, hi, hs, key, item):
    """Push (key, item) onto the heap of size ``hs`` in ``hk``/``hi``; return
    the new size. Order: key, then item."""
    i = hs
    while i > 0:
        parent = (i - 1) >> 1
        pk = hk[parent]
        pi = hi[parent]
        if key < pk or (key == pk and item < pi):
            hk[i] = pk
            hi[i] = pi
            i = parent
        else:
            break
    hk[i] = key
    hi[i] = item
    return hs + 1


@njit(**HOT)
def hpop(hk, hi, hs):
    """Remove the top (hk[0], hi[0]) of the heap of size ``hs``; return the new size."""
    hs -= 1
    lk = hk[hs]
    li = hi[hs]
    i = ZERO
    while True:
        c = 2 * i + 1
        if c >= hs:
            break
        if c + 1 < hs and (hk[c + 1] < hk[c] or (hk[c + 1] == hk[c] and hi[c + 1] < hi[c])):
            c += 1
        if hk[c] < lk or (hk[c] == lk and hi[c] < li):
            hk[i] = hk[c]
            hi[i] = hi[c]
            i = c
        else:
            break
    if hs > 0:
        hk[i] = lk
        hi[i] = li
    return hs
