"""The queue engine's policy seam: one server of rate 1 shared preemptively.

Subclass :class:`Policy` and implement ``arrive`` and ``depart`` (and, for
policies with internal events, ``next_event_time`` and ``on_event``). The
engine calls, at each event instant, in this order: ``depart(job)`` for a
completed job, ``on_event()`` when the time your ``next_event_time()``
announced has come, ``arrive(job, estimate, weight)`` for each new job (in
job-table order). After each call the server must be serving some pool
whenever jobs are present (the engine raises ``PolicyStalled`` otherwise).

What a policy may read: each job's *estimate* and weight at arrival (an
exact-size policy sets ``exact_size = True`` and is given estimate = size),
``server.now``, ``server.attained(job)`` (service received so far),
``server.pool_of(job)``, ``server.pool_clock(pool)``,
``server.time_to_attain(job, amount)`` and ``server.time_to_advance(pool,
amount)``, ``server.served``. Never a job's true size: the engine keeps it.

What a policy may do: group jobs into pools (``server.new_pool()``,
``server.place(job, pool, weight)``, ``server.isolate(job)``) and say which
pool holds the server (``server.serve(pool)``, ``server.serve_job(job)``).
A pool is a GPS group: member i gets w_i / W of the server while the pool is
served, which is what keeps every policy O(log n) per event (see
docs/architecture.md, "The queue engine").

Parameters: keyword arguments of ``__init__`` after ``server``, typed, with
defaults (``def __init__(self, server, *, alpha: float = 0.5)``); a spec's
``params = {alpha = [0.1, 1.0]}`` sweeps them.

Compare priority keys with :func:`tie_key` (equal to ~1e-12 relative) and
break ties by arrival order, as the built-ins do, so rounding never reorders
a schedule.
"""

from schedlab.engines.queue.policies.base import QueuePolicy as Policy
from schedlab.engines.queue.sim.engine import INF, PolicyStalled, Pool, Server, tie_key

__all__ = ["INF", "Policy", "PolicyStalled", "Pool", "Server", "tie_key"]
