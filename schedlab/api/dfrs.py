"""The DFRS engine's policy seam: each task of a parallel job is a VM on a
node; CPU may be shared fractionally, memory may not be overcommitted; jobs
can be paused, resumed and migrated (at a penalty).

Subclass :class:`Policy`: set ``opt`` ("MIN" or "AVG": the engine's resource
allocation after a mapping change), optionally ``period`` (seconds), and
implement ``on_arrival(state, job)``, ``on_completion(state)`` and, with a
period, ``on_period(state)``. Change the mapping only through
``state.apply(pauses=[...], moves={job: nodes}, places={job: nodes})``; the
engine checks memory on every placement (``DfrsCapacityError`` names the
policy, the time and the job).

What a policy may read through :class:`State`: ``nodes``, ``now``,
``free_mem`` and ``load`` (per node), per job ``tasks``, ``cpu`` (CPU need
per task), ``mem``, ``release``, ``vt`` (virtual time = progress so far),
``status``, ``where`` (node array of a placed job), the sets ``running`` and
``pending``, and ``priority(j)`` / ``by_priority(jobs)`` (§4.1: flow time /
virtual time squared). Never ``processing`` (the true processing times).

Helpers the built-ins use: :func:`greedy_place` (Greedy's placement),
:func:`mcb8` (the MCB8 vector-packing heuristic) and :func:`mcb8_remap`.

Parameters: keyword arguments of ``__init__`` (a DFRS policy has no handle),
typed, with defaults.
"""

from schedlab.engines.dfrs.policies.base import DfrsPolicy as Policy
from schedlab.engines.dfrs.policies.greedy import greedy_place, mcb8_remap
from schedlab.engines.dfrs.policies.mcb8 import mcb8
from schedlab.engines.dfrs.sim import PAUSED, RUNNING, WAITING, DfrsCapacityError
from schedlab.engines.dfrs.sim import DfrsState as State

__all__ = ["PAUSED", "RUNNING", "WAITING", "DfrsCapacityError", "Policy", "State", "greedy_place", "mcb8", "mcb8_remap"]
