"""``schedlab check-policy``: run an engine's invariants on seeded random
workloads and report the smallest workload that breaks one.

A researcher's policy class can be wrong in ways no sweep shows: it
over-commits a server only when two jobs arrive together, idles once in a
while, reads the true sizes it is not supposed to know, or depends on state
left over from the previous run. Each engine module here states the
invariants every correct policy of that engine satisfies and why, generates
small workloads that provoke the corner cases (ties, coincident events,
demands at capacity, wide jobs), runs the policy in *check mode* (hidden
truths guarded, event budgets, the engines' own consistency checks on) and
lets hypothesis shrink a failure to a minimal table:

* :mod:`schedlab.engines.queue.checks`   -- completes, work-conserving, no-early-completion, deterministic,
  no-size-access, runs
* :mod:`schedlab.engines.packing.checks` -- capacity, placements-queued, completes, deterministic,
  no-duration-access, runs
* :mod:`schedlab.engines.batch.checks`   -- capacity, start-after-submit, starts-queued, completes, deterministic,
  no-runtime-access, runs
* :mod:`schedlab.engines.dfrs.checks`    -- memory, consistent, completes, deterministic, no-processing-access, runs

:mod:`schedlab.checks.common` holds the search and the report,
:mod:`schedlab.checks.guard` the hidden-truth guard. Python API::

    from schedlab.checks import check_policy
    report = check_policy("queue", AgedSRPT, {"alpha": 0.5}, examples=200, seed=0)
    print(report.render()); assert report.ok
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedlab.checks.common import CheckReport, Failure, Invariant, Workload
from schedlab.errors import UserError


def resolve_policy(engine, policy: Any, base_dir: str | Path, where: str) -> tuple[type, str]:
    """(policy class, label) for a class, a built-in name or a code
    reference ``"file.py:Name"`` / ``"module:Name"`` (relative to
    ``base_dir``); UserError naming ``where`` otherwise."""
    from schedlab.usercode import is_reference, resolve

    if isinstance(policy, type):
        cls = engine.check_policy_class(policy, where)
        return cls, getattr(cls, "name", "") or cls.__name__
    if not isinstance(policy, str):
        raise UserError(f'{where}: expected a policy class, a built-in policy name or "file.py:Name"; got {policy!r}')
    if is_reference(policy):
        obj = resolve(policy, base_dir, where).load()
        return engine.check_policy_class(obj, where), policy
    return engine.policy(policy), policy


def check_policy(
    engine: str,
    policy: Any,
    params: Mapping[str, Any] | None = None,
    examples: int = 200,
    seed: int = 0,
    *,
    base_dir: str | Path | None = None,
    where: str = "check-policy",
) -> CheckReport:
    """Check ``policy`` (a class, a built-in name, or ``"file.py:Name"``
    resolved against ``base_dir``, default the working directory) with its
    ``params`` against ``engine``'s invariants on ``examples`` random
    workloads drawn from ``seed``. Bad input raises UserError; a violation
    is not an error: it is in the returned report (``report.ok`` False)."""
    from schedlab.engines import spec_engine

    base = Path.cwd() if base_dir is None else base_dir
    eng = spec_engine(engine, base, f"{where} --engine")[0]  # a built-in's name or your "my_engine.py:MyEngine"
    cls, label = resolve_policy(eng, policy, base, where)
    params = dict(params or {})
    eng.check_policy_params(cls, params, f"{where} --param", sep=" ")
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 1:
        raise UserError(f"{where}: --examples must be an integer >= 1; got {examples!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"{where}: --seed must be an integer; got {seed!r}")
    check = eng.declared("checks")
    if check is None:
        raise UserError(f"{where}: engine {eng.name!r} declares no invariants (Engine.checks)")
    from schedlab.checks.common import run_check

    return run_check(check(cls, params), label, examples, seed)


__all__ = ["CheckReport", "Failure", "Invariant", "Workload", "check_policy", "resolve_policy"]
