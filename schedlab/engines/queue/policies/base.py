"""The queue policy seam: four methods, in the spirit of the PSBS authors'
simulator (enqueue / dequeue / schedule / next_internal_event).

A policy acts on the server only through the :class:`~schedlab.engines.queue.sim.engine.Server`
handle it is built with: it groups jobs into pools (GPS groups) and says which
pool holds the server. The engine calls:

- ``arrive(job, estimate, weight)`` when a job is submitted (``server.now`` is
  the arrival time; the job sits alone in a fresh pool);
- ``depart(job)`` after the engine has completed a job and removed it from its
  pool -- the policy must then re-decide what to serve;
- ``next_event_time()`` for the absolute time of the policy's next internal
  event (a virtual completion, a job becoming late, LAS groups meeting), or
  ``INF``; it must be a pure query;
- ``on_event()`` at that time, to apply the event it announced.

A policy must eventually serve every job: the engine raises ``PolicyStalled``
when jobs are left with nothing scheduled. Every policy here is also
work-conserving (the server is never idle while jobs are present) and says so
with ``work_conserving = True``, which ``schedlab check-policy`` verifies.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from schedlab.engines.queue.sim.engine import INF, Server


class QueuePolicy(ABC):
    """Base class: no internal events; subclasses implement arrive/depart."""

    #: Registry name, e.g. "FSPE+PS".
    name: ClassVar[str] = ""
    #: One line for `schedlab policies`.
    summary: ClassVar[str] = ""
    #: True for the exact-size policies (SRPT, FSP): the engine passes the real
    #: size as the estimate.
    exact_size: ClassVar[bool] = False
    #: True (the default) for a policy that never leaves the server idle while
    #: jobs are present -- every built-in. ``schedlab check-policy`` then checks
    #: that every busy period ends when the FIFO recursion says it does (the
    #: unfinished work of a work-conserving system does not depend on the
    #: order of service). A policy that idles on purpose (e.g. waits for a
    #: better job) sets it to False; it must still complete every job.
    work_conserving: ClassVar[bool] = True

    def __init__(self, server: Server) -> None:
        self.server = server

    @abstractmethod
    def arrive(self, job: int, estimate: float, weight: float) -> None:
        """A job is submitted at ``server.now``."""

    @abstractmethod
    def depart(self, job: int) -> None:
        """The engine completed ``job``; re-decide what holds the server."""

    def next_event_time(self) -> float:
        return INF

    def on_event(self) -> None:
        raise AssertionError(f"{self.name} announced no internal event")
