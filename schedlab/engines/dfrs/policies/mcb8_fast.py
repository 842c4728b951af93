"""Compiled MCB8 (numba): the same fill and the same yield search as
``schedlab.engines.dfrs.policies.mcb8`` (``pack`` and ``mcb8``), bit for bit.

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
* ``take``: the reference scans a list from where its last scan on the node
  stopped for the first task passing the fit test (and deletes it from the
  Python list). Here the lists keep their sorted positions (placed tasks are
  marked), and the first passing task at or after the start position is found
  in O(log T): binary search on the list's primary dimension (the list is
  sorted by it, descending, and ``x + v <= limit`` is monotone in v under
  rounding), then a min-tree over the secondary dimension -- the same task as
  the scan, found without it.
* The fit test ``c + cpu <= 1 + FIT_TOL and m + mem <= 1 + FIT_TOL`` and the
  load updates ``c += cpu``, ``m += mem`` are the reference's expressions.
* Search: the memory test ``sum(mems) + sum(pin_mem) > nodes * (1 + FIT_TOL)``
  (sequential sums, as Python's ``sum`` on 3.11), ``attempt(0)``, the
  binary search ``lo = 0, hi = steps + 1``, ``mid = (lo + hi) // 2`` and the
  job dropping (the last table row) are transcribed.
"""

from __future__ import annotations

import numpy as np

from schedlab.sim.common.jit import ALLOC, HOT, JIT, njit

FIT_TOL = 1e-9  # = mcb8.FIT_TOL


@njit(**HOT)
def _tree_set(tree, size, p, val):
    """Leaf p of the min-tree := val, ancestors updated."""
    i = p + size
    tree[i] = val
    i >>= 1
    while i >= 1:
        a = tree[2 * i]
        b = tree[2 * i + 1]
        tree[i] = a if a <= b else b
        i >>= 1


@njit(**HOT)
def _tree_descend(tree, size, node, add, limit):
    """Leftmost leaf under ``node`` with add + value <= limit (one exists)."""
    while node < size:
        if add + tree[2 * node] <= limit:
            node = 2 * node
        else:
            node = 2 * node + 1
    return node - size


@njit(**ALLOC)
def _tree_first(tree, size, lo, hi, add, limit, right):
    """First position p in [lo, hi) with add + value[p] <= limit, or -1.
    ``add + min <= limit`` iff some value of the subtree passes (rounded
    addition is monotone), so this is the left-to-right scan's answer.
    ``right``: scratch (>= 2 log2(size) + 2 entries)."""
    if lo >= hi:
        return -1
    nr = 0
    node = lo + size
    r = hi + size
    while node < r:
        if node & 1:
            if add + tree[node] <= limit:
                return _tree_descend(tree, size, node, add, limit)
            node += 1
        if r & 1:
            r -= 1
            right[nr] = r
            nr += 1
        node >>= 1
        r >>= 1
    for x in range(nr - 1, -1, -1):
        node = right[x]
        if add + tree[node] <= limit:
            return _tree_descend(tree, size, node, add, limit)
    return -1


@njit(**ALLOC)
def _pack(cpu, mem, nodes, init_cpu, init_mem, has_init, where):
    """MCB8 fill (``mcb8.pack``); fills ``where`` and returns True, or False
    when not every task fits.

    The reference scans a list from its start pointer for the first task with
    ``c + cpu <= limit and m + mem <= limit``. A list is sorted by its primary
    dimension (CPU for the CPU-heavy list, where max(cpu, mem) = cpu; memory
    for the other), descending, so the tasks passing the primary test are a
    suffix of the list (found by binary search on the same expression); the
    first of them at or after the start pointer passing the secondary test is
    found in a min-tree over the secondary values (placed tasks: +inf)."""
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
    lst = np.empty(n, dtype=np.int64)
    lst[:ncpu] = cpu_idx[np.argsort(key[cpu_idx], kind="mergesort")]
    lst[ncpu:] = mem_idx[np.argsort(key[mem_idx], kind="mergesort")]
    # positions [0, ncpu): CPU list (primary cpu, secondary mem); [ncpu, n): memory list
    prim = np.empty(n)
    size = 1
    while size < n:
        size *= 2
    tree = np.full(2 * size, np.inf)
    for p in range(n):
        i = lst[p]
        if p < ncpu:
            prim[p] = cpu[i]
            tree[size + p] = mem[i]
        else:
            prim[p] = mem[i]
            tree[size + p] = cpu[i]
    for x in range(size - 1, 0, -1):
        u = tree[2 * x]
        v = tree[2 * x + 1]
        tree[x] = u if u <= v else v
    right = np.empty(2 * 64 + 2, dtype=np.int64)
    lo_k = np.empty(2, dtype=np.int64)
    hi_k = np.empty(2, dtype=np.int64)
    lo_k[0] = 0
    hi_k[0] = ncpu
    lo_k[1] = ncpu
    hi_k[1] = n
    for i in range(n):
        where[i] = -1
    remaining = n
    start = np.empty(2, dtype=np.int64)
    for node in range(nodes):
        if remaining == 0:
            break
        c = init_cpu[node] if has_init else 0.0
        m = init_mem[node] if has_init else 0.0
        preloaded = c > 0.0 or m > 0.0
        placed = 0
        start[0] = lo_k[0]
        start[1] = lo_k[1]
        while remaining:
            first = 0 if c <= m else 1
            got = -1
            for attempt in range(2):
                k = first if attempt == 0 else 1 - first
                pa_add = c if k == 0 else m
                sec_add = m if k == 0 else c
                # first position of the list whose primary value passes (descending values)
                lo = lo_k[k]
                hi = hi_k[k]
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if pa_add + prim[mid] <= limit:
                        hi = mid
                    else:
                        lo = mid + 1
                q = lo if lo > start[k] else start[k]
                p = _tree_first(tree, size, q, hi_k[k], sec_add, limit, right)
                if p == -1:
                    start[k] = hi_k[k]
                    continue
                _tree_set(tree, size, p, np.inf)
                start[k] = p + 1
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


@njit(**ALLOC)
def _attempt(y, cpu, needs, mem, nodes, init_cpu, pin_need, pin_mem, any_pin, where):
    """mcb8's attempt(y): every task's CPU at yield ``y`` (``y * need``), the
    pinned jobs' load on their nodes, then the packing into ``where``; False
    when the pinned load alone overfills a node or the tasks do not fit."""
    for t in range(cpu.shape[0]):
        cpu[t] = y * needs[t]
    ok = True
    if any_pin:
        for k in range(nodes):
            init_cpu[k] = y * pin_need[k]
            if init_cpu[k] > 1.0 + FIT_TOL:
                ok = False
    if ok:
        ok = _pack(cpu, mem, nodes, init_cpu, pin_mem, any_pin, where)
    return ok


@njit(**JIT)
def mcb8_kernel(tasks, need, mem, is_pin, pin_ptr, pin_nodes, nodes, steps):
    """The search of ``mcb8.mcb8`` on the table in priority order (rows:
    ``tasks``, ``need``, ``mem``, ``is_pin``; pinned row r's nodes are
    ``pin_nodes[pin_ptr[r]:pin_ptr[r + 1]]``). Returns (rows kept -- the
    dropped rows are the others, dropped last row first --, lo, where of the
    unpinned tasks of the kept rows in table order, status) with status 0 ok,
    1 pinned memory overfill (the reference's ValueError).

    Dropping removes the last row, so the unpinned tasks of the kept rows are
    always a prefix of the full task list: the task arrays are built once, and
    the reference's ``sum(mems)`` (sequential, from 0) of that prefix is the
    running prefix sum at its end -- the same double."""
    nrows = tasks.shape[0]
    empty = np.empty(0, dtype=np.int64)
    total = 0
    for r in range(nrows):
        if not is_pin[r]:
            total += tasks[r]
    needs = np.empty(total)
    mems = np.empty(total)
    row_end = np.zeros(nrows + 1, dtype=np.int64)  # unpinned tasks of rows < r: [0, row_end[r])
    t = 0
    for r in range(nrows):
        if not is_pin[r]:
            for _ in range(tasks[r]):
                needs[t] = need[r]
                mems[t] = mem[r]
                t += 1
        row_end[r + 1] = t
    msum = np.empty(total + 1)
    acc = 0.0
    msum[0] = acc
    for t in range(total):
        acc += mems[t]
        msum[t + 1] = acc
    pin_need = np.zeros(nodes)
    pin_mem = np.zeros(nodes)
    cpu = np.empty(total)
    init_cpu = np.empty(nodes)
    best = np.empty(total, dtype=np.int64)
    where = np.empty(total, dtype=np.int64)
    pins_of = -1  # nrows for which pin_need / pin_mem were accumulated
    while nrows > 0:
        if pins_of != nrows:  # the pinned sums, accumulated in table order
            pin_need[:] = 0.0
            pin_mem[:] = 0.0
            for r in range(nrows):
                if is_pin[r]:
                    for q in range(pin_ptr[r], pin_ptr[r + 1]):
                        k = pin_nodes[q]
                        pin_need[k] += need[r]
                        pin_mem[k] += mem[r]
            pins_of = nrows
        any_pin = False
        for r in range(nrows):
            if is_pin[r]:
                any_pin = True
                break
        for k in range(nodes):
            if pin_mem[k] > 1.0 + FIT_TOL:
                return nrows, 0, empty, 1
        ntask = row_end[nrows]
        s2 = 0.0
        for k in range(nodes):
            s2 += pin_mem[k]
        if msum[ntask] + s2 > nodes * (1.0 + FIT_TOL):
            nrows -= 1
            if is_pin[nrows]:
                pins_of = -1
            continue
        c_ = cpu[:ntask]
        m_ = mems[:ntask]
        n_ = needs[:ntask]
        b_ = best[:ntask]
        w_ = where[:ntask]
        ok = _attempt(0 / steps, c_, n_, m_, nodes, init_cpu, pin_need, pin_mem, any_pin, b_)
        if not ok:
            nrows -= 1
            if is_pin[nrows]:
                pins_of = -1
            continue
        lo = 0
        hi = steps + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            ok = _attempt(mid / steps, c_, n_, m_, nodes, init_cpu, pin_need, pin_mem, any_pin, w_)
            if not ok:
                hi = mid
            else:
                lo = mid
                b_[:] = w_
        return nrows, lo, b_.copy(), 0
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
