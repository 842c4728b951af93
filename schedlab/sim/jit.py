"""numba set-up shared by every compiled fast path (``queue_fast``,
``batch_fast``, ``packing_fast``).

Why one module: the on-disk cache directory must be chosen *before* numba is
imported (numba reads ``NUMBA_CACHE_DIR`` once), and every kernel module
should compile with the same options. Importing this module imports numba;
only the engines' fast paths import it, so ``schedlab --help`` and the
reference engines never load numba.

Compiled code is cached on disk (``cache=True``) in ``$NUMBA_CACHE_DIR`` if
the user set it, else ``$SCHEDLAB_CACHE_DIR/numba``, else
``~/.cache/schedlab/numba``: one directory shared by every process of a user
on a machine, Ray workers included, so the first-call compile is paid once
per machine, not once per task.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where numba's compiled kernels are cached: ``$NUMBA_CACHE_DIR`` if set,
    else ``$SCHEDLAB_CACHE_DIR/numba``, else ``~/.cache/schedlab/numba``."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    base = os.environ.get("SCHEDLAB_CACHE_DIR")
    return Path(base) / "numba" if base else Path.home() / ".cache" / "schedlab" / "numba"


if not os.environ.get("NUMBA_CACHE_DIR"):
    os.environ["NUMBA_CACHE_DIR"] = str(cache_dir())

import numba  # noqa: E402  (after NUMBA_CACHE_DIR is set)
from numba import njit  # noqa: E402,F401  (re-exported for the kernel modules)

if not numba.config.CACHE_DIR:  # numba was imported before us: its config missed the variable
    numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]

#: Kernels (called from Python): cached on disk, no GIL, IEEE division
#: semantics (no zero-division checks: the reference engines never divide by
#: zero where a kernel does).
JIT = dict(cache=True, nogil=True, error_model="numpy", no_cfunc_wrapper=True)
#: Helpers that allocate nothing run without numba's reference counting: a
#: call to a separately compiled function would otherwise pay an atomic
#: incref/decref per array argument, more than most helpers' bodies cost.
HOT = dict(nogil=True, error_model="numpy", _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
#: Helpers that allocate: reference counting on; like HOT, never called from
#: Python (no wrappers) and cached only as part of the kernels.
ALLOC = dict(nogil=True, error_model="numpy", no_cpython_wrapper=True, no_cfunc_wrapper=True)
