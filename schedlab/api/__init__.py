"""schedlab's public API: the seams a researcher's own code implements.

One module per seam; built-in policies, workload kinds, readers and metrics
are written against exactly these, so a built-in is just user code that
ships with schedlab::

    from schedlab.api import queue      # queue.Policy, queue.Server      (one shared server)
    from schedlab.api import packing    # packing.Policy, packing.Cluster (L servers, no preemption)
    from schedlab.api import batch      # batch.Policy, batch.Machine     (rigid parallel jobs)
    from schedlab.api import dfrs       # dfrs.Policy, dfrs.State         (VMs, pausing, migration)
    from schedlab.api import workloads  # generators and trace readers: job tables per engine
    from schedlab.api import metrics    # extra summary metrics: per-job table -> number

A spec refers to user code with ``use = "file.py:Name"`` (relative to the
spec's folder) or ``use = "package.module:Name"``; see docs/extending.md.
Parameters are declared as typed keyword arguments with defaults
(``schedlab.params``) and checked by ``schedlab validate``; a list value in a
spec is a grid axis, as for built-ins. ``schedlab check-policy REF --engine
E`` runs the engine's invariants on seeded random workloads.

``get_engine(name).run(jobs, policy, params, system)`` runs one job table
under one policy (a name or your class) and returns its per-job columns
(``.jobs``) and summary metrics (``.summary``): how to test a policy on a
table worked by hand, without a sweep.

``data_file(__file__, "agent.npz")`` is the path of a data file the calling
module declares (``DATA_FILES = ("agent.npz",)``): hashed into the code's
digest and shipped with it (``schedlab.usercode``). ``schedlab.api.agent``
holds a trained network's numpy forward pass as a batch policy.

``run_instance(engine, jobs, policy, params, system)`` is the same run as
the one way every caller runs an instance (a sweep's tasks, ``schedlab
view``'s replay, ``schedlab simulate``): the engine's run, then extra metrics
(``metrics=``) and a schedule recorder (``recorder=``) if asked.
``start_instance(engine, jobs, policy, params, system)`` builds that run and
hands it out unstepped (peek / step / done, then ``rows()``): what the
Gymnasium environments and ``schedlab check-policy`` step.

``UserError`` (bad input: a message naming the place) and ``PolicyError``
(a policy broke the engine's model) are the errors a seam raises.

This package imports nothing heavy: importing ``schedlab.api.queue`` loads
the queue engine only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from schedlab.errors import PolicyError, UserError
from schedlab.usercode import data_file

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from schedlab.engines.base import Engine, StartedRun
    from schedlab.engines.instance import AfterRun, InstanceRun, MetricFn

__all__ = [
    "PolicyError",
    "UserError",
    "batch",
    "data_file",
    "dfrs",
    "get_engine",
    "metrics",
    "packing",
    "queue",
    "run_instance",
    "start_instance",
    "workloads",
]


def get_engine(name: str) -> Engine:
    """The engine registered as ``name`` ("queue", "packing", "batch",
    "dfrs"): ``.run(jobs, policy, params, system)`` -> per-job ``.jobs`` and
    ``.summary``; an unknown name is a `UserError` listing the engines. The
    registry is imported on the first call, so importing this package stays
    light."""
    from schedlab.engines import get_engine as registered

    return registered(name)


def run_instance(
    engine: str | Engine,
    jobs: Any,
    policy: str | type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    *,
    path: str = "fast",
    recorder: Any = None,
    metrics: Sequence[MetricFn] = (),
    after: AfterRun | None = None,
) -> InstanceRun:
    """One policy on one job table, as a sweep runs it
    (``schedlab.engines.instance.run_instance``): ``.result`` (per-job
    ``.jobs``, ``.summary``), ``.metrics`` (the summary row's metrics). The
    engines are imported on the first call, so importing this package stays
    light."""
    from schedlab.engines.instance import run_instance as run

    return run(engine, jobs, policy, params, system, path=path, recorder=recorder, metrics=metrics, after=after)


def start_instance(
    engine: str | Engine,
    jobs: Any,
    policy: str | type,
    params: Mapping[str, Any] | None = None,
    system: Mapping[str, Any] | None = None,
    *,
    recorder: Any = None,
    hidden: Any = None,
    check: bool = False,
    watch: Any = None,
) -> StartedRun:
    """The run `run_instance` runs on its reference path, built and not yet
    stepped (``schedlab.engines.instance.start_instance``): ``.run`` (peek /
    step / done), then ``.rows()``. The engines are imported on the first call."""
    from schedlab.engines.instance import start_instance as start

    return start(engine, jobs, policy, params, system, recorder=recorder, hidden=hidden, check=check, watch=watch)
