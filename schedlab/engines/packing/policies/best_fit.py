"""Best-Fit scheduling (Psychas & Ghaderi §IV-A), single resource.

* **BF-J** -- queued jobs in arrival order; each goes to the server with the
  least free capacity that fits it (ties: lowest server index), else it stays.
  Cost per epoch: O(log L) per job examined; the pass stops as soon as no
  server has room for the smallest queued job, but can still examine the whole
  queue (O(Q log L)) when some small job fits somewhere.
* **BF-S** -- servers in index order; each is filled repeatedly with the
  largest queued job that fits (ties: earliest arrival) until none fits.
  Only servers with room for the smallest queued job are visited (a segment
  tree finds them): O((servers filled + placements) · log) per epoch.
* **BF-J/S** -- (1) BF-S over the servers that had departures since the
  previous epoch, over the whole queue; (2) BF-J over the jobs that arrived
  since the previous epoch and are still queued. Work per epoch is bounded by
  departures + arrivals + placements, never by Q or L: the paper's point.

A job fits a server when size ≤ free + ``FIT_TOL`` (the engine's test). These
policies track free capacity themselves (from departures and their own
placements, which the engine applies or rejects, never alters).
"""

from __future__ import annotations

from schedlab.engines.packing.policies.base import PackingPolicy
from schedlab.engines.packing.policies.structures import JobsBySize, MaxSegmentTree, ServersByFree
from schedlab.engines.packing.sim.engine import FIT_TOL
from schedlab.errors import UserError


class SingleResourcePolicy(PackingPolicy):
    """Common set-up: one resource, per-server free capacity as floats."""

    def __init__(self, cluster, **params) -> None:
        super().__init__(cluster)
        if params:
            raise UserError(f"policy {self.name!r} takes no parameters (got {', '.join(sorted(params))})")
        if cluster.resources != 1:
            raise UserError(
                f"policy {self.name!r} is single-resource but the workload has {cluster.resources} resources; "
                "use the workload's single-resource view (e.g. demand = max over resources)"
            )
        self.free = [float(cluster.capacity(s)[0]) for s in range(cluster.servers)]

    def size(self, job: int) -> float:
        return float(self.cluster.demand(job)[0])


class BFJ(SingleResourcePolicy):
    name = "BF-J"
    summary = "Best-Fit from the job's view: each queued job, in arrival order, to the tightest server that fits"

    def __init__(self, cluster, **params) -> None:
        super().__init__(cluster, **params)
        self.queue: dict[int, float] = {}  # insertion order = arrival order
        self.by_size = JobsBySize()
        self.servers = ServersByFree(self.free)

    def arrive(self, job: int) -> None:
        r = self.size(job)
        self.queue[job] = r
        self.by_size.add(job, r)

    def depart(self, job: int, server: int) -> None:
        self.servers.update(server, self.servers.free[server] + self.size(job))

    def schedule(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        servers, by_size = self.servers, self.by_size
        for job, r in self.queue.items():
            if servers.max_free() + FIT_TOL < by_size.min_size():
                break  # nothing left in the queue fits anywhere
            s = servers.tightest(r - FIT_TOL)
            if s < 0:
                continue
            servers.update(s, servers.free[s] - r)
            by_size.remove(job, r)
            out.append((job, s))
        for job, _ in out:
            del self.queue[job]
        return out


class BFS(SingleResourcePolicy):
    name = "BF-S"
    summary = (
        "Best-Fit from the server's view: servers in index order, each filled with the largest queued job that fits"
    )

    def __init__(self, cluster, **params) -> None:
        super().__init__(cluster, **params)
        self.by_size = JobsBySize()
        self.tree = MaxSegmentTree(self.free)

    def arrive(self, job: int) -> None:
        self.by_size.add(job, self.size(job))

    def depart(self, job: int, server: int) -> None:
        self.tree.update(server, self.tree[server] + self.size(job))

    def schedule(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        by_size, tree = self.by_size, self.tree
        s = 0
        while by_size:
            s = tree.first_at_least(by_size.min_size() - FIT_TOL, s)
            if s < 0:
                break
            free = tree[s]
            while True:
                hit = by_size.largest_at_most(free + FIT_TOL)
                if hit is None:
                    break
                job, r = hit
                by_size.remove(job, r)
                free -= r
                out.append((job, s))
            tree.update(s, free)
            s += 1
        return out


class BFJS(SingleResourcePolicy):
    name = "BF-J/S"
    summary = "BF-S over servers with departures, then BF-J over the new arrivals (Psychas & Ghaderi)"

    def __init__(self, cluster, **params) -> None:
        super().__init__(cluster, **params)
        self.queued: dict[int, float] = {}
        self.by_size = JobsBySize()
        self.servers = ServersByFree(self.free)
        self.new: list[int] = []
        self.departed: set[int] = set()

    def arrive(self, job: int) -> None:
        r = self.size(job)
        self.queued[job] = r
        self.by_size.add(job, r)
        self.new.append(job)

    def depart(self, job: int, server: int) -> None:
        self.servers.update(server, self.servers.free[server] + self.size(job))
        self.departed.add(server)

    def _place(self, job: int, r: float, s: int, out: list) -> None:
        self.servers.update(s, self.servers.free[s] - r)
        self.by_size.remove(job, r)
        del self.queued[job]
        out.append((job, s))

    def schedule(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        servers, by_size = self.servers, self.by_size
        # 1) BF-S over the servers that had departures, in index order
        for s in sorted(self.departed):
            while by_size:
                hit = by_size.largest_at_most(servers.free[s] + FIT_TOL)
                if hit is None:
                    break
                self._place(hit[0], hit[1], s, out)
        self.departed.clear()
        # 2) BF-J over the new arrivals still queued, in arrival order
        for job in self.new:
            r = self.queued.get(job)
            if r is None or servers.max_free() + FIT_TOL < r:
                continue
            s = servers.tightest(r - FIT_TOL)
            if s >= 0:
                self._place(job, r, s, out)
        self.new.clear()
        return out
