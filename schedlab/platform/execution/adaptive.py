"""The round loops of adaptive replications (one side of the cycle only: the
runner hands them its ``run_round``; the stopping rules they consult are pure
functions in `schedlab.platform.statistics.stopping`).

* `run_adaptive` -- rounds of replications until every configuration's 95 %
  CI half-width is within target (``target`` unset or "each"), or every
  policy's paired interval to the baseline is (``target = "paired"``), or
  ``max`` is reached; ``mode = "select-best"`` goes to `select_best`.
* `select_best` -- Kim & Nelson's procedure KN (`selection.kn`) per workload
  point and [system] value; eliminated policies get no more replications;
  ``selection.json`` in the results dir says what was selected, when each
  policy was eliminated and KN's constants.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from schedlab.platform.planning.plan import Config, Instance, Plan
from schedlab.platform.statistics import stopping

if TYPE_CHECKING:
    from schedlab.platform.execution.report import SweepReport
    from schedlab.platform.planning.spec import SweepSpec
    from schedlab.platform.storage.seam import ResultsStore


def run_adaptive(
    spec: SweepSpec, plan: Plan, store: ResultsStore, run_round: Callable[[list[Instance]], None], report: SweepReport
) -> None:
    """Rounds of replications until every configuration's 95 % CI half-width of
    the metric is within rel_halfwidth of its mean (``target`` unset or
    "each"), or every policy's paired interval to the baseline is
    (``target = "paired"``, `stopping.paired_satisfied`), or max is reached.
    ``mode = "select-best"`` runs Kim & Nelson's KN instead
    (`select_best`)."""
    reps = spec.replications
    if reps.select_best:
        select_best(spec, plan, store, run_round, report)
        return
    next_r = {p.point_id: 0 for p in plan.points}
    want = {p.point_id: reps.min for p in plan.points}
    short: set[str] = set()  # points whose target was not met at the last check
    while True:
        instances = [
            inst for p in plan.points for inst in plan.instances(range(next_r[p.point_id], want[p.point_id]), [p])
        ]
        if not instances:
            where = stopping.point_where(plan)
            report.at_max = [where[p.point_id] for p in plan.points if p.point_id in short]
            return
        for p in plan.points:
            next_r[p.point_id] = want[p.point_id]
        run_round(instances)
        report.rounds += 1
        rows = store.scan().select("config_id", "replication", reps.metric).collect() if store.has("summary") else None
        if rows is None or reps.metric not in rows.columns:
            return
        if reps.target == "paired":
            done = stopping.paired_satisfied(plan, rows, reps)
        else:
            done = stopping.each_satisfied(plan, rows, reps)
        short = {p.point_id for p in plan.points if p.point_id not in done}
        for p in plan.points:
            if p.point_id not in done and want[p.point_id] < reps.max:
                want[p.point_id] = min(reps.max, want[p.point_id] + reps.batch)


def select_best(
    spec: SweepSpec,
    plan: Plan,
    store: ResultsStore,
    run_round: Callable[[list[Instance]], None],
    report: SweepReport,
) -> dict[str, Any]:
    """Kim & Nelson's KN per comparison cell, one round of tasks per
    stage (every survivor's next ``step`` replications); returns (and
    writes) the ``selection.json`` document."""
    from schedlab.platform.statistics.selection import SOURCE, kn, write

    reps = spec.replications
    if reps.metric is None or reps.delta is None:  # ReplicationsSpec._one_mode: select-best has both
        raise ValueError("select-best needs both metric and delta")
    confidence = reps.confidence if reps.confidence is not None else 0.95
    minimize = True if reps.minimize is None else bool(reps.minimize)
    cells: dict[str, list[Config]] = {}
    for c in plan.configs.values():
        cells.setdefault(stopping.cell_of(c), []).append(c)
    where = stopping.cell_where(plan)
    first = reps.first  # replications first, first + 1, ...: KN's outputs 0, 1, ...
    need = {cid: first + reps.min for cid in plan.configs}
    ran = {cid: first for cid in plan.configs}
    failed: set[str] = set()
    doc: dict[str, Any] = {}
    while True:
        instances = []
        for p in plan.points:
            by_rep: dict[int, list[Config]] = {}
            for c in p.configs:
                for r in range(ran[c.config_id], need[c.config_id]):
                    by_rep.setdefault(r, []).append(c)
            for r in sorted(by_rep):
                instances += plan.instances([r], [dataclasses.replace(p, configs=tuple(by_rep[r]))])
        if instances:
            for cid in need:
                ran[cid] = max(ran[cid], need[cid])
            run_round(instances)
            report.rounds += 1
        rows = (
            store.scan().select("config_id", "replication", reps.metric).collect()
            if store.has("summary")
            else pl.DataFrame({"config_id": [], "replication": [], reps.metric: []})
        )
        points = []
        for cell, configs in cells.items():
            names = {c.config_id: stopping.arm_of(c) for c in configs}
            outs = stopping.outputs_prefix(rows, list(names), reps.metric, first)
            sel = kn(
                {names[cid]: outs[cid] for cid in names},
                reps.delta,
                confidence,
                reps.min,
                minimize,
                reps.step,
                reps.max,
            )
            entry = {"where": where[cell], "point_id": configs[0].point_id, **sel.to_dict()}
            if not sel.done:
                short = [
                    names[cid]
                    for cid in names
                    if names[cid] in sel.survivors and ran[cid] >= first + sel.need and len(outs[cid]) < sel.need
                ]
                if short or cell in failed:
                    failed.add(cell)
                    entry["stopped"] = "failed simulations"
                    entry["guarantee"] = f"none: simulations of {', '.join(short)} failed (see failures/)"
                else:
                    for c in configs:
                        if names[c.config_id] in sel.survivors:
                            need[c.config_id] = max(need[c.config_id], first + sel.need)
            for pol, c in zip(entry["policies"], configs):
                pol["config_id"] = c.config_id
            points.append(entry)
        doc = {
            "procedure": "KN (Kim & Nelson 2001)",
            "source": SOURCE,
            "metric": reps.metric,
            "minimize": minimize,
            "delta": reps.delta,
            "confidence": confidence,
            "n0": reps.min,
            **({"first_replication": first} if first else {}),
            "step": reps.step,
            "max": reps.max,
            "points": points,
        }
        write(store.root, doc)
        if not any(need[cid] > ran[cid] for cid in need):
            return doc
