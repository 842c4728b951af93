"""A selection on the sweep's MLflow parent run: ``selection.json`` as an
artifact and its verdict as tags.

The statistics compute the selection and keep it as a plain record
(``schedlab.platform.statistics.selection``: `read` gives the document a
select-best sweep or a search wrote); what MLflow shows of it -- tag names,
formats, the search's convergence figures -- is tracking's business, built
here from that record. Tags, unlike params, may change as a sweep resumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.platform.planning.plan import canonical
from schedlab.platform.statistics.selection import FILE, read

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

#: Longest value a tag built from a list (winners, parameters) keeps.
TAG_CHARS = 5000


def search_tags(doc: dict[str, Any]) -> dict[str, str]:
    """A search's final selection as tags of its MLflow parent run."""
    tags = {
        "schedlab.selection": str(doc["procedure"]),
        "schedlab.selection.confidence": f"{doc['confidence']:g}",
        "schedlab.selection.conclusive": str(bool(doc.get("conclusive"))).lower(),
        "schedlab.search.trials": str(doc.get("search", {}).get("trials")),
        "schedlab.search.sampler": str(doc.get("search", {}).get("sampler")),
    }
    if doc.get("delta") is not None:
        tags["schedlab.selection.delta"] = f"{doc['delta']:g}"
    w = doc.get("winner")
    if w:
        tags["schedlab.selection.winner_trial"] = str(w["trial"])
        tags["schedlab.selection.winner"] = canonical(w["params"])[:TAG_CHARS]
        tags["schedlab.selection.winner_interval"] = (
            f"{w['mean']:.6g} [{w['low']:.6g}, {w['high']:.6g}] n={w['n']}"
            if w.get("low") is not None and w.get("high") is not None
            else f"{w['mean']:.6g} (no interval) n={w['n']}"
        )
    for key in ("runner_up", "baseline"):
        d = (doc.get(key) or {}).get("difference")
        if d and d.get("mean") is not None and d.get("low") is not None:
            tags[f"schedlab.selection.vs_{key}"] = f"{d['mean']:.6g} [{d['low']:.6g}, {d['high']:.6g}] n={d['n']}"
    return tags


def kn_tags(doc: dict[str, Any]) -> dict[str, str]:
    """A select-best sweep's KN selection (winners per point, KN's constants) as tags."""
    tags = {
        "schedlab.selection": doc["procedure"],
        "schedlab.selection.delta": f"{doc['delta']:g}",
        "schedlab.selection.confidence": f"{doc['confidence']:g}",
        "schedlab.selection.n0": str(doc["n0"]),
    }
    winners = []
    for pt in doc["points"]:
        label = ",".join(f"{k}={v}" for k, v in pt["where"].items())
        winners.append(f"{label}: {pt['winner']}" if label else str(pt["winner"]))
        tags["schedlab.selection.eta"] = f"{pt['eta']:.6g}"
        tags["schedlab.selection.h2"] = f"{pt['h2']:.6g}"
    tags["schedlab.selection.winners"] = "; ".join(winners)[:TAG_CHARS]
    return tags


def log_selection(client: MlflowClient, run_id: str, results_dir: str | Path) -> None:
    """Hook for the tracker: put ``selection.json`` (if the sweep has one) on
    the sweep's MLflow parent run as an artifact, with its tags (`search_tags`
    or `kn_tags`) and, for a search, its convergence figures."""
    doc = read(results_dir)
    if doc is None:
        return
    from mlflow.entities import RunTag

    client.log_artifact(run_id, str(Path(results_dir) / FILE))
    if "search" in doc:  # a search's final selection
        for figure in sorted((Path(results_dir) / "search").glob("convergence.*")):
            client.log_artifact(run_id, str(figure))
        tags = search_tags(doc)
    else:
        tags = kn_tags(doc)
    client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()], synchronous=True)


__all__ = ["TAG_CHARS", "kn_tags", "log_selection", "search_tags"]
