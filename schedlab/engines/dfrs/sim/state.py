"""The DFRS engine's state: the mapping of tasks to nodes and its
bookkeeping (free memory and CPU load per node, virtual times, penalties,
pause and migration counts), the job statuses, the engine's errors and the
``check=True`` invariants. Split from the event loop because it is the
handle a mapping policy acts on (``schedlab.engines.dfrs.policies``): policies import
it, the loop only drives it."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from schedlab.errors import PolicyError

DEFAULT_PENALTY = 300.0
MEM_EPS = 1e-9  # memory tolerance (node-memory units)
CPU_CHECK_TOL = 1e-6  # tolerance of the check flag on node CPU and yields
PRIORITY_MS_EPS = 1e-6  # ms: a virtual time this close below a whole millisecond counts as on it (float residue)

# job status
FUTURE, WAITING, RUNNING, PAUSED, DONE = 0, 1, 2, 3, 4


def tasks_per_node(memory: np.ndarray) -> np.ndarray:
    """Tasks of memory ``memory`` (fraction of a node) that fit one node: a
    job of p tasks fits the empty cluster iff p <= nodes x this (the oversize
    rule of ``table.run_table``; also checked at plan time, schedlab.sim.system)."""
    return np.floor((1.0 + MEM_EPS) / np.asarray(memory, dtype=float)).astype(np.int64)


class DfrsCapacityError(PolicyError):
    """A placement would exceed a node's memory (a policy bug)."""


class DfrsCheckError(RuntimeError):
    """An invariant checked with ``check=True`` failed."""


def task_slots(free_mem: np.ndarray, m: float) -> np.ndarray:
    """How many more tasks of memory ``m`` each node can hold."""
    return np.floor((free_mem + MEM_EPS) / m).astype(np.int64)


def _concat(arrays: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The int64 node arrays end to end, and row r's bounds ``ptr[r]:ptr[r + 1]``."""
    ptr = np.zeros(len(arrays) + 1, dtype=np.int64)
    if not arrays:
        return np.zeros(0, dtype=np.int64), ptr
    np.cumsum([len(a) for a in arrays], out=ptr[1:])
    return np.concatenate(arrays).astype(np.int64, copy=False), ptr


class DfrsState:
    """The handle a mapping policy acts on. Read: ``free_mem``, ``load``
    (numpy, per node; do not modify), ``where[j]`` (node array of a placed
    job, else None), ``status``, ``tasks``, ``cpu``, ``mem`` (lists),
    ``running`` / ``pending`` (sets: placed jobs / waiting-or-paused jobs),
    ``now``. Act: :meth:`apply` (the only way to change the mapping)."""

    def __init__(
        self,
        nodes: int,
        release: Iterable[float],
        processing: ArrayLike,
        tasks: Iterable[int],
        cpu: Iterable[float],
        mem: Iterable[float],
        penalty: float,
    ) -> None:
        self.nodes = int(nodes)
        self.release = [float(x) for x in release]
        self.processing = np.asarray(processing, dtype=float)
        self.tasks = [int(x) for x in tasks]
        self.cpu = [float(x) for x in cpu]
        self.cpu_arr = np.asarray(self.cpu, dtype=float)  # the same needs as an array (compiled helpers)
        self.mem = [float(x) for x in mem]
        self.penalty = float(penalty)
        n = len(self.tasks)
        self.n = n
        self.free_mem = np.ones(self.nodes)
        self.load = np.zeros(self.nodes)
        self.where: list[np.ndarray | None] = [None] * n
        self.status = [FUTURE] * n
        self.vt = np.zeros(n)
        self.pen_until = np.full(n, -math.inf)
        self.y = np.zeros(n)
        self.now = 0.0
        self.running: set[int] = set()
        self.pending: set[int] = set()
        self.start = np.full(n, math.nan)
        self.end = np.full(n, math.nan)
        self.pauses = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.migrated_tasks = np.zeros(n, dtype=np.int64)
        self.mem_moved = np.zeros(n)
        self.dirty = False
        # GreedyP / GreedyPM's victim rule, an engine option ("prefix" or "put-back"; policies.greedy)
        self.victims = "prefix"
        self.mcb8_rules = "schedlab"  # the MCB8 remap's rules ([system] mcb8_rules)
        self.relabel = "memory"  # the MCB8 remap's node renumbering ([system] relabel)
        self.cpu_units = "real"  # the allocation's units ([system] cpu_units; allocation.percent_yields)
        # Penalties by each change (default) or by the net change of an instant ([system] penalties;
        # settle_instant): under "instant-net", each job's state before its first change of the instant.
        # The '*' pass's rule ([system] star_pass) and, under "vcsim", the jobs paused as victims in this
        # instant, which the pass leaves for the next instant (policies.greedy; cleared by the engine).
        self.star_pass = "completion"
        self.star_skip: set[int] = set()
        # [system] victims_settle: GreedyP / GreedyPM's victims settled at each arrival (default) or at the
        # instant's end; then the victims held in this instant, with their nodes (schedlab.engines.dfrs.policies.greedy)
        self.victims_settle = "arrival"
        self.held: dict[int, list[int]] = {}
        # [system] mcb8_remaps: MCB8*'s remap at each event (default) or once at the instant's end, when due
        self.mcb8_remaps = "each-event"
        self.remap_due = False
        self.penalties = "each-change"
        self.priority_units = "real"  # [system] priority_units: floats (default) or vcsim's whole milliseconds
        self.minvt_units = "real"  # [system] minvt_units: MINVT's test in floats (default) or whole milliseconds
        self._before: dict[int, tuple[Any, ...]] = {}

    # -- priority ------------------------------------------------------------
    def priority(self, j: int) -> float:
        """Flow time / virtual time^2; infinite for a job with zero virtual
        time or one so small that its square underflows (the limit as the
        virtual time goes to 0+). Under ``priority_units == "ms"``: minus
        :meth:`_vcsim_value` (higher = more important in both)."""
        if self.priority_units == "ms":
            return -float(self._vcsim_value(j))
        v = float(self.vt[j])
        v2 = v * v
        if v2 <= 0.0:
            return math.inf
        return (self.now - self.release[j]) / v2

    def priority_key(self, j: int) -> tuple[int, float, float, int]:
        """Sort key, highest priority first; ties by submission (release, job).
        Every infinite priority (see :meth:`priority`) ranks first."""
        if self.priority_units == "ms":
            return (0, float(self._vcsim_value(j)), self.release[j], j)
        v = float(self.vt[j])
        v2 = v * v
        if v2 > 0.0:
            p = (self.now - self.release[j]) / v2
            if p < math.inf:
                return (1, -p, self.release[j], j)
        return (0, 0.0, self.release[j], j)

    def _vcsim_value(self, j: int) -> int:
        """``[system] priority_units = "ms"`` (docs/dfrs.md row 6): the
        authors' simulator ranks jobs by vt^2 / ft in whole milliseconds with
        integer division, the *smallest* value first (0 for a job with no
        virtual time or no flow time), ties by job id -- the paper's order,
        but near-ties that floats would separate are equal there and go to the
        earlier job. Virtual time is truncated to whole milliseconds here
        (that simulator truncates it at each allocation change, so the two
        can differ by a few ms)."""
        vt_ms = self._vt_ms(j)
        ft_ms = round((self.now - self.release[j]) * 1000.0)
        return (vt_ms * vt_ms) // ft_ms if ft_ms > 0 else 0

    def _vt_ms(self, j: int) -> int:
        """Job ``j``'s virtual time in whole milliseconds, as the authors'
        simulator keeps it (truncated; a float residue within
        ``PRIORITY_MS_EPS`` below a whole millisecond counts as on it)."""
        return math.floor(float(self.vt[j]) * 1000.0 + PRIORITY_MS_EPS)

    def below_minvt(self, j: int, bound: float) -> bool:
        """MINVT's test (§4.3): is job ``j``'s virtual time strictly below
        ``bound`` seconds? In floats by default; under ``minvt_units == "ms"``
        (docs/dfrs.md, "The /per difference") in whole milliseconds as the
        authors' simulator compares them (``vtmsecs() < 1000 * minvt``): a
        virtual time summed in floats to a residue below the bound (e.g.
        599.9999999999999 s for 480 s + 600 s x 0.2) is the bound there, so
        the job is not pinned but repacked."""
        if self.minvt_units == "ms":
            return self._vt_ms(j) < round(bound * 1000.0)
        return float(self.vt[j]) < bound

    def by_priority(self, jobs: Iterable[int]) -> list[int]:
        return sorted(jobs, key=self.priority_key)

    def nodes_of(self, j: int) -> np.ndarray:
        """The node of each task of job ``j``, which must be placed (running)."""
        nodes = self.where[j]
        if nodes is None:
            raise ValueError(f"job {j} is not placed")
        return nodes

    # -- mapping changes -----------------------------------------------------
    # _release: np.add.at's sequential sums, compiled (schedlab.engines.dfrs.sim.fast, imported lazily)
    def _release(self, j: int) -> None:
        from schedlab.engines.dfrs.sim.fast import release_kernel

        release_kernel(self.free_mem, self.load, self.nodes_of(j), self.mem[j], self.cpu[j])
        self.where[j] = None

    def apply(
        self,
        *,
        pauses: Iterable[int] = (),
        moves: Mapping[int, ArrayLike] | None = None,
        places: Mapping[int, ArrayLike] | None = None,
    ) -> None:
        """Change the mapping atomically: first pause ``pauses`` (running jobs)
        and take the running jobs of ``moves`` ({job: nodes}) off their nodes,
        then place ``places`` ({job: nodes}; waiting or paused jobs) and put
        the moved jobs on their new nodes, in dict order. A move to the same
        multiset of nodes is no migration (no penalty, nothing counted).
        Under ``penalties == "instant-net"`` each job's state before its
        first change of the instant is kept for :meth:`settle_instant`.

        The node arithmetic runs in three compiled calls for the whole change
        (``schedlab.engines.dfrs.sim.state_fast``: the per-job kernels' additions in
        the same order, so the same bits); the bookkeeping stays here. A
        policy error raises before the arithmetic it concerns (the state is
        then unusable either way)."""
        from schedlab.engines.dfrs.sim.state_fast import acquire_rows, moved_rows, release_rows

        moves = moves or {}
        places = places or {}
        pauses = list(pauses)
        off: set[int] = set()  # jobs taken off so far (a second pause or move of one is a policy error)
        for kind, jobs in (("pause", pauses), ("move", moves)):
            for j in jobs:
                if self.status[j] != RUNNING or j in off:
                    raise DfrsCapacityError(f"t={self.now}: {kind} of job {j}, which is not running")
                off.add(j)
        if self.penalties == "instant-net":
            for j in (*pauses, *moves, *places):
                if j not in self._before:
                    where = self.where[j]
                    self._before[j] = (
                        None if where is None else np.sort(where),
                        self.status[j],
                        self.pen_until[j],
                        self.pauses[j],
                        self.migrations[j],
                        self.migrated_tasks[j],
                        self.mem_moved[j],
                    )
        old = [self.nodes_of(j) for j in moves]
        if off:
            self._rows(release_rows, pauses + list(moves), [self.nodes_of(j) for j in pauses] + old)
        for j in pauses:
            self.where[j] = None
            self.status[j] = PAUSED
            self.running.discard(j)
            self.pending.add(j)
            self.pauses[j] += 1
            self.mem_moved[j] += self.mem[j] * self.tasks[j]
            self.y[j] = 0.0
        for j in moves:
            self.where[j] = None
        for j in places:
            if self.status[j] not in (WAITING, PAUSED):
                raise DfrsCapacityError(f"t={self.now}: placement of job {j}, which is neither waiting nor paused")
        new = self._acquire_all(acquire_rows, [*places.items(), *moves.items()])
        for j in places:
            if self.status[j] == PAUSED:
                self.pen_until[j] = self.now + self.penalty
            else:
                self.start[j] = self.now
            self.status[j] = RUNNING
            self.pending.discard(j)
            self.running.add(j)
        if moves:
            flat_old, old_ptr = _concat(old)
            flat_new, new_ptr = new
            moved = moved_rows(flat_old, old_ptr, flat_new, new_ptr[len(places) :], self.nodes).tolist()
            for j, k in zip(moves, moved):
                if k:
                    self.migrations[j] += 1
                    self.migrated_tasks[j] += k
                    self.mem_moved[j] += self.mem[j] * k
                    self.pen_until[j] = self.now + self.penalty
        if pauses or moves or places:
            self.dirty = True

    def settle_instant(self) -> None:
        """``[system] penalties = "instant-net"`` (docs/dfrs.md row 21): charge
        the penalties of this instant by its *net* change, as the authors'
        simulator does (it applies an instant's decisions at its end and keeps
        an allocation that is "logically the same"; a zero-length one it
        discards). A job running at the end of the instant on the same node
        multiset it ran on at its start -- e.g. paused by the periodic remap
        and placed back where it was by the '*' pass -- or first started in
        this instant pays no new penalty and counts no pause or migration for
        it: its penalty end and counters are those before the instant. Called
        by the engine once per instant, before the allocation."""
        for j, (nodes, status, pen, pauses, migrations, tasks_moved, mem_moved) in self._before.items():
            if self.status[j] != RUNNING:
                continue
            fresh = status in (WAITING, FUTURE)
            same = status == RUNNING and nodes is not None and np.array_equal(nodes, np.sort(self.nodes_of(j)))
            if fresh or same:
                self.pen_until[j] = pen
                self.pauses[j], self.migrations[j] = pauses, migrations
                self.migrated_tasks[j], self.mem_moved[j] = tasks_moved, mem_moved
        self._before.clear()

    def _rows(self, kernel: Callable[..., None], jobs: list[int], nodes: list[np.ndarray]) -> None:
        flat, ptr = _concat(nodes)
        kernel(self.free_mem, self.load, flat, ptr, *self._mem_cpu(jobs))

    def _mem_cpu(self, jobs: list[int]) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.asarray([self.mem[j] for j in jobs], dtype=float),
            np.asarray([self.cpu[j] for j in jobs], dtype=float),
        )

    def _acquire_all(
        self, kernel: Callable[..., tuple[int, int]], items: list[tuple[int, ArrayLike]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Put each (job, nodes) on its nodes, in order, in one compiled call
        (``kernel``: ``state_fast.acquire_rows``); the first offending job
        raises: a wrong task count, a node outside the cluster, or an
        overfilled node's memory. Returns the new nodes, concatenated, and
        their row pointers."""
        flat, ptr = _concat([np.asarray(nodes, dtype=np.int64) for _, nodes in items])
        jobs = [j for j, _ in items]
        bad = next((r for r, j in enumerate(jobs) if ptr[r + 1] - ptr[r] != self.tasks[j]), len(jobs))
        r, k = kernel(self.free_mem, self.load, flat, ptr[: bad + 1], *self._mem_cpu(jobs[:bad]), self.nodes, MEM_EPS)
        if r == -1 and bad < len(jobs):
            j = jobs[bad]
            raise DfrsCapacityError(
                f"t={self.now}: job {j} has {self.tasks[j]} tasks, placement has {ptr[bad + 1] - ptr[bad]}"
            )
        if r >= 0:
            j = jobs[r]
            if k == -2:
                raise DfrsCapacityError(f"t={self.now}: job {j} placed on a node outside 0..{self.nodes - 1}")
            raise DfrsCapacityError(
                f"t={self.now}: placing job {j} overfills the memory of node {k} ({1.0 - self.free_mem[k]:.6g} > 1)"
            )
        for r, j in enumerate(jobs):
            self.where[j] = flat[ptr[r] : ptr[r + 1]]
        return flat, ptr

    def _finish(self, j: int) -> None:
        self._release(j)
        self.status[j] = DONE
        self.running.discard(j)
        self.y[j] = 0.0
        self.end[j] = self.now
        self.dirty = True


def check_state(state: DfrsState) -> None:
    """Invariants (``check=True``): memory <= 1 per node, yields in [0, 1],
    CPU allocated per node <= 1, only running jobs are placed."""
    mem = np.zeros(state.nodes)
    cpu = np.zeros(state.nodes)
    load = np.zeros(state.nodes)
    for j in range(state.n):
        w = state.where[j]
        if state.status[j] == RUNNING:
            if w is None:
                raise DfrsCheckError(f"t={state.now}: running job {j} has no placement")
            np.add.at(mem, w, state.mem[j])
            np.add.at(load, w, state.cpu[j])
            np.add.at(cpu, w, state.cpu[j] * state.y[j])
        elif w is not None:
            raise DfrsCheckError(f"t={state.now}: job {j} (status {state.status[j]}) holds nodes")
        elif state.y[j] != 0.0:
            raise DfrsCheckError(f"t={state.now}: job {j} is not placed but has yield {state.y[j]}")
    if mem.max(initial=0.0) > 1.0 + MEM_EPS * 10:
        raise DfrsCheckError(f"t={state.now}: node {int(mem.argmax())} memory {mem.max()} > 1")
    if (
        np.abs(mem - (1.0 - state.free_mem)).max(initial=0.0) > 1e-7
        or np.abs(load - state.load).max(initial=0.0) > 1e-7
    ):
        raise DfrsCheckError(f"t={state.now}: node bookkeeping drifted")
    if state.y.min() < -CPU_CHECK_TOL or state.y.max() > 1.0 + CPU_CHECK_TOL:
        raise DfrsCheckError(f"t={state.now}: yield outside [0, 1]")
    if cpu.max(initial=0.0) > 1.0 + CPU_CHECK_TOL:
        raise DfrsCheckError(f"t={state.now}: node {int(cpu.argmax())} CPU allocated {cpu.max()} > 1")
