"""A first-fit packing policy written as a user would (`schedlab.api.packing`),
for tests that need a correct policy or one broken in a chosen way: subclass
`FirstFit` and override `eligible` (which queued jobs it may place: a policy
that never places some job stalls) or `server_order`."""

from __future__ import annotations

from schedlab.api import packing


class FirstFit(packing.Policy):
    """First fit over servers, queue in arrival order, own free copy."""

    def __init__(self, cluster):
        super().__init__(cluster)
        self.queue = []

    def arrive(self, job):
        self.queue.append(job)

    def depart(self, job, server):
        pass

    def eligible(self, job):
        return True

    def server_order(self):
        return range(self.cluster.servers)

    def schedule(self):
        c = self.cluster
        free = [c.free(s).copy() for s in range(c.servers)]
        out = []
        for job in list(self.queue):
            if not self.eligible(job):
                continue
            d = c.demand(job)
            for s in self.server_order():
                if packing.fits(d, free[s]):
                    free[s] -= d
                    out.append((job, s))
                    self.queue.remove(job)
                    break
        return out
