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
    return next((p["name"] for p in FIGURE["panels"] if spec_name.startswith(p["sweep"])), OWN_TITLE)


def report(declared, dirs, out_dir):
    """The declared figure, its panels (one per log, or the user's own log) titled by name and load."""
    panels = FIGURE["panels"] if len(dirs) > 1 else [{"sweep": "psbs-ircache-", "name": OWN_TITLE}]
    what = "MST / optimal (SRPT), per replication then averaged"
    panels = [{**p, "title": f"{p['name']} (load 0.9)", "caption": f"**{p['name']}** — {what}"} for p in panels]
    return [declared.figure_report({**FIGURE, "panels": panels}, dirs, out_dir)]
