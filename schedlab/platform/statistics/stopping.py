"""Adaptive replications: the stopping rules (pure functions of the rows so far)
behind the round loops of ``execution.adaptive``.

* ``each_satisfied`` -- every configuration's own 95 % CI half-width of the
  metric within ``rel_halfwidth`` of its mean (the original rule).
* ``paired_satisfied`` -- ``target = "paired"``: at every workload point (and
  [system] value), every policy's paired 95 % interval to the baseline
  (`compare.paired_stats`: rows of the same instance are pairs) is within the
  target: half-width of the mean difference <= rel_halfwidth x |the
  baseline's mean|, or with ``ratio = true`` half-width of the mean log ratio
  <= log(1 + rel_halfwidth) (the interval of the ratio then lies within
  [g / (1 + rel), g (1 + rel)] of the geometric mean g).
* select-best (``mode = "select-best"``, its round loop in
  ``execution.adaptive.select_best``): Kim & Nelson's procedure KN
  (`selection.kn`) per comparison cell, on `outputs_prefix`'s outputs.

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

import math
from typing import TYPE_CHECKING, Any

import polars as pl

from schedlab.platform.planning.plan import Config, Plan, canonical

if TYPE_CHECKING:
    from schedlab.platform.planning.spec import ReplicationsSpec


def cell_of(config: Config) -> str:
    return f"{config.point_id}|{canonical(config.system)}"


def arm_of(config: Config) -> str:
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
        pl.Series("_cell", [cell_of(configs[c]) for c in cids], dtype=pl.String),
        pl.Series("_arm", [arm_of(configs[c]) for c in cids], dtype=pl.String),
        pl.col("replication"),
        pl.col(metric).cast(pl.Float64),
    )
    base_arms = {arm_of(c) for c in configs.values() if c.policy == baseline}
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
        arms = (c for c in p.configs if c.policy != reps.baseline)
        if all(arm_of(c) in {a for cell, a in ok if cell == cell_of(c)} for c in arms):
            out.add(p.point_id)
    return out


# --------------------------------------------------------------------------- select-best's inputs


def cell_where(plan: Plan) -> dict[str, dict[str, Any]]:
    """cell -> the parameter values that tell it apart from the other cells."""
    cells: dict[str, dict[str, Any]] = {}
    for c in plan.configs.values():
        cells.setdefault(cell_of(c), {**c.workload_params, **{f"system_{k}": v for k, v in c.system.items()}})
    keys = sorted({k for v in cells.values() for k in v})
    varying = [k for k in keys if len({canonical(v.get(k)) for v in cells.values()}) > 1]
    return {cell: {k: v.get(k) for k in varying} for cell, v in cells.items()}


def point_where(plan: Plan) -> dict[str, dict[str, Any]]:
    """point id -> the workload values that tell it apart from the other
    points (empty for a one-point sweep)."""
    keys = sorted({k for p in plan.points for k in p.params})
    varying = [k for k in keys if len({canonical(p.params.get(k)) for p in plan.points}) > 1]
    return {p.point_id: {k: p.params.get(k) for k in varying} for p in plan.points}


def outputs_prefix(rows: pl.DataFrame, config_ids: list[str], metric: str, first: int = 0) -> dict[str, list[float]]:
    """Each configuration's outputs in replication order from ``first``, up to
    its first missing replication (a failed simulation ends the usable prefix)."""
    out: dict[str, list[float]] = {cid: [] for cid in config_ids}
    sub = rows.filter(pl.col("config_id").is_in(config_ids)).sort("config_id", "replication")
    for cid, rep, value in sub.select("config_id", "replication", metric).iter_rows():
        if rep == first + len(out[cid]) and value is not None and value == value:
            out[cid].append(float(value))
    return out
