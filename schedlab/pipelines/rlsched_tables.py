"""RLScheduler's heuristic table (rlsched_tables.toml: the setting, and why):
our mean bounded slowdowns beside the published ones, paired intervals over
sequences, claims."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from schedlab.pipelines.base import FAILS, HOLDS
from schedlab.pipelines.common import (
    estimate,
    every,
    fmt_ci,
    interval_text,
    judge,
    md,
    paired_ratios,
    paired_row,
)
from schedlab.plotting import save

DOC = tomllib.loads(Path(__file__).with_suffix(".toml").read_text())
COMMIT = " (commit)"  # the label of a policy run with commit = true
POLICIES: list[str] = [p if isinstance(p, str) else p["name"] + COMMIT for p in DOC["every_sweep"]["policies"]]
PUBLISHED: dict[str, Any] = DOC["published"]
#: sweep name prefix -> the trace's name in RLScheduler's tables
TRACES = {"rlsched-lublin1-": "Lublin-1", "rlsched-lublin2-": "Lublin-2", "rlsched-hpc2n-": "HPC2N"}
METRIC = "stretch_mean"  # the batch engine's mean bounded slowdown (tau = 10 s)
#: The paired comparisons the report lists per trace (policy, other).
PAIRS = [
    ("SJF", "FCFS"),
    ("F1", "FCFS"),
    ("F1", "SJF"),
    ("EASY", "FCFS"),
    ("SJF+EASY", "SJF"),
    ("SJF+EASY", "EASY"),
    ("F1+EASY", "EASY"),
    ("F1+EASY", "SJF+EASY"),
    ("SJF", "SJF" + COMMIT),
    ("F1", "F1" + COMMIT),
    ("SJF+EASY", "SJF+EASY" + COMMIT),
]


def trace_of(sweep: str) -> str:
    return next(label for prefix, label in TRACES.items() if sweep.startswith(prefix))


def published(trace: str, policy: str) -> float | None:
    """RLScheduler's value for ``policy`` (``EASY`` is FCFS with backfilling)."""
    if trace not in PUBLISHED:
        return None
    policy = policy.removesuffix(COMMIT)
    base, easy = policy.removesuffix("+EASY"), policy.endswith("+EASY") or policy == "EASY"
    base = "FCFS" if policy == "EASY" else base
    cols = PUBLISHED["columns"]
    return float(PUBLISHED[trace]["easy" if easy else "none"][cols.index(base)]) if base in cols else None


def load_table(results_dirs: dict[str, Path]):
    """(rows: one per trace, policy and sequence; summary: mean, 95 % CI, n per trace and policy)."""
    import polars as pl

    from schedlab import load
    from schedlab.platform.statistics.stats import summarize

    frames = [
        load(d)
        .select(["policy", "policy_commit", "replication", "sequence", METRIC])
        .collect()
        .with_columns(pl.lit(trace_of(name)).alias("trace"))
        for name, d in results_dirs.items()
        if any(name.startswith(prefix) for prefix in TRACES)
    ]
    frame = pl.concat(frames, how="vertical_relaxed")
    committed = pl.col("policy_commit").fill_null(False)
    frame = frame.with_columns(
        pl.when(committed).then(pl.col("policy") + COMMIT).otherwise(pl.col("policy")).alias("policy")
    )
    return frame, summarize(frame, ["trace", "policy"], [METRIC])


def pairs(frame, policy: str, other: str) -> dict[str, dict[str, Any]]:
    """trace -> paired interval of policy / other (geometric mean ratio over sequences)."""
    out = paired_ratios(frame, METRIC, policy, other, ["trace"], ["replication"])
    return {r["trace"]: r for r in out.rows(named=True)}


def _row(summary, trace: str, policy: str) -> dict[str, Any] | None:
    rows = summary.filter((summary["trace"] == trace) & (summary["policy"] == policy)).rows(named=True)
    return rows[0] if rows else None


def traces(summary) -> list[str]:
    return [t for t in TRACES.values() if t in set(summary["trace"].to_list())]


def _pair_rows(summary, got: dict[tuple[str, str], dict[str, Any]]) -> list[list[str]]:
    """Per trace, each pair's paired ratio with its 95 % interval ("–" without one), in ``got``'s order."""
    rows = []
    for t in traces(summary):
        cells = []
        for key in got:
            r = got[key].get(t)
            if r is not None and r["ci_high"] is not None and r["ci_high"] == r["ci_high"]:
                cells.append(f"{r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]")
            else:
                cells.append("–")
        rows.append([t, *cells])
    return rows


def measured(data) -> str:
    frame, summary = data.table
    head = ["trace", "policy", "ours (mean ± 95 % CI)", "published", "ours / published"]
    rows = []
    for t in traces(summary):
        for p in POLICIES:
            r = _row(summary, t, p)
            if r is None:
                continue
            pub = published(t, p)
            mean = r[f"{METRIC}_mean"]
            rows.append(
                [
                    t,
                    p,
                    fmt_ci(mean, r[f"{METRIC}_ci95"]),
                    f"{pub:g}" if pub is not None else "–",
                    f"{mean / pub:.2f}" if pub else "–",
                ]
            )
    n = ", ".join(map(str, sorted(set(summary["n"].to_list()))))
    pair_head = ["trace", *(f"{a} / {b}" for a, b in PAIRS)]
    got = {(a, b): pairs(frame, a, b) for a, b in PAIRS}
    pair_rows = _pair_rows(summary, got)
    return "\n".join(
        [
            md(head, rows),
            "",
            f"Sequences per trace: {n} (the same sequences for every policy); ± is the 95 % CI half-width "
            "(Student t). Published: RLScheduler's README Table V, 10 sequences, their simulator. "
            "SDSC-SP2 is not among the traces at hand.",
            "",
            "Paired comparisons: geometric mean of the per-sequence ratio of mean bounded slowdowns, "
            "[paired 95 % t interval of the mean log ratio] (below 1: the first policy is better):",
            "",
            md(pair_head, pair_rows),
        ]
    )


def _published_panel(ax, trace: str, x, ps: list[str]) -> None:
    """One trace's panel of a Table V figure: the published values as red diamonds over our bars, log scale."""
    pub = [published(trace, p) for p in ps]
    ax.scatter(
        [i for i, v in zip(x, pub) if v],
        [v for v in pub if v],
        color="tab:red",
        marker="D",
        zorder=3,
        label="published",
    )
    ax.set_yscale("log")
    ax.set_xticks(x, ps, rotation=60, fontsize=7)
    ax.set_title(trace)
    ax.grid(True, axis="y", alpha=0.3)


def _finish(fig, axes, path: Path) -> None:
    axes[0][0].set_ylabel("mean bounded slowdown")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    save(fig, path)


def plot(data, path: Path) -> list[str]:
    """Per trace: our means (bars, 95 % CI) and the published values (markers), log scale."""
    import matplotlib.pyplot as plt
    import numpy as np

    _, summary = data.table
    ts = traces(summary)
    fig, axes = plt.subplots(1, len(ts), figsize=(4.2 * len(ts), 3.8), squeeze=False)
    for ax, t in zip(axes[0], ts):
        ps = [p for p in POLICIES if _row(summary, t, p)]
        rows = [_row(summary, t, p) for p in ps]
        x = np.arange(len(ps))
        means = np.array([r[f"{METRIC}_mean"] for r in rows if r])
        ci = np.array([r[f"{METRIC}_ci95"] or 0.0 for r in rows if r])
        low = np.minimum(ci, means - 1.0)  # a bounded slowdown is >= 1
        ax.bar(x, means, yerr=[low, ci], capsize=2, color="tab:blue", label="ours")
        _published_panel(ax, t, x, ps)
    _finish(fig, axes, path)
    return POLICIES


def beats(data, claim):
    """Each ``A / B`` of ``quantity``: the paired 95 % CI of A / B below 1 on every trace (holds),
    wholly at or above 1 on one (fails), else inconclusive (`common.judge`)."""
    frame, summary = data.table
    outcomes, parts = [], []
    for q in claim.quantity.split(", "):
        a, b = q.split(" / ")
        got = pairs(frame, a, b)
        for t in traces(summary):
            r = got.get(t)
            ratio = paired_row(r)
            outcomes.append(judge(ratio, "<", 1.0))
            parts.append(f"{t} {a}/{b} {interval_text(ratio)}" if r else f"{t} {q}: –")
    return claim.verdict(every(outcomes), "; ".join(parts))


def near_published(data, claim):
    """Our mean / the published value within [1 / factor, factor] for the
    policies of ``quantity`` and their +EASY forms on every trace."""
    _, summary = data.table
    factor = 1.0 + claim.tolerance
    outcomes, parts = [], []
    for base in claim.quantity.split(", "):
        forms = [base] if base.endswith(COMMIT) else [base, "EASY" if base == "FCFS" else f"{base}+EASY"]
        for p in forms:
            for t in traces(summary):
                r, pub = _row(summary, t, p), published(t, p)
                if r is None or not pub:
                    continue
                ratio = estimate(r, METRIC) / pub  # our mean's 95 % interval against the published number
                ok = every([judge(ratio, ">=", 1.0 / factor), judge(ratio, "<=", factor)])
                outcomes.append(ok)
                parts.append(f"{t} {p} {interval_text(ratio, '.2f')}" + ("" if ok == "holds" else f" ({ok})"))
    return claim.verdict(every(outcomes), "ours / published: " + ", ".join(parts), factor=factor)


def setting(data) -> dict[str, Any]:
    """Sequences per trace and jobs per sequence, for paper_says."""
    frame, summary = data.table
    return {"sequences": int(summary["n"].max()), "sequence": int(frame["sequence"].max())}


# ---- the trained agent (figure "rl") ---------------------------------------------------------------

RL_SWEEP = "rlsched-rl-lublin1-"
#: The label of a policy run with RLScheduler's backfilling (and its committed pick and passes).
THEIRS = " (RLScheduler)"
RL_POLICIES = ["RL", "EASY", "SJF+EASY", "F1+EASY"]
RL_THEIRS = [p + THEIRS for p in RL_POLICIES]
#: The agent's training record: a data file its code declares (schedlab.gym.train writes it beside agent.py).
TRAINING = "training.json"


def rl_table(results_dirs: dict[str, Path]):
    """(rows of the agent's sweep, summary per policy, the agent's training record)."""
    import polars as pl

    from schedlab import load
    from schedlab.platform.statistics.stats import summarize

    (d,) = [d for name, d in results_dirs.items() if name.startswith(RL_SWEEP)]
    frame = load(d).collect()
    if "policy_backfill" in frame.columns:  # results made before the RLScheduler rows have no such column
        theirs = pl.col("policy_backfill").fill_null("") == "rlscheduler"
        frame = frame.with_columns(pl.when(theirs).then(pl.col("policy") + THEIRS).otherwise(pl.col("policy")))
    frame = frame.select(["policy", "replication", "sequence", METRIC])
    return frame, summarize(frame, ["policy"], [METRIC]), _training(d)


def _rl_pair(frame, policy: str, other: str) -> dict[str, Any] | None:
    rows = paired_ratios(frame, METRIC, policy, other, [], ["replication"]).rows(named=True)
    return rows[0] if rows else None


def rl_measured(data) -> str:
    frame, summary, budget = data.table
    rows = []
    for p in RL_POLICIES + RL_THEIRS:
        r = summary.filter(summary["policy"] == p).rows(named=True)
        if r:
            base = p.removesuffix(THEIRS)
            pub = published("Lublin-1", base) if base != "RL" else float(PUBLISHED["Lublin-1"]["easy"][-1])
            rows.append([p, fmt_ci(r[0][f"{METRIC}_mean"], r[0][f"{METRIC}_ci95"]), f"{pub:g}" if pub else "–"])
    pair_rows = []
    for rl, other in [("RL", o) for o in RL_POLICIES[1:]] + [(RL_THEIRS[0], o) for o in RL_THEIRS[1:]]:
        r = _rl_pair(frame, rl, other)
        if r and r["ci_high"] is not None and r["ci_high"] == r["ci_high"]:
            pair_rows.append(
                [f"{rl} / {other}", f"{r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]", str(r["n"])]
            )
    return "\n".join(
        [
            md(["policy", "ours (mean ± 95 % CI)", "published (Lublin-1, backfilling)"], rows),
            "",
            md(["paired", "geometric mean ratio [95 % CI]", "sequences"], pair_rows),
            "",
            f"Training budget of the agent (its {TRAINING}; {budget.get('method', 'MaskablePPO')}): "
            f"{budget.get('timesteps')} decisions, "
            f"{budget.get('cpu_seconds', float('nan')):.0f} CPU s ({budget.get('wall_seconds', float('nan')):.0f} s "
            f"wall on a shared machine); environment {budget.get('env')}.",
        ]
    )


def _training(results: Path) -> dict[str, Any]:
    """The training record of the agent the sweep ran: its ``training.json``,
    a data file of its code, kept with that code in the results dir
    (``code/<sha256>/``, the store's ``save_code``); {} when none is there."""
    import json

    from schedlab.platform.storage.seam import read_manifest
    from schedlab.platform.storage.store import CODE

    for entry in ((read_manifest(results) or {}).get("user_code") or {}).values():
        path = results / CODE / entry["sha256"] / TRAINING
        if TRAINING in entry.get("files", ()) and path.is_file():
            record: dict[str, Any] = json.loads(path.read_text())
            return record
    return {}


def rl_plot(data, path: Path) -> list[str]:
    """Per-sequence mean bounded slowdown of each policy / the agent's (log scale), with the mean ratio."""
    import matplotlib.pyplot as plt
    import numpy as np

    frame, _, _ = data.table
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    names = []
    for i, other in enumerate(RL_POLICIES[1:]):
        r = _rl_pair(frame, other, "RL")
        if r is None:
            continue
        a = frame.filter(frame["policy"] == other).sort("replication")[METRIC].to_numpy()
        b = frame.filter(frame["policy"] == "RL").sort("replication")[METRIC].to_numpy()
        ax.scatter(np.full(len(a), i) + np.linspace(-0.2, 0.2, len(a)), a / b, s=6, alpha=0.5)
        ax.errorbar(
            [i],
            [r["estimate"]],
            yerr=[[r["estimate"] - r["ci_low"]], [r["ci_high"] - r["estimate"]]],
            fmt="D",
            color="k",
            capsize=4,
        )
        names.append(other)
    ax.axhline(1.0, color="grey", linestyle=":")
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), [f"{n} / RL" for n in names])
    ax.set_ylabel("mean bounded slowdown ratio (same sequence)")
    ax.set_title("Lublin-1, held-out sequences: heuristic / agent")
    ax.grid(True, axis="y", alpha=0.3)
    save(fig, path)
    return names


def rl_beats(data, claim):
    """``RL / X`` of ``quantity``: its paired 95 % CI over sequences below 1 (holds), wholly at or
    above 1 (fails), else inconclusive (`common.judge`)."""
    frame, _, _ = data.table
    a, b = claim.quantity.split(" / ")
    r = _rl_pair(frame, a, b)
    ratio = paired_row(r)
    n = f" over {r['n']} sequences" if r else ""
    return claim.verdict(judge(ratio, "<", 1.0), f"{a} / {b} = {interval_text(ratio)}{n}")


def rl_setting(data) -> dict[str, Any]:
    frame, summary, budget = data.table
    return {
        "sequences": int(summary["n"].max()),
        "sequence": int(frame["sequence"].max()),
        "method": budget.get("method", "MaskablePPO"),  # a record without one: the PPO training of schedlab gym train
        "timesteps": budget.get("timesteps", "?"),
        "cpu_seconds": float(budget.get("cpu_seconds", float("nan"))),
    }


# ---- RLScheduler's setting (figure "table-v-theirs") -------------------------------------------------

THEIRS_SWEEP = "rlsched-theirs-"
#: The heuristics of Table V in its setting, as the sweep names them (EASY: FCFS with its backfilling).
THEIRS_POLICIES = ["FCFS", "WFP3", "UNICEP", "SJF", "F1", "EASY", "WFP3+EASY", "UNICEP+EASY", "SJF+EASY", "F1+EASY"]
#: The log's file name -> the trace's name in Table V.
THEIRS_TRACES = {
    "lublin_256.swf.gz": "Lublin-1",
    "lublin_256_new2.swf.gz": "Lublin-2",
    "HPC2N-2002-2.2-cln.swf.gz": "HPC2N",
}
#: Table V prints two decimals: a mean within half a unit of the last one is the published value.
PUBLISHED_ROUNDING = 0.005
#: The paired comparisons listed for its setting (over its sequences).
THEIRS_PAIRS = [
    ("EASY", "FCFS"),
    ("SJF+EASY", "SJF"),
    ("F1+EASY", "F1"),
    ("SJF", "FCFS"),
    ("F1", "SJF"),
    ("SJF+EASY", "EASY"),
    ("F1+EASY", "EASY"),
    ("F1+EASY", "SJF+EASY"),
]


def theirs_table(results_dirs: dict[str, Path]):
    """(rows: one per trace, policy and sequence, keyed by its first job; summary per trace and policy)."""
    import polars as pl

    from schedlab import load
    from schedlab.platform.statistics.stats import summarize

    (d,) = [d for name, d in results_dirs.items() if name.startswith(THEIRS_SWEEP)]
    frame = (
        load(d)
        .select(["policy", "path", "sequence_start", METRIC])
        .collect()
        .with_columns(
            pl.col("path").map_elements(lambda p: THEIRS_TRACES[Path(p).name], return_dtype=pl.String).alias("trace")
        )
    )
    return frame, summarize(frame, ["trace", "policy"], [METRIC])


def _theirs_pairs(frame, policy: str, other: str) -> dict[str, dict[str, Any]]:
    out = paired_ratios(frame, METRIC, policy, other, ["trace"], ["sequence_start"])
    return {r["trace"]: r for r in out.rows(named=True)}


def theirs_measured(data) -> str:
    frame, summary = data.table
    head = ["trace", "policy", "ours, its setting", "published", "ours / published"]
    rows = []
    for t in traces(summary):
        for p in THEIRS_POLICIES:
            r = _row(summary, t, p)
            if r is None:
                continue
            pub, mean = published(t, p), r[f"{METRIC}_mean"]
            rows.append(
                [t, p, f"{mean:.2f}", f"{pub:.2f}" if pub is not None else "–", f"{mean / pub:.4f}" if pub else "–"]
            )
    pair_rows = _pair_rows(summary, {key: _theirs_pairs(frame, *key) for key in THEIRS_PAIRS})
    n = ", ".join(map(str, sorted(set(summary["n"].to_list()))))
    return "\n".join(
        [
            md(head, rows),
            "",
            f"Sequences per trace: {n}, RLScheduler's own (the mean is over them, as Table V's). "
            "The figure above is our setting on fresh sequences.",
            "",
            "Paired comparisons in its setting, over its sequences: geometric mean of the per-sequence ratio, "
            "[paired 95 % t interval] (below 1: the first policy is better):",
            "",
            md(["trace", *(f"{a} / {b}" for a, b in THEIRS_PAIRS)], pair_rows),
        ]
    )


def theirs_plot(data, path: Path) -> list[str]:
    """Per trace: our means in its setting (bars) and the published values (markers), log scale."""
    import matplotlib.pyplot as plt
    import numpy as np

    _, summary = data.table
    ts = traces(summary)
    fig, axes = plt.subplots(1, len(ts), figsize=(4.2 * len(ts), 3.8), squeeze=False)
    for ax, t in zip(axes[0], ts):
        got = {p: r for p in THEIRS_POLICIES if (r := _row(summary, t, p)) is not None}
        ps = list(got)
        x = np.arange(len(ps))
        ax.bar(x, [got[p][f"{METRIC}_mean"] for p in ps], color="tab:green", label="ours, its setting")
        _published_panel(ax, t, x, ps)
    _finish(fig, axes, path)
    return THEIRS_POLICIES


def equals_published(data, claim):
    """Our mean in its setting within `PUBLISHED_ROUNDING` of the published value, for each heuristic of
    ``quantity`` without and with backfilling, on every trace (a deterministic replay: no interval)."""
    _, summary = data.table
    outcomes, parts = [], []
    for base in claim.quantity.split(", "):
        for p in (base, "EASY" if base == "FCFS" else f"{base}+EASY"):
            for t in traces(summary):
                r, pub = _row(summary, t, p), published(t, p)
                if r is None or pub is None:
                    continue
                mean = r[f"{METRIC}_mean"]
                ok = abs(mean - pub) <= PUBLISHED_ROUNDING
                outcomes.append(HOLDS if ok else FAILS)
                if not ok:
                    parts.append(f"{t} {p} {mean:.2f} (published {pub:g})")
    detail = "; ".join(parts) if parts else f"all {len(outcomes)} means equal the published ones"
    return _over_sequences(claim.verdict(every(outcomes), detail), summary)


def _over_sequences(check, summary):
    """``check`` counted over RLScheduler's sequences: each is a workload point of one replication,
    and they are the instances behind the verdict (the report's replication caveat reads this ``n``)."""
    check.n = int(summary["n"].min())
    return check


def theirs_beats(data, claim):
    """Each ``A / B``: its paired 95 % CI over RLScheduler's sequences below 1 on every trace."""
    frame, summary = data.table
    outcomes, parts = [], []
    for q in claim.quantity.split(", "):
        a, b = q.split(" / ")
        got = _theirs_pairs(frame, a, b)
        for t in traces(summary):
            ratio = paired_row(got.get(t))
            outcomes.append(judge(ratio, "<", 1.0))
            parts.append(f"{t} {a}/{b} {interval_text(ratio)}")
    return _over_sequences(claim.verdict(every(outcomes), "; ".join(parts)), summary)


def theirs_setting(data) -> dict[str, Any]:
    _, summary = data.table
    return {"sequences": int(summary["n"].max())}
