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
once per machine, not once per task. ``<digest>`` is that of the sources
whose helpers kernels of *other* modules call (``SHARED_SOURCES``: this
module, ``tetris_fast.py``, whose helpers ``packing_multi_fast``'s kernel
calls, and every module of a kernel *package* (``sim/*_fast/``, e.g.
``queue_fast/``, whose kernels call helpers from sibling modules)): numba
invalidates a cached kernel when *its* file changes, not when a helper it
calls from another file does, so a change to any of these moves every kernel
to a fresh cache directory.

The helpers shared by several kernel modules live here: `hpush` / `hpop`, a
binary heap of (key, item) pairs in two arrays, ordered by key then item (a
total order, so the top is the same whatever the heap's shape -- all a
transcription of Python's ``heapq`` of tuples needs); and, shared by the
packing kernels (``packing_fast``, ``packing_multi_fast``), `st_new` /
`st_update` / `st_first_at_least` (``structures.MaxSegmentTree``'s array
segment tree: -inf padding, ``a if a >= b else b``, the same First-Fit climb
and descent), `epoch_of` (``packing._epoch_of``) and `grow_f` / `grow_i`
(a sampled series' buffers, doubled).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

#: The sources whose change must invalidate every cached kernel: this module,
#: the packing engine's helper module tetris_fast.py, the engines' one-file
#: kernels (``engines/<engine>/sim/fast.py``; Batch-v0's ``gym_kernel.py`` calls
#: the batch kernel's helpers) and the modules of the kernel packages
#: (``engines/<engine>/sim/fast/``, ``engines/packing/sim/multi_fast/``; see the
#: module docstring): numba re-checks a kernel's own file only. Read as files
#: (never imported): the cache's key, not a dependency on the engines.
_ENGINES = Path(__file__).resolve().parents[2] / "engines"
SHARED_SOURCES = (
    Path(__file__),
    _ENGINES / "packing" / "sim" / "tetris_fast.py",
    _ENGINES / "batch" / "gym_kernel.py",
    *sorted(
        [*_ENGINES.glob("*/sim/fast.py"), *_ENGINES.glob("*/sim/fast/*.py"), *_ENGINES.glob("*/sim/multi_fast/*.py")]
    ),
)


def _shared_digest() -> str:
    h = hashlib.sha256()
    for path in SHARED_SOURCES:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


#: Digest of SHARED_SOURCES: the cache subdirectory (see the module docstring).
SHARED_DIGEST = _shared_digest()


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

import math  # noqa: E402

import numba  # noqa: E402  (after NUMBA_CACHE_DIR is set)
import numpy as np  # noqa: E402
from numba import njit  # noqa: E402  (re-exported for the kernel modules)

from schedlab.sim.common.tolerances import EPOCH_TOL  # noqa: E402

# numba's config attributes are set at run time from the environment (no
# static declaration for a type checker to see).
if not getattr(numba.config, "CACHE_DIR", ""):  # numba was imported before us: its config missed the variable
    setattr(numba.config, "CACHE_DIR", os.environ["NUMBA_CACHE_DIR"])  # noqa: B010  (see above)

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
INF = math.inf


def cached(dispatcher: Any) -> bool:
    """Whether numba's on-disk cache holds compiled code of ``dispatcher`` (a
    ``cache=True`` kernel) for its current source: its index file exists,
    is stamped with the source file's modification time and size, and lists
    an entry -- so calling it loads instead of compiling. Read through numba's
    cache object (not a public API: on any surprise, True, and the caller
    loads or compiles on first use as it always did)."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - see the docstring
        return True


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


# ---- shared by the packing kernels ------------------------------------------------------


@njit(**ALLOC)
def st_new(values):
    n = values.shape[0]
    size = 1
    while size < max(n, 1):
        size *= 2
    t = np.empty(2 * size)
    for k in range(2 * size):
        t[k] = -INF
    for k in range(n):
        t[size + k] = values[k]
    for k in range(size - 1, 0, -1):
        a = t[2 * k]
        b = t[2 * k + 1]
        t[k] = a if a >= b else b
    return t, size


@njit(**HOT)
def st_update(t, size, i, value):
    i += size
    t[i] = value
    i >>= 1
    while i:
        a = t[2 * i]
        b = t[2 * i + 1]
        m = a if a >= b else b
        if t[i] == m:
            break  # ancestors unchanged
        t[i] = m
        i >>= 1


@njit(**HOT)
def st_first_at_least(t, size, n, r, lo):
    """Lowest index i >= lo with value[i] >= r, or -1."""
    if lo >= n or t[1] < r:
        return NONE
    i = lo + size
    while t[i] < r:
        while i & 1:
            i >>= 1
        if i == 0:
            return NONE
        i += 1
    while i < size:
        i <<= 1
        if t[i] < r:
            i += 1
    return i - size


@njit(**HOT)
def epoch_of(x, delta):
    """packing._epoch_of: ``math.ceil`` (a Python int) times Δ. A float ceil
    is the same integer, which int * float converts exactly, except that an
    int has no negative zero: ceil(-1e-9) is -0.0 here and 0 there, so the
    ceil gets + 0.0 (which turns -0.0 into 0.0 and leaves every other value)."""
    q = x / delta
    a = abs(q)
    m = a if a > 1.0 else 1.0
    return (np.ceil(q - EPOCH_TOL * m) + 0.0) * delta


@njit(**ALLOC)
def grow_f(a, cap):
    b = np.empty(cap)
    for k in range(a.shape[0]):
        b[k] = a[k]
    return b


@njit(**ALLOC)
def grow_i(a, cap):
    b = np.empty(cap, dtype=np.int64)
    for k in range(a.shape[0]):
        b[k] = a[k]
    return b


@njit(**HOT)
def pairwise_block(a, lo, n):
    """numpy's ``pairwise_sum`` of a[lo:lo + n] for n <= 128 (loops_utils.h.src):
    sequential below 8 terms, else 8 interleaved accumulators and the rest."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        b = lo + i
        r0 += a[b]
        r1 += a[b + 1]
        r2 += a[b + 2]
        r3 += a[b + 3]
        r4 += a[b + 4]
        r5 += a[b + 5]
        r6 += a[b + 6]
        r7 += a[b + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(**ALLOC)
def pairwise_sum(a, lo, n):
    """numpy's ``pairwise_sum`` of a[lo:lo + n] (``np.add.reduce`` of a
    contiguous float64 array, whose order numpy's source fixes on every CPU):
    above 128 terms, the sum of the two halves split at a multiple of 8
    (n // 2 rounded down), each summed the same way -- the recursion unrolled
    on an explicit stack (a recursive numba function does not survive the
    on-disk cache). Shared by the DFRS allocations and the queue summary."""
    if n <= 128:
        return pairwise_block(a, lo, n)
    slo = np.empty(64, dtype=np.int64)  # frames: start, length, stage (0 new, 1 left done), left half's sum
    sn = np.empty(64, dtype=np.int64)
    stage = np.empty(64, dtype=np.int64)
    left = np.empty(64)
    slo[0], sn[0], stage[0] = lo, n, 0
    sp = 1
    ret = 0.0
    while sp > 0:
        t = sp - 1
        nn = sn[t]
        n2 = nn // 2
        n2 -= n2 % 8
        if stage[t] == 0:
            if nn <= 128:
                ret = pairwise_block(a, slo[t], nn)
                sp -= 1
            else:
                stage[t] = 1
                slo[sp], sn[sp], stage[sp] = slo[t], n2, 0
                sp += 1
        elif stage[t] == 1:
            left[t] = ret
            stage[t] = 2
            slo[sp], sn[sp], stage[sp] = slo[t] + n2, nn - n2, 0
            sp += 1
        else:
            ret = left[t] + ret
            sp -= 1
    return ret
