"""Floating-point reductions whose bits do not depend on the CPU.

schedlab promises that the same spec and seed give bit-identical rows on one
core or on a cluster that mixes CPUs. Elementwise IEEE arithmetic (+, -, *,
/, sqrt) keeps that promise on every x86-64 or ARM CPU, SIMD or not, and so
does numpy's own summation (``np.add.reduce``, ``np.sum``, ``np.mean``,
``np.cumsum``): its order (pairwise blocks of 8 interleaved accumulators) is
fixed by numpy's source, whichever SIMD target numpy dispatched to.

``np.dot`` and ``@`` are different: numpy hands them to the BLAS it is linked
against (OpenBLAS in numpy's wheels), and OpenBLAS picks its ``ddot`` kernel
for the CPU when it loads -- 16 fused multiply-add partial sums on Haswell and
Zen, others on Sandy Bridge, Nehalem, Skylake-X or a generic x86-64 -- and
splits a product of more than 10,000 terms over as many threads as there are
cores. The same two arrays then give sums that differ in their last bits from
one machine to the next: a sweep's ``utilisation`` (batch) and
``mst_obm_ci95`` (queue, warm-up deletion) did, which is why every reduction
that ends up in a result row goes through `dot` here instead.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def dot(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """sum_i a_i b_i of two 1-d arrays as a float, the same bits on every CPU:
    the products rounded one by one (no fused multiply-add), then numpy's
    pairwise sum. As accurate as a BLAS ``ddot`` (error O(log n) ulps of the
    sum of |a_i b_i|); 0.0 for empty arrays, as ``np.dot`` gives."""
    return float(np.add.reduce(np.multiply(a, b, dtype=np.float64)))
