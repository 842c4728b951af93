"""The packing policy seam (engine: ``schedlab.engines.packing.sim.engine``).

Model (Psychas & Ghaderi §II; Tetris for several resources): L servers, each
with a capacity vector; jobs arrive with a demand vector and a duration, wait
in the queue and run, without preemption, on one server; the demands on a
server never exceed its capacity in any dimension. The engine owns time,
durations and the placement bookkeeping (and checks capacity on every
placement); a policy owns its queue structures and decides placements. It
never sees a job's duration (a real scheduler does not), only its demand.

Decision epochs: the engine calls ``schedule`` at each decision epoch at which
something changed (an arrival or a departure since the previous epoch):
every slot start in the slotted model, every Δ or every event in a trace
replay. Order within an epoch: departures (capacity freed), then arrivals (in
job order), then one ``schedule`` call.

A policy implements four methods:

* ``arrive(job)`` -- a job joined the queue (``cluster.demand(job)``);
* ``depart(job, server)`` -- a running job finished and freed its demand;
* ``schedule() -> list[(job, server)]`` -- placements for this epoch, applied
  in list order; each must fit in the server's free capacity *after* the
  earlier placements of the same list (the engine raises ``CapacityExceeded``
  otherwise: that is a policy bug, never silently fixed);
* and it may read the cluster through the ``Cluster`` handle it is built with:
  ``cluster.servers`` (L), ``cluster.resources`` (d), ``cluster.capacity(s)``,
  ``cluster.free(s)`` (numpy vectors, read-only views), ``cluster.demand(job)``,
  ``cluster.now``, ``cluster.jobs_on(s)`` (a set of running jobs); for
  multi-task jobs (Tetris) also ``cluster.group(task)`` (the job a task belongs
  to) and ``cluster.estimate(task)`` (a duration estimate, by default the true
  duration: only policies that model known durations, like Tetris's SRTF term,
  read it).

A policy must eventually place every job: every job fits an empty server
(the engine refuses one that fits none before the run), so jobs still queued
when nothing runs are a policy bug, and the engine raises ``PackingStalled``
at that epoch (runs without ``until``).

Jobs are ints (their index in the job table, i.e. arrival order); servers are
ints 0..L-1. Cost per decision: a policy keeps sorted structures (see
``schedlab.engines.packing.policies.structures``) instead of scanning every server or
every queued job where a sorted structure answers the question.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from schedlab.engines.packing.sim.engine import Cluster


class PackingPolicy(ABC):
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def __init__(self, cluster: Cluster, **params: Any) -> None:
        self.cluster = cluster

    @abstractmethod
    def arrive(self, job: int) -> None:
        """``job`` joined the queue at ``cluster.now``."""

    @abstractmethod
    def depart(self, job: int, server: int) -> None:
        """``job`` finished on ``server``; its demand is free again."""

    @abstractmethod
    def schedule(self) -> list[tuple[int, int]]:
        """Placements (job, server) for this decision epoch, in order."""
