"""Compiled helpers of the DFRS engine (``schedlab.engines.dfrs.sim``), imported
lazily (the engine module is imported by the policy registry; only a DFRS
run loads numba).

The max-min allocation (``max_min_kernel``) repeats
``schedlab.engines.dfrs.sim.max_min_yields_numpy`` bit for bit. Two of its numpy
operations have a summation order of their own, and the kernel reproduces
both rather than approximating them:

* ``A[:, active].sum(axis=1)``: numpy reduces each (contiguous) row with its
  pairwise summation (``pairwise_sum``: sequential below 8 terms, 8
  interleaved accumulators up to 128, halves at multiples of 8 above):
  transcribed in ``_pairwise``.
* ``A[:, ~active] @ y[~active]``: numpy's matmul calls the BLAS it is linked
  against (``cblas_dgemv``, or ``cblas_ddot`` for a single row), whose
  order depends on the BLAS build and the CPU. The kernel calls *the same
  function* of the same library with the same arguments (the address is
  looked up in numpy's own extension module, ``blas_functions``), so the
  bits agree by construction; numpy's non-BLAS cases (no column, one column)
  are transcribed. ``blas_functions`` checks the bridge against numpy's
  ``@`` on a battery of shapes once per process and returns None if
  anything differs or the library is not one it knows (then the engine keeps
  the numpy implementation).
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from schedlab.sim.common.jit import ALLOC, HOT, JIT, hpop, hpush, njit
from schedlab.sim.common.jit import pairwise_sum as _pairwise


@njit(**JIT)
def horizon_kernel(run, pen_until, y, p, vt, t):
    """One event's look-ahead of the engine loop over the running jobs
    ``run``: rate = y if the penalty is over (pen_until <= t) else 0; the
    predicted completion t + (p - vt) / rate (inf at rate 0); returns (rate,
    completions, the earliest of the completions and of the penalty ends
    still ahead -- inf if none) -- the numpy expressions' operations."""
    n = run.shape[0]
    rate = np.empty(n)
    t_c = np.empty(n)
    nxt = np.inf
    for q in range(n):
        j = run[q]
        if pen_until[j] <= t:
            r = y[j]
        else:
            r = 0.0
            if pen_until[j] < nxt:
                nxt = pen_until[j]
        rate[q] = r
        c = t + (p[j] - vt[j]) / r if r > 0 else np.inf
        t_c[q] = c
        if c < nxt:
            nxt = c
    return rate, t_c, nxt


@njit(**JIT)
def release_kernel(free_mem, load, nodes, mem, cpu):
    """``np.add.at(free_mem, nodes, mem)``, ``np.add.at(load, nodes, -cpu)``:
    the same sequential additions, task by task."""
    for q in range(nodes.shape[0]):
        free_mem[nodes[q]] += mem
    for q in range(nodes.shape[0]):
        load[nodes[q]] += -cpu


@njit(**JIT)
def hit_incidence_kernel(row_of, nrows, nodes, ptr, cpu):
    """The allocation's input in one pass over the running jobs (in the order
    given): the indices of the jobs with a task on a row (``row_of[k] >= 0``:
    an overloaded node) and their incidence matrix: A[row_of[k], h] += cpu[i] for each task node k
    of hit job i, task by task -- the sequential sums of
    ``np.add.at(A[:, h], rows, c)``, bit for bit."""
    J = ptr.shape[0] - 1
    hit = np.empty(J, dtype=np.int64)
    nh = 0
    for i in range(J):
        for q in range(ptr[i], ptr[i + 1]):
            if row_of[nodes[q]] >= 0:
                hit[nh] = i
                nh += 1
                break
    A = np.zeros((nrows, nh))
    for h in range(nh):
        i = hit[h]
        c = cpu[i]
        for q in range(ptr[i], ptr[i + 1]):
            r = row_of[nodes[q]]
            if r >= 0:
                A[r, h] += c
    return hit[:nh].copy(), A


@njit(**JIT)
def greedy_place_kernel(free_mem, load, tasks, mem, cpu, mem_eps):
    """Greedy (``schedlab.engines.dfrs.policies.greedy.greedy_place``): task slots
    floor((free + eps) / m) per node, then each task on the node with the
    smallest (load, index) among those with a slot left, the load raised by
    the job's need -- the reference's heap of (load, node) tuples, as a heap
    of the same pairs in the same total order. Returns (ok, nodes)."""
    K = free_mem.shape[0]
    slots = np.empty(K, dtype=np.int64)
    total = 0
    for k in range(K):
        slots[k] = np.int64(np.floor((free_mem[k] + mem_eps) / mem))
        total += slots[k]
    out = np.empty(max(tasks, 0), dtype=np.int64)
    if total < tasks:
        return False, out
    hk = np.empty(K)
    hi = np.empty(K, dtype=np.int64)
    hs = 0
    for k in range(K):
        if slots[k] > 0:
            hs = hpush(hk, hi, hs, load[k], np.int64(k))
    for t in range(tasks):
        least = hk[0]
        k = hi[0]
        hs = hpop(hk, hi, hs)
        out[t] = k
        slots[k] -= 1
        if slots[k] > 0:
            hs = hpush(hk, hi, hs, least + cpu, k)
    return True, out


# -- numpy's BLAS, called from compiled code -------------------------------------

#: (symbol of cblas_dgemv, symbol of cblas_ddot, 64-bit BLAS integers): the builds numpy ships
#: (scipy-openblas64 in the PyPI wheels, with its prefix and suffix) and a plain CBLAS.
_BLAS_SYMBOLS = (
    ("scipy_cblas_dgemv64_", "scipy_cblas_ddot64_", True),
    ("cblas_dgemv64_", "cblas_ddot64_", True),
    ("scipy_cblas_dgemv", "scipy_cblas_ddot", False),
    ("cblas_dgemv", "cblas_ddot", False),
)
_ROW_MAJOR, _TRANS = 101, 112  # CBLAS enum values (cblas.h)


@intrinsic
def _call_dgemv(typingctx, addr, ilp64, m, n, lda, a, x, y):
    """cblas_dgemv(RowMajor, Trans, m, n, 1.0, a, lda, x, 1, 0.0, y, 1) at
    ``addr``: y = A x for A of shape (n, m) in Fortran order (lda = n), as
    numpy's matmul calls it for a Fortran-ordered matrix (what ``A[:, mask]``
    makes) times a contiguous vector."""
    sig = types.void(addr, ilp64, m, n, lda, a, x, y)

    def codegen(context, builder, signature, args):
        addr_v, ilp_v, m_v, n_v, lda_v, a_v, x_v, y_v = args
        i32, dbl = ir.IntType(32), ir.DoubleType()
        ptr = dbl.as_pointer()
        data = [context.make_array(t)(context, builder, v).data for t, v in zip(signature.args[5:], (a_v, x_v, y_v))]

        def call(it, mm, nn, ll):
            fnty = ir.FunctionType(ir.VoidType(), [i32, i32, it, it, dbl, ptr, it, ptr, it, dbl, ptr, it])
            fn = builder.inttoptr(addr_v, fnty.as_pointer())
            one = ir.Constant(it, 1)
            builder.call(
                fn,
                [
                    ir.Constant(i32, _ROW_MAJOR),
                    ir.Constant(i32, _TRANS),
                    mm,
                    nn,
                    ir.Constant(dbl, 1.0),
                    data[0],
                    ll,
                    data[1],
                    one,
                    ir.Constant(dbl, 0.0),
                    data[2],
                    one,
                ],
            )

        with builder.if_else(builder.icmp_unsigned("!=", ilp_v, ir.Constant(ilp_v.type, 0))) as (wide, narrow):
            with wide:
                call(ir.IntType(64), m_v, n_v, lda_v)
            with narrow:
                call(i32, builder.trunc(m_v, i32), builder.trunc(n_v, i32), builder.trunc(lda_v, i32))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _call_ddot(typingctx, addr, ilp64, n, x, y):
    """cblas_ddot(n, x, 1, y, 1) at ``addr``."""
    sig = types.float64(addr, ilp64, n, x, y)

    def codegen(context, builder, signature, args):
        addr_v, ilp_v, n_v, x_v, y_v = args
        i32, i64, dbl = ir.IntType(32), ir.IntType(64), ir.DoubleType()
        ptr = dbl.as_pointer()
        xp = context.make_array(signature.args[3])(context, builder, x_v).data
        yp = context.make_array(signature.args[4])(context, builder, y_v).data
        f64 = builder.inttoptr(addr_v, ir.FunctionType(dbl, [i64, ptr, i64, ptr, i64]).as_pointer())
        f32 = builder.inttoptr(addr_v, ir.FunctionType(dbl, [i32, ptr, i32, ptr, i32]).as_pointer())
        out = builder.alloca(dbl)
        with builder.if_else(builder.icmp_unsigned("!=", ilp_v, ir.Constant(ilp_v.type, 0))) as (wide, narrow):
            with wide:
                builder.store(builder.call(f64, [n_v, xp, ir.Constant(i64, 1), yp, ir.Constant(i64, 1)]), out)
            with narrow:
                one = ir.Constant(i32, 1)
                builder.store(builder.call(f32, [builder.trunc(n_v, i32), xp, one, yp, one]), out)
        return builder.load(out)

    return sig, codegen


@njit(**HOT)
def _masked_matvec(A, take, y, out, buf, xs, gemv, dot, ilp64):
    """out = ``A[:, take] @ y[take]`` as numpy computes it: the fancy index
    makes a Fortran-ordered (K, m) copy (for K >= 2), which matmul hands to
    cblas_dgemv(RowMajor, Trans, m, K, ..., lda=K); a single row goes to
    cblas_ddot (``DOUBLE_dot``: 0.0 + ddot), a single column or an empty
    product to numpy's own loop (0 + a x, or 0)."""
    K, J = A.shape
    m = 0
    for j in range(J):
        if take[j]:
            xs[m] = y[j]
            for k in range(K):
                buf[m * K + k] = A[k, j]
            m += 1
    if K == 0:
        return
    if m == 0:
        for k in range(K):
            out[k] = 0.0
    elif K == 1:
        out[0] = 0.0 + _call_ddot(dot, ilp64, m, buf[:m], xs[:m])
    elif m == 1:
        for k in range(K):
            out[k] = 0.0 + buf[k] * xs[0]
    else:
        _call_dgemv(gemv, ilp64, m, K, K, buf[: m * K], xs[:m], out)


@njit(**ALLOC)
def _masked_row_sums(A, take, out, row):
    """out = ``A[:, take].sum(axis=1)`` as numpy computes it: for K >= 2 the
    copy is Fortran-ordered and the reduction adds its columns one by one
    (a sequential sum per row, in column order); a single row is contiguous
    and reduced with numpy's pairwise summation."""
    K, J = A.shape
    if K == 1:
        n = 0
        for j in range(J):
            if take[j]:
                row[n] = A[0, j]
                n += 1
        out[0] = 0.0 + _pairwise(row, 0, n)
        return
    for k in range(K):
        out[k] = 0.0
    for j in range(J):
        if take[j]:
            for k in range(K):
                out[k] += A[k, j]


@njit(**JIT)
def masked_ops_kernel(A, take, y, gemv, dot, ilp64):
    """(``A[:, take].sum(axis=1)``, ``A[:, take] @ y[take]``) through the
    compiled transcriptions (the bridge check and the tests)."""
    K, J = A.shape
    sums = np.zeros(K)
    prod = np.zeros(K)
    n = max(J, 1)
    _masked_row_sums(A, take, sums, np.empty(n))
    _masked_matvec(A, take, y, prod, np.empty(n * max(K, 1)), np.empty(n), gemv, dot, ilp64)
    return sums, prod


@njit(**JIT)
def max_min_kernel(A, gemv, dot, ilp64, load_eps):
    """``schedlab.engines.dfrs.sim.max_min_yields_numpy(A)``: the same operations on
    the same values (see ``_masked_row_sums`` and ``_masked_matvec`` for its
    two sums)."""
    K, J = A.shape
    y = np.zeros(J)
    active = np.ones(J, dtype=np.bool_)
    inactive = np.zeros(J, dtype=np.bool_)
    na = J
    act_load = np.empty(K)
    used = np.zeros(K)
    n = max(J, 1)
    row = np.empty(n)
    buf = np.empty(n * max(K, 1))
    xs = np.empty(n)
    while na > 0:
        _masked_row_sums(A, active, act_load, row)
        _masked_matvec(A, inactive, y, used, buf, xs, gemv, dot, ilp64)
        level = math.inf  # min(lev.min() if K else inf, 1.0), then max(level, 0.0) (Python's min/max)
        for k in range(K):
            lev = (1.0 - used[k]) / act_load[k] if act_load[k] > load_eps else math.inf
            used[k] = lev  # used[] now holds lev
            if lev < level:
                level = lev
        if 1.0 < level:
            level = 1.0
        if 0.0 > level:
            level = 0.0
        for j in range(J):
            if active[j]:
                y[j] = level
        if level >= 1.0:
            break
        thr = level * (1.0 + 1e-12) + 1e-15
        # freeze the active jobs with a task on a saturated row (A >= 0: "sum over the rows > 0" = "some entry > 0")
        for k in range(K):
            if used[k] <= thr:
                for j in range(J):
                    if active[j] and A[k, j] > 0.0:
                        active[j] = False
                        inactive[j] = True
                        na -= 1
    return y


_BRIDGE: list = []  # [None] or [(gemv address, ddot address, ilp64)], filled once per process


def blas_functions():
    """(address of cblas_dgemv, of cblas_ddot, 64-bit integers) of the BLAS
    numpy's matmul calls, or None when not found or when the compiled call
    differs from numpy's ``@`` in a single bit on the check battery."""
    if _BRIDGE:
        return _BRIDGE[0]
    _BRIDGE.append(None)
    from numpy._core import _multiarray_umath

    try:
        lib = ctypes.CDLL(_multiarray_umath.__file__)  # dlsym searches its dependencies: numpy's BLAS
    except OSError:
        return None
    for gname, dname, ilp64 in _BLAS_SYMBOLS:
        try:
            g, d = getattr(lib, gname), getattr(lib, dname)
        except AttributeError:
            continue
        found = (ctypes.cast(g, ctypes.c_void_p).value, ctypes.cast(d, ctypes.c_void_p).value, ilp64)
        if _bridge_agrees(*found):
            _BRIDGE[0] = found
        break
    return _BRIDGE[0]


def _bridge_agrees(gemv: int, dot: int, ilp64: bool) -> bool:
    rng = np.random.default_rng(20261125)
    for K, m in (
        (0, 3),
        (3, 0),
        (1, 1),
        (1, 2),
        (1, 9),
        (1, 70),
        (2, 1),
        (5, 1),
        (2, 2),
        (3, 5),
        (4, 4),
        (7, 9),
        (16, 16),
        (33, 17),
        (128, 46),
        (130, 130),
        (64, 300),
        (300, 7),
    ):
        for _ in range(3):
            A = rng.uniform(0.0, 1.0, (K, m)) * rng.integers(0, 3, (K, m))
            x = rng.uniform(0.0, 1.0, m)
            take = rng.uniform(0.0, 1.0, m) < 0.7
            _sums, prod = masked_ops_kernel(A, take, x, gemv, dot, ilp64)
            if prod.tobytes() != (A[:, take] @ x[take]).tobytes():
                return False
    return True
