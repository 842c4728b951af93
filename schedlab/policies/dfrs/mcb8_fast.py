"""Compiled MCB8 (numba): the same fill and the same yield search as
``schedlab.policies.dfrs.mcb8`` (``pack`` and ``mcb8``), bit for bit.

Imported lazily by ``mcb8`` (which is imported by the policy registry): only a
DFRS run that packs loads numba.

Why it is the same computation
------------------------------
* Requirements: ``y = k / steps`` (float division of two integers), a task's
  CPU ``y * need`` and a pinned node's CPU ``y * (sum of the pinned needs on
  it)``, the sums accumulated in the reference's order (sequentially, job by
  job in table order, node by node in each pinned job's list) -- the same
  IEEE operations in the same order, hence the same doubles.
* Lists: the CPU-heavy (``cpu > mem``) and memory-heavy tasks, each sorted by
  ``-max(cpu, mem)`` with a stable sort (``np.argsort(kind="mergesort")``),
  which is Python's stable ``sorted`` order.
* ``take``: the reference deletes the placed task from a Python list and
  resumes the next scan of that list at the same position; here each list is
  a doubly linked list over its sorted positions and the scan resumes at the
  successor of the deleted entry -- the same sequence of candidates, without
  the O(list) ``del``.
* The fit test ``c + cpu <= 1 + FIT_TOL and m + mem <= 1 + FIT_TOL`` and the
  load updates ``c += cpu``, ``m += mem`` are the reference's expressions.
* Search: the memory test ``sum(mems) + sum(pin_mem) > nodes * (1 + FIT_TOL)``
  (sequential sums, as Python's ``sum`` on 3.11), ``attempt(0)``, the
  binary search ``lo = 0, hi = steps + 1``, ``mid = (lo + hi) // 2`` and the
  job dropping (the last table row) are transcribed.
"""

from __future__ import annotations

import numpy as np

from schedlab.sim.jit import ALLOC, JIT, njit

FIT_TOL = 1e-9  # = mcb8.FIT_TOL


@njit(**ALLOC)
def _pack(cpu, mem, nodes, init_cpu, init_mem, has_init, where):
    """MCB8 fill (``mcb8.pack``); fills ``where`` and returns True, or False
    when not every task fits."""
    n = cpu.shape[0]
    limit = 1.0 + FIT_TOL
    key = np.empty(n)
    ncpu = 0
    for i in range(n):
        c = cpu[i]
        m = mem[i]
        key[i] = -(m if m > c else c)  # Python's max(c, m): c unless m > c
        if c > m:
            ncpu += 1
    cpu_idx = np.empty(ncpu, dtype=np.int64)
    mem_idx = np.empty(n - ncpu, dtype=np.int64)
    a = 0
    b = 0
    for i in range(n):
        if cpu[i] > mem[i]:
            cpu_idx[a] = i
            a += 1
        else:
            mem_idx[b] = i
            b += 1
    # stable sorts by -key: equal keys keep index order
    cpu_list = cpu_idx[np.argsort(key[cpu_idx], kind="mergesort")]
    mem_list = mem_idx[np.argsort(key[mem_idx], kind="mergesort")]
    # both lists in one array: positions [0, ncpu) and [ncpu, n); linked per list, -1 = end
    lst = np.empty(n, dtype=np.int64)
    lst[:ncpu] = cpu_list
    lst[ncpu:] = mem_list
    nxt = np.empty(n, dtype=np.int64)
    prv = np.empty(n, dtype=np.int64)
    head = np.full(2, -1, dtype=np.int64)
    for k in range(2):
        lo = 0 if k == 0 else ncpu
        hi = ncpu if k == 0 else n
        if hi > lo:
            head[k] = lo
        for p in range(lo, hi):
            nxt[p] = p + 1 if p + 1 < hi else -1
            prv[p] = p - 1 if p > lo else -1
    for i in range(n):
        where[i] = -1
    remaining = n
    start = np.full(2, -1, dtype=np.int64)
    for node in range(nodes):
        if remaining == 0:
            break
        c = init_cpu[node] if has_init else 0.0
        m = init_mem[node] if has_init else 0.0
        preloaded = c > 0.0 or m > 0.0
        placed = 0
        start[0] = head[0]
        start[1] = head[1]
        while remaining:
            first = 0 if c <= m else 1
            got = -1
            for attempt in range(2):
                k = first if attempt == 0 else 1 - first
                p = start[k]
                while p != -1:
                    i = lst[p]
                    if c + cpu[i] <= limit and m + mem[i] <= limit:
                        break
                    p = nxt[p]
                if p == -1:
                    start[k] = -1
                    continue
                # unlink p; the next scan of this list resumes at its successor
                q = nxt[p]
                r = prv[p]
                if r == -1:
                    head[k] = q
                else:
                    nxt[r] = q
                if q != -1:
                    prv[q] = r
                start[k] = q
                got = lst[p]
                break
            if got == -1:
                break
            where[got] = node
            c += cpu[got]
            m += mem[got]
            placed += 1
            remaining -= 1
        if placed == 0 and not preloaded:
            return False
    return remaining == 0


@njit(**JIT)
def pack_kernel(cpu, mem, nodes, init_cpu, init_mem, has_init):
    """``mcb8.pack``: (ok, where)."""
    where = np.empty(cpu.shape[0], dtype=np.int64)
    ok = _pack(cpu, mem, nodes, init_cpu, init_mem, has_init, where)
    return ok, where


@njit(**JIT)
def mcb8_kernel(tasks, need, mem, is_pin, pin_ptr, pin_nodes, nodes, steps):
    """The search of ``mcb8.mcb8`` on the table in priority order (rows:
    ``tasks``, ``need``, ``mem``, ``is_pin``; pinned row r's nodes are
    ``pin_nodes[pin_ptr[r]:pin_ptr[r + 1]]``). Returns (rows kept -- the
    dropped rows are the others, dropped last row first --, lo, where of the
    unpinned tasks of the kept rows in table order, status) with status 0 ok,
    1 pinned memory overfill (the reference's ValueError)."""
    nrows = tasks.shape[0]
    empty = np.empty(0, dtype=np.int64)
    while nrows > 0:
        ntask = 0
        for r in range(nrows):
            if not is_pin[r]:
                ntask += tasks[r]
        needs = np.empty(ntask)
        mems = np.empty(ntask)
        t = 0
        for r in range(nrows):
            if not is_pin[r]:
                for _ in range(tasks[r]):
                    needs[t] = need[r]
                    mems[t] = mem[r]
                    t += 1
        pin_need = np.zeros(nodes)
        pin_mem = np.zeros(nodes)
        any_pin = False
        for r in range(nrows):
            if is_pin[r]:
                any_pin = True
                for q in range(pin_ptr[r], pin_ptr[r + 1]):
                    k = pin_nodes[q]
                    pin_need[k] += need[r]
                    pin_mem[k] += mem[r]
        for k in range(nodes):
            if pin_mem[k] > 1.0 + FIT_TOL:
                return nrows, 0, empty, 1
        s1 = 0.0
        for t in range(ntask):
            s1 += mems[t]
        s2 = 0.0
        for k in range(nodes):
            s2 += pin_mem[k]
        if s1 + s2 > nodes * (1.0 + FIT_TOL):
            nrows -= 1
            continue
        cpu = np.empty(ntask)
        init_cpu = np.empty(nodes)
        best = np.empty(ntask, dtype=np.int64)
        where = np.empty(ntask, dtype=np.int64)
        # attempt(0)
        y = 0 / steps
        for t in range(ntask):
            cpu[t] = y * needs[t]
        ok = True
        if any_pin:
            for k in range(nodes):
                init_cpu[k] = y * pin_need[k]
                if init_cpu[k] > 1.0 + FIT_TOL:
                    ok = False
        if ok:
            ok = _pack(cpu, mems, nodes, init_cpu, pin_mem, any_pin, best)
        if not ok:
            nrows -= 1
            continue
        lo = 0
        hi = steps + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            y = mid / steps
            for t in range(ntask):
                cpu[t] = y * needs[t]
            ok = True
            if any_pin:
                for k in range(nodes):
                    init_cpu[k] = y * pin_need[k]
                    if init_cpu[k] > 1.0 + FIT_TOL:
                        ok = False
            if ok:
                ok = _pack(cpu, mems, nodes, init_cpu, pin_mem, any_pin, where)
            if not ok:
                hi = mid
            else:
                lo = mid
                best[:] = where
        return nrows, lo, best, 0
    return 0, 0, empty, 0


@njit(**JIT)
def relabel_weights(pos, nfree, mem, new_ptr, new_bins, old_ptr, old_nodes):
    """``greedy._relabel``'s matrix: W[pos[b], pos[k]] += mem[r] * min(tasks of
    job r in bin b, tasks of job r on node k) over the running jobs r in the
    mapping's order (bins / nodes with pos < 0 left out). Each cell receives at
    most one term per job, in job order -- the reference's sums exactly."""
    nodes = pos.shape[0]
    W = np.zeros((nfree, nfree))
    cn = np.zeros(nodes, dtype=np.int64)
    co = np.zeros(nodes, dtype=np.int64)
    ub = np.empty(nodes, dtype=np.int64)
    uk = np.empty(nodes, dtype=np.int64)
    for r in range(mem.shape[0]):
        nb = 0
        for q in range(new_ptr[r], new_ptr[r + 1]):
            b = new_bins[q]
            if pos[b] >= 0:
                if cn[b] == 0:
                    ub[nb] = b
                    nb += 1
                cn[b] += 1
        nk = 0
        for q in range(old_ptr[r], old_ptr[r + 1]):
            k = old_nodes[q]
            if pos[k] >= 0:
                if co[k] == 0:
                    uk[nk] = k
                    nk += 1
                co[k] += 1
        m = mem[r]
        for x in range(nb):
            b = ub[x]
            for z in range(nk):
                k = uk[z]
                W[pos[b], pos[k]] += m * min(cn[b], co[k])
        for x in range(nb):
            cn[ub[x]] = 0
        for z in range(nk):
            co[uk[z]] = 0
    return W
