"""PSBS Fig. 15 (psbs_ircache.toml): one panel per web-proxy log, the claims checked per panel.

Your own IRCache (Squid) access.log replaces both panels with one: pass a
``workload.path`` override, e.g.::

    from schedlab.pipelines.run import run_pipeline
    run_pipeline("psbs-ircache", "quick",
                 overrides={"workload": {"path": "/data/ircache/sd.sanitized-access.20070109.gz"}})

(other keys in ``overrides`` are merged into the spec as for every pipeline;
``workload.reader`` defaults to ``"squid"``)."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

from schedlab.pipelines.common import md_table, ratio_panels

DOC = tomllib.loads(Path(__file__).with_suffix(".toml").read_text())
FIGURE = DOC["figures"][0]
SQUID, BU98 = (s["workload"]["path"] for s in DOC["sweeps"])
OWN_TITLE = FIGURE["own_title"]


def specs(doc, scale, overrides):
    """The two logs' sweeps; with a ``workload.path`` override, one squid sweep of that log."""
    from schedlab.pipelines.declare import sweep_specs

    if "path" in (overrides.get("workload") or {}):
        own = copy.deepcopy(doc["sweeps"][0])
        own["name"] = "psbs-ircache-{scale}"
        del own["workload"]["path"]
        doc = {**doc, "sweeps": [own]}
    return sweep_specs(doc, scale, overrides)


def panel_title(spec_name: str) -> str:
    return next((p["title"] for p in FIGURE["panels"] if spec_name.startswith(p["sweep"])), OWN_TITLE)


def report(declared, dirs, out_dir):
    import polars as pl

    from schedlab.pipelines.base import FigureReport
    from schedlab.pipelines.declare import FigureData, aggregate

    plot = FIGURE["plot"]
    tables, panels, measured, found = [], [], [], []
    for i, (name, results_dir) in enumerate(dirs.items()):
        t = aggregate(FIGURE["table"], results_dir)
        title = panel_title(name)
        tables.append(t.with_columns(pl.lit(i).alias("panel")))
        panels.append(("panel", i, f"{title} (load 0.9)"))
        measured.append(
            f"**{title}** — MST / optimal (SRPT), per replication then averaged:\n\n"
            + md_table(t, plot["x"], plot["series"], plot["y"])
        )
        found += declared.checks(FIGURE, FigureData(t, {}, {name: results_dir}, FIGURE), title=title)
    png = out_dir / FIGURE["png"]
    series = ratio_panels(pl.concat(tables, how="diagonal_relaxed"), png, plot["x"], plot["series"], panels)
    return [
        FigureReport(
            key=FIGURE["key"],
            title=FIGURE["title"],
            png=png,
            series=series,
            paper_says=FIGURE["paper_says"],
            measured="\n\n".join(measured),
            checks=found,
        )
    ]
