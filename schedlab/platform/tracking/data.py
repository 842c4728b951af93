"""What MLflow must hold for a results dir, computed from the disk alone.

`expected_runs` reads ``manifest.json`` and the summary rows and returns, per
configuration with rows, the child run it should have (`Expected`, made a
block of configurations at a time and never all held: `ExpectedRuns`): its name
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

import functools
import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
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
    # One streamed pass (a lean manifest's configurations are read from disk, never all held): per
    # parameter, how many configurations have it and up to two of its distinct values; a configuration
    # without it counts as null, as ``params.get(k)`` would.
    total = 0
    having: dict[str, int] = {}
    distinct: dict[str, set[tuple[type, str]]] = {}
    for config in (manifest.get("configs") or {}).values():
        total += 1
        for k, v in (config.get("params") or {}).items():
            having[k] = having.get(k, 0) + 1
            seen = distinct.setdefault(k, set())
            if len(seen) < 2:
                seen.add(_same_json(v))
    absent = _same_json(None)
    axes = [k for k, seen in distinct.items() if len(seen | ({absent} if having[k] < total else set())) > 1]
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


def read_manifest(results_dir: str | Path, lean: bool = True) -> dict[str, Any]:
    """The sweep's manifest (read by the store); a `UserError` naming the file
    if it is missing or lacks what tracking needs. ``lean`` (tracking's
    default): its ``configs`` read from disk on demand where the store can
    (`OnDiskConfigs`: 16 bytes a configuration held, not about 2 KB parsed;
    `ExpectedRuns` reads a block of entries at a time)."""
    from schedlab.platform.storage.seam import manifest_path, require_manifest

    path = manifest_path(results_dir)
    manifest = require_manifest(results_dir, lean)
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


@functools.lru_cache(maxsize=8)
def _metric_columns(metrics: tuple[str, ...]) -> tuple[tuple[str, str, str, str, str], ...]:
    """(metric, its identical, dominated, mean and ci95 columns) of each
    metric: named once a sweep, not once a run."""
    return tuple((m, f"{m}_identical", f"{m}_dominated", f"{m}_mean", f"{m}_ci95") for m in metrics)


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
    config: dict[str, Any] | None = None,
) -> Expected:
    """The child run of one configuration, from its manifest entry and its
    aggregated row (see `aggregate_summary`); ``varying``: the sweep's grid
    axes (`varying_params`; callers in a loop pass it); ``config``: its
    manifest entry, when the caller read it (a block at a time)."""
    if config is None:
        config = manifest["configs"][config_id]
    # Made once per run on every pass that reads the runs (log, verify, results table): kept to plain
    # loops and dict lookups (`_metric_columns` names the columns once a sweep).
    given = {k: v if type(v) is str else _param_value(v) for k, v in (config.get("params") or {}).items()}
    policy = str(config.get("policy", ""))
    params = {
        **given,
        "engine": str(config.get("engine", manifest.get("engine", ""))),
        "policy": policy,
        "workload_kind": str(config.get("workload_kind", "")),
        "config_id": config_id,
    }
    n = int(row["n"])
    tags = {
        CONFIG_TAG: config_id,
        "schedlab.engine": params["engine"],
        "schedlab.policy": policy,
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
    columns = _metric_columns(tuple(metrics))
    same: list[str] = []
    flagged: list[str] = []
    for m, identical, dominated, _, _ in columns:
        if row.get(identical):
            same.append(m)
        if row.get(dominated):
            flagged.append(m)
    if same:
        tags[IDENTICAL_TAG] = ",".join(same)
    if flagged:
        tags[DOMINATED_TAG] = ",".join(flagged)
    for m, _, _, mean_column, ci_column in columns:
        if flagged and m in flagged:
            continue
        mean, ci = row.get(mean_column), row.get(ci_column)
        if mean is not None and mean == mean:  # not null, not NaN
            values[m] = float(mean)
        if ci is not None and ci > 0:  # no interval from one row, none worth a chart for a constant (NaN > 0 is false)
            values[ci_column] = float(ci)
    values["n"] = float(n)
    axes = varying_params(manifest) if varying is None else varying
    # MLflow's run name: the policy and the values of the grid axes that tell this configuration apart
    name = " ".join(p for p in [policy, *(f"{k}={given[k]}" for k in axes if k in given)] if p)
    return Expected(config_id, params, tags, values, n, name)


#: Aggregated rows `ExpectedRuns` turns into `Expected` at a time.
ROW_SLICE = 10_000


class ExpectedRuns(Mapping[str, Expected]):
    """config_id -> `Expected` of every configuration with rows (or of those
    asked for), made from the aggregated rows a block at a time and never all
    held: what is kept is the aggregated frame (sorted by config id, a few
    hundred bytes a configuration in Arrow's columns), not one `Expected`
    (about 3.7 KB of Python objects) per configuration -- a 10^6 sweep's were
    several GB of a `schedlab track` (issue 42). Each configuration's
    manifest entry is read with its block (`OnDiskConfigs.entries`).

    Made again on every read: a caller that walks them all (`values`,
    `blocks`) makes each once; `some` makes a block of given ids. Equal to a
    dict of the same runs (``Mapping.__eq__``)."""

    def __init__(
        self,
        frame: pl.DataFrame | None,
        metrics: list[str],
        manifest: dict[str, Any],
        extra_tags: dict[str, dict[str, str]] | None = None,
        reread: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        import polars as pl

        self.frame = (
            frame.sort("config_id") if frame is not None else pl.DataFrame({"config_id": []}, {"config_id": pl.String})
        )
        self.ids = self.frame["config_id"]
        self.metrics, self.manifest = metrics, manifest
        self.varying = varying_params(manifest)
        #: tags some configurations have besides their rows' (a search's trials, `_search_tags`)
        self.extra_tags = extra_tags or {}
        #: the manifest read again, when a search or a grown resume wrote it since (a lean manifest's
        #: lines moved: `OnDiskConfigs.stale`); configurations are only ever added to it
        self.reread = reread
        self._overview: Overview | None = None

    def __len__(self) -> int:
        return self.frame.height

    def __iter__(self) -> Iterator[str]:
        for ids in self.ids.to_frame().iter_slices(ROW_SLICE):
            yield from ids["config_id"].to_list()

    def _positions(self, cids: list[str]) -> list[int]:
        """The rows of ``cids`` that have one (their order kept)."""
        import polars as pl

        if not cids or not self.frame.height:
            return []
        wanted = pl.Series(cids, dtype=pl.String)
        at = self.ids.search_sorted(wanted, side="left").to_list()
        n = self.frame.height
        found = self.ids.gather([min(i, n - 1) for i in at]).to_list()
        return [i for i, cid, got in zip(at, cids, found, strict=True) if i < n and got == cid]

    def __contains__(self, cid: object) -> bool:
        return isinstance(cid, str) and bool(self._positions([cid]))

    def lacking(self, cids: Iterable[str]) -> list[str]:
        """Those of ``cids`` without rows here, found at once (not one search each)."""
        import polars as pl

        wanted = pl.Series(list(cids), dtype=pl.String)
        return wanted.filter(~wanted.is_in(self.ids.implode())).to_list()

    def __getitem__(self, cid: str) -> Expected:
        got = self.some([cid])
        if cid not in got:
            raise KeyError(cid)
        return got[cid]

    def some(self, cids: Iterable[str]) -> dict[str, Expected]:
        """The runs of those of ``cids`` that have rows, made as one block."""
        at = self._positions(list(cids))
        return {e.config_id: e for e in self._made(self.frame[at])} if at else {}

    def blocks(self, size: int | None = None) -> Iterator[list[Expected]]:
        """Every run, in config-id order, ``size`` (default `ROW_SLICE`) at a time."""
        for rows in self.frame.iter_slices(size or ROW_SLICE):
            yield self._made(rows)

    def values(self) -> Iterator[Expected]:  # type: ignore[override]
        for block in self.blocks():
            yield from block

    def items(self) -> Iterator[tuple[str, Expected]]:  # type: ignore[override]
        for block in self.blocks():
            for exp in block:
                yield exp.config_id, exp

    def _entries(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The manifest entries of ``ids``: a lean manifest's lines read at once
        (`OnDiskConfigs.entries`), read again from a manifest written since."""
        for attempt in range(2):
            configs = self.manifest["configs"]
            many = getattr(configs, "entries", None)
            if many is None:
                return {cid: configs[cid] for cid in ids}
            if self.reread is not None and configs.stale():
                self.manifest = self.reread()
                continue
            try:
                return dict(many(ids))
            except RuntimeError:  # written between the check and the read
                if self.reread is None or attempt:
                    raise
                self.manifest = self.reread()
        return {cid: self.manifest["configs"][cid] for cid in ids}

    def _made(self, rows: pl.DataFrame) -> list[Expected]:
        dicts = rows.to_dicts()
        ids = [row["config_id"] for row in dicts]
        entries = self._entries(ids)
        manifest = self.manifest
        out = []
        for cid, row in zip(ids, dicts, strict=True):
            exp = run_contents(manifest, cid, row, self.metrics, self.varying, entries[cid])
            extra = self.extra_tags.get(cid)
            if extra:
                exp.tags.update(extra)
            out.append(exp)
        return out

    def overview(self) -> Overview:
        """`overview_of` these runs, made once (one pass over them, unless
        the verify gathered it: `adopt`)."""
        if self._overview is None:
            self._overview = _overview_pass(self)
        return self._overview

    def key_order(self) -> list[str]:
        """The keys a run's values can have, in the order `run_contents` gives them."""
        return [k for m in self.metrics for k in (m, f"{m}_ci95")] + ["n"]

    def adopt(self, gathered: Gathering) -> None:
        """Take the `Overview` gathered while every run was made for another
        reason (the verify), when it holds every run: then no pass of its own."""
        if gathered.count == len(self):
            self._overview = gathered.overview(self.key_order())
        else:
            gathered.drop()


@dataclass
class Overview:
    """What describing a sweep's runs needs of all of them at once, from one
    pass (`overview_of`): the parent's note, the saved view and the results
    table then make only the runs they show, a block at a time."""

    #: every key of the runs' values: for `ExpectedRuns` in `ExpectedRuns.key_order` (each metric's
    #: mean, its CI half-width, then n: not the order the runs were met in), else as first met
    value_keys: list[str]
    #: the metrics some run flags as dominated (`DOMINATED_TAG`)
    dominated: set[str]
    #: which of `IDENTICAL_TAG` and `DOMINATED_TAG` some run carries
    marks: set[str]
    policies: set[str]
    #: every param name some run has
    param_keys: set[str]
    #: the config ids in run-name order (ties by config id), as a column (`in_blocks` reads it)
    order: pl.Series
    #: the results table's rows written as the runs were gathered (`tracking_ui.TableRows`), and
    #: each row's (offset, length) there in the order above; None where they were not written
    rows: Any = None
    places: tuple[pl.Series, pl.Series] | None = None


def overview_of(expected: Mapping[str, Expected]) -> Overview:
    """The `Overview` of ``expected``: `ExpectedRuns.overview` (made once),
    else one pass over its values."""
    return expected.overview() if isinstance(expected, ExpectedRuns) else _overview_pass(expected)


def _overview_pass(expected: Mapping[str, Expected]) -> Overview:
    gathered = Gathering()
    for exp in expected.values():
        gathered.add(exp)
    return gathered.overview(expected.key_order() if isinstance(expected, ExpectedRuns) else None)


class Gathering:
    """An `Overview` gathered run by run, wherever every run is made anyway
    (`_overview_pass`; the verify, which makes each run to compare it:
    `ExpectedRuns.adopt`), with the results table's rows written on the way
    when ``rows`` is given (`tracking_ui.TableRows`). The run-name order is
    sorted as Arrow strings (not a Python tuple a run: 200 MB at 10^6)."""

    def __init__(self, rows: Any = None) -> None:
        self.keys: dict[str, None] = {}
        self.dominated: set[str] = set()
        self.marks: set[str] = set()
        self.policies: set[str] = set()
        self.params: set[str] = set()
        self.rows = rows
        self.names: list[str] = []
        self.ids: list[str] = []
        self.places: list[tuple[int, int]] = []
        self.parts: list[pl.DataFrame] = []
        self.count = 0

    def add(self, exp: Expected) -> None:
        self.count += 1
        self.keys.update(dict.fromkeys(exp.values))
        flagged = exp.tags.get(DOMINATED_TAG)
        if flagged:
            self.dominated.update(m for m in flagged.split(",") if m)
        self.marks.update(tag for tag in (IDENTICAL_TAG, DOMINATED_TAG) if tag in exp.tags)
        self.policies.add(exp.params.get("policy", ""))
        self.params.update(exp.params)
        self.names.append(exp.run_name)
        self.ids.append(exp.config_id)
        if self.rows is not None:
            self.places.append(self.rows.add(exp))
        if len(self.ids) >= ROW_SLICE:
            self._flush()

    def _flush(self) -> None:
        import polars as pl

        if self.ids:
            columns: dict[str, Any] = {"name": self.names, "id": self.ids}
            if self.rows is not None:
                columns["at"] = [a for a, _ in self.places]
                columns["size"] = [n for _, n in self.places]
            self.parts.append(pl.DataFrame(columns, schema=self._schema()))
            self.names, self.ids, self.places = [], [], []

    def _schema(self) -> dict[str, type]:
        return {**_ORDER_SCHEMA, **({"at": int, "size": int} if self.rows is not None else {})}

    def overview(self, key_order: list[str] | None = None) -> Overview:
        """The gathered `Overview`; ``key_order``: the values' keys in this
        order (those it lacks last, as they came), so that the order does not
        depend on the order the runs were gathered in."""
        import polars as pl

        self._flush()
        frame = pl.concat(self.parts) if self.parts else pl.DataFrame(schema=self._schema())
        frame = frame.sort("name", "id")
        keys = list(self.keys)
        if key_order is not None:
            rank = {k: i for i, k in enumerate(key_order)}
            keys.sort(key=lambda k: rank.get(k, len(rank)))
        places = (frame["at"], frame["size"]) if self.rows is not None else None
        return Overview(keys, self.dominated, self.marks, self.policies, self.params, frame["id"], self.rows, places)

    def drop(self) -> None:
        """Let go of the rows written (not adopted)."""
        if self.rows is not None:
            self.rows.close()
            self.rows = None


_ORDER_SCHEMA: dict[str, type] = {"name": str, "id": str}


def some_of(expected: Mapping[str, Expected], cids: Iterable[str]) -> dict[str, Expected]:
    """The runs of those of ``cids`` that ``expected`` has, as one block
    (`ExpectedRuns.some`; a dict's are looked up)."""
    if isinstance(expected, ExpectedRuns):
        return expected.some(cids)
    return {cid: expected[cid] for cid in cids if cid in expected}


def lacking_of(expected: Mapping[str, Expected], cids: Iterable[str]) -> list[str]:
    """Those of ``cids`` that ``expected`` lacks (`ExpectedRuns.lacking`)."""
    if isinstance(expected, ExpectedRuns):
        return expected.lacking(cids)
    return [cid for cid in cids if cid not in expected]


def in_blocks(expected: Mapping[str, Expected], ids: pl.Series, size: int = ROW_SLICE) -> Iterator[Expected]:
    """The runs of ``ids`` (every one in ``expected``) in that order, made a block at a time."""
    for start in range(0, len(ids), size):
        block = ids.slice(start, size).to_list()
        got = some_of(expected, block)
        yield from (got[c] for c in block)


def expected_runs(
    results_dir: Path, manifest: dict[str, Any], config_ids: Iterable[str] | None = None
) -> tuple[ExpectedRuns, list[str]]:
    """config_id -> `Expected` for every configuration with rows (or those of
    ``config_ids``), as `ExpectedRuns`, and the ids found in the rows but not
    in the manifest."""
    frame, metrics = aggregate_summary(results_dir, manifest.get("param_columns") or [], config_ids)
    unknown: list[str] = []
    if frame is not None:
        known = _known(manifest["configs"], frame["config_id"])
        if not known.all():
            unknown = frame.filter(~known)["config_id"].to_list()
            frame = frame.filter(known)
    extra = _search_tags(results_dir, manifest) if (manifest.get("spec") or {}).get("search") else {}
    return ExpectedRuns(frame, metrics, manifest, extra, lambda: read_manifest(results_dir)), unknown


def _known(configs: Mapping[str, Any], ids: pl.Series) -> pl.Series:
    """Which of ``ids`` the manifest's configurations hold: a lean manifest's
    sorted id numbers searched at once (`OnDiskConfigs.ids`), else each looked up."""
    import numpy as np
    import polars as pl

    numbers_of = getattr(configs, "ids", None)
    if numbers_of is None:
        return pl.Series([cid in configs for cid in ids.to_list()], dtype=pl.Boolean)
    from schedlab.platform.storage.keyset import id_numbers

    numbers, hexed = id_numbers(ids.to_arrow())
    held = numbers_of()
    at = np.minimum(np.searchsorted(held, numbers), max(len(held) - 1, 0))
    found = hexed & (held[at] == numbers) if len(held) else np.zeros(len(ids), dtype=bool)
    others = np.flatnonzero(~hexed).tolist()  # ids not 16 hex digits: looked up one by one
    if others:
        names = ids.gather(others).to_list()
        found[others] = [cid in configs for cid in names]
    return pl.Series(found, dtype=pl.Boolean)


def _search_tags(results_dir: Path, manifest: dict[str, Any]) -> dict[str, dict[str, str]]:
    """A search's trial runs: their trial number, value, and the sampler's
    best so far after them (``search/trials.json``; tags, which change in
    place as trials are told), per config id."""
    try:
        trials = json.loads((results_dir / "search" / "trials.json").read_text())
    except (OSError, ValueError):
        return {}
    minimize = (manifest["spec"]["search"].get("direction") or "minimize") == "minimize"
    best: tuple[float, int] | None = None
    out: dict[str, dict[str, str]] = {}
    for t in sorted(trials, key=lambda t: t["number"]):
        v = t.get("value") if t.get("state") == "complete" else None
        if v is not None and (best is None or (v < best[0] if minimize else v > best[0])):
            best = (float(v), int(t["number"]))
        cid = str(t.get("config_id"))
        if cid in out:  # a configuration's first trial names it
            continue
        tags = out[cid] = {"schedlab.search.trial": str(t["number"]), "schedlab.search.state": str(t.get("state"))}
        if v is not None:
            tags["schedlab.search.value"] = repr(float(v))
        if best is not None and t.get("state") != "running":
            tags["schedlab.search.best_so_far"] = repr(best[0])
            tags["schedlab.search.best_trial"] = str(best[1])
    return out


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


def headline_metrics(manifest: dict[str, Any], expected: Mapping[str, Expected]) -> list[str]:
    """The sweep's headline metrics, at most two: the spec's replication
    metric, then the engine's headline ones (`engine_headline`), those the runs hold (logged,
    or flagged as dominated)."""
    reps = (manifest.get("spec") or {}).get("replications") or {}
    wanted = [reps["metric"]] if reps.get("metric") else []
    wanted += list(engine_headline(manifest))
    seen = overview_of(expected)
    have = set(seen.value_keys) | seen.dominated
    return [m for m in dict.fromkeys(wanted) if m in have][:2]


#: Runs `sweep_note` makes at a time for its table (it shows the first hundred or so).
NOTE_BLOCK = 500


def _note_row(exp: Expected, metrics: list[str]) -> str:
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
    return "| " + " | ".join(cells) + " |"


def sweep_note(manifest: dict[str, Any], expected: Mapping[str, Expected]) -> str:
    """Markdown for the parent run: description, grid axes, a table of the
    headline metrics (mean ± 95 % CI, n) per configuration in run-name
    order, as many rows as fit in `MAX_NOTE` (the runs made only for those),
    the spec."""
    spec = manifest.get("spec") or {}
    axes = varying_params(manifest)
    lines = [str(manifest.get("description") or f"Sweep {manifest.get('name', '')}."), ""]
    lines.append(
        f"**Grid axes:** {', '.join(['policy', *axes]) if axes else 'policy'}; "
        f"**configurations with rows:** {len(expected)}."
    )
    seen = overview_of(expected)
    metrics = headline_metrics(manifest, expected)
    from schedlab.platform.statistics.stats import DOMINATED_NOTE, IDENTICAL_NOTE

    notes = [
        note for tag, note in ((IDENTICAL_TAG, IDENTICAL_NOTE), (DOMINATED_TAG, DOMINATED_NOTE)) if tag in seen.marks
    ]
    tail = [*(["", *notes] if notes else []), "", "Spec (result-defining part):", "", "```json"]
    tail += [json.dumps(spec, indent=1, sort_keys=True), "```"]
    body = "\n".join(lines)
    # The longest run of rows (headers first) that fits: rows are made and added until the next would not.
    room = MAX_NOTE - (len(body) + sum(len(t) + 1 for t in tail) + 120)
    table: list[str] = []
    whole = True
    if metrics:
        head = ["run", *[f"{m} (mean ± 95 % CI)" for m in metrics], "n"]
        rows = iter(
            [
                "| " + " | ".join(head) + " |",
                "|" + "---|" * len(head),
            ]
        )
        made = (_note_row(exp, metrics) for exp in in_blocks(expected, seen.order, NOTE_BLOCK))
        for row in itertools.chain(rows, made):
            if len(row) + 1 > room:
                whole = False
                break
            table.append(row)
            room -= len(row) + 1
    if not whole:
        shown = max(len(table) - 2, 0)
        table = [*table, "", f"(first {shown} of {len(expected)} configurations; all of them: `schedlab results`)"]
    text = "\n".join([body, "", *table, *tail])
    return text if len(text) <= MAX_NOTE else text[: MAX_NOTE - 4] + "\n..."
