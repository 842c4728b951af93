"""The DFRS policy seam (engine: ``schedlab.engines.dfrs.sim``).

A DFRS policy maps the tasks of parallel jobs (VMs) onto nodes; the engine
owns time, progress and the true processing times, and sets each placed job's
yield with the resource allocation named by ``opt`` ("MIN": max-min fair;
"AVG": maximise the average yield above the max-min floor). A policy is
built from its parameters alone (no handle); the engine passes the
:class:`~schedlab.engines.dfrs.sim.DfrsState` to each callback:

* ``on_arrival(state, job)`` -- ``job`` was submitted and is pending;
* ``on_completion(state)`` -- once per instant at which jobs completed;
* ``on_period(state)`` -- at r_min + k x ``period`` when ``period`` is set
  (the paper's /per policies);
* optionally ``allocate(state, next_period) -> solver failures`` to set the
  yields itself (the /stretch-per policies).

Order at one instant: completions, ``on_completion``, arrivals one by one
with ``on_arrival``, ``on_period``, then the allocation if the mapping
changed. A policy changes the mapping only through ``state.apply(pauses=...,
moves=..., places=...)``; the engine checks every placement (memory per node
<= 1) and raises on a violation. A policy may read the state's ``free_mem``,
``load``, ``where``, ``status``, ``tasks``, ``cpu``, ``mem``, ``release``,
``vt`` (virtual time: progress so far), ``running``, ``pending``, ``now``
and ``priority(j)`` -- never ``processing`` (the true processing times, which
a real scheduler does not know).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from schedlab.engines.dfrs.sim import DfrsState


class DfrsPolicy(ABC):
    #: Registry name, e.g. "GreedyPM*/OPT=MIN".
    name: ClassVar[str] = ""
    #: One line for `schedlab policies`.
    summary: ClassVar[str] = ""
    #: Resource allocation the engine applies after a mapping change: "MIN" or "AVG".
    opt: ClassVar[str] = "MIN"
    #: Seconds between ``on_period`` calls (None: never).
    period: float | None = None

    @abstractmethod
    def on_arrival(self, state: DfrsState, job: int) -> None:
        """``job`` was submitted at ``state.now`` and is pending."""

    @abstractmethod
    def on_completion(self, state: DfrsState) -> None:
        """Jobs completed at ``state.now`` (called once per such instant)."""

    def on_period(self, state: DfrsState) -> None:  # noqa: B027  (optional hook: by default a period does nothing)
        """A periodic instant (only when ``period`` is set)."""
