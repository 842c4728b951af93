"""VQS and VQS-BF: partition-based packing (Psychas & Ghaderi §V, §VI).

Model (paper §II): one resource, every server's capacity normalised to 1; a
job needs ``R in (0, 1]`` of one server for its whole (non-preemptive)
service. Both policies therefore refuse a cluster with ``d > 1`` or with a
capacity other than 1 (``UserError``); normalise sizes to capacity 1 first.

Universal partition (§V-A, eq. 18; its functions, with K_RED's below, are
in ``schedlab.engines.packing.sim.vqs_partition``, shared with the compiled kernel).
For a parameter ``J >= 2`` the interval ``(1/2^J, 1]`` is cut into ``2J`` left-open, right-closed intervals::

    I_2m   = (2/3 * 2^-m, 2^-m],      m = 0..J-1
    I_2m+1 = (1/2 * 2^-m, 2/3 * 2^-m], m = 0..J-1

so ``I_0 = (2/3, 1]``, ``I_1 = (1/2, 2/3]``, ``I_2 = (1/3, 1/2]``, ... A job
whose size is in ``I_j`` is of *type* ``j``; sizes in ``(0, 1/2^J]`` go to the
last type ``2J-1`` (the paper rounds them up to ``1/2^J``, which is below
that type's upper end, so the upper-rounded size of every type-``2J-1`` job
is the interval's upper end ``4/3 * 2^-J``). ``upper_rounded(j, J)`` is the
upper end of ``I_j``. A size exactly on a boundary belongs to the interval
it closes (``1/2`` is type 2, ``2/3`` type 1).

Virtual queues: ``VQ_j`` holds the queued jobs of type ``j`` with their actual
(unrounded) sizes; ``Q_j`` is its length.

Reduced configuration set (Definition 6, eq. 19), ``4J - 4`` count vectors
over the ``2J`` types, in this order (the order breaks ties)::

    2^m e_2m,                      m = 0..J-1
    3 * 2^(m-1) e_2m+1,            m = 1..J-1
    e_1 + floor(2^m / 3) e_2m,     m = 2..J-1
    e_1 + 2^(m-1) e_2m+1,          m = 1..J-1

Each one holds type 1 at most once plus exactly one other type ``j != 1``
(its "other type", with count ``k_j``); each is feasible for upper-rounded
sizes. For J = 3 the list is (types 0..5)::

    (1,0,0,0,0,0) (0,0,2,0,0,0) (0,0,0,0,4,0) (0,0,0,3,0,0) (0,0,0,0,0,6)
    (0,1,0,0,1,0) (0,1,0,1,0,0) (0,1,0,0,0,2)

Active configuration (eq. 20-21). A server's active configuration is renewed
only while it is empty: ``argmax_k <k, Q>`` over the list above, ties to the
first configuration in eq. 19's order. An empty server renews each time it
acts (an empty server that has not acted since it emptied has none); when
every VQ is empty it keeps none and is re-evaluated when jobs arrive. Several
servers acting in one epoch renew one after the other, each with ``Q`` as
left by the placements already made in the epoch (the paper's ``Q(t)`` at the
slot start would hand two empty servers the same configuration even when one
of them can empty the VQs it needs).

VQS job scheduling (§V-B, "Job scheduling"), server with configuration k:

(i)  if ``k_1 = 1`` the server reserves 2/3 of its capacity for type 1: it
     holds at most one type-1 job; when it holds none it takes the head of
     ``VQ_1`` (which fits: the reservation is always free of other types);
(ii) from the other type's ``VQ_j`` it takes the head-of-line job while that
     job's actual size fits in the capacity left for type ``j``: ``1/3`` (if
     ``k_1 = 1``) or ``1``, minus the type-``j`` jobs on the server. Strict
     FIFO: a head that does not fit blocks the jobs behind it; more than
     ``k_j`` jobs may fit.

Order within an epoch (VQS): repeatedly, the lowest-index server that can act
(it is empty and some VQ is non-empty; or rule (i) or (ii) can place a job on
it) acts: renews if empty, then applies (i) then (ii) until its next head
does not fit. At the end no server can act (a fixpoint).

VQS-BF (§VI), same active configurations; server with configuration k:

(i)   if ``k_1 = 1`` and it holds no type-1 job: the largest ``VQ_1`` job that
      fits in its free capacity (no reservation);
(ii)  from the other type's ``VQ_j``: the largest job that fits, repeatedly,
      until the server holds ``>= k_j`` type-``j`` jobs, ``VQ_j`` is empty or
      none fits;
(iii) BF-S (§IV-A) on what is left: the largest queued job of any type that
      fits, repeatedly, until none fits.

Order within an epoch (VQS-BF): the servers whose free capacity is at least
the smallest queued size at the epoch's start act once each, in index order
(an empty one renews first). One pass is a fixpoint: a server that has acted
has no room for the smallest queued job, and later placements only remove
jobs from the queue.

Tie rules: "largest job" ties go to the earliest arrival (lowest job id);
servers act in index order as above; configuration ties go to eq. 19 order.

Fit test: ``size <= room + FIT_TOL`` with the engine's ``FIT_TOL`` (1e-9, from
``schedlab.engines.packing.sim.engine``), so five jobs of 0.2 fill a unit server despite
binary rounding. Sizes are kept per job; the
per-server sums are reset to exactly 0 whenever a server empties.

Complexity (N queued jobs, L servers, P placements in the epoch):

* ``arrive``/``depart``: O(log N) / O(log L).
* VQS ``schedule``: O((P + W) log L) where W counts servers woken: on a new
  head of ``VQ_j`` every server with configuration type ``j`` and room for that
  head is woken (a range of a sorted list of (room, server)); for ``VQ_1`` only
  the lowest-index server waiting for a type-1 job. Empty servers are walked
  in index order only while jobs remain queued, and each takes a job.
* VQS-BF ``schedule``: O(C log C + P (log N + log L)) where C is the number of
  servers with free capacity at least the smallest queued size; "largest job
  that fits" is a bisection in a sorted list of (size, -job) per VQ and one
  over the whole queue.
* renewal: O(J^2) (4J - 4 inner products over the 2J queue lengths).
"""

from __future__ import annotations

import heapq
from abc import abstractmethod
from collections import deque
from typing import ClassVar

from sortedcontainers import SortedList

from schedlab.engines.packing.policies.base import PackingPolicy
from schedlab.engines.packing.sim.engine import FIT_TOL  # the engine's fit tolerance, used verbatim
from schedlab.engines.packing.sim.vqs_partition import (
    DEFAULT_J,
    TYPE1_RESERVE,
    ascending_bounds,
    check_J,
    k_red,
    max_weight,
    split_config,
    type_of,
    universal_partition,
)
from schedlab.errors import UserError


class _VQSBase(PackingPolicy):
    """Shared state: partition, configurations, per-server bookkeeping."""

    def __init__(self, cluster, J: int = DEFAULT_J, **params) -> None:
        super().__init__(cluster)
        if params:
            raise UserError(f"policy {self.name}: unknown parameter(s) {', '.join(sorted(params))}")
        self.J = check_J(J, f"policy {self.name} parameter J")
        if cluster.resources != 1:
            raise UserError(
                f"policy {self.name}: needs a single resource (d = 1), the cluster has d = {cluster.resources}"
            )
        L = cluster.servers
        for s in range(L):
            cap = float(cluster.capacity(s)[0])
            if abs(cap - 1.0) > FIT_TOL:
                raise UserError(
                    f"policy {self.name}: needs every server capacity = 1 (normalise sizes), server {s} has {cap}"
                )
        self.n_types = 2 * self.J
        self.partition = universal_partition(self.J)
        self._asc = ascending_bounds(self.J)
        self.configs = k_red(self.J)
        self._cinfo = [split_config(k) for k in self.configs]
        self._size: dict[int, float] = {}
        self._type: dict[int, int] = {}
        self._total = 0  # jobs queued
        self._config: list[int | None] = [None] * L
        self._njobs = [0] * L
        self._cnt = [[0] * self.n_types for _ in range(L)]  # jobs per type on server
        self._used = [[0.0] * self.n_types for _ in range(L)]  # size per type on server

    # -- inspection (tests, traces) ------------------------------------------
    def configuration(self, s: int) -> tuple[int, ...] | None:
        """Active configuration of server ``s`` (``None``: empty, not renewed)."""
        c = self._config[s]
        return None if c is None else self.configs[c]

    def queue_lengths(self) -> tuple[int, ...]:
        """``Q``: the length of every virtual queue."""
        return tuple(self._qlen(t) for t in range(self.n_types))

    # -- shared mechanics ----------------------------------------------------
    def _classify(self, job: int) -> tuple[float, int]:
        r = float(self.cluster.demand(job)[0])
        if not (0.0 <= r <= 1.0 + FIT_TOL):
            raise UserError(f"job {job}: size {r} is not in [0, 1] (policy {self.name} needs normalised sizes)")
        t = type_of(min(r, 1.0), self._asc)  # size 0 joins the last type, like (0, 1/2^J]
        self._size[job] = r
        self._type[job] = t
        return r, t

    def _renew(self, s: int) -> None:
        self._config[s] = max_weight(self.configs, self.queue_lengths())

    def _record_place(self, s: int, job: int) -> None:
        t = self._type[job]
        self._njobs[s] += 1
        self._cnt[s][t] += 1
        self._used[s][t] += self._size[job]
        self._total -= 1

    def _record_depart(self, job: int, s: int) -> bool:
        """Book a departure; True when the server is now empty."""
        t = self._type.pop(job)
        r = self._size.pop(job)
        self._njobs[s] -= 1
        self._cnt[s][t] -= 1
        self._used[s][t] = 0.0 if self._cnt[s][t] == 0 else self._used[s][t] - r
        if self._njobs[s] == 0:
            self._config[s] = None
            return True
        return False

    @abstractmethod
    def _qlen(self, t: int) -> int:
        """Length of ``VQ_t``."""

    def _info(self, s: int) -> tuple[int, int, int]:
        """(k1, j, k_j) of the configuration server ``s`` holds (callers ask only about servers holding one)."""
        c = self._config[s]
        assert c is not None, f"server {s} holds no configuration"
        return self._cinfo[c]


class VQS(_VQSBase):
    name: ClassVar[str] = "VQS"
    summary: ClassVar[str] = (
        "virtual queues per universal-partition type, max-weight K_RED configuration per empty server"
    )

    def __init__(self, cluster, J: int = DEFAULT_J, **params) -> None:
        super().__init__(cluster, J, **params)
        L = cluster.servers
        self._vq: list[deque[int]] = [deque() for _ in range(self.n_types)]
        # servers whose configuration's other type is j, keyed by room for type j
        self._group: list[SortedList] = [SortedList() for _ in range(self.n_types)]
        self._gkey: list[tuple[float, int] | None] = [None] * L
        self._want1 = SortedList()  # k_1 = 1 and no type-1 job on it
        self._empty = SortedList(range(L))
        self._dirty: set[int] = set()  # non-empty servers with a departure
        self._new_heads: set[int] = set()  # VQs that went from empty to non-empty

    def _qlen(self, t: int) -> int:
        return len(self._vq[t])

    def _room(self, s: int) -> float:
        k1, j, _ = self._info(s)
        cap = 1.0 - TYPE1_RESERVE if k1 else 1.0
        return cap - self._used[s][j]

    def _regroup(self, s: int) -> None:
        """Re-key server ``s`` in its group after its type-j room changed."""
        j = self._info(s)[1]
        self._group[j].remove(self._gkey[s])
        key = (self._room(s), s)
        self._group[j].add(key)
        self._gkey[s] = key

    def arrive(self, job: int) -> None:
        _, t = self._classify(job)
        if not self._vq[t]:
            self._new_heads.add(t)
        self._vq[t].append(job)
        self._total += 1

    def depart(self, job: int, server: int) -> None:
        s = server
        t = self._type[job]
        c = self._config[s]
        if self._record_depart(job, s):
            self._drop_config(s, c)
            self._dirty.discard(s)
            self._empty.add(s)
            return
        k1, j, _ = self._info(s)
        if t == 1:
            self._want1.add(s)
        elif t == j:
            self._regroup(s)
        self._dirty.add(s)

    def _drop_config(self, s: int, c: int | None) -> None:
        key = self._gkey[s]
        if key is not None:  # grouped: the server held configuration c
            assert c is not None
            self._group[self._cinfo[c][1]].remove(key)
            self._gkey[s] = None
        if s in self._want1:
            self._want1.remove(s)

    def _set_config(self, s: int) -> None:
        self._renew(s)
        c = self._config[s]
        if c is None:
            return
        k1, j, _ = self._cinfo[c]
        key = (self._room(s), s)
        self._group[j].add(key)
        self._gkey[s] = key
        if k1:
            self._want1.add(s)

    def _place(self, s: int, job: int, out: list) -> None:
        self._record_place(s, job)
        if self._njobs[s] == 1:
            self._empty.remove(s)
        out.append((job, s))

    def _fill(self, s: int, out: list) -> set[int]:
        """Rules (i)-(ii) on server ``s``; returns the VQs whose head changed."""
        k1, j, _ = self._info(s)
        touched: set[int] = set()
        if k1 and self._cnt[s][1] == 0 and self._vq[1]:
            self._place(s, self._vq[1].popleft(), out)
            self._want1.remove(s)
            touched.add(1)
        q = self._vq[j]
        placed = False
        room = self._room(s)
        while q and self._size[q[0]] <= room + FIT_TOL:
            job = q.popleft()
            self._place(s, job, out)
            room -= self._size[job]
            placed = True
        if placed:
            touched.add(j)
            self._regroup(s)
        return touched

    def _wake(self, t: int, heap: list, inheap: set) -> None:
        if not self._vq[t]:
            return
        if t == 1:
            if self._want1:
                s = self._want1[0]
                if s not in inheap:
                    heapq.heappush(heap, s)
                    inheap.add(s)
            return
        need = self._size[self._vq[t][0]] - FIT_TOL
        for _, s in self._group[t].irange(minimum=(need, -1)):
            if s not in inheap:
                heapq.heappush(heap, s)
                inheap.add(s)

    def schedule(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        heap: list[int] = []
        inheap: set[int] = set()
        if self._total:
            for s in self._dirty:
                heap.append(s)
                inheap.add(s)
            heapq.heapify(heap)
            for t in sorted(self._new_heads):
                self._wake(t, heap, inheap)
        self._dirty.clear()
        self._new_heads.clear()
        cursor = -1  # empty servers are visited once each, in index order
        while self._total:
            i = self._empty.bisect_right(cursor)
            e = self._empty[i] if i < len(self._empty) else None
            if e is None and not heap:
                break
            if heap and (e is None or heap[0] < e):
                s = heapq.heappop(heap)
                inheap.discard(s)
            else:
                assert e is not None  # no heap top before it: the next empty server
                s = cursor = e
                self._set_config(s)
                if self._config[s] is None:
                    continue
            for t in sorted(self._fill(s, out)):
                self._wake(t, heap, inheap)
        return out


class VQSBF(_VQSBase):
    name: ClassVar[str] = "VQS-BF"
    summary: ClassVar[str] = "VQS configurations, largest-fitting job per rule, then Best-Fit (BF-S) on what is left"

    def __init__(self, cluster, J: int = DEFAULT_J, **params) -> None:
        super().__init__(cluster, J, **params)
        L = cluster.servers
        self._vq: list[SortedList] = [SortedList() for _ in range(self.n_types)]
        self._all = SortedList()  # (size, -job) over the whole queue
        self._free = [1.0] * L
        self._by_free = SortedList((1.0, s) for s in range(L))

    def _qlen(self, t: int) -> int:
        return len(self._vq[t])

    def arrive(self, job: int) -> None:
        r, t = self._classify(job)
        self._vq[t].add((r, -job))
        self._all.add((r, -job))
        self._total += 1

    def _set_free(self, s: int, value: float) -> None:
        self._by_free.remove((self._free[s], s))
        self._free[s] = value
        self._by_free.add((value, s))

    def depart(self, job: int, server: int) -> None:
        r = self._size[job]
        empty = self._record_depart(job, server)
        self._set_free(server, 1.0 if empty else self._free[server] + r)

    @staticmethod
    def _largest_fitting(sl: SortedList, room: float):
        i = sl.bisect_right((room + FIT_TOL, float("inf"))) - 1
        return sl[i] if i >= 0 else None

    def _take(self, s: int, item, out: list) -> None:
        r, negjob = item
        job = -negjob
        self._vq[self._type[job]].remove(item)
        self._all.remove(item)
        self._record_place(s, job)
        self._set_free(s, self._free[s] - r)
        out.append((job, s))

    def _fill(self, s: int, out: list) -> None:
        k1, j, kj = self._info(s)
        if k1 and self._cnt[s][1] == 0:
            item = self._largest_fitting(self._vq[1], self._free[s])
            if item is not None:
                self._take(s, item, out)
        while self._cnt[s][j] < kj:
            item = self._largest_fitting(self._vq[j], self._free[s])
            if item is None:
                break
            self._take(s, item, out)
        while self._all:
            item = self._largest_fitting(self._all, self._free[s])
            if item is None:
                break
            self._take(s, item, out)

    def schedule(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        if not self._total:
            return out
        lo = self._all[0][0] - FIT_TOL
        candidates = sorted(s for _, s in self._by_free.irange(minimum=(lo, -1)))
        for s in candidates:
            if not self._all:
                break
            if self._free[s] + FIT_TOL < self._all[0][0]:
                continue
            if self._njobs[s] == 0:
                self._renew(s)
            self._fill(s, out)
        return out


PACKING_VQS_POLICIES = {cls.name: cls for cls in (VQS, VQSBF)}
