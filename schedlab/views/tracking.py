"""Pictures in MLflow: the sweep's headline figure on its parent run (``run``,
with tracking on) and a schedule page on its configuration's child run
(``view --log``). Both find the runs the tracker made by their tags
(``schedlab.sweep`` on the parent, ``schedlab.config_id`` on a child); a
failure here is reported by the caller as a warning: pictures never fail a
sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.errors import UserError
from schedlab.platform.tracking.sync import FIGURES_DIR  # the headline figure's folder on the parent run

#: Artifact folder of schedule pages on a child run.
VIEWS_DIR = "views"


def _client_and_runs(uri: str | None, experiment: str, sweep: str) -> tuple[Any, list[Any]]:
    from mlflow.tracking import MlflowClient

    from schedlab.platform.tracking.mirror import SWEEP_TAG
    from schedlab.platform.tracking.store import resolve_uri

    client = MlflowClient(tracking_uri=resolve_uri(uri))
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise UserError(
            f"MLflow has no experiment {experiment!r} (run the sweep with tracking on, or `schedlab track`)"
        )
    runs = client.search_runs(
        [exp.experiment_id], f"tags.`{SWEEP_TAG}` = '{sweep}'", max_results=1, order_by=["attributes.start_time ASC"]
    )
    return client, [exp.experiment_id, *runs]


def headline_axes(manifest: dict[str, Any], columns: list[str]) -> tuple[str, str, str | None] | None:
    """(metric, x, facet) of the sweep's headline figure: the first of the
    spec's replication metric and the engine's headline metrics that the rows
    have, against the first grid axis (faceted by the second); None when the
    sweep has no axis to draw along, or more than two (a figure would have to
    average over one)."""
    from schedlab.platform.tracking.data import engine_headline, varying_params

    spec = manifest.get("spec") or {}
    wanted = [m for m in [(spec.get("replications") or {}).get("metric")] if m]
    wanted += list(engine_headline(manifest))
    metric = next((m for m in wanted if m in columns), None)
    axes = [a for a in varying_params(manifest) if not a.startswith("policy_") and a in columns]
    if metric is None or not axes or len(axes) > 2:
        return None
    return metric, axes[0], axes[1] if len(axes) == 2 else None


def headline_figure(results_dir: str | Path) -> list[Path]:
    """Draw ``schedlab plot`` of the sweep's headline metric (`headline_axes`):
    [its PNG, its PDF], or [] when the sweep has nothing to draw. The run
    hands these to its tracker, which adds them to the parent run."""
    from schedlab.platform.storage.seam import open_store
    from schedlab.plotting import plot

    store = open_store(results_dir)
    manifest = store.read_manifest() or {}
    axes = headline_axes(manifest, store.scan().collect_schema().names())
    if axes is None:
        return []
    metric, x, facet = axes
    result = plot(results_dir, x=x, y=metric, facet=facet)
    return [Path(result.png), Path(result.vector)]


def log_headline(results_dir: str | Path, uri: str | None, experiment: str, sweep: str) -> Path | None:
    """Draw the headline figure (`headline_figure`) and log its PNG and PDF
    to the sweep's parent run, found in MLflow by its tag; the figure's
    path, or None when the sweep has nothing to draw. (A run passes the
    figure to its tracker instead; this serves a search's results.)"""
    figures = headline_figure(results_dir)
    if not figures:
        return None
    client, found = _client_and_runs(uri, experiment, sweep)
    parents = [r for r in found[1:] if "mlflow.parentRunId" not in r.data.tags]
    if not parents:
        raise UserError(f"MLflow has no parent run of sweep {sweep!r}")
    for p in figures:
        client.log_artifact(parents[0].info.run_id, str(p), artifact_path=FIGURES_DIR)
    return figures[0]


def log_page(page: Path, uri: str | None, experiment: str, sweep: str, config_id: str) -> str:
    """Add ``page`` to the child run of ``config_id``; returns the run id."""
    from schedlab.platform.tracking.data import CONFIG_TAG

    client, found = _client_and_runs(uri, experiment, sweep)
    runs = client.search_runs([found[0]], f"tags.`{CONFIG_TAG}` = '{config_id}'", max_results=2)
    if not runs:
        raise UserError(f"MLflow has no run of configuration {config_id} in experiment {experiment!r}")
    client.log_artifact(runs[0].info.run_id, str(page), artifact_path=VIEWS_DIR)
    return str(runs[0].info.run_id)
