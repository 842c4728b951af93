"""dfrs-period-search (dfrs_period_search.toml: the question, and why): the DFRS
remapping period tuned by `[search]`, beside the paper's grid answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schedlab.pipelines import dfrs_common
from schedlab.pipelines.base import Check
from schedlab.pipelines.common import md
from schedlab.plotting import save, style

METRIC = "degradation"


def specs(doc: dict[str, Any], scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    """One search over the period on the unscaled Lublin set (dfrs_common's workload and cluster)."""
    from schedlab.pipelines.base import deep_merge

    s = doc["scales"][scale]
    spec = {
        "name": f"{doc['name']}-{scale}",
        "engine": "dfrs",
        "seed": doc["seed"],
        "policies": [doc["policy"]],
        "workload": dfrs_common.workload("unscaled", scale),
        "system": {"nodes": dfrs_common.nodes("unscaled", scale), "penalty": dfrs_common.PENALTY, "bound": True},
        "execution": {"task_jobs": 1},
        "search": {
            "sampler": "tpe",
            "metric": METRIC,
            "direction": "minimize",
            "trials": s["trials"],
            "parallel": s["parallel"],
            "replications": s["replications"],
            "params": {"period": {"low": doc["low"], "high": doc["high"], "log": True}},
            "select": {
                "top": s["top"],
                "replications": s["select"],
                "n0": s["n0"],
                "baseline": {"period": doc["paper_period"]},
            },
        },
    }
    return [deep_merge(spec, overrides)]


def table(dirs: dict[str, Path]) -> dict[str, Any]:
    """The search's trials and selection (search/trials.json, selection.json)."""
    (d,) = dirs.values()
    return {
        "trials": json.loads((d / "search" / "trials.json").read_text()),
        "selection": json.loads((d / "selection.json").read_text()),
    }


def plot(data: Any, png: Path) -> list[str]:
    """Each trial's degradation (mean over the common traces) against its period, and the
    selection's candidates and the paper's period on the fresh traces, with their 95 % intervals."""
    import matplotlib.pyplot as plt

    t, sel = data.table["trials"], data.table["selection"]
    with style():
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        done = [x for x in t if x["state"] == "complete"]
        ax.plot(
            [x["params"]["period"] for x in done],
            [x["value"] for x in done],
            "o",
            color="0.5",
            ms=4,
            label=f"trial (mean of {sel['search']['replications']} common traces)",
        )
        for c in sel.get("candidates", []):
            win = c["trial"] == (sel.get("winner") or {}).get("trial")
            if c.get("mean") is None or c.get("low") is None:
                continue
            ax.errorbar(
                [c["params"]["period"]],
                [c["mean"]],
                yerr=[[c["mean"] - c["low"]], [c["high"] - c["mean"]]],
                fmt="D" if win else "s",
                color="C3" if win else "C1",
                capsize=3,
            )
        b = sel.get("baseline")
        if b and b.get("low") is not None:
            ax.errorbar(
                [b["params"]["period"]],
                [b["mean"]],
                yerr=[[b["mean"] - b["low"]], [b["high"] - b["mean"]]],
                fmt="^",
                color="C0",
                capsize=3,
            )
        ax.plot([], [], "s", color="C1", label="top trials, fresh traces (95 %)")
        ax.plot([], [], "D", color="C3", label="selected")
        ax.plot([], [], "^", color="C0", label="paper's answer (600 s), fresh traces")
        ax.set_xscale("log")
        ax.set_xlabel("remapping period (s)")
        ax.set_ylabel("max-stretch degradation from bound")
        ax.legend(loc="best", fontsize="small")
        fig.tight_layout()
        save(fig, png)
    return ["trials", "candidates", "paper"]


def _iv(d: dict[str, Any]) -> str:
    if d.get("mean") is None:
        return "–"
    if d.get("low") is None:
        return f"{d['mean']:.4g} (n = {d['n']})"
    return f"{d['mean']:.4g} [{d['low']:.4g}, {d['high']:.4g}] (n = {d['n']})"


def measured(data: Any) -> str:
    sel = data.table["selection"]
    s = sel["search"]
    rows = [
        [
            f"trial {c['trial']}" + (" (selected)" if c["trial"] == sel["winner"]["trial"] else ""),
            f"{c['params']['period']:.0f}",
            f"{c['search_value']:.4g}",
            _iv(c),
        ]
        for c in sel.get("candidates", [])
    ]
    b = sel.get("baseline")
    if b:
        rows.append(["paper's grid answer", f"{b['params']['period']:.0f}", "–", _iv(b)])
    head = ["setting", "period (s)", f"search value (mean of {s['replications']})", "fresh traces: mean [95 % CI]"]
    lines = [
        f"Search: {s['trials']} trials ({s['sampler']}, {s['parallel']} at a time) x {s['replications']} common "
        f"traces; selection on fresh traces {sel['first_replication']}.. ({sel['procedure']}): "
        f"{'conclusive' if sel.get('conclusive') else 'not conclusive'}.",
        "",
        md(head, rows),
    ]
    for key, label in (("runner_up", "runner-up"), ("baseline", "the paper's 600 s")):
        d = (sel.get(key) or {}).get("difference")
        if d:
            lines += ["", f"Winner - {label}, paired on the fresh traces: {_iv(d)}."]
    return "\n".join(lines)


def paper_answer_stands(data: Any, claim: Any) -> Check:
    sel = data.table["selection"]
    base = sel.get("baseline") or {}
    period = float(base.get("params", {}).get("period", float("nan")))
    d = base.get("difference") or {}
    w = sel.get("winner") or {}
    # the claim is about the interval itself (not significantly beaten: the paired interval of
    # winner - paper's answer not wholly below 0); without an interval nothing can be said
    high = d.get("high")
    outcome = "inconclusive" if high is None or high != high else "fails" if high < 0 else "holds"
    detail = (
        f"winner period {w.get('params', {}).get('period', float('nan')):.0f} s; winner - {period:g} s on "
        f"{d.get('n')} fresh traces: {_iv(d)}"
    )
    return claim.verdict(outcome, detail, paper_period=period)
