"""What MLflow's web UI shows of a sweep: where it opens, which columns, in
which order, and the link schedlab prints after a tracked run.

MLflow 3's UI opens an experiment in one of two modes. Its router reads the
URL parameter ``workflowType`` (``genai`` or ``machine_learning``), else a
toggle remembered in the browser, else GenAI: an empty "Traces" overview.
An experiment tagged ``mlflow.experimentKind = custom_model_development``
(`EXPERIMENT_KIND_TAG`, set on every experiment schedlab creates or finds)
goes to its Runs tab when opened from its address without a tab, and the
link schedlab prints also carries ``workflowType=machine_learning``.

The Runs table nests child runs under their parent (collapsed) only when it
is sorted by start time with no search filter (MLflow's ``nestChildren``
rule in its experiment page): sorted by a metric, every configuration run is
a row of its own. MLflow loads a saved view from an experiment tag
``mlflow.sharedViewState.<key>`` when the URL has ``viewStateShareKey=<key>``:
schedlab writes one (`VIEW_KEY`, `view_state`) that sorts by the sweep's
headline metric and shows the grid axes and that metric as columns, and the
printed link opens it (`experiment_url`). Without the link, one click on a
metric column's header does the same (docs/guide/tracking.md).

The results table of the parent run (`results_csv`) is the same rows as the
child runs: one line per configuration, its grid values and metrics.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

from schedlab.platform.tracking.data import (
    CONFIG_TAG,
    Expected,
    headline_metrics,
    in_blocks,
    overview_of,
    varying_params,
)
from schedlab.platform.tracking.store import is_http, sqlite_path

#: MLflow's experiment tag that says what the experiment is for; its UI opens
#: a "custom model development" (machine learning) experiment on its Runs.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"
#: The saved view's key: experiment tag ``mlflow.sharedViewState.schedlab``.
VIEW_KEY = "schedlab"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
#: What ``mlflow ui`` listens on unless told otherwise (its ``--host``/``--port`` defaults).
DEFAULT_UI = "http://127.0.0.1:5000"
#: Grid axes the saved view shows as columns and charts (the first ones; more make neither readable).
MAX_VIEW_AXES = 12
#: The saved view's length limit: an experiment tag's value (mlflow.utils.validation.MAX_EXPERIMENT_TAG_VAL_LENGTH).
MAX_VIEW = 20000
#: The parent run's results table (an artifact at its root).
RESULTS_CSV = "results.csv"


def _column(kind: str, key: str) -> str:
    """A column's key in MLflow's UI state (its ``makeCanonicalSortKey``)."""
    return f"{kind}.`{key}`"


def view_state(manifest: dict[str, Any], expected: Mapping[str, Expected]) -> str:
    """The saved view (JSON) of the sweep's experiment: sorted by the
    headline metric (ascending unless a search maximizes it), every run a row
    (no nesting: not sorted by time), the grid axes (and the policy, when
    several) as parameter columns, the headline metrics with their CI
    half-widths and ``n`` as metric columns, every run drawn in the charts."""
    metrics = headline_metrics(manifest, expected)
    seen = overview_of(expected)
    axes = [a for a in varying_params(manifest) if a in seen.param_keys][:MAX_VIEW_AXES]
    if len(seen.policies) > 1:
        axes = ["policy", *axes]
    have = set(seen.value_keys)
    shown = [m for head in metrics for m in (head, f"{head}_ci95") if m in have] + ["n"]
    search = (manifest.get("spec") or {}).get("search") or {}
    columns = [_column("params", a) for a in axes] + [_column("metrics", m) for m in shown]
    state: dict[str, Any] = {
        "selectedColumns": columns,
        "columnOrder": columns,
        "runsHiddenMode": "SHOW_ALL",
    }
    if metrics:
        state["orderByKey"] = _column("metrics", metrics[0])
        state["orderByAsc"] = (search.get("direction") or "minimize") != "maximize"
        numeric = [a for a in axes if a != "policy"]
        state["compareRunSections"] = [{"uuid": SECTION, "name": "schedlab", "display": True, "isReordered": False}]
        state["compareRunCharts"] = _charts(numeric or axes, metrics)
    text = json.dumps(state, sort_keys=True)
    if len(text) > MAX_VIEW:  # very long parameter names: the table's view without the charts
        state.pop("compareRunCharts", None)
        state.pop("compareRunSections", None)
        text = json.dumps(state, sort_keys=True)
    if len(text) > MAX_VIEW:  # still too long: sorted by the metric, MLflow's own columns
        state["selectedColumns"] = state["columnOrder"] = [_column("metrics", m) for m in shown]
        text = json.dumps(state, sort_keys=True)
    return text


#: The saved view's chart section and charts (fixed ids: the view is a function of the rows).
SECTION = "schedlab-sweep"
#: Runs a chart draws (MLflow's per-chart ``runsCountToCompare``; its default is 10).
CHART_RUNS = 1000


def _charts(axes: list[str], metrics: list[str]) -> list[dict[str, Any]]:
    """The saved view's charts (MLflow's chart cards): parallel coordinates
    of the grid axes and the headline metrics, and a scatter of the first
    headline metric against each axis (at most three).
    MLflow reads a parameter as a number when at least half the runs' values
    parse as one (its parallel-coordinates rule): schedlab logs numbers as
    Python writes them (``0.25``), which JavaScript's ``Number`` parses."""
    base = {"deleted": False, "isGenerated": False, "metricSectionId": SECTION, "runsCountToCompare": CHART_RUNS}
    charts: list[dict[str, Any]] = []
    if axes:
        charts.append(
            {
                **base,
                "uuid": "schedlab-parallel",
                "type": "PARALLEL",
                "displayName": "grid axes and " + ", ".join(metrics),
                "selectedParams": axes,
                "selectedMetrics": metrics,
                "showAllRuns": True,
            }
        )
    for axis in axes[:3]:
        charts.append(
            {
                **base,
                "uuid": f"schedlab-scatter-{axis}",
                "type": "SCATTER",
                "displayName": f"{metrics[0]} vs {axis}",
                "xaxis": {"key": axis, "type": "PARAM"},
                "yaxis": {"key": metrics[0], "type": "METRIC"},
            }
        )
    return charts


def experiment_url(ui: str, experiment_id: str) -> str:
    """The address of the experiment's runs in MLflow's UI at ``ui``, in the
    saved view and in machine-learning mode (not the GenAI overview). The
    Runs tab is named: MLflow's redirect from an experiment's bare address
    to a tab keeps only its time and mode parameters, not the view's key."""
    query = f"viewStateShareKey={VIEW_KEY}&workflowType=machine_learning"
    return f"{ui.rstrip('/')}/#/experiments/{experiment_id}/runs?{query}"


def browse_hint(uri: str, experiment_id: str) -> str:
    """What to open to see the experiment: the link itself for a tracking
    server (it serves the UI); for a database, the ``mlflow ui`` command
    that serves it and the link it will answer on."""
    if is_http(uri):
        return experiment_url(uri, experiment_id)
    path = sqlite_path(uri)
    store = f"sqlite:///{path.resolve()}" if path is not None else uri
    return f"`mlflow ui --backend-store-uri {store}`, then {experiment_url(DEFAULT_UI, experiment_id)}"


def artifact_root(uri: str) -> str | None:
    """Where a new experiment's artifacts go: beside a SQLite store
    (``mlflow.db`` -> ``mlflow-artifacts/`` in its folder), ``mlflow-artifacts/``
    in the working directory for another database; None for a server (its
    own ``--artifacts-destination`` decides)."""
    if is_http(uri):
        return None
    path = sqlite_path(uri)
    folder = path.resolve().parent if path is not None else Path.cwd()
    return str(folder / "mlflow-artifacts")


def _table_row(exp: Expected, axes: list[str], keys: list[str]) -> list[str]:
    values = [repr(exp.values[m]) if m in exp.values else "" for m in keys]
    params = [exp.params.get(a, "") for a in axes]
    return [exp.run_name, exp.tags.get(CONFIG_TAG, exp.config_id), exp.params.get("policy", ""), *params, *values]


class TableRows:
    """The results table's rows, written as the final verify makes each run
    (in the store's order, every value key a run can have: `ExpectedRuns.key_order`)
    to an unnamed temporary file, where `results_csv` then reads them in
    run-name order with only the keys some run holds: the table without
    making every run once more (at 10^6, about 45 s). Each row's place in
    the file is kept with the run-name order (`Gathering.add`: 12 bytes a run)."""

    def __init__(self, axes: list[str], keys: list[str]) -> None:
        import tempfile

        self.axes, self.keys = axes, keys
        self.file = tempfile.TemporaryFile(prefix="schedlab-table-")  # noqa: SIM115 - kept open until dropped
        self.at = 0
        self._text = io.StringIO()
        self._writer = csv.writer(self._text, lineterminator="\n")

    def add(self, exp: Expected) -> tuple[int, int]:
        """Write ``exp``'s row; (its offset, its length in bytes)."""
        self._writer.writerow(_table_row(exp, self.axes, self.keys))
        data = self._text.getvalue().encode()
        self._text.seek(0)
        self._text.truncate()
        self.file.write(data)
        where = (self.at, len(data))
        self.at += len(data)
        return where

    def write(self, out: TextIO, places: Iterable[tuple[int, int]], keys: list[str]) -> None:
        """The rows at ``places`` (in that order) to ``out``, with the value
        columns of ``keys`` (a subsequence of the keys written) only."""
        import mmap

        self.file.flush()
        fixed = 3 + len(self.axes)
        picked = list(range(fixed)) + [fixed + self.keys.index(k) for k in keys]
        whole = keys == self.keys
        writer = csv.writer(out, lineterminator="\n")
        if not self.at:
            return
        with mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for start, size in places:
                text = mm[start : start + size].decode()
                if whole:
                    out.write(text)
                    continue
                row = next(csv.reader(io.StringIO(text)))
                writer.writerow([row[i] for i in picked])

    def close(self) -> None:
        self.file.close()


def results_csv(manifest: dict[str, Any], expected: Mapping[str, Expected], out: TextIO) -> None:
    """One line per configuration (in run-name order) written to ``out``:
    run name, config id, policy, the grid axes, then every metric the runs
    hold (means, CI half-widths, n) -- the child runs' values as a table.
    The rows the final verify wrote (`TableRows`, when it saw every run
    and the grid axes are still the same) are read back in that order;
    otherwise the runs are made a block at a time in that order (`data.in_blocks`)."""
    seen = overview_of(expected)
    axes = [a for a in varying_params(manifest) if a != "policy"]
    metrics = seen.value_keys
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "config_id", "policy", *axes, *metrics])
    rows = seen.rows
    if isinstance(rows, TableRows) and rows.axes == axes and set(metrics) <= set(rows.keys) and seen.places is not None:
        out.flush()
        rows.write(out, zip(seen.places[0].to_list(), seen.places[1].to_list(), strict=True), metrics)
        return
    for exp in in_blocks(expected, seen.order):
        writer.writerow(_table_row(exp, axes, metrics))
