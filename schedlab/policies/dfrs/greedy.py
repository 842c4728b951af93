"""Greedy task mapping for the DFRS engine (dfrs-vs-batch-scheduling §4.2, §4.4, §4.5).

Engine: ``schedlab.sim.dfrs``. A policy has ``opt`` ("MIN" or "AVG", the
resource allocation of §4.6, applied by the engine) and two callbacks:
``on_arrival(state, job)`` (the job is pending, never placed) and
``on_completion(state)`` (once per instant at which jobs completed). It
changes the mapping only through ``state.apply``.

Implemented (names as the paper writes them, §4.5), each with /OPT=MIN and
/OPT=AVG:

* ``Greedy*`` -- on arrival, Greedy; on completion, Greedy on the paused and
  waiting jobs in priority order.
* ``GreedyP*`` -- on arrival, GreedyP; on completion as Greedy*.
* ``GreedyPM*`` -- on arrival, GreedyPM; on completion as Greedy*.

The paper's 12 + 1 combinations (§4.5) always pair a submission policy with
'*' and/or '/per'; without either, paused jobs would never resume, so the
bare ``Greedy``, ``GreedyP``, ``GreedyPM`` are not offered (nor their
non-'*' /per forms, nor the MCB8-on-submission and /per-only algorithms).

* ``Greedy*/per``, ``GreedyP*/per``, ``GreedyPM*/per`` (each /OPT=MIN and
  /OPT=AVG): as above plus a periodic MCB8 remapping (``PeriodicMCB8``;
  parameter ``period``, default 600 s; no MINVT / MINFT).

Greedy (§4.2): the job's tasks are placed one by one, each on the node with
the lowest CPU load (sum of the needs of the tasks on it, counting the tasks
of this job already placed) among the nodes with enough free memory for one
task; ties to the lowest node index. All or nothing: if the free memory
cannot hold all tasks (sum over nodes of floor(free / m_j) < T_j -- Greedy
succeeds exactly when this count suffices) nothing is placed and the job
stays pending.

GreedyP (§4.2): if Greedy fails for the arriving job j, the running jobs of
lower priority than j (§4.1; j itself has zero virtual time, so these are
the running jobs with positive virtual time) are candidates. If even pausing
all of them would not let j fit, nothing is paused and j waits. Otherwise
they are paused lowest priority first, until j fits (a prefix of that
order), and j is placed with Greedy.

GreedyPM (§4.2, "moving rather than pausing ... by trying to reschedule jobs
selected for pausing in order of their priority using Greedy"): the victims
are selected exactly as in GreedyP and taken off their nodes; j is placed with
Greedy first (it is the reason for the preemption); then each victim, highest
priority first, is re-placed with Greedy on what is left: if it fits it is
migrated (only tasks whose node changed count as moved; a victim put back on
exactly its former nodes is neither paused nor migrated and pays nothing),
otherwise it is paused.

Opportunistic '*' pass (§4.5): at a completion, the pending jobs (waiting
or paused) are taken in priority order, highest first, and each one that
Greedy can place now is placed (a job that does not fit is skipped; the scan
goes on). A resumed job pays the penalty; a first start does not.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from typing import ClassVar

import numpy as np

from schedlab.sim.dfrs import RUNNING, DfrsState, task_slots


def greedy_place(free_mem: np.ndarray, load: np.ndarray, tasks: int, mem: float, cpu: float) -> list[int] | None:
    """Greedy (§4.2) on the given per-node free memory and CPU load (not
    modified): node of each task, or None if the tasks cannot all fit."""
    slots = task_slots(free_mem, mem)
    if int(slots.sum()) < tasks:
        return None
    heap = [(float(load[k]), int(k)) for k in np.flatnonzero(slots > 0)]
    heapq.heapify(heap)
    out: list[int] = []
    for _ in range(tasks):
        l, k = heapq.heappop(heap)
        out.append(k)
        slots[k] -= 1
        if slots[k] > 0:
            heapq.heappush(heap, (l + cpu, k))
    return out


def _take(free_mem: np.ndarray, load: np.ndarray, nodes, mem: float, cpu: float, sign: float) -> None:
    idx = np.asarray(nodes, dtype=np.int64)
    np.add.at(free_mem, idx, -sign * mem)
    np.add.at(load, idx, sign * cpu)


class GreedyStar:
    """Greedy*: Greedy on arrival, Greedy on pending jobs at completions."""

    name: ClassVar[str] = "Greedy*"
    summary: ClassVar[str] = "DFRS: Greedy on submission and opportunistically on completion"
    preempt: ClassVar[bool] = False
    migrate: ClassVar[bool] = False
    opt: ClassVar[str] = "MIN"
    period: float | None = None  # /per variants: seconds between MCB8 remaps

    def __init__(self) -> None:
        pass

    def _greedy(self, st: DfrsState, j: int) -> list[int] | None:
        return greedy_place(st.free_mem, st.load, st.tasks[j], st.mem[j], st.cpu[j])

    def on_arrival(self, st: DfrsState, j: int) -> None:
        nodes = self._greedy(st, j)
        if nodes is not None:
            st.apply(places={j: nodes})
            return
        if self.preempt:
            self._preempt(st, j)

    def on_completion(self, st: DfrsState) -> None:
        for j in st.by_priority(st.pending):
            nodes = self._greedy(st, j)
            if nodes is not None:
                st.apply(places={j: nodes})

    def _preempt(self, st: DfrsState, j: int) -> None:
        key_j = st.priority_key(j)
        lower = [v for v in st.by_priority(st.running) if st.priority_key(v) > key_j]
        lower.reverse()  # lowest priority first
        if not lower:
            return
        free = st.free_mem.copy()
        load = st.load.copy()
        T, m, c = st.tasks[j], st.mem[j], st.cpu[j]
        for v in lower:
            _take(free, load, st.where[v], st.mem[v], st.cpu[v], -1.0)
        if int(task_slots(free, m).sum()) < T:
            return  # pausing every lower-priority job would not be enough
        free = st.free_mem.copy()
        load = st.load.copy()
        victims: list[int] = []
        for v in lower:
            _take(free, load, st.where[v], st.mem[v], st.cpu[v], -1.0)
            victims.append(v)
            if int(task_slots(free, m).sum()) >= T:
                break
        nodes = greedy_place(free, load, T, m, c)
        assert nodes is not None
        if not self.migrate:
            st.apply(pauses=victims, places={j: nodes})
            return
        _take(free, load, nodes, m, c, 1.0)
        moves: dict[int, list[int]] = {}
        pauses: list[int] = []
        for v in st.by_priority(victims):  # highest priority first
            nv = greedy_place(free, load, st.tasks[v], st.mem[v], st.cpu[v])
            if nv is None:
                pauses.append(v)
            else:
                moves[v] = nv
                _take(free, load, nv, st.mem[v], st.cpu[v], 1.0)
        st.apply(pauses=pauses, moves=moves, places={j: nodes})


class GreedyPStar(GreedyStar):
    """GreedyP*: GreedyP on arrival (pause lower-priority jobs), Greedy at completions."""

    name = "GreedyP*"
    summary = "DFRS: Greedy with pausing of lower-priority jobs on submission, Greedy on completion"
    preempt = True


class GreedyPMStar(GreedyStar):
    """GreedyPM*: GreedyPM on arrival (migrate, else pause), Greedy at completions."""

    name = "GreedyPM*"
    summary = "DFRS: Greedy with migration (else pausing) of lower-priority jobs on submission, Greedy on completion"
    preempt = True
    migrate = True


DEFAULT_PERIOD = 600.0  # s: the paper's default period (§5.3.2: "a 600 second period ... by default")


class PeriodicMCB8:
    """Mixin for the /per variants: at each periodic instant, MCB8 (§4.3,
    ``schedlab.policies.dfrs.mcb8.mcb8``, yield precision 0.01) maps all
    running and pending jobs from scratch, with the §4.1 priorities (zero
    virtual time = +inf; MCB8 breaks priority ties by smaller job index, which
    is the submission order when the job table is sorted by submit). Then:
    running jobs MCB8 dropped are paused; running jobs it mapped are moved to
    its mapping (a job whose node multiset is unchanged is not migrated and
    pays nothing); pending jobs it mapped are placed (a paused job pays the
    penalty). MCB8's bins are first renumbered to keep as much running memory
    in place as possible (``_relabel``). MCB8's common yield is not used: the engine's OPT=MIN / OPT=AVG
    allocation runs on the new mapping. No MINVT / MINFT limit."""

    def __init__(self, period: float = DEFAULT_PERIOD) -> None:
        if isinstance(period, bool) or not isinstance(period, (int, float)) or not (0 < period < math.inf):
            raise TypeError(f"period must be a number > 0 (got {period!r})")
        self.period = float(period)

    def on_period(self, st: DfrsState) -> None:
        from schedlab.policies.dfrs.mcb8 import mcb8

        jobs = sorted(st.running | st.pending)
        res = mcb8([(j, st.tasks[j], st.cpu[j], st.mem[j], st.priority(j)) for j in jobs], st.nodes)
        relabel = _relabel(st, res.mapping)
        mapping = {j: [relabel[b] for b in bins] for j, bins in res.mapping.items()}
        pauses = [j for j in res.dropped if st.status[j] == RUNNING]
        moves = {j: nodes for j, nodes in mapping.items() if st.status[j] == RUNNING}
        places = {j: nodes for j, nodes in mapping.items() if st.status[j] != RUNNING}
        st.apply(pauses=pauses, moves=moves, places=places)


def _relabel(st: DfrsState, mapping: dict[int, list[int]]) -> np.ndarray:
    """Nodes are identical, so any permutation of MCB8's bins is an equally
    valid mapping: bin b goes to node relabel[b], the permutation maximising
    the memory that stays in place, sum over running jobs of
    m_j x min(tasks of j in bin b, tasks of j on node relabel[b])
    (``scipy.optimize.linear_sum_assignment``). Without it MCB8, which fills
    node 0 first, would migrate jobs merely because of node numbering."""
    from scipy.optimize import linear_sum_assignment

    W = np.zeros((st.nodes, st.nodes))
    for j, bins in mapping.items():
        if st.status[j] != RUNNING:
            continue
        new = Counter(bins)
        old = Counter(st.where[j].tolist())
        for b, nb in new.items():
            for k, nk in old.items():
                W[b, k] += st.mem[j] * min(nb, nk)
    rows, cols = linear_sum_assignment(W, maximize=True)
    relabel = np.empty(st.nodes, dtype=np.int64)
    relabel[rows] = cols
    return relabel


def _with_per(base: type[GreedyStar]) -> type[GreedyStar]:
    name = f"{base.name}/per"
    return type(name, (PeriodicMCB8, base), {
        "name": name, "summary": f"{base.summary}; MCB8 remapping every period (default 600 s)",
        "__doc__": f"{base.__doc__} Periodic MCB8 remapping (/per).", "__module__": __name__})


def _with_opt(base: type[GreedyStar], opt: str) -> type[GreedyStar]:
    name = f"{base.name}/OPT={opt}"
    what = "max-min yields (iterative)" if opt == "MIN" else "max average yield (LP) above the max-min floor"
    cls = type(name, (base,), {"name": name, "opt": opt, "summary": f"{base.summary}; {what}",
                               "__doc__": f"{base.__doc__} Resource allocation OPT={opt}.",
                               "__module__": __name__})
    return cls


_BASES = (GreedyStar, GreedyPStar, GreedyPMStar)
GREEDY_POLICIES: dict[str, type[GreedyStar]] = {
    c.name: c for base in _BASES for c in (_with_opt(base, "MIN"), _with_opt(base, "AVG"))
}
GREEDY_PER_POLICIES: dict[str, type[GreedyStar]] = {
    c.name: c for base in _BASES for c in (_with_opt(_with_per(base), "MIN"), _with_opt(_with_per(base), "AVG"))
}

__all__ = ["DEFAULT_PERIOD", "GREEDY_PER_POLICIES", "GREEDY_POLICIES", "PeriodicMCB8", "GreedyPMStar", "GreedyPStar", "GreedyStar", "greedy_place"]
