"""Local backends (`backends`): tasks in the driver's own process, or in a pool
of local processes; no Ray.

Both run `run_task`, which is `tasks.run_instances` with the task's shared
input (a parsed trace) loaded once per process, exactly as a Ray worker runs
it: the same rows, bit for bit. User code is imported and its digest checked
by `usercode.worker_load` in whichever process runs the task (from the
driver's paths: one host).

`Pool` keeps its processes for the life of the driver's process (`_POOLS`),
so a second sweep in one Python session (``schedlab.run`` twice in a
notebook) finds them warm: imports done and kernels loaded. Its processes
come from a forkserver (spawn where there is none: never a fork of a driver
with threads), ignore SIGINT (Ctrl-C is the driver's to handle: it commits
what arrived and stops them), and exit when their parent is gone. A worker
that dies breaks a `concurrent.futures` pool: its tasks in flight are
resubmitted to a new pool up to ``retries`` times, then become failure
records, as Ray does with a dead worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections import OrderedDict, deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from schedlab.platform.children import become_child, main_not_reimported, start_method
from schedlab.platform.execution.executor import Executor, Finished, Lost, Task, TaskCall
from schedlab.platform.execution.interrupts import noticed

if TYPE_CHECKING:
    from schedlab.platform.execution.tasks import TaskResult
    from schedlab.platform.planning.plan import Config, Instance

#: Shared inputs (parsed traces) a process keeps loaded, by `plan.shared_input_key`.
CACHED_SHARED = 2
_SHARED: OrderedDict[str, Any] = OrderedDict()
#: Tasks run in this process so far (the first pays one-off imports: `InProcess.cold`).
_TASKS_RUN = [0]


def run_task(call: TaskCall, work: list[tuple[Instance, list[Config]]]) -> TaskResult:
    """One task, in this process: `tasks.run_instances` on ``work`` with its
    shared input (loaded once per process; a task never mixes two)."""
    from schedlab.platform.execution.tasks import run_instances

    _TASKS_RUN[0] += 1
    return run_instances(
        call.engine,
        work,
        _shared_input(work[0][0]) if work else None,
        call.per_job,
        call.metrics,
        engine_path=call.engine_path,
        encode=True,
        sim_budget_seconds=call.sim_budget_seconds,
    )


def _shared_input(instance: Instance) -> Any:
    from schedlab.platform.planning.plan import shared_input_key
    from schedlab.workloads.registry import workload_kind

    key = shared_input_key(instance.point)
    if key is None:
        return None
    if key not in _SHARED:
        kind = workload_kind(instance.point.kind)
        if kind.load_shared is None:  # invariant: shared_input_key gives a key only to kinds with load_shared
            raise RuntimeError(f"workload kind {kind.name!r} has no shared input")
        _SHARED[key] = kind.load_shared(instance.point.params)
    _SHARED.move_to_end(key)
    while len(_SHARED) > CACHED_SHARED:
        _SHARED.popitem(last=False)
    return _SHARED[key]


class InProcess(Executor):
    """Tasks run one at a time in the driver's process, inside `wait`
    (Ctrl-C interrupts the task running; the runner commits what arrived; a
    KeyboardInterrupt the task swallowed is raised again: `interrupts.noticed`).
    ``cold``: the task `wait` last ran was this process's first (its time
    includes one-off imports: not a measure of the work)."""

    name = "in-process"

    def __init__(self, call: TaskCall) -> None:
        self.call = call
        self.queue: deque[Task] = deque()
        self.cold = False

    def slots(self) -> float:
        return 1.0

    def max_in_flight(self) -> int:
        return 1

    @property
    def in_flight(self) -> int:
        return len(self.queue)

    def submit(self, task: Task) -> None:
        self.queue.append(task)

    def wait(self, timeout: float) -> list[Finished]:
        if not self.queue:
            return []
        task = self.queue.popleft()
        self.cold = _TASKS_RUN[0] == 0
        with noticed() as stopped:
            try:
                result: TaskResult | Lost = run_task(self.call, task.work)
            except Exception as err:  # noqa: BLE001 - a task that cannot finish becomes failure records, as on Ray
                result = Lost(f"task failed: {type(err).__name__}: {err}")
        if stopped:  # a Ctrl-C (or SIGTERM handled as one) the task swallowed: the user's all the same
            raise KeyboardInterrupt
        return [(task, result)]

    def cancel(self) -> None:
        self.queue.clear()


# ---- the pool -------------------------------------------------------------------------------

#: (processes, start method) -> a pool kept for the life of this process (a warm session).
_POOLS: dict[tuple[int, str], ProcessPoolExecutor] = {}


def pool_is_warm(processes: int) -> bool:
    """A pool of ``processes`` kept from an earlier sweep of this process (its processes started)."""
    pool = _POOLS.get((processes, start_method()))
    return pool is not None and bool(getattr(pool, "_processes", None))


def _pool(processes: int) -> ProcessPoolExecutor:
    key = (processes, start_method())
    pool = _POOLS.get(key)
    if pool is None:
        context = multiprocessing.get_context(key[1])
        if key[1] == "forkserver":  # workers forked with the task function's modules already imported
            context.set_forkserver_preload(["schedlab.platform.execution.local_backend", "schedlab.engines"])
        pool = _POOLS[key] = ProcessPoolExecutor(processes, mp_context=context, initializer=become_child)
        _started(pool, processes)
    return pool


def _ready() -> int:
    """A pool process's first task: it has started (see `_started`)."""
    time.sleep(READY_SECONDS)
    return os.getpid()


def _started(pool: ProcessPoolExecutor, processes: int) -> None:
    """Start every process of a new pool now and wait until each has booted.
    concurrent.futures starts them on demand, one per submission while none is
    idle; a process still booting when the driver leaves (a Ctrl-C just after
    the first tasks) would find the pool's queues and locks gone and print a
    traceback over the driver's one line. ``processes`` tasks that each hold
    their process ``READY_SECONDS`` make the pool start all of them."""
    with main_not_reimported():
        futures = [pool.submit(_ready) for _ in range(processes)]
    for future in futures:
        future.result()


#: How long each process of a new pool holds its first task (`_started`): long enough that every
#: one of the pool's first tasks lands on a process of its own.
READY_SECONDS = 0.2
#: How long `_drop` waits for each killed worker to be gone before it shuts the pool down.
KILL_JOIN_SECONDS = 2.0


def _drop(pool: ProcessPoolExecutor, kill: bool) -> None:
    """Forget ``pool`` (a broken one, or one whose tasks a Ctrl-C abandoned),
    its processes killed when ``kill``."""
    for key, known in list(_POOLS.items()):
        if known is pool:
            del _POOLS[key]
    processes = dict(getattr(pool, "_processes", None) or {})  # concurrent.futures keeps them there
    if kill:  # before the shutdown: a worker still starting must not outlive the queues and locks it unpickles
        for proc in processes.values():
            with contextlib.suppress(OSError, ValueError, AttributeError):
                proc.kill()
        for proc in processes.values():
            with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
                proc.join(KILL_JOIN_SECONDS)
    # Not cancel_futures: Python 3.11's pool thread then sets BrokenProcessPool on the futures it finds
    # pending, and one already cancelled makes it raise InvalidStateError (a traceback on stderr).
    pool.shutdown(wait=False)


class Pool(Executor):
    """Tasks in a pool of ``processes`` local processes (see the module docstring)."""

    def __init__(self, call: TaskCall, processes: int, retries: int, max_in_flight: int | None = None) -> None:
        started = time.perf_counter()
        self.call, self.processes, self.retries, self.limit = call, processes, retries, max_in_flight
        self.name = f"in a local pool of {processes} processes"
        self.pool = _pool(processes)
        #: future -> (task, retries so far, the pool it went to)
        self.futures: dict[Future[TaskResult], tuple[Task, int, ProcessPoolExecutor]] = {}
        self.start_seconds = time.perf_counter() - started

    def slots(self) -> float:
        return float(self.processes)

    def max_in_flight(self) -> int:
        return self.limit or 2 * self.processes

    @property
    def in_flight(self) -> int:
        return len(self.futures)

    def submit(self, task: Task, attempt: int = 0) -> None:
        with main_not_reimported():  # the pool starts its processes on demand, here
            future = self.pool.submit(run_task, self.call, task.work)
        self.futures[future] = (task, attempt, self.pool)

    def wait(self, timeout: float) -> list[Finished]:
        done, _ = wait_futures(list(self.futures), timeout=timeout, return_when=FIRST_COMPLETED)
        out: list[Finished] = []
        for future in done:
            task, attempt, pool = self.futures.pop(future)
            try:
                out.append((task, future.result()))
            except BrokenProcessPool as err:  # a worker died: every task in flight in that pool is lost with it
                if pool is self.pool:
                    _drop(pool, kill=True)
                    self.pool = _pool(self.processes)
                if attempt < self.retries:
                    self.submit(task, attempt + 1)
                else:
                    text = f"task failed after {self.retries} retries: {type(err).__name__}: {err}"
                    out.append((task, Lost(text)))
            except Exception as err:  # noqa: BLE001 - e.g. a result that cannot be unpickled: the task is lost
                out.append((task, Lost(f"task failed: {type(err).__name__}: {err}")))
        return out

    def cancel(self) -> None:
        if any(not f.done() for f in self.futures):
            # tasks still queued or running: stop the pool's processes now (the next sweep starts a new pool);
            # its futures end as BrokenProcessPool, which nobody reads (not cancelled: see `_drop`)
            _drop(self.pool, kill=True)
        self.futures.clear()
