"""The Ray backend (`backends`): tasks as Ray tasks of `tasks.run_instances`.

At most ``max_in_flight`` tasks are submitted (a few per CPU of the
cluster, re-read as an autoscaling cluster grows); results are streamed back
as they finish (``ray.wait`` with ``num_returns > 1``). A task's work goes as
a few ints per instance into blocks of the plan's points in the object store
(`payload`), shared inputs (a parsed trace) are put once. Ray retries system
failures (``max_retries``); a task that still cannot finish becomes a `Lost`.
A local Ray (no address) listens on loopback only.
"""

from __future__ import annotations

import logging
import os
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any

from schedlab.errors import UserError
from schedlab.platform.execution.connect import init_bounded, loopback_only
from schedlab.platform.execution.executor import Executor, Finished, Lost, Task, TaskCall
from schedlab.platform.execution.interrupts import keep_sigterm_handler
from schedlab.platform.execution.payload import Packer, ray_put
from schedlab.platform.planning.plan import Instance, Plan, shared_input_key
from schedlab.usercode import ship_paths

if TYPE_CHECKING:
    from schedlab.platform.planning.spec import SweepSpec

#: Local Ray (no address given) binds every port to this address; token auth stays on.
LOCAL_RAY_HOST = "127.0.0.1"
#: Seconds between reads of the cluster's CPUs (an autoscaling cluster grows).
CPUS_TTL = 10.0


#: How schedlab itself started Ray in this process: {"env": shipped user code}
#: (empty when Ray was started by someone else, or not at all).
_OWNED: dict[str, Any] = {}


def forget_ray() -> None:
    """Forget that schedlab started the Ray of this process: what a caller does
    after ``ray.shutdown()`` of its own (a test between sweeps), so the next sweep
    starts Ray anew with its own user code shipped."""
    _OWNED.clear()


def _init_ray(spec: SweepSpec, address: str | None, shipped: tuple[tuple[str, str], ...] = ()) -> ModuleType:
    """Start (or join) Ray. User code (``shipped``: (path, sha256) pairs)
    goes to every worker through the job's ``runtime_env`` ``py_modules``:
    Ray uploads local files only at the job level, so a Ray that schedlab
    started for other code is restarted with it. A Ray that the caller
    started is used as it is (its workers then import user code from the
    driver's paths: one host only). Local Ray listens on loopback only
    (`connect.loopback_only`); joining a cluster by address ends within
    ``[execution] connect_timeout_seconds`` or at Ctrl-C (`connect.init_bounded`)."""
    import ray

    if ray.is_initialized():
        if not _OWNED or not shipped or _OWNED.get("env") == shipped:
            return ray
        ray.shutdown()
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
    address = address or spec.execution.address or os.environ.get("RAY_ADDRESS")
    if address:
        kwargs["address"] = address
    else:  # never join a `ray start` cluster; listen on loopback only
        kwargs.update(
            address="local",
            num_cpus=spec.execution.num_cpus,
            _node_ip_address=LOCAL_RAY_HOST,
            logging_level=logging.WARNING,
        )  # not "Started a local Ray instance"
        # Token auth on a loopback-only Ray is schedlab's choice, not the user's: no warning about it.
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    if shipped:
        modules = [q for p, sha in shipped for q in ship_paths(p, sha)]  # with a lone file's declared data files
        kwargs["runtime_env"] = {"py_modules": modules, "excludes": ["__pycache__", "*.pyc", ".git"]}
    try:
        if address:  # bounded in time, interruptible, loopback kept loopback (`connect`)
            init_bounded(ray, kwargs, address, spec.execution.connect_timeout_seconds)
        else:
            with loopback_only(), keep_sigterm_handler():  # Ray's handler would exit past the runner's clean-up
                ray.init(**kwargs)
    except (ConnectionError, ray.exceptions.AuthenticationError) as err:
        raise UserError(
            f"cannot connect to Ray at {address}: {err} "
            f"(RAY_AUTH_MODE={os.environ.get('RAY_AUTH_MODE', 'unset')}; see docs/cluster.md)"
        ) from None
    _OWNED.clear()
    _OWNED["env"] = shipped
    return ray


class RayExecutor(Executor):
    """Ray tasks (see the module docstring); Ray is started or joined here."""

    name = "on Ray"

    def __init__(self, spec: SweepSpec, plan: Plan, address: str | None, call: TaskCall) -> None:
        started = time.perf_counter()
        self.spec, self.call = spec, call
        self.ray = _init_ray(spec, address, plan.shipped())
        self.packer = Packer(plan.points, ray_put(self.ray))  # the plan's points, a block at a time (`payload`)
        execution = spec.execution
        # ray's options() wrapper of run_instances (Ray leaves it unannotated)
        from schedlab.platform.execution.tasks import run_instances

        self.remote: Any = self.ray.remote(run_instances).options(
            num_cpus=execution.cpus_per_task, max_retries=execution.retries, retry_exceptions=False
        )
        self.refs: dict[Any, Task] = {}
        self.shared: dict[str, Any] = {}
        self.cpus_read = (0.0, 1.0)  # (when, slots)
        self.start_seconds = time.perf_counter() - started

    def slots(self) -> float:
        """Tasks that run at once: the cluster's CPUs / cpus_per_task, re-read every `CPUS_TTL` s."""
        when, slots = self.cpus_read
        if time.monotonic() - when > CPUS_TTL:
            cpus = self.ray.cluster_resources().get("CPU", 1.0)
            self.cpus_read = (time.monotonic(), max(1.0, cpus / self.spec.execution.cpus_per_task))
        return self.cpus_read[1]

    def max_in_flight(self) -> int:
        """A few tasks per CPU."""
        return self.spec.execution.max_in_flight or max(2, int(3 * self.slots()))

    @property
    def in_flight(self) -> int:
        return len(self.refs)

    def _shared_for(self, instance: Instance) -> Any:
        from schedlab.workloads.registry import workload_kind

        key = shared_input_key(instance.point)
        if key is None:
            return None
        if key not in self.shared:  # parsed once, shared through the object store
            kind = workload_kind(instance.point.kind)
            if kind.load_shared is None:  # invariant: shared_input_key gives a key only to kinds with load_shared
                raise RuntimeError(f"workload kind {kind.name!r} has no shared input")
            self.shared[key] = self.ray.put(kind.load_shared(instance.point.params))
        return self.shared[key]

    def submit(self, task: Task) -> None:
        call = self.call
        ref = self.remote.remote(
            call.engine,
            self.packer.pack(task.work),
            self._shared_for(task.work[0][0]),
            call.per_job,
            call.metrics,
            engine_path=call.engine_path,
            encode=True,
            sim_budget_seconds=call.sim_budget_seconds,
        )
        self.refs[ref] = task

    def wait(self, timeout: float) -> list[Finished]:
        ray = self.ray
        ready, _ = ray.wait(list(self.refs), num_returns=1, timeout=timeout)
        if ready:
            more, _ = ray.wait(list(self.refs), num_returns=len(self.refs), timeout=0)
            ready = list(dict.fromkeys(ready + more))
        out: list[Finished] = []
        for ref in ready:
            task = self.refs.pop(ref)
            try:
                out.append((task, ray.get(ref)))
            except ray.exceptions.RayError as err:  # retries exhausted: a system failure
                text = f"task failed after {self.spec.execution.retries} retries: {type(err).__name__}: {err}"
                out.append((task, Lost(text)))
        return out

    def cancel(self) -> None:
        for ref in self.refs:
            self.ray.cancel(ref, force=True)
        self.refs.clear()
