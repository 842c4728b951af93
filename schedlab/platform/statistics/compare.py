"""Paired comparisons of policies against a baseline (common random numbers).

Replication r of a workload point is the same instance for every policy, so
the rows of two policies at the same workload point and replication are a
*pair*; the difference within a pair has the instance's noise taken out. For
each workload point (the ``by`` columns) and each policy other than the
baseline this module gives:

* the mean paired difference policy - baseline (or, with ``ratio``, the
  geometric mean of policy / baseline: the t interval is computed on
  log(policy / baseline) and transformed back with exp),
* its 95 % t interval from the n pairs (``scipy.stats.t``),
* the paired t test's p value and its Holm (1979) adjustment over the
  policies compared with the baseline at that point (family-wise error at
  5 % per point; ``significant`` is p_holm < 0.05).

When the n paired differences are all the same (``identical``; e.g. a fixed
trace replayed n times under policies that ignore its random part) they are
one sample: ``n_effective`` is 1, there is no interval and no p value, and
the policy is left out of Holm's family (`stats.IDENTICAL_NOTE`).

``schedlab compare`` and ``schedlab.compare`` print / return this;
`paired_stats` is the one computation behind them, adaptive replications on
a paired target (``runner._adaptive``) and the pipelines' paired intervals.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import polars as pl

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

from schedlab.errors import UserError
from schedlab.platform.statistics.exact import group_moments as exact_moments
from schedlab.platform.statistics.stats import CONFIDENCE, DOMINANCE, dominated_expr, group_moments, holm, paired_of

#: Family-wise error rate for the ``significant`` column (Holm).
ALPHA = 0.05
#: Said with every table and JSON document: what the numbers are.
METHOD_DIFF = (
    "paired by (workload point, replication): mean of policy - {baseline} over the n pairs, "
    "95 % Student-t interval; p: paired t test, Holm-adjusted over the {k} policies compared with "
    "{baseline} at each point (significant: p_holm < 0.05)"
)
METHOD_RATIO = (
    "paired by (workload point, replication): geometric mean of policy / {baseline} over the n pairs, "
    "95 % Student-t interval of the mean log ratio, transformed back with exp; p: paired t test on "
    "the log ratios, Holm-adjusted over the {k} policies compared with {baseline} at each point "
    "(significant: p_holm < 0.05)"
)


def paired_stats(
    frame: pl.DataFrame | pl.LazyFrame,
    cells: list[str],
    pair: list[str],
    arm: str,
    value: str,
    baseline: str,
    ratio: bool = False,
    confidence: float = CONFIDENCE,
) -> pl.DataFrame:
    """Paired intervals of every arm against ``baseline``.

    ``frame`` has one row per (cell, pair key, arm): ``cells`` name the
    comparison (e.g. a workload point), ``pair`` the columns that make two rows
    of one cell a pair (e.g. replication), ``arm`` the policy label and
    ``value`` the metric. Rows whose value is null or NaN are left out (so is
    their pair). Returns one row per (cell, arm != baseline): ``n``, ``mean``
    (the arm's mean over its paired rows), ``baseline_mean``, ``estimate``
    (mean difference, or geometric mean ratio), ``ci_low``, ``ci_high``,
    ``halfwidth`` (of the difference, or of the mean log ratio), ``p_value``,
    ``p_holm`` (within the cell), ``significant``, ``identical`` (the n
    differences are one sample: no interval, no p) and ``n_effective`` (1
    when identical, else n); sorted by cells, then by the arms' first
    appearance in ``frame``.

    ``frame`` may be a scan (a LazyFrame, what `compare` passes: 10^7 rows):
    the duplicate check and the join then run in polars' streaming engine and
    only the paired values are held (`scan_pairs`); every number is the one
    the collected frame gives (means and deviations are correctly rounded
    sums, `stats.mean_sd`, whatever order the pairs come in)."""
    keys = cells + pair
    if isinstance(frame, pl.LazyFrame):
        joined, order = scan_pairs(frame, cells, pair, arm, value, baseline)
        schema = frame.collect_schema()
    else:
        clean = frame.filter(pl.col(value).is_not_null() & pl.col(value).is_not_nan())
        dup = clean.group_by(keys + [arm]).len().filter(pl.col("len") > 1)
        if dup.height:
            raise duplicate_error(dup.row(0, named=True), keys + [arm])
        base = clean.filter(pl.col(arm) == baseline).select(keys + [pl.col(value).alias("_base")])
        others = clean.filter(pl.col(arm) != baseline)
        joined = others.join(base, on=keys, how="inner", nulls_equal=True)
        order = {a: i for i, a in enumerate(frame[arm].unique(maintain_order=True).to_list())}
        schema = frame.schema
    if ratio:
        bad = joined.filter((pl.col(value) <= 0) | (pl.col("_base") <= 0))
        if bad.height:
            raise UserError(
                f"--ratio needs positive values; {value} is {bad[value][0] if bad[value][0] <= 0 else bad['_base'][0]} "
                f"in a row of {bad[arm][0] if bad[value][0] <= 0 else baseline}"
            )
        joined = joined.with_columns((pl.col(value) / pl.col("_base")).log().alias("_d"))
    else:
        joined = joined.with_columns((pl.col(value) - pl.col("_base")).alias("_d"))
    # every comparison's moments at once (correctly rounded sums, `stats.group_moments`), not pair by pair;
    # of a scan's pairs without sorting them (`exact.group_moments`: the same bits)
    moments = exact_moments if isinstance(frame, pl.LazyFrame) else group_moments
    d = pl.col("_d")
    same = (pl.len() >= 2) & d.is_finite().all() & (d.min() == d.max())
    groups = (
        moments(joined, cells + [arm], [value, "_base", "_d"], means_only=[value, "_base"])
        .join(
            joined.group_by(cells + [arm]).agg(pl.when(same).then(d.min()).alias("_same")),
            on=cells + [arm],
            how="left",
            nulls_equal=True,
        )
        .select(
            cells
            + [arm, pl.col(f"{value}_mean").alias("mean"), pl.col("_base_mean").alias("baseline_mean")]
            + ["n", "_d_mean", "_d_std", "_same"]
        )
    )
    records: list[dict[str, Any]] = []
    for rec in groups.iter_rows(named=True):
        p = paired_of(rec.pop("n"), rec.pop("_d_mean"), rec.pop("_d_std"), rec.pop("_same"), confidence)
        if ratio:
            est, lo, hi = math.exp(p.mean), math.exp(p.low), math.exp(p.high)
        else:
            est, lo, hi = p.mean, p.low, p.high
        records.append(
            {
                **rec,
                "n": p.n,
                "estimate": est,
                "ci_low": lo,
                "ci_high": hi,
                "halfwidth": p.halfwidth,
                "p_value": p.p_value,
                "identical": p.identical,
                "n_effective": p.n_effective,
            }
        )
    schema_cells = {c: schema[c] for c in cells}
    out_schema: dict[str, PolarsDataType] = {
        **schema_cells,
        arm: schema[arm],
        "mean": pl.Float64,
        "baseline_mean": pl.Float64,
        "n": pl.Int64,
        "estimate": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "halfwidth": pl.Float64,
        "p_value": pl.Float64,
        "identical": pl.Boolean,
        "n_effective": pl.Int64,
    }
    out = pl.DataFrame(records, schema=out_schema)
    out = out.with_columns(pl.col(arm).replace_strict(order, return_dtype=pl.Int64).alias("_order"))
    out = out.sort(cells + ["_order"], nulls_last=True).drop("_order")
    # Holm within each cell
    adj: list[float] = [math.nan] * out.height
    cell_keys = [tuple(r) for r in out.select(cells).iter_rows()] if cells else [()] * out.height
    by_cell: dict[tuple[Any, ...], list[int]] = {}
    for i, k in enumerate(cell_keys):
        by_cell.setdefault(k, []).append(i)
    pv = out["p_value"].to_list()
    for rows in by_cell.values():
        for i, a in zip(rows, holm([pv[i] for i in rows])):
            adj[i] = a
    out = out.with_columns(pl.Series("p_holm", adj, dtype=pl.Float64))
    out = out.with_columns(
        pl.when(pl.col("p_holm").is_nan()).then(None).otherwise(pl.col("p_holm") < ALPHA).alias("significant")
    )
    return out.select(
        cells
        + [
            arm,
            "n",
            "mean",
            "baseline_mean",
            "estimate",
            "ci_low",
            "ci_high",
            "halfwidth",
            "p_value",
            "p_holm",
            "significant",
            "identical",
            "n_effective",
        ]
    )


def duplicate_error(row: dict[str, Any], keys: list[str]) -> UserError:
    """The error of ``row["len"]`` rows sharing the pair key ``row`` gives (`paired_stats`)."""
    return UserError(
        f"{row['len']} rows share one pair key ({', '.join(f'{k}={row[k]}' for k in keys)}); "
        f"a comparison needs one row per policy, workload point and replication"
    )


#: The polars engine of the reads of a scan that `paired_stats` makes: streaming, so 10^7 rows are
#: read in batches; what it returns (counts, the pairs' values) is exact whichever engine runs it.
SCAN_ENGINE: Final = "streaming"


def scan_pairs(
    lf: pl.LazyFrame, cells: list[str], pair: list[str], arm: str, value: str, baseline: str
) -> tuple[pl.DataFrame, dict[Any, int]]:
    """The pairs of a scan (`paired_stats` on a LazyFrame): the rows of
    ``cells``, ``arm``, ``value`` and the baseline's value ``_base`` of every
    (cell, pair key) both have, read in the streaming engine, and the arms'
    order (first appearance). A pair key with two rows of one arm is the
    `UserError` the collected frame raises; the check is one pass over the
    scan grouped by the pair key without its replication (a configuration's
    rows: its replications told apart, `query.repeats`), not a group per row."""
    from schedlab.platform.storage.query import repeats

    keys = cells + pair
    clean = lf.filter(pl.col(value).is_not_null() & pl.col(value).is_not_nan())
    rep = "replication" if "replication" in pair else None
    if rep is not None and lf.collect_schema()[rep].is_integer():
        outer = [k for k in keys if k != rep] + [arm]
        _, twice = repeats(clean, outer, rep)
        if twice:  # then find the pair key, as the collected frame does
            dup = clean.group_by(keys + [arm]).len().filter(pl.col("len") > 1).head(1).collect(engine=SCAN_ENGINE)
            raise duplicate_error(dup.row(0, named=True), keys + [arm])
    else:
        dup = clean.group_by(keys + [arm]).len().filter(pl.col("len") > 1).head(1).collect(engine=SCAN_ENGINE)
        if dup.height:
            raise duplicate_error(dup.row(0, named=True), keys + [arm])
    arms = lf.select(pl.col(arm).unique(maintain_order=True)).collect(engine=SCAN_ENGINE).to_series().to_list()
    base = clean.filter(pl.col(arm) == baseline).select(keys + [pl.col(value).alias("_base")])
    joined = (
        clean.filter(pl.col(arm) != baseline)
        .join(base, on=keys, how="inner", nulls_equal=True)
        .select(cells + [arm, value, "_base"])
        .collect(engine=SCAN_ENGINE)
    )
    return joined, {a: i for i, a in enumerate(arms)}


def arm_labels(frame: pl.DataFrame, policy_params: list[str]) -> pl.Series:
    """Policy name, with its varying parameters when the sweep grids them:
    ``PSBS[beta=2]``."""
    if not policy_params:
        return frame["policy"]
    labels = []
    for rec in frame.select(["policy"] + policy_params).iter_rows(named=True):
        parts = [
            f"{c.removeprefix('policy_')}={rec[c]:g}"
            if isinstance(rec[c], float)
            else f"{c.removeprefix('policy_')}={rec[c]}"
            for c in policy_params
            if rec[c] is not None
        ]
        labels.append(f"{rec['policy']}[{','.join(parts)}]" if parts else rec["policy"])
    return pl.Series("policy", labels, dtype=pl.String)


def compare(
    results_dir: str | Path,
    baseline: str,
    metric: str | None = None,
    by: list[str] | str | None = None,
    ratio: bool = False,
    confidence: float = CONFIDENCE,
    *,
    manifest: dict[str, Any] | None = None,
) -> pl.DataFrame:
    """Paired comparison of every policy of a results dir with ``baseline``
    (see the module docstring). ``by``: the workload-point columns to report
    per (default: every parameter column that varies in the sweep, other
    than the policies' own ``policy_*`` parameters). Rows of one ``by`` group
    pair up by the full workload point (every non-policy parameter) and the
    replication; a group spanning several workload points pools their pairs.

    Columns: the ``by`` columns, ``policy``, ``baseline``, ``n`` (pairs),
    ``<metric>_mean``, ``baseline_mean``, ``diff`` (or ``ratio``),
    ``ci_low``, ``ci_high``, ``halfwidth``, ``p_value``, ``p_holm``,
    ``significant``, ``identical`` and ``n_effective`` (`paired_stats`), and
    ``dominated``: the metric is a per-job mean dominated by one job in a row
    of the policy or of the baseline (`stats.DOMINATED_NOTE`): the row is a
    flag, not a result. ``metric``: by default the engine's headline metric
    (`query.headline_metric`). Bad input (a baseline or metric that is not in
    the results) is a `UserError` naming it."""
    from schedlab.platform.storage.query import headline_metric, varying_of
    from schedlab.platform.storage.seam import open_store

    root = Path(results_dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such directory")
    store = open_store(root)
    lf = store.scan()
    schema = lf.collect_schema()
    columns = schema.names()
    if manifest is None:  # (a caller that has read it passes it: 10^5 configurations are 27 MB of JSON)
        manifest = store.read_manifest(lean=True) or {}
    params = [c for c in (manifest.get("param_columns") or []) if c in columns]
    if metric is None:
        metric = headline_metric(root, manifest, lf)
    if metric not in columns or metric in params or metric in ("config_id", "replication", "policy", "seed"):
        raise UserError(f"--metric: {metric!r} is not a metric column of {root}")
    if not schema[metric].is_numeric():
        raise UserError(f"--metric: {metric!r} is not numeric")
    instance_cols = [c for c in params if not c.startswith("policy_")]
    _, several = varying_of(lf, params)  # one pass over the parameter columns, the rows not held
    varying = [c for c in params if several[c]]
    if by is None:
        by_cols = [c for c in varying if not c.startswith("policy_")]
    else:
        by_cols = [b.strip() for b in by.split(",")] if isinstance(by, str) else list(by)
        by_cols = [b for b in by_cols if b]
        for b in by_cols:
            if b not in columns:
                raise UserError(f"--by: {b!r} is not a column of {root}")
            if b in ("policy", metric, "replication"):
                raise UserError(f"--by: {b!r} cannot be a group column of a comparison")
    pparams = [c for c in varying if c.startswith("policy_") and c not in by_cols]
    # a pair: the same workload point (the instance parameters that vary; one every row shares tells no
    # pair from another, and a key of ten columns where two vary made the joins of 10^7 rows slow) and replication
    pair = [c for c in instance_cols if c not in by_cols and several[c]] + ["replication"]
    # only the columns the comparison reads (10^7 rows of a 30-column summary: a few columns, issue #42)
    wanted = {"policy", *by_cols, *pair, *pparams, metric, *DOMINANCE.get(metric, ())}
    # kept a scan: the pairs are joined in polars' streaming engine and only their values held (issue #42)
    frame = lf.select([c for c in columns if c in wanted])
    # the arms: each (policy, its gridded parameters) seen, labelled once, in the order the rows give them
    arms = frame.select(["policy", *pparams]).unique(maintain_order=True).collect(engine=SCAN_ENGINE)
    arms = arms.with_columns(arm_labels(arms, pparams).alias("_arm"))
    policies = arms["policy"].unique(maintain_order=True).to_list()
    if pparams:
        frame = frame.join(arms.lazy(), on=["policy", *pparams], how="left", nulls_equal=True, maintain_order="left")
    else:
        frame = frame.with_columns(pl.col("policy").alias("_arm"))
    if baseline not in policies:  # a policy, or one setting of a policy's params as its label names it
        if baseline not in set(arms["_arm"].to_list()):
            raise UserError(f"--baseline: {baseline!r} is not a policy of {root}; policies: {', '.join(policies)}")
        base_arms = [baseline]
    else:
        base_arms = arms.filter(pl.col("policy") == baseline)["_arm"].unique().to_list()
    if len(base_arms) > 1:
        raise UserError(
            f"--baseline: {baseline!r} has {len(base_arms)} parameter settings "
            f"({', '.join(sorted(base_arms))}); name one of them"
        )
    base_arm = base_arms[0]
    flag = dominated_expr(frame.collect_schema().names(), metric)
    frame = frame.with_columns(flag if flag is not None else pl.lit(False).alias(f"{metric}_dominated"))
    data = frame.select(by_cols + [c for c in pair if c not in by_cols] + ["_arm", pl.col(metric).cast(pl.Float64)])
    out = paired_stats(
        data, by_cols, [c for c in pair if c not in by_cols], "_arm", metric, base_arm, ratio, confidence
    )
    est = "ratio" if ratio else "diff"
    flagged = (
        frame.group_by(by_cols + ["_arm"])
        .agg(pl.col(f"{metric}_dominated").any().alias("dominated"))
        .collect(engine=SCAN_ENGINE)
    )
    base_flag = flagged.filter(pl.col("_arm") == base_arm).select(by_cols + [pl.col("dominated").alias("_bd")])
    out = out.join(flagged, on=by_cols + ["_arm"], how="left", nulls_equal=True, maintain_order="left")
    out = (
        out.join(base_flag, on=by_cols, how="left", nulls_equal=True, maintain_order="left")
        if by_cols
        else (out.with_columns(pl.lit(bool(base_flag["_bd"].any())).alias("_bd")))
    )
    out = out.with_columns((pl.col("dominated").fill_null(False) | pl.col("_bd").fill_null(False)).alias("dominated"))
    out = out.drop("_bd").rename({"_arm": "policy", "mean": f"{metric}_mean", "estimate": est})
    out = out.with_columns(pl.lit(base_arm).alias("baseline"))
    head = by_cols + ["policy", "baseline", "n", f"{metric}_mean", "baseline_mean", est]
    return out.select(head + [c for c in out.columns if c not in head])


def method_text(baseline: str, k: int, ratio: bool) -> str:
    return (METHOD_RATIO if ratio else METHOD_DIFF).format(baseline=baseline, k=k)
