"""What MLflow must hold for a results dir, computed from the disk alone.

`expected_runs` reads ``manifest.json`` and the summary rows and returns, per
configuration with rows, the child run it should have (`Expected`): its name
(the policy and the values that tell it apart, e.g. ``PSBS shape=0.25
sigma=0.5``), params, tags, metric values (for every metric m: its mean under
the plain name ``m``, its 95 % CI half-width as ``m_ci95`` when that is a
positive number, and ``n``; a metric whose replications are identical has no
``m_ci95`` and is named in the tag ``schedlab.identical``, a per-job mean
dominated by one job (`stats.DOMINATED_NOTE`) is not logged at all and is
named in ``schedlab.dominated``: a flag, not a result) and the provenance of those values -- the number of
rows (``schedlab.rows``) and a digest of their replication numbers
(``schedlab.rows_digest``). Comparing
those two tags with the disk is how a run that lags behind Parquet is found
again after any kill. Provenance of user code, when the results dir has it:
``code_sha256`` (the manifest's ``configs[id].code_sha256``) and
``schedlab_digest`` (the distinct values of the rows' ``schedlab_digest``
column, comma-joined).

``polars`` is imported inside functions only.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.errors import UserError

if TYPE_CHECKING:
    import polars as pl

# Columns of a summary row that are neither params nor metrics (`policy` comes
# from the hive path).
ID_COLUMNS = (
    "config_id",
    "replication",
    "engine",
    "workload_kind",
    "seed",
    "policy",
    "schedlab_version",
    "schedlab_digest",
)

CONFIG_TAG = "schedlab.config_id"
ROWS_TAG = "schedlab.rows"
ROWS_DIGEST_TAG = "schedlab.rows_digest"
CODE_TAG = "code_sha256"
#: The metrics whose replications are identical (one sample: no interval), comma-joined.
IDENTICAL_TAG = "schedlab.identical"
#: The per-job means dominated by one job (flagged, their values not logged), comma-joined.
DOMINATED_TAG = "schedlab.dominated"
SCHEDLAB_DIGEST_TAG = "schedlab_digest"
#: Logged last, after params and metrics: a run carries them only once it is complete.
PROVENANCE_TAGS = (ROWS_TAG, ROWS_DIGEST_TAG)

_REPS, _DIGESTS = "__replications", "__schedlab_digests"

#: A run tag's value limit (mlflow.utils.validation.MAX_TAG_VAL_LENGTH): the
#: parent's description is cut to fit, table rows first.
MAX_NOTE = 8000


def engine_headline(manifest: dict[str, Any]) -> tuple[str, ...]:
    """The metrics the parent's table shows for the sweep's engine
    (``Engine.headline``; the first ones the rows have, an adaptive sweep's
    own metric first): none for an engine not loaded in this process."""
    from schedlab.engines import known_engines

    engine = known_engines().get(str(manifest.get("engine", "")))
    return engine.headline if engine is not None else ()


@dataclass
class Expected:
    """One configuration's child run as the disk says it must be."""

    config_id: str
    params: dict[str, str]
    tags: dict[str, str]  # including PROVENANCE_TAGS
    values: dict[str, float]
    n: int
    run_name: str = ""


#: The last manifest `varying_params` read and its answer: the tracker asks
#: once per commit with the same (never mutated) manifest object, and the
#: answer costs a pass over every configuration's params.
_VARYING: list[Any] = [None, []]


def varying_params(manifest: dict[str, Any]) -> list[str]:
    """The parameters whose value differs between the manifest's
    configurations (the sweep's grid axes), in column order."""
    if _VARYING[0] is manifest:
        return list(_VARYING[1])
    configs = list((manifest.get("configs") or {}).values())
    keys = list(dict.fromkeys(k for c in configs for k in (c.get("params") or {})))
    axes = [k for k in keys if len({_same_json((c.get("params") or {}).get(k)) for c in configs}) > 1]
    _VARYING[:] = [manifest, axes]
    return list(axes)


_SCALARS = (str, int, float, bool, type(None))


def _same_json(value: Any) -> tuple[type, str]:
    """A key equal for two values exactly when their JSON text is: a
    scalar's type and repr (JSON tells int 1 from float 1.0 and true from 1,
    and repr is as injective as JSON within a type), a structure's JSON text.
    ``json.dumps`` of every value was a second of `schedlab track` at 10,000
    configurations."""
    kind = type(value)
    if kind in _SCALARS:
        return kind, repr(value)
    return dict, json.dumps(value, sort_keys=True)


def run_name(config: dict[str, Any], varying: Iterable[str]) -> str:
    """``policy k=v ...``: the policy and the values of the sweep's grid axes
    that tell this configuration apart (MLflow's run name; the config id
    stays a tag)."""
    params = config.get("params") or {}
    parts = [str(config.get("policy", ""))]
    parts += [f"{k}={_param_value(params[k])}" for k in varying if k in params]
    return " ".join(p for p in parts if p)


def read_manifest(results_dir: str | Path) -> dict[str, Any]:
    """The sweep's manifest (read by the store); a `UserError` naming the file
    if it is missing or lacks what tracking needs."""
    from schedlab.platform.storage.seam import manifest_path, require_manifest

    path = manifest_path(results_dir)
    manifest = require_manifest(results_dir)
    if not isinstance(manifest, dict):
        raise UserError(f"{path}: expected a JSON object")
    for key in ("name", "configs"):
        if key not in manifest:
            raise UserError(f"{path}: missing field {key!r}")
    return manifest


def metric_columns(schema: Iterable[tuple[str, Any]], param_columns: Iterable[str]) -> list[str]:
    """Every numeric column that is neither an identifier nor a param column."""
    skip = set(ID_COLUMNS) | set(param_columns)
    return [name for name, dtype in schema if name not in skip and dtype.is_numeric()]


def rows_digest(replications: Iterable[int]) -> str:
    """Digest of a configuration's row keys (its sorted replication numbers)."""
    text = ",".join(str(int(r)) for r in sorted(replications))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _aggregate(
    lf: pl.LazyFrame, param_columns: Iterable[str], config_ids: Iterable[str] | None
) -> tuple[pl.DataFrame, list[str]]:
    import polars as pl

    from schedlab.platform.statistics.stats import summarize

    schema = lf.collect_schema()
    metrics = metric_columns(schema.items(), param_columns)
    lf = lf.with_columns(pl.col("config_id").cast(pl.String))
    if config_ids is not None:
        lf = lf.filter(pl.col("config_id").is_in(list(config_ids)))
    # The values must be a function of the rows alone, not of how they lie in part files: floating-point
    # sums depend on order and chunking, so aggregate one contiguous frame in key order (a compaction, a
    # resume that batched rows differently or polars' thread count then give the same bits).
    from schedlab.platform.statistics.stats import DOMINANCE

    needed = [
        "config_id",
        "replication",
        *metrics,
        *(c for m in metrics for c in DOMINANCE.get(m, ()) if c in schema.names()),
        *(["schedlab_digest"] if "schedlab_digest" in schema.names() else []),
    ]
    lf = lf.select(list(dict.fromkeys(needed))).collect().sort("config_id", "replication").rechunk().lazy()
    frame = summarize(lf, by=["config_id"], metrics=metrics)
    keys = [pl.col("replication").cast(pl.Int64).sort().alias(_REPS)]
    if "schedlab_digest" in schema.names():
        keys.append(pl.col("schedlab_digest").cast(pl.String).drop_nulls().unique().sort().alias(_DIGESTS))
    extra = lf.group_by("config_id").agg(keys).collect()
    digests = [rows_digest(r) for r in extra[_REPS].to_list()]
    extra = extra.with_columns(pl.Series("rows_digest", digests, dtype=pl.String)).drop(_REPS)
    return frame.join(extra, on="config_id", how="left"), metrics


def aggregate_summary(
    results_dir: str | Path, param_columns: Iterable[str], config_ids: Iterable[str] | None = None
) -> tuple[pl.DataFrame | None, list[str]]:
    """`stats.summarize` of the summary rows by config_id (restricted to
    ``config_ids`` when given), with each configuration's ``rows_digest``, and
    the metric names; (None, []) if no rows. A damaged part file is a
    `UserError` naming it."""
    import polars as pl

    from schedlab.platform.storage.seam import open_store
    from schedlab.platform.storage.store import SUMMARY, part_schema

    files = open_store(results_dir).files(SUMMARY)
    if not files:
        return None, []
    param_columns = list(param_columns)
    first = part_schema(files[0])
    if all(part_schema(f).equals(first, check_metadata=False) for f in files[1:]):
        lf = pl.scan_parquet(files, hive_partitioning=True)  # one scan (it takes the first file's schema)
    else:
        # Part files whose schemas differ (a metric only some files have, int in one and float in another, a
        # column all null in one): read them one by one, polars finds supertypes -- whichever file comes first.
        lf = pl.concat([pl.scan_parquet(f, hive_partitioning=True) for f in files], how="diagonal_relaxed")
    frame, metrics = _aggregate(lf, param_columns, config_ids)
    return (frame if frame.height else None), metrics


def _number_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _param_value(value: Any) -> str:
    if value is None or isinstance(value, (str, bool, int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True)


def run_contents(
    manifest: dict[str, Any],
    config_id: str,
    row: dict[str, Any],
    metrics: list[str],
    varying: Iterable[str] | None = None,
) -> Expected:
    """The child run of one configuration, from its manifest entry and its
    aggregated row (see `aggregate_summary`); ``varying``: the sweep's grid
    axes (`varying_params`; callers in a loop pass it)."""
    config = manifest["configs"][config_id]
    params = {k: _param_value(v) for k, v in (config.get("params") or {}).items()}
    params.update(
        engine=str(config.get("engine", manifest.get("engine", ""))),
        policy=str(config.get("policy", "")),
        workload_kind=str(config.get("workload_kind", "")),
        config_id=config_id,
    )
    n = int(row["n"])
    tags = {
        CONFIG_TAG: config_id,
        "schedlab.engine": params["engine"],
        "schedlab.policy": params["policy"],
        "schedlab.version": str(manifest.get("schedlab_version", "")),
        "schedlab.spec_hash": str(manifest.get("spec_hash", "")),
    }
    if config.get("code_sha256"):
        tags[CODE_TAG] = str(config["code_sha256"])
    if row.get(_DIGESTS):
        tags[SCHEDLAB_DIGEST_TAG] = ",".join(row[_DIGESTS])
    tags[ROWS_TAG] = str(n)
    tags[ROWS_DIGEST_TAG] = str(row["rows_digest"])
    values: dict[str, float] = {}
    same = [m for m in metrics if row.get(f"{m}_identical")]
    flagged = [m for m in metrics if row.get(f"{m}_dominated")]
    if same:
        tags[IDENTICAL_TAG] = ",".join(same)
    if flagged:
        tags[DOMINATED_TAG] = ",".join(flagged)
    for m in metrics:
        if m in flagged:
            continue
        mean, ci = _number_or_none(row.get(f"{m}_mean")), _number_or_none(row.get(f"{m}_ci95"))
        if mean is not None:
            values[m] = mean
        if ci is not None and ci > 0:  # no interval from one row, none worth a chart for a constant
            values[f"{m}_ci95"] = ci
    values["n"] = float(n)
    name = run_name(config, varying_params(manifest) if varying is None else varying)
    return Expected(config_id, params, tags, values, n, name)


#: Aggregated rows `expected_runs` turns into Python dicts at a time.
ROW_SLICE = 10_000


def expected_runs(
    results_dir: Path, manifest: dict[str, Any], config_ids: Iterable[str] | None = None
) -> tuple[dict[str, Expected], list[str]]:
    """config_id -> `Expected` for every configuration with rows (or those of
    ``config_ids``), and the ids found in the rows but not in the manifest."""
    frame, metrics = aggregate_summary(results_dir, manifest.get("param_columns") or [], config_ids)
    out: dict[str, Expected] = {}
    unknown: list[str] = []
    varying = varying_params(manifest)
    # a slice of the rows as dicts at a time: every row's dict at once was the tracking's peak (issue 42)
    for rows in [] if frame is None else frame.iter_slices(ROW_SLICE):
        for row in rows.to_dicts():
            cid = row["config_id"]
            if cid not in manifest["configs"]:
                unknown.append(cid)
                continue
            out[cid] = run_contents(manifest, cid, row, metrics, varying)
    if (manifest.get("spec") or {}).get("search"):
        _search_tags(results_dir, manifest, out)
    return out, unknown


def _search_tags(results_dir: Path, manifest: dict[str, Any], runs: dict[str, Expected]) -> None:
    """A search's trial runs: their trial number, value, and the sampler's
    best so far after them (``search/trials.json``; tags, which change in
    place as trials are told)."""
    try:
        trials = json.loads((results_dir / "search" / "trials.json").read_text())
    except (OSError, ValueError):
        return
    minimize = (manifest["spec"]["search"].get("direction") or "minimize") == "minimize"
    best: tuple[float, int] | None = None
    for t in sorted(trials, key=lambda t: t["number"]):
        v = t.get("value") if t.get("state") == "complete" else None
        if v is not None and (best is None or (v < best[0] if minimize else v > best[0])):
            best = (float(v), int(t["number"]))
        exp = runs.get(str(t.get("config_id")))
        if exp is None or "schedlab.search.trial" in exp.tags:  # a configuration's first trial names it
            continue
        exp.tags["schedlab.search.trial"] = str(t["number"])
        exp.tags["schedlab.search.state"] = str(t.get("state"))
        if v is not None:
            exp.tags["schedlab.search.value"] = repr(float(v))
        if best is not None and t.get("state") != "running":
            exp.tags["schedlab.search.best_so_far"] = repr(best[0])
            exp.tags["schedlab.search.best_trial"] = str(best[1])


def code_digest(code_dir: Path) -> str | None:
    """Digest of a results dir's ``code/`` folder (relative paths and contents
    of its files), or None when it is absent or empty."""
    if not code_dir.is_dir():
        return None
    h = hashlib.sha256()
    files = sorted(p for p in code_dir.rglob("*") if p.is_file())
    if not files:
        return None
    for p in files:
        h.update(p.relative_to(code_dir).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


def headline_metrics(manifest: dict[str, Any], expected: dict[str, Expected]) -> list[str]:
    """The sweep's headline metrics, at most two: the spec's replication
    metric, then the engine's headline ones (`engine_headline`), those the runs hold (logged,
    or flagged as dominated)."""
    reps = (manifest.get("spec") or {}).get("replications") or {}
    wanted = [reps["metric"]] if reps.get("metric") else []
    wanted += list(engine_headline(manifest))
    have = {k for e in expected.values() for k in e.values} | {
        m for e in expected.values() for m in e.tags.get(DOMINATED_TAG, "").split(",") if m
    }
    return [m for m in dict.fromkeys(wanted) if m in have][:2]


def sweep_note(manifest: dict[str, Any], expected: dict[str, Expected]) -> str:
    """Markdown for the parent run: description, grid axes, a table of the
    headline metrics (mean ± 95 % CI, n) per configuration, the spec."""
    spec = manifest.get("spec") or {}
    axes = varying_params(manifest)
    lines = [str(manifest.get("description") or f"Sweep {manifest.get('name', '')}."), ""]
    lines.append(
        f"**Grid axes:** {', '.join(['policy', *axes]) if axes else 'policy'}; "
        f"**configurations with rows:** {len(expected)}."
    )
    metrics = headline_metrics(manifest, expected)
    rows = []
    if metrics:
        head = ["run", *[f"{m} (mean ± 95 % CI)" for m in metrics], "n"]
        rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for exp in sorted(expected.values(), key=lambda e: e.run_name):
            cells = [exp.run_name]
            same = exp.tags.get(IDENTICAL_TAG, "").split(",")
            flagged = exp.tags.get(DOMINATED_TAG, "").split(",")
            for m in metrics:
                v, ci = exp.values.get(m), exp.values.get(f"{m}_ci95")
                if m in flagged:
                    cells.append("dominated (flagged: not a result)")
                elif v is None:
                    cells.append("")
                elif m in same:
                    cells.append(f"{v:.4g} (identical replications: one sample)")
                else:
                    cells.append(f"{v:.4g}" + (f" ± {ci:.2g}" if ci is not None else ""))
            cells.append(str(exp.n))
            rows.append("| " + " | ".join(cells) + " |")
    from schedlab.platform.statistics.stats import DOMINATED_NOTE, IDENTICAL_NOTE

    notes = [
        note
        for tag, note in ((IDENTICAL_TAG, IDENTICAL_NOTE), (DOMINATED_TAG, DOMINATED_NOTE))
        if any(tag in e.tags for e in expected.values())
    ]
    tail = [*(["", *notes] if notes else []), "", "Spec (result-defining part):", "", "```json"]
    tail += [json.dumps(spec, indent=1, sort_keys=True), "```"]
    body = "\n".join(lines)
    # Rows are dropped from the end until the note fits: a running total, not a sum per row dropped
    # (that was quadratic -- 50 s at 10,000 configurations).
    fixed = len(body) + sum(len(t) + 1 for t in tail) + 120
    width = sum(len(r) + 1 for r in rows)
    keep = len(rows)
    while keep and fixed + width > MAX_NOTE:
        keep -= 1
        width -= len(rows[keep]) + 1
    table = rows[:keep]
    if rows and len(table) < len(rows):
        table = [
            *table,
            "",
            f"(first {max(len(table) - 2, 0)} of {len(rows) - 2} configurations; all of them: `schedlab results`)",
        ]
    text = "\n".join([body, "", *table, *tail])
    return text if len(text) <= MAX_NOTE else text[: MAX_NOTE - 4] + "\n..."
