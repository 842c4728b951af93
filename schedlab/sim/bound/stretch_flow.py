"""Compiled kernels of the max-stretch bound's exact method (``stretch_bound``).

Two numba kernels, imported lazily by :mod:`schedlab.sim.bound.stretch_bound` (the
reference engines that import it never load numba unless they compute a bound):

* :func:`transport_max_flow`: the maximum flow of the transportation network
  of linear system (1) for one target S (source -> job j with capacity
  W_j = c_j |T_j| p_j; job j -> each interval t of its window with capacity
  c_j |T_j| l(t); interval t -> sink with capacity |P| l(t)) by Dinic's
  algorithm in float64, and the source side of the minimum cut that the
  final breadth-first search leaves.
* :func:`stretch_breakpoints`: the target stretches in an open range at which
  the order of the points {r_i} U {d_j(S)} changes (a deadline crosses a
  release date or another deadline).

Float arithmetic in Dinic's algorithm: an augmentation by the bottleneck b of
a path sets the bottleneck edge's residual to ``b - b = 0`` exactly and leaves
every other edge's residual ``x - b > 0`` (x > b), so the number of
augmentations and phases has the same combinatorial bound as with exact
arithmetic (O(V^2 E)); the algorithm always terminates. When the last
breadth-first search cannot reach the sink, every edge from the reached set X
to its complement has residual exactly 0, i.e. carries its full capacity: the
cut (X, complement) is saturated by the computed flow, so its capacity equals
the flow value up to the rounding of the flow's sums.
"""

from __future__ import annotations

import numpy as np

from schedlab.sim.common.jit import JIT as _JIT
from schedlab.sim.common.jit import njit


@njit(**_JIT)
def transport_max_flow(win_lo, win_hi, length, supply, demand, nodes):
    """Max flow of the transportation network of system (1); see the module docstring.

    ``win_lo[j]`` .. ``win_hi[j] - 1`` are the intervals of job j's window,
    ``length[t]`` = l(t) >= 0, ``supply[j]`` = W_j = c_j |T_j| p_j,
    ``demand[j]`` = c_j |T_j|, ``nodes`` = |P|. Returns (value, job_in_x,
    interval_in_x): the flow value and the source side X of a minimum cut
    (boolean per job and per interval).
    """
    n = win_lo.shape[0]
    m = length.shape[0]
    src = n + m
    snk = n + m + 1
    nv = n + m + 2
    n_mid = 0
    for j in range(n):
        n_mid += win_hi[j] - win_lo[j]
    ne = 2 * (n + n_mid + m)
    to = np.empty(ne, np.int64)
    res = np.empty(ne, np.float64)
    deg = np.zeros(nv + 1, np.int64)
    # Edge pairs (e, e ^ 1): forward edge e with residual = capacity, reverse 0.
    e = 0
    for j in range(n):
        to[e] = j
        res[e] = supply[j]
        to[e + 1] = src
        res[e + 1] = 0.0
        deg[src] += 1
        deg[j] += 1
        e += 2
        for t in range(win_lo[j], win_hi[j]):
            to[e] = n + t
            res[e] = demand[j] * length[t]
            to[e + 1] = j
            res[e + 1] = 0.0
            deg[j] += 1
            deg[n + t] += 1
            e += 2
    for t in range(m):
        to[e] = snk
        res[e] = nodes * length[t]
        to[e + 1] = n + t
        res[e + 1] = 0.0
        deg[n + t] += 1
        deg[snk] += 1
        e += 2
    start = np.zeros(nv + 1, np.int64)
    for v in range(nv):
        start[v + 1] = start[v] + deg[v]
    fill = start[:nv].copy()
    adj = np.empty(ne, np.int64)
    for k in range(ne):
        tail = to[k ^ 1]
        adj[fill[tail]] = k
        fill[tail] += 1

    level = np.empty(nv, np.int64)
    it = np.empty(nv, np.int64)
    queue = np.empty(nv, np.int64)
    path = np.empty(nv, np.int64)
    value = 0.0
    while True:
        for v in range(nv):
            level[v] = -1
        level[src] = 0
        queue[0] = src
        qh = 0
        qt = 1
        while qh < qt:
            v = queue[qh]
            qh += 1
            for k in range(start[v], start[v + 1]):
                a = adj[k]
                u = to[a]
                if res[a] > 0.0 and level[u] < 0:
                    level[u] = level[v] + 1
                    queue[qt] = u
                    qt += 1
        if level[snk] < 0:
            break
        for v in range(nv):
            it[v] = start[v]
        depth = 0
        v = src
        while True:
            if v == snk:
                b = np.inf
                for i in range(depth):
                    if res[path[i]] < b:
                        b = res[path[i]]
                first = -1
                for i in range(depth):
                    a = path[i]
                    if res[a] == b:
                        res[a] = 0.0
                        if first < 0:
                            first = i
                    else:
                        res[a] -= b
                    res[a ^ 1] += b
                value += b
                depth = first
                v = to[path[first] ^ 1]
                continue
            advanced = False
            while it[v] < start[v + 1]:
                a = adj[it[v]]
                u = to[a]
                if res[a] > 0.0 and level[u] == level[v] + 1:
                    path[depth] = a
                    depth += 1
                    v = u
                    advanced = True
                    break
                it[v] += 1
            if not advanced:
                if v == src:
                    break
                level[v] = -1  # dead end for the rest of this phase
                depth -= 1
                v = to[path[depth] ^ 1]
                it[v] += 1
    job_in_x = np.empty(n, np.bool_)
    for j in range(n):
        job_in_x[j] = level[j] >= 0
    interval_in_x = np.empty(m, np.bool_)
    for t in range(m):
        interval_in_x[t] = level[n + t] >= 0
    return value, job_in_x, interval_in_x


@njit(**_JIT)
def stretch_breakpoints(release, weight, lo, hi, limit):
    """Target stretches S in the open range (lo, hi) where d_j(S) = r_j + S w_j
    equals a release date r_i (S = (r_i - r_j) / w_j) or another deadline d_i(S)
    (S = (r_j - r_i) / (w_i - w_j)). Returns (count, values): ``values`` holds
    them all (unsorted, with repeats) when count <= limit, else it is empty."""
    n = release.shape[0]
    count = 0
    for j in range(n):
        for i in range(n):
            dr = release[i] - release[j]
            if dr > 0.0:
                s = dr / weight[j]
                if lo < s < hi:
                    count += 1
            if i < j:
                dw = weight[i] - weight[j]
                if dw != 0.0:
                    s = (release[j] - release[i]) / dw
                    if lo < s < hi:
                        count += 1
    if count > limit:
        return count, np.empty(0, np.float64)
    out = np.empty(count, np.float64)
    k = 0
    for j in range(n):
        for i in range(n):
            dr = release[i] - release[j]
            if dr > 0.0:
                s = dr / weight[j]
                if lo < s < hi:
                    out[k] = s
                    k += 1
            if i < j:
                dw = weight[i] - weight[j]
                if dw != 0.0:
                    s = (release[j] - release[i]) / dw
                    if lo < s < hi:
                        out[k] = s
                        k += 1
    return count, out
