"""Greedy task mapping for the DFRS engine (dfrs-vs-batch-scheduling §4.2, §4.4, §4.5).

Engine: ``schedlab.engines.dfrs.sim``. A policy has ``opt`` ("MIN" or "AVG", the
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
non-'*' /per forms, nor ``MCB8``, ``MCB8/per`` and the /per-only algorithm).

* ``Greedy*/per``, ``GreedyP*/per``, ``GreedyPM*/per`` (each /OPT=MIN and
  /OPT=AVG): as above plus a periodic MCB8 remapping (``PeriodicMCB8``;
  parameter ``period``, default 600 s; optional ``minvt`` / ``minft``).
* ``.../per/OPT=.../MINVT=b`` and ``.../MINFT=b``, b in 300, 600 (§4.3
  "Limiting Migration", §5.1): the /per forms whose periodic remap keeps
  running jobs with virtual (flow) time < b s on their nodes (they may be
  paused, not migrated); see ``PeriodicMCB8``.
* ``MCB8*/OPT=...`` and ``MCB8*/per/OPT=...`` (§4.4, §4.5; ``MCB8Star``):
  MCB8 remaps everything on every submission and at every completion
  instant (and periodically for /per), each also with /MINVT=b and /MINFT=b,
  b in 300, 600 (the limit applies to every MCB8 remap).

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
order), and j is placed with Greedy. Option ``[system] victims = "put-back"``
(engine ``dfrs``; the authors' simulator's rule, docs/dfrs.md row 7;
``put_back_victims``): every running job is a candidate (zero virtual time
last), taken off lowest priority first until Greedy places j, then each
victim whose own nodes still have the memory is put back, highest priority
first; j is always placed. GreedyPM re-places the remaining victims as below.

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

import math
from collections.abc import Set as AbstractSet
from typing import ClassVar

import numpy as np

from schedlab.engines.dfrs.policies.base import DfrsPolicy
from schedlab.engines.dfrs.sim import MEM_EPS, RUNNING, DfrsState, task_slots


def greedy_place(free_mem: np.ndarray, load: np.ndarray, tasks: int, mem: float, cpu: float) -> list[int] | None:
    """Greedy (§4.2) on the given per-node free memory and CPU load (not
    modified): node of each task, or None if the tasks cannot all fit.
    Task slots per node: ``task_slots``; then each task goes to the node with
    the smallest (load, index) among those with a slot left, whose load then
    grows by ``cpu`` (a heap of (load, node) pairs) -- compiled:
    ``schedlab.engines.dfrs.sim.fast.greedy_place_kernel``."""
    from schedlab.engines.dfrs.sim.fast import greedy_place_kernel

    ok, out = greedy_place_kernel(
        np.ascontiguousarray(free_mem, dtype=float),
        np.ascontiguousarray(load, dtype=float),
        int(tasks),
        float(mem),
        float(cpu),
        MEM_EPS,
    )
    return out.tolist() if ok else None


def _take(free_mem: np.ndarray, load: np.ndarray, nodes, mem: float, cpu: float, sign: float) -> None:
    idx = np.asarray(nodes, dtype=np.int64)
    np.add.at(free_mem, idx, -sign * mem)
    np.add.at(load, idx, sign * cpu)


class GreedyStar(DfrsPolicy):
    """Greedy*: Greedy on arrival, Greedy on pending jobs at completions."""

    name: ClassVar[str] = "Greedy*"
    summary: ClassVar[str] = "DFRS: Greedy on submission and opportunistically on completion"
    preempt: ClassVar[bool] = False
    migrate: ClassVar[bool] = False
    opt: ClassVar[str] = "MIN"
    period: float | None = None  # /per variants: seconds between MCB8 remaps
    #: Its ``on_completion`` is the Greedy '*' pass (so are its subclasses'):
    #: the engine's ``star_pass = "instant-end"`` option moves that pass
    #: (``schedlab.engines.dfrs.sim``), and only for policies that say so here.
    greedy_star_pass: ClassVar[bool] = True

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
        # star_pass = "vcsim": this instant's victims wait for the next instant (``_preempt``)
        for j in st.by_priority(st.pending - st.star_skip):
            nodes = self._greedy(st, j)
            if nodes is not None:
                st.apply(places={j: nodes})

    def _preempt(self, st: DfrsState, j: int) -> None:
        choose = put_back_victims if st.victims == "put-back" else prefix_victims
        chosen = choose(st, j)
        if chosen is None:
            return
        victims, nodes, free, load, back = chosen
        if st.victims_settle == "instant-end":  # settled by ``end_instant``, after this instant's other arrivals
            hold_victims(st, j, victims, nodes, back)
            return
        if not self.migrate:
            st.apply(pauses=victims, places={j: nodes})
            if st.star_pass == "vcsim":  # the authors' simulator drops its victims only after its '*' pass
                st.star_skip.update(victims)
            return
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
        if st.star_pass == "vcsim":
            st.star_skip.update(pauses)

    def end_instant(self, st: DfrsState) -> None:
        """``[system] victims_settle = "instant-end"`` (docs/dfrs.md row 8):
        at the end of the instant, before the '*' pass, the victims held in it
        (``st.held``) are settled: GreedyPM re-places them with Greedy,
        highest priority first; those it cannot place, and GreedyP's, stay
        paused (and, under ``star_pass = "vcsim"``, are left out of this
        instant's '*' pass). Called by the engine when ``st.held`` is not
        empty."""
        held = [v for v in st.by_priority(st.held) if v in st.pending]
        st.held.clear()
        for v in held:
            nodes = self._greedy(st, v) if self.migrate else None
            if nodes is not None:
                st.apply(places={v: nodes})
            elif st.star_pass == "vcsim":
                st.star_skip.add(v)


def hold_victims(st: DfrsState, j: int, victims: list[int], nodes: list[int], back: dict[int, list[int]]) -> None:
    """GreedyP / GreedyPM under ``victims_settle = "instant-end"``: the
    authors' simulator takes an arrival's victims off their nodes but
    settles them only at the end of the instant, after every arrival of that
    second (``smart_sched``: GreedyPM's migration step, then the '*' pass,
    then the pause of the rest), and a later arrival's put-back step covers
    every victim of the instant so far (``schedule_job_greedy_pmtn``). Here
    they are paused now and kept in ``st.held`` with their nodes;
    ``end_instant`` settles them. ``back``: the victims held earlier in the
    instant that this arrival puts back on their own nodes
    (``put_back_victims``)."""
    old = {v: st.nodes_of(v).tolist() for v in victims}
    st.apply(pauses=victims, places={j: nodes, **back})
    for v in back:
        del st.held[v]
    st.held.update(old)


Victims = tuple[list[int], list[int], np.ndarray, np.ndarray, dict[int, list[int]]]


def prefix_victims(st: DfrsState, j: int) -> Victims | None:
    """GreedyP's victims (module docstring; the default rule): the lowest-priority
    prefix of the running jobs of lower priority than ``j`` that makes room
    for it, or None when pausing them all would not. Returns (victims,
    j's nodes, free memory and CPU load per node with the victims off and
    j on)."""
    key_j = st.priority_key(j)
    lower = [v for v in st.by_priority(st.running) if st.priority_key(v) > key_j]
    lower.reverse()  # lowest priority first
    if not lower:
        return None
    free = st.free_mem.copy()
    load = st.load.copy()
    T, m, c = st.tasks[j], st.mem[j], st.cpu[j]
    for v in lower:
        _take(free, load, st.where[v], st.mem[v], st.cpu[v], -1.0)
    if int(task_slots(free, m).sum()) < T:
        return None  # pausing every lower-priority job would not be enough
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
    _take(free, load, nodes, m, c, 1.0)
    return victims, nodes, free, load, {}


def put_back_victims(st: DfrsState, j: int) -> Victims:
    """The authors' simulator's victims (``[system] victims = "put-back"``,
    docs/dfrs.md row 7): take the lowest-priority running job off, one at a
    time, until Greedy places ``j`` -- every running job is a candidate,
    those with zero virtual time (priority +inf, as j's) last; then, highest
    priority first, put back every victim whose own nodes still have the
    memory for its tasks (with j placed and the earlier victims put back).
    ``j`` always gets placed: every job fits the empty cluster (checked by
    ``run_table``). Returns what ``prefix_victims`` returns."""
    free = st.free_mem.copy()
    load = st.load.copy()
    T, m, c = st.tasks[j], st.mem[j], st.cpu[j]
    order = st.by_priority(st.running)  # highest priority first: the next candidate is the last
    taken: list[int] = []  # lowest priority first
    nodes = greedy_place(free, load, T, m, c)
    while nodes is None:
        v = order.pop()
        _take(free, load, st.nodes_of(v), st.mem[v], st.cpu[v], -1.0)
        taken.append(v)
        nodes = greedy_place(free, load, T, m, c)
    _take(free, load, nodes, m, c, 1.0)
    victims: list[int] = []
    back: dict[int, list[int]] = {}
    # highest priority first; the victims held earlier in this instant too (victims_settle = "instant-end")
    candidates = st.by_priority([*taken, *st.held]) if st.held else taken[::-1]
    for v in candidates:
        held = st.held.get(v)
        where = st.nodes_of(v) if held is None else np.asarray(held, dtype=np.int64)
        trial = free.copy()
        np.add.at(trial, where, -st.mem[v])  # the placement's own arithmetic and memory test (DfrsState.apply)
        if float(trial[where].min()) >= -MEM_EPS:
            free = trial
            np.add.at(load, where, st.cpu[v])
            if held is not None:
                back[v] = held
        elif held is None:
            victims.append(v)
    victims.reverse()  # lowest priority first, as prefix_victims
    return victims, nodes, free, load, back


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
    ``schedlab.engines.dfrs.policies.mcb8.mcb8``, yield precision 0.01) maps all
    running and pending jobs from scratch, with the §4.1 priorities (zero
    virtual time = +inf; MCB8 breaks priority ties by smaller job index, which
    is the submission order when the job table is sorted by submit). Then:
    running jobs MCB8 dropped are paused; running jobs it mapped are moved to
    its mapping (a job whose node multiset is unchanged is not migrated and
    pays nothing); pending jobs it mapped are placed (a paused job pays the
    penalty). MCB8's bins are first renumbered to keep as much running memory
    in place as possible (``_relabel``). MCB8's common yield is not used: the engine's OPT=MIN / OPT=AVG
    allocation runs on the new mapping.

    MINVT / MINFT (§4.3 "Limiting Migration"; parameters ``minvt`` /
    ``minft``, seconds, at most one of them, default None = no limit): a
    running job whose virtual time (MINVT) or flow time now - r_j (MINFT) is
    strictly smaller than the bound is *pinned*: it "may be paused in order to
    run higher priority jobs, but, if [it continues] running, [its] current
    node mapping must be maintained". So MCB8 runs with the pinned jobs'
    current nodes fixed (``mcb8(..., pinned=...)``): for each yield tried, the
    pinned tasks are put first on their current nodes (their memory and Y x
    need count there) and MCB8 fills the other tasks around them; a pinned job
    still takes part in MCB8's priority order and job dropping, so it can be
    dropped (paused) for higher-priority jobs, but is never migrated. The
    bin renumbering then only permutes the nodes holding no kept pinned task.
    Pending jobs (waiting or paused) have no mapping and are never pinned.
    Migrations by GreedyPM on submission are not affected (as in the paper)."""

    minvt: float | None = None  # class defaults, set by the registered .../MINVT=b and .../MINFT=b names
    minft: float | None = None

    def __init__(self, period: float = DEFAULT_PERIOD, minvt: float | None = None, minft: float | None = None) -> None:
        if isinstance(period, bool) or not isinstance(period, (int, float)) or not (0 < period < math.inf):
            raise TypeError(f"period must be a number > 0 (got {period!r})")
        self.period = float(period)
        _set_bounds(self, minvt, minft)

    def on_period(self, st: DfrsState) -> None:
        if st.mcb8_remaps == "instant-end" and isinstance(self, MCB8Star):
            st.remap_due = True  # MCB8*'s one remap of the instant (MCB8Star.end_instant)
            return
        mcb8_remap(st, self.minvt, self.minft)


def _set_bounds(pol, minvt, minft) -> None:
    minvt = type(pol).minvt if minvt is None else minvt
    minft = type(pol).minft if minft is None else minft
    for label, b in (("minvt", minvt), ("minft", minft)):
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or not (0 <= b < math.inf)):
            raise TypeError(f"{label} must be a number >= 0 or None (got {b!r})")
    if minvt is not None and minft is not None:
        raise TypeError("set at most one of minvt and minft")
    pol.minvt = None if minvt is None else float(minvt)
    pol.minft = None if minft is None else float(minft)


def _pinned(st: DfrsState, minvt: float | None, minft: float | None) -> dict[int, list[int]]:
    if minvt is not None:
        young = [j for j in st.running if st.below_minvt(j, minvt)]
    elif minft is not None:
        young = [j for j in st.running if st.now - st.release[j] < minft]
    else:
        return {}
    return {j: st.nodes_of(j).tolist() for j in sorted(young)}


def mcb8_remap(st: DfrsState, minvt: float | None = None, minft: float | None = None) -> None:
    """One MCB8 remapping of all running and pending jobs (see ``PeriodicMCB8``),
    with the running jobs below the MINVT / MINFT bound pinned.

    Two engine options change it (docs/dfrs.md, measured against the authors'
    simulator by ``benchmarks/vcsim_compare.py``): ``state.mcb8_rules ==
    "vcsim"`` packs with that simulator's rules (``mcb8_vcsim``: integer
    percent, ties to the later job, bisection midpoints) instead of
    ``mcb8.mcb8``; ``state.relabel == "none"`` keeps MCB8's node numbers as
    they come (that simulator renumbers nothing, so a remap migrates most
    running jobs) instead of ``_relabel``'s memory-keeping permutation."""
    from schedlab.engines.dfrs.policies.mcb8 import mcb8
    from schedlab.engines.dfrs.policies.mcb8_vcsim import mcb8_vcsim

    jobs = sorted(st.running | st.pending)
    if not jobs:
        return
    pinned = _pinned(st, minvt, minft)
    table = [(j, st.tasks[j], st.cpu[j], st.mem[j], st.priority(j)) for j in jobs]
    res = (
        mcb8_vcsim(table, st.nodes, pinned=pinned) if st.mcb8_rules == "vcsim" else mcb8(table, st.nodes, pinned=pinned)
    )
    if st.relabel == "none":
        mapping = res.mapping
    else:
        fixed = {k for j in pinned if j in res.mapping for k in res.mapping[j]}
        relabel = _relabel(st, res.mapping, fixed).tolist()  # Python ints: cheaper to index and to convert back
        mapping = {j: [relabel[b] for b in bins] for j, bins in res.mapping.items()}
    pauses = [j for j in res.dropped if st.status[j] == RUNNING]
    moves = {j: nodes for j, nodes in mapping.items() if st.status[j] == RUNNING}
    places = {j: nodes for j, nodes in mapping.items() if st.status[j] != RUNNING}
    st.apply(pauses=pauses, moves=moves, places=places)


class MCB8Star(DfrsPolicy):
    """MCB8*: at every submission and at every completion instant, MCB8
    remaps all running and pending jobs (``mcb8_remap``: exactly the
    remapping of /per, with the same MINVT / MINFT pinning; parameters
    ``minvt`` / ``minft``)."""

    name: ClassVar[str] = "MCB8*"
    summary: ClassVar[str] = "DFRS: MCB8 remapping of all jobs on submission and on completion"
    opt: ClassVar[str] = "MIN"
    period: float | None = None
    minvt: float | None = None
    minft: float | None = None

    def __init__(self, minvt: float | None = None, minft: float | None = None) -> None:
        _set_bounds(self, minvt, minft)

    def on_arrival(self, st: DfrsState, j: int) -> None:
        self._remap(st)

    def on_completion(self, st: DfrsState) -> None:
        self._remap(st)

    def _remap(self, st: DfrsState) -> None:
        if st.mcb8_remaps == "instant-end":
            st.remap_due = True
        else:
            mcb8_remap(st, self.minvt, self.minft)

    def end_instant(self, st: DfrsState) -> None:
        """``[system] mcb8_remaps = "instant-end"`` (docs/dfrs.md row 4): the
        authors' simulator runs one MCB8 remap at the end of an instant
        (``mcb8_sched``: after all its completions, submissions and periodic
        event), where this policy asked for one; by default it remaps at each
        arrival, at the completions and at the periodic instant. Called by
        the engine when ``st.remap_due`` is set."""
        st.remap_due = False
        mcb8_remap(st, self.minvt, self.minft)


def _relabel(st: DfrsState, mapping: dict[int, list[int]], fixed: AbstractSet[int] = frozenset()) -> np.ndarray:
    """Nodes are identical, so any permutation of MCB8's bins is an equally
    valid mapping: bin b goes to node relabel[b], the permutation maximising
    the memory that stays in place, sum over running jobs of
    m_j x min(tasks of j in bin b, tasks of j on node relabel[b])
    (``scipy.optimize.linear_sum_assignment``). Without it MCB8, which fills
    node 0 first, would migrate jobs merely because of node numbering.
    Bins in ``fixed`` (holding pinned tasks, MINVT / MINFT) are real nodes and
    stay where they are; the others are permuted among themselves."""
    from scipy.optimize import linear_sum_assignment

    relabel = np.arange(st.nodes, dtype=np.int64)
    keep = np.ones(st.nodes, dtype=bool)
    keep[list(fixed)] = False
    free = np.flatnonzero(keep)  # the nodes not in ``fixed``, ascending
    if len(free) < 2:
        return relabel
    pos = np.full(st.nodes, -1, dtype=np.int64)
    pos[free] = np.arange(len(free))
    # W[pos[b], pos[k]] += m_j x min(tasks of j in bin b, tasks of j on node k) over the running jobs in
    # mapping order: compiled (mcb8_fast.relabel_weights), the same sums in the same order.
    from schedlab.engines.dfrs.policies.mcb8_fast import relabel_weights

    run = [j for j in mapping if st.status[j] == RUNNING]
    new_ptr = np.zeros(len(run) + 1, dtype=np.int64)
    old_ptr = np.zeros(len(run) + 1, dtype=np.int64)
    new_bins: list[int] = []
    old_nodes: list[np.ndarray] = []
    for r, j in enumerate(run):
        new_bins.extend(mapping[j])
        new_ptr[r + 1] = len(new_bins)
        old_nodes.append(st.nodes_of(j))
        old_ptr[r + 1] = old_ptr[r] + len(old_nodes[-1])
    W = relabel_weights(
        pos,
        len(free),
        np.asarray([st.mem[j] for j in run], dtype=float),
        new_ptr,
        np.asarray(new_bins, dtype=np.int64),
        old_ptr,
        np.concatenate(old_nodes).astype(np.int64) if old_nodes else np.zeros(0, dtype=np.int64),
    )
    rows, cols = linear_sum_assignment(W, maximize=True)
    relabel[free[rows]] = free[cols]
    return relabel


def _with_per(base: type[DfrsPolicy]) -> type[DfrsPolicy]:
    name = f"{base.name}/per"
    return type(
        name,
        (PeriodicMCB8, base),
        {
            "name": name,
            "summary": f"{base.summary}; MCB8 remapping every period (default 600 s)",
            "__doc__": f"{base.__doc__} Periodic MCB8 remapping (/per).",
            "__module__": __name__,
        },
    )


def _with_opt(base: type[DfrsPolicy], opt: str) -> type[DfrsPolicy]:
    name = f"{base.name}/OPT={opt}"
    what = "max-min yields (iterative)" if opt == "MIN" else "max average yield (LP) above the max-min floor"
    cls = type(
        name,
        (base,),
        {
            "name": name,
            "opt": opt,
            "summary": f"{base.summary}; {what}",
            "__doc__": f"{base.__doc__} Resource allocation OPT={opt}.",
            "__module__": __name__,
        },
    )
    return cls


_BASES = (GreedyStar, GreedyPStar, GreedyPMStar)
GREEDY_POLICIES: dict[str, type[DfrsPolicy]] = {
    c.name: c for base in _BASES for c in (_with_opt(base, "MIN"), _with_opt(base, "AVG"))
}
GREEDY_PER_POLICIES: dict[str, type[DfrsPolicy]] = {
    c.name: c for base in _BASES for c in (_with_opt(_with_per(base), "MIN"), _with_opt(_with_per(base), "AVG"))
}
MIN_BOUNDS = (300.0, 600.0)  # the bounds of the paper's experiments (§5.1)


def _with_limit(base: type[DfrsPolicy], kind: str, bound: float) -> type[DfrsPolicy]:
    name = f"{base.name}/{kind}={bound:g}"
    what = "virtual" if kind == "MINVT" else "flow"
    return type(
        name,
        (base,),
        {
            "name": name,
            kind.lower(): float(bound),
            "__module__": __name__,
            "summary": f"{base.summary}; the periodic remap keeps running jobs with {what} time < {bound:g} s in place",
            "__doc__": f"{base.__doc__} {kind}={bound:g}: running jobs with {what} time < {bound:g} s may be "
            "paused by the periodic MCB8 but not migrated.",
        },
    )


# GreedyPM*/per/OPT=MIN/MINVT=600 etc.: /per families x OPT=MIN/AVG x MINVT/MINFT x 300/600
GREEDY_PER_LIMIT_POLICIES: dict[str, type[DfrsPolicy]] = {
    c.name: c
    for per in GREEDY_PER_POLICIES.values()
    for kind in ("MINVT", "MINFT")
    for b in MIN_BOUNDS
    for c in (_with_limit(per, kind, b),)
}


def _without_star(base: type[DfrsPolicy], name: str, on_arrival: bool = True) -> type[DfrsPolicy]:
    """The form without the opportunistic '*' (§4.5): nothing is done on a
    completion (and, for the bare /per algorithm, nothing on a submission
    either); waiting and paused jobs are placed by the next periodic MCB8
    remap, which is why these forms exist only with /per."""
    attrs = {
        "name": name,
        "on_completion": lambda self, st: None,
        "__module__": __name__,
        "summary": base.summary.replace(" and opportunistically on completion", "")
        .replace(" and on completion", "")
        .replace(", Greedy on completion", ""),
        "__doc__": f"{base.__doc__} Without '*': nothing happens on a completion.",
    }
    if not on_arrival:
        attrs["on_arrival"] = lambda self, st, j: None
        attrs["summary"] = "DFRS: nothing on submission or completion, jobs placed only by the periodic remap"
        attrs["__doc__"] = "No scheduling on submission or completion, only the periodic remap (/per: MCB8)."
    return type(name or "PerOnly", (base,), attrs)


# The 13 basic algorithms of §4.5 include the /per forms without '*':
# Greedy/per, GreedyP/per, GreedyPM/per, MCB8/per and /per alone; each OPT=MIN/AVG, with MINVT / MINFT limits.
_NO_STAR_PER = [
    _with_per(_without_star(b, b.name.rstrip("*"))) for b in (GreedyStar, GreedyPStar, GreedyPMStar, MCB8Star)
]
#: The base of the algorithms that act only periodically (name ""): /per here, /stretch-per in ``stretch``.
PER_ONLY = _without_star(GreedyStar, "", on_arrival=False)
_NO_STAR_PER.append(_with_per(PER_ONLY))
_NO_STAR_BASES = [c for base in _NO_STAR_PER for c in (_with_opt(base, "MIN"), _with_opt(base, "AVG"))]
NO_STAR_PER_POLICIES: dict[str, type] = {c.name: c for c in _NO_STAR_BASES}
NO_STAR_PER_POLICIES.update(
    {
        c.name: c
        for base in _NO_STAR_BASES
        for kind in ("MINVT", "MINFT")
        for b in MIN_BOUNDS
        for c in (_with_limit(base, kind, b),)
    }
)

# MCB8 on submission (§4.4, §4.5): MCB8*, MCB8*/per, each OPT=MIN/AVG, and with MINVT / MINFT = 300 / 600
_MCB8_BASES = [c for base in (MCB8Star, _with_per(MCB8Star)) for c in (_with_opt(base, "MIN"), _with_opt(base, "AVG"))]
MCB8_POLICIES: dict[str, type] = {c.name: c for c in _MCB8_BASES}
MCB8_POLICIES.update(
    {
        c.name: c
        for base in _MCB8_BASES
        for kind in ("MINVT", "MINFT")
        for b in MIN_BOUNDS
        for c in (_with_limit(base, kind, b),)
    }
)

__all__ = [
    "DEFAULT_PERIOD",
    "MCB8_POLICIES",
    "NO_STAR_PER_POLICIES",
    "PER_ONLY",
    "MCB8Star",
    "mcb8_remap",
    "GREEDY_PER_LIMIT_POLICIES",
    "GREEDY_PER_POLICIES",
    "MIN_BOUNDS",
    "GREEDY_POLICIES",
    "PeriodicMCB8",
    "GreedyPMStar",
    "GreedyPStar",
    "GreedyStar",
    "greedy_place",
]
