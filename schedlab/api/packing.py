"""The packing engine's policy seam: L servers with capacity vectors, jobs
with demand vectors, placed without preemption.

Subclass :class:`Policy` and implement ``arrive(job)``, ``depart(job,
server)`` and ``schedule() -> [(job, server), ...]``. The engine calls, at
each decision epoch at which something changed: ``depart`` for every job
that finished (its demand is free again), ``arrive`` for every new job (job
order), then ONE ``schedule``, whose placements it applies in list order;
each must fit the server's free capacity after the earlier placements of the
same list (the engine raises ``CapacityExceeded``, naming the policy, the
time, the job and the server, otherwise).

A policy must eventually place every job. The engine refuses up front a job
that fits no server even when empty (the workload's problem); every other
job fits an empty server, so a run (without ``until``) that ends with jobs
still queued -- nothing running, nothing left to arrive -- is a policy bug,
a ``schedule()`` that forgets a queue say: the engine raises
``PackingStalled``, naming the policy, the time, how many jobs are queued
and the first. In a sweep it fails that configuration only (a record in
``failures/``); ``schedlab check-policy`` reports it as ``completes``.

What a policy may read through its :class:`Cluster` handle:
``cluster.servers`` (L), ``cluster.resources`` (d), ``cluster.capacity(s)``,
``cluster.free(s)``, ``cluster.demand(job)`` (read-only numpy vectors),
``cluster.now``, ``cluster.jobs_on(s)``; for multi-task jobs
``cluster.group(task)``; ``cluster.estimate(task)`` only for policies that
model known durations (like Tetris's SRTF term). Never a job's duration.

Parameters: keyword arguments of ``__init__`` after ``cluster``, typed, with
defaults. Keep sorted structures (:mod:`schedlab.engines.packing.policies.structures`:
a max segment tree over free capacity, servers sorted by free capacity, jobs
sorted by size) instead of scanning every server or every queued job.
"""

from schedlab.engines.packing.policies.base import PackingPolicy as Policy
from schedlab.engines.packing.policies.structures import JobsBySize, MaxSegmentTree, ServersByFree
from schedlab.engines.packing.sim.engine import FIT_TOL, CapacityExceeded, Cluster, PackingStalled, PlacementError, fits

__all__ = [
    "FIT_TOL",
    "CapacityExceeded",
    "Cluster",
    "JobsBySize",
    "MaxSegmentTree",
    "PackingStalled",
    "PlacementError",
    "Policy",
    "ServersByFree",
    "fits",
]
