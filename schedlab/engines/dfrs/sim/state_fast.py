"""Compiled batch form of ``DfrsState.apply``'s arithmetic (numba, imported
lazily by ``state``): one call releases every paused and moved job, one
acquires every placed and moved job, one counts the moved tasks -- instead of
three compiled calls per job, whose dispatch cost was a large share of an
MCB8 remap (it moves every running job).

Why the bits are those of the per-job code it replaced (one
``release_kernel`` / acquire / moved-count call per job, each the
sequential ``np.add.at`` sums of the job's tasks): each row (job) runs the
same statements in the same order, rows in the order the per-job calls ran,
so every node's free memory and load receive the same sequence of IEEE
additions. The overfill test and the moved-task count are integer or
comparison results of the same values.
"""

from __future__ import annotations

import numpy as np

from schedlab.sim.common.jit import JIT, njit


@njit(**JIT)
def release_rows(free_mem, load, nodes, ptr, mem, cpu):
    """For each row r in order: ``release_kernel(free_mem, load,
    nodes[ptr[r]:ptr[r + 1]], mem[r], cpu[r])``."""
    for r in range(ptr.shape[0] - 1):
        m = mem[r]
        c = cpu[r]
        for q in range(ptr[r], ptr[r + 1]):
            free_mem[nodes[q]] += m
        for q in range(ptr[r], ptr[r + 1]):
            load[nodes[q]] += -c


@njit(**JIT)
def acquire_rows(free_mem, load, nodes, ptr, mem, cpu, nnodes, mem_eps):
    """For each row r in order: -2 (the row changes nothing) if one of its
    nodes is outside 0..nnodes-1; else subtract mem[r] from its nodes' free
    memory and add cpu[r] to their load, task by task, then its node of the
    first task whose node's free memory is the smallest, if that is below
    -mem_eps (overfilled). Stops at the first row with such a result and
    returns (that row, the result), or (-1, -1) when every row was acquired."""
    for r in range(ptr.shape[0] - 1):
        a = ptr[r]
        b = ptr[r + 1]
        for q in range(a, b):
            if nodes[q] < 0 or nodes[q] >= nnodes:
                return r, -2
        m = mem[r]
        c = cpu[r]
        for q in range(a, b):
            free_mem[nodes[q]] += -m
        for q in range(a, b):
            load[nodes[q]] += c
        if b > a:
            kq = a
            for q in range(a + 1, b):
                if free_mem[nodes[q]] < free_mem[nodes[kq]]:
                    kq = q
            if free_mem[nodes[kq]] < -mem_eps:
                return r, nodes[kq]
    return -1, -1


@njit(**JIT)
def moved_rows(old, old_ptr, new, new_ptr, nnodes):
    """Per row, the tasks of a moved job whose node changed: 0 if its old and
    new node arrays are equal, else its tasks minus the size of the multiset
    intersection of the old and new nodes (integers: exact)."""
    rows = old_ptr.shape[0] - 1
    out = np.zeros(rows, dtype=np.int64)
    cnt = np.zeros(nnodes, dtype=np.int64)
    for r in range(rows):
        oa = old_ptr[r]
        ob = old_ptr[r + 1]
        na = new_ptr[r]
        nb = new_ptr[r + 1]
        if ob - oa == nb - na:
            same = True
            for q in range(nb - na):
                if old[oa + q] != new[na + q]:
                    same = False
                    break
            if same:
                continue
        for q in range(oa, ob):
            cnt[old[q]] += 1
        common = 0
        for q in range(na, nb):
            if cnt[new[q]] > 0:
                cnt[new[q]] -= 1
                common += 1
        for q in range(oa, ob):
            cnt[old[q]] = 0
        out[r] = (nb - na) - common
    return out
