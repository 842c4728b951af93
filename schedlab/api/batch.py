"""The batch engine's policy seam: rigid parallel jobs on a homogeneous
machine of ``machine.capacity`` units (processors, or whole nodes), no
preemption.

Subclass :class:`Policy` and implement ``arrive(job)``, ``complete(job)``
and ``schedule(now) -> [job, ...]``. The engine calls, at each event instant
t: ``complete`` for every job ending at t, ``arrive`` for every job submitted
at t (job order), then ONE ``schedule(t)``, which returns the jobs to start
now, in order; each must fit in ``machine.free`` minus the earlier starts of
the same list (the engine raises ``BatchCapacityExceeded``, naming the
policy, the time and the job, otherwise).

What a policy may read through its :class:`Machine` handle:
``machine.capacity``, ``machine.free``, ``machine.now``, and per job (lists
indexed by job) ``machine.need`` (units), ``machine.requested`` (the user's
requested time, the only runtime a real batch scheduler knows) and
``machine.submit``; and ``machine.easy_backfill``, the ``[system]``
backfilling rule EASY follows ("canonical" or "vcsim"). Never a job's
actual runtime.

Parameters: keyword arguments of ``__init__`` after ``machine``, typed, with
defaults.
"""

from schedlab.engines.batch.policies.base import BatchPolicy as Policy
from schedlab.engines.batch.sim.engine import BatchCapacityExceeded, BatchStartError, Machine

__all__ = ["BatchCapacityExceeded", "BatchStartError", "Machine", "Policy"]
