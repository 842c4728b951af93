"""Adaptive replications: the stopping rules behind ``runner._adaptive``.

* ``each_satisfied`` -- every configuration's own 95 % CI half-width of the
  metric within ``rel_halfwidth`` of its mean (the original rule).
* ``paired_satisfied`` -- ``target = "paired"``: at every workload point (and
  [system] value), every policy's paired 95 % interval to the baseline
  (`compare.paired_stats`: rows of the same instance are pairs) is within the
  target: half-width of the mean difference <= rel_halfwidth x |the
  baseline's mean|, or with ``ratio = true`` half-width of the mean log ratio
  <= log(1 + rel_halfwidth) (the interval of the ratio then lies within
  [g / (1 + rel), g (1 + rel)] of the geometric mean g).
* ``select_best`` -- ``mode = "select-best"``: Kim & Nelson's procedure KN
  (`selection.kn`) per workload point and [system] value; eliminated policies
  get no more replications; ``selection.json`` in the results dir says what
  was selected, when each policy was eliminated and KN's constants.

Identical replications (every replication of a configuration gave the same
value, or every paired difference is the same: `stats.IDENTICAL_NOTE`) count
as done, never as an interval that met its target: their interval is
undefined, not zero-width, and a further replication would repeat the same
number (the configuration's result does not depend on the random draw, e.g. a
fixed trace under a policy that ignores estimates), so running it to ``max``
would spend max / min times the work to learn nothing. The results then
report them as one sample.

A comparison cell is one workload point and one [system] grid value: the
policies run on the same instances there. Its arms are the policies (a policy
with a grid of params is one arm per setting).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from schedlab.platform.planning.plan import Config, Instance, Plan, canonical

if TYPE_CHECKING:
    from schedlab.platform.execution.runner import SweepReport
    from schedlab.platform.planning.spec import ReplicationsSpec, SweepSpec
    from schedlab.platform.storage.store import ResultStore


def _cell(config: Config) -> str:
    return f"{config.point_id}|{canonical(config.system)}"


def _arm(config: Config) -> str:
    if not config.policy_params:
        return config.policy
    return f"{config.policy}[{','.join(f'{k}={v}' for k, v in sorted(config.policy_params.items()))}]"


def each_satisfied(plan: Plan, rows: pl.DataFrame, reps: ReplicationsSpec) -> set[str]:
    """Points whose every configuration's CI half-width is within target."""
    from schedlab.platform.statistics.stats import summarize

    if reps.metric is None or reps.rel_halfwidth is None:  # ReplicationsSpec._one_mode: adaptive has both
        raise ValueError("adaptive replications need both metric and rel_halfwidth")
    m = reps.metric
    stats = summarize(rows.select("config_id", m), ["config_id"], [m])
    ok = stats.filter(
        pl.col(f"{m}_identical")
        | (pl.col(f"{m}_ci95").is_not_null() & (pl.col(f"{m}_ci95") <= reps.rel_halfwidth * pl.col(f"{m}_mean").abs()))
    )
    satisfied = set(ok["config_id"].to_list())
    return {p.point_id for p in plan.points if all(c.config_id in satisfied for c in p.configs)}


def paired_table(plan: Plan, rows: pl.DataFrame, metric: str, baseline: str, ratio: bool) -> pl.DataFrame:
    """`compare.paired_stats` per comparison cell of the plan: columns
    ``_cell``, ``_arm`` and paired_stats's (``halfwidth``, ``baseline_mean``, ...)."""
    from schedlab.platform.statistics.compare import paired_stats

    configs = plan.configs
    known = rows.filter(pl.col("config_id").is_in(list(configs)))
    cids = known["config_id"].to_list()
    frame = known.select(
        pl.Series("_cell", [_cell(configs[c]) for c in cids], dtype=pl.String),
        pl.Series("_arm", [_arm(configs[c]) for c in cids], dtype=pl.String),
        pl.col("replication"),
        pl.col(metric).cast(pl.Float64),
    )
    base_arms = {_arm(c) for c in configs.values() if c.policy == baseline}
    if len(base_arms) != 1:  # spec validation rules this out; a clear error all the same
        raise ValueError(f"baseline {baseline!r} is {len(base_arms)} configurations per point, not one")
    return paired_stats(frame, ["_cell"], ["replication"], "_arm", metric, base_arms.pop(), ratio)


def paired_satisfied(plan: Plan, rows: pl.DataFrame, reps: ReplicationsSpec) -> set[str]:
    """Points where every policy's paired interval to the baseline is within
    the target (see the module docstring)."""
    if reps.metric is None or reps.rel_halfwidth is None:  # ReplicationsSpec._one_mode: adaptive has both
        raise ValueError("adaptive replications need both metric and rel_halfwidth")
    if reps.baseline is None:  # ReplicationsSpec._one_mode: target = "paired" needs the baseline
        raise ValueError('target = "paired" needs the baseline policy')
    table = paired_table(plan, rows, reps.metric, reps.baseline, bool(reps.ratio))
    if reps.ratio:
        ok_expr = pl.col("halfwidth") <= math.log1p(reps.rel_halfwidth)
    else:
        ok_expr = pl.col("halfwidth") <= reps.rel_halfwidth * pl.col("baseline_mean").abs()
    good = table.filter(
        pl.col("identical") | (pl.col("halfwidth").is_not_null() & pl.col("halfwidth").is_not_nan() & ok_expr)
    )
    ok = set(zip(good["_cell"].to_list(), good["_arm"].to_list()))
    out = set()
    for p in plan.points:
        if all(_arm(c) in {a for cell, a in ok if cell == _cell(c)} for c in p.configs if c.policy != reps.baseline):
            out.add(p.point_id)
    return out


# --------------------------------------------------------------------------- select-best


def _where(plan: Plan) -> dict[str, dict[str, Any]]:
    """cell -> the parameter values that tell it apart from the other cells."""
    cells: dict[str, dict[str, Any]] = {}
    for c in plan.configs.values():
        cells.setdefault(_cell(c), {**c.workload_params, **{f"system_{k}": v for k, v in c.system.items()}})
    keys = sorted({k for v in cells.values() for k in v})
    varying = [k for k in keys if len({canonical(v.get(k)) for v in cells.values()}) > 1]
    return {cell: {k: v.get(k) for k in varying} for cell, v in cells.items()}


def point_where(plan: Plan) -> dict[str, dict[str, Any]]:
    """point id -> the workload values that tell it apart from the other
    points (empty for a one-point sweep)."""
    keys = sorted({k for p in plan.points for k in p.params})
    varying = [k for k in keys if len({canonical(p.params.get(k)) for p in plan.points}) > 1]
    return {p.point_id: {k: p.params.get(k) for k in varying} for p in plan.points}


def _outputs(rows: pl.DataFrame, config_ids: list[str], metric: str, first: int = 0) -> dict[str, list[float]]:
    """Each configuration's outputs in replication order from ``first``, up to
    its first missing replication (a failed simulation ends the usable prefix)."""
    out: dict[str, list[float]] = {cid: [] for cid in config_ids}
    sub = rows.filter(pl.col("config_id").is_in(config_ids)).sort("config_id", "replication")
    for cid, rep, value in sub.select("config_id", "replication", metric).iter_rows():
        if rep == first + len(out[cid]) and value is not None and value == value:
            out[cid].append(float(value))
    return out


def select_best(
    spec: SweepSpec,
    plan: Plan,
    store: ResultStore,
    run_round: Callable[[list[Instance]], None],
    report: SweepReport,
) -> dict[str, Any]:
    """Kim & Nelson's KN per comparison cell, one round of Ray tasks per
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
        cells.setdefault(_cell(c), []).append(c)
    where = _where(plan)
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
            names = {c.config_id: _arm(c) for c in configs}
            outs = _outputs(rows, list(names), reps.metric, first)
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
