"""Compiled helpers of the DFRS engine (``schedlab.sim.dfrs``), imported
lazily (the engine module is imported by the policy registry; only a DFRS
run loads numba)."""

from __future__ import annotations

import numpy as np

from schedlab.sim.jit import JIT, njit


@njit(**JIT)
def incidence_kernel(row_of, nrows, nodes, ptr, cpu):
    """A[row_of[k], i] += cpu[i] for each task node k of job i (tasks on rows
    < 0 skipped), job by job, task by task: the sequential sums of
    ``np.add.at(A[:, i], rows, c)``, bit for bit."""
    J = ptr.shape[0] - 1
    A = np.zeros((nrows, J))
    for i in range(J):
        c = cpu[i]
        for q in range(ptr[i], ptr[i + 1]):
            r = row_of[nodes[q]]
            if r >= 0:
                A[r, i] += c
    return A
