"""The DFRS engine: dynamic fractional resource scheduling of parallel jobs on
a homogeneous cluster with VM time-sharing (Stillwell, Vivien, Casanova,
"Dynamic Fractional Resource Scheduling vs. Batch Scheduling", TPDS 2012,
../shared/papers/dfrs-vs-batch-scheduling.md, §2, §4, §5). Every point
where this engine and its policies differ from the authors' own simulator
(marklee77/vcsim) is listed, with why, in docs/dfrs.md.

Model (§2)
----------
``nodes`` identical nodes, each with CPU 1 and memory 1. Job j has
``tasks[j]`` tasks (= procs), a CPU need c_j in (0, 1] and a memory
requirement m_j in (0, 1] per task, a release r_j and a processing time p_j
(time on a dedicated system). Each task of a placed job sits on one node (a
node may hold several tasks of the same job); the memory of a node never
exceeds 1 (checked at every placement: :class:`DfrsCapacityError`); CPU may be
overloaded. A placed job gets a yield y_j in [0, 1]: each task is allocated
c_j y_j of its node's CPU, and the job progresses at rate y_j.

Virtual time = progress = integral of the job's *effective* rate, which is
y_j while the job is placed and not in a penalty, 0 otherwise. The job
completes when its virtual time reaches p_j.

Penalty (§5 intro): after a job is resumed (placed again after a pause) or
migrated (at least one task changes node), its rate is 0 for ``penalty``
seconds (default 300). A first start costs nothing. A job in its penalty
still holds its memory and is still given CPU by the resource allocation,
but that CPU does no work: the usage profile's u(t) counts only the CPU of
jobs making progress, so penalties show as underutilization -- the paper's
own reading (§5.3.2: DFRS's "lower efficiency is caused by time spent doing
preemption and migration", which a longer period should reduce). It can be
paused or migrated again (which restarts the penalty).

Events and tie rule
-------------------
Event-driven: next arrival, next completion (predicted from the current
yields), next penalty expiry. At an instant t: all completions (in job
order), then -- if any job completed -- ONE ``policy.on_completion(state)``,
then the arrivals at t one by one (submission order), each followed by
``policy.on_arrival(state, job)``; then, at the periodic instants
r_min + k x ``policy.period`` (policies with a period, the paper's /per:
k = 1, 2, ...; with ``period_origin = "zero"``, a [system] option, k x
``policy.period`` from time 0 as the authors' simulator places them),
ONE ``policy.on_period(state)``; then, if the mapping
changed, the resource allocation (``policy.opt``: "MIN" or "AVG")
recomputes the yields -- or, when the policy has an ``allocate`` method,
``policy.allocate(state, next_period)`` does (it sets ``state.y`` for the
running jobs and returns the number of solver failures to add to
``lp_failures``; ``next_period`` is the next periodic instant, > now, or inf
without a period). The /stretch-per policies use this hook
(``schedlab.engines.dfrs.policies.stretch``).
A penalty expiry changes no mapping and no yield -- except under
``stretch_realloc = "every-instant"`` (a [system] option; default
``"mapping-change"``): a policy with its own ``allocate`` hook (/stretch-per)
then re-allocates at every instant with running jobs, as the authors'
simulator does (docs/dfrs.md row 18). (While nothing is running or pending,
periodic instants are skipped.)

``star_pass = "instant-end"`` (a [system] option; default ``"completion"``,
the order above) moves the opportunistic '*' pass of the Greedy-family
policies to where the authors' simulator runs it (docs/dfrs.md): once at the
end of every instant at which a job completed or arrived or a periodic remap
ran -- after the arrivals (which thus get the freed resources first) and
after the periodic MCB8 (so jobs it left out are placed by Greedy when their
memory fits). Other policies (MCB8*, /stretch-per) are unaffected.

Resource allocation (§4.6)
--------------------------
Only nodes whose CPU load Lambda_k (sum of the needs of the tasks on k)
exceeds 1 constrain anything; a job with no task on an overloaded node gets
yield 1. Lambda = max_k Lambda_k.

* ``OPT=MIN``: iterative max-min (progressive filling): all unfrozen jobs
  share a common level L, raised until a node saturates
  (sum of c_j y_j over its tasks = 1) or L = 1; the jobs on saturated nodes
  are frozen; repeat. The first level is 1/max(1, Lambda) (the paper's first
  step) and every job ends with y_j >= 1/max(1, max load over its nodes).
  The result is the max-min fair allocation.
* ``OPT=AVG``: maximise sum_j y_j (the average yield over placed jobs) with
  an LP (scipy ``linprog``, HiGHS): rows = overloaded nodes,
  sum c_j n_jk y_j <= 1, bounds 1/max(1, Lambda) <= y_j <= 1 -- the paper's
  "no job is given a yield lower than the maximized minimum" (the global
  max-min value, not each job's own max-min fair share: that per-job floor
  would make OPT=AVG equal to OPT=MIN on most small cases). If HiGHS fails,
  the OPT=MIN yields are kept and ``lp_failures`` counts it.

Priority (§4.1)
---------------
priority = flow time / virtual time^2 with flow time = now - r_j. A job with
zero virtual time (never run, or only run in penalty) has infinite priority,
and so has one whose virtual time is so small (~1e-154 s) that its square
underflows.
Ties (including among infinite priorities) go to the earlier submission
(release, then job index). :meth:`DfrsState.priority_key` sorts highest
priority first.

Metrics
-------
Per job: start (first placement), end, bounded stretch
(``stretch_bound.bounded_stretch``, 10 s threshold: max(C-r, 10)/max(p, 10)),
pauses, migrations (events moving at least one task), migrated_tasks and
mem_moved = m_j x (tasks moved): a pause moves all T_j tasks (the VM images
saved; the restore at resume is not counted again), a migration moves the
tasks whose node changed (multiset difference of old and new nodes).
Summary: n_jobs, stretch_mean, stretch_max, pauses, migrations, mem_moved,
underutilization (normalised, §5.3.1, from the engine's own piecewise-
constant demand D(t) = sum of c_j T_j over released unfinished jobs and
utilization u(t) = sum of c_j T_j y_j over placed jobs out of their penalty),
makespan, events,
lp_failures, sim_seconds (the simulation and metrics, not the bound), nodes,
penalty, dropped_oversize; with ``bound=True`` also stretch_lower_bound
(``max_stretch_lower_bound``: Theorem 1, solved by max flow), degradation =
stretch_max / stretch_lower_bound and bound_seconds.

Determinism: no random numbers; ties by job order / node index.

Layout: ``state`` (DfrsState, statuses, errors, invariants), ``allocation``
(OPT=MIN / OPT=AVG yields), ``events`` (the event loop, simulate_dfrs),
``table`` (run_table, the job-table adapter). Every name is re-exported
here: import them from ``schedlab.engines.dfrs.sim``.
"""

from schedlab.engines.dfrs.sim.allocation import (
    _LOAD_EPS,
    allocate,
    max_min_yields,
    max_min_yields_numpy,
    running_incidence,
)
from schedlab.engines.dfrs.sim.events import STALL_FACTOR, DfrsLivelock, DfrsResult, _greedy_family, simulate_dfrs
from schedlab.engines.dfrs.sim.state import (
    CPU_CHECK_TOL,
    DEFAULT_PENALTY,
    DONE,
    FUTURE,
    MEM_EPS,
    PAUSED,
    RUNNING,
    WAITING,
    DfrsCapacityError,
    DfrsCheckError,
    DfrsState,
    check_state,
    task_slots,
    tasks_per_node,
)
from schedlab.engines.dfrs.sim.table import _num_column, run_table

__all__ = [
    "CPU_CHECK_TOL",
    "DEFAULT_PENALTY",
    "DONE",
    "FUTURE",
    "MEM_EPS",
    "PAUSED",
    "RUNNING",
    "STALL_FACTOR",
    "WAITING",
    "_LOAD_EPS",
    "DfrsCapacityError",
    "DfrsCheckError",
    "DfrsLivelock",
    "DfrsResult",
    "DfrsState",
    "_greedy_family",
    "_num_column",
    "allocate",
    "check_state",
    "max_min_yields",
    "max_min_yields_numpy",
    "run_table",
    "running_incidence",
    "simulate_dfrs",
    "task_slots",
    "tasks_per_node",
]
