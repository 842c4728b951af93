"""RLScheduler's heuristic table (rlsched_tables.toml: the setting, and why):
our mean bounded slowdowns beside the published ones, paired intervals over
sequences, claims; and the trained agent on held-out sequences, which at a
scale with ``held_out = "every"`` are all of them, each once (`specs`), so that
its claims are decided on the exact value (`common.exact`)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from schedlab.pipelines.base import FAILS, HOLDS, WINDOW_COLUMNS
from schedlab.pipelines.common import (
    Estimate,
    estimate,
    every,
    exact,
    fmt_ci,
    interval_text,
    judge,
    md,
    paired_ratios,
    paired_row,
)
from schedlab.pipelines.declare import sweep_specs
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
#: The agent's sweep at a scale with ``held_out = "every"``: every held-out sequence once (`specs`).
RL_EVERY = "rlsched-rl-every-"
#: The label of a policy run with RLScheduler's backfilling (and its committed pick and passes).
THEIRS = " (RLScheduler)"
RL_POLICIES = ["RL", "EASY", "SJF+EASY", "F1+EASY"]
RL_THEIRS = [p + THEIRS for p in RL_POLICIES]
#: The agent's training record: a data file its code declares (schedlab.gym.train writes it beside agent.py).
TRAINING = "training.json"
#: What the members of the agent's population are called where a value over all of them is exact.
HELD_OUT = "held-out sequences"


def specs(doc: dict[str, Any], scale: str, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    """The declared sweeps (`declare.sweep_specs`), the agent's replaced at a scale with
    ``held_out = "every"`` by `every_held_out`: the held-out sequences are a finite population,
    replayed deterministically, so a sample of them drawn with replacement (4,000 draws of 1,977
    sequences: many the same) estimates what running each one once gives exactly."""
    out = sweep_specs(doc, scale, overrides)
    if doc["scales"][scale].get("held_out") != "every":
        return out
    return [every_held_out(spec, scale) if spec["name"].startswith(RL_SWEEP) else spec for spec in out]


def held_out_starts(workload: dict[str, Any]) -> list[int]:
    """The first job of every held-out sequence: each start whose ``sequence`` consecutive jobs lie
    within the first ``sequence_within`` (the starts the drawn sequences are drawn among)."""
    return list(range(int(workload["sequence_within"]) - int(workload["sequence"]) + 1))


def every_held_out(spec: dict[str, Any], scale: str) -> dict[str, Any]:
    """The agent's sweep on every held-out sequence once: ``sequence_start`` the list of them (a grid
    axis: one workload point per sequence) and one replication each (nothing is drawn: another
    replication of a sequence is the same run), named `RL_EVERY` (its rows are not the drawn sweep's)."""
    workload = {**spec["workload"], "sequence_start": held_out_starts(spec["workload"])}
    return {**spec, "name": f"{RL_EVERY}{scale}", "workload": workload, "replications": {"n": 1}}


def rl_table(results_dirs: dict[str, Path]):
    """(rows of the agent's sweep, summary per policy, the agent's training record)."""
    import polars as pl

    from schedlab import load
    from schedlab.platform.statistics.stats import summarize

    (d,) = [d for name, d in results_dirs.items() if name.startswith((RL_SWEEP, RL_EVERY))]
    frame = load(d).collect()
    if "policy_backfill" in frame.columns:  # results made before the RLScheduler rows have no such column
        theirs = pl.col("policy_backfill").fill_null("") == "rlscheduler"
        frame = frame.with_columns(pl.when(theirs).then(pl.col("policy") + THEIRS).otherwise(pl.col("policy")))
    keys = ["policy", "replication", "sequence", "sequence_within", *_starts(frame), METRIC]
    frame = frame.select(keys)
    return frame, summarize(frame, ["policy"], [METRIC]), _training(d)


def _starts(frame) -> list[str]:
    """The column naming a sequence by its first job, when the rows name it (`every_held_out`), else none."""
    return [c for c in WINDOW_COLUMNS if c in frame.columns]


def population(frame) -> int | None:
    """The number of held-out sequences when the rows are every one of them, each once, for every
    policy (`every_held_out`): the trace as it is, the engines and the agent deterministic, so a mean
    over them is the population's own; None when they are draws (or not all there)."""
    import polars as pl

    if "sequence_start" not in frame.columns or frame.height == 0:
        return None
    sizes = frame.select(pl.col("sequence_within") - pl.col("sequence") + 1).unique().to_series().to_list()
    if len(sizes) != 1:
        return None
    every = list(range(sizes[0]))
    by_policy = frame.group_by("policy").agg(pl.col("sequence_start").sort())
    return sizes[0] if all(starts == every for starts in by_policy["sequence_start"].to_list()) else None


def _rl_pair(frame, policy: str, other: str) -> dict[str, Any] | None:
    rows = paired_ratios(frame, METRIC, policy, other, [], ["replication", *_starts(frame)]).rows(named=True)
    return rows[0] if rows else None


def rl_ratio(frame, policy: str, other: str) -> tuple[Estimate, dict[str, Any] | None]:
    """(``policy`` / ``other`` over the held-out sequences -- the geometric mean of the per-sequence
    ratio -- and its paired row): exact when the rows are the whole population (`population`: its
    interval the point), else with its paired 95 % t interval (`paired_row`)."""
    r = _rl_pair(frame, policy, other)
    n = population(frame)
    if r is not None and n is not None and r["n"] == n:
        return exact(r["estimate"], n, HELD_OUT), r
    return paired_row(r), r


#: Decimals of a value over the whole population, at least (exact: its side of the bound is read off it).
EXACT_DECIMALS = 4
#: The bound of the agent's claims (RL / X below 1).
BOUND = 1.0


def exact_digits(v: float, bound: float = BOUND) -> str:
    """An exact value with `EXACT_DECIMALS` decimals, or as many more as show its side of ``bound``
    (0.99995, not 1.0000, for a claim that holds by that much)."""
    for d in range(EXACT_DECIMALS, 17):
        text = f"{v:.{d}f}"
        if v == bound or text != f"{bound:.{d}f}":
            return text
    return repr(v)


def _ratio_text(ratio: Estimate) -> str:
    return f"{exact_digits(float(ratio))} ({ratio.basis})" if ratio.exact else interval_text(ratio)


def rl_measured(data) -> str:
    frame, summary, budget = data.table
    whole = population(frame)
    rows = []
    for p in RL_POLICIES + RL_THEIRS:
        r = summary.filter(summary["policy"] == p).rows(named=True)
        if r:
            base = p.removesuffix(THEIRS)
            pub = published("Lublin-1", base) if base != "RL" else float(PUBLISHED["Lublin-1"]["easy"][-1])
            mean = r[0][f"{METRIC}_mean"]
            ours = f"{mean:.4g}" if whole else fmt_ci(mean, r[0][f"{METRIC}_ci95"])
            rows.append([p, ours, f"{pub:g}" if pub else "–"])
    pair_rows = []
    for rl, other in [("RL", o) for o in RL_POLICIES[1:]] + [(RL_THEIRS[0], o) for o in RL_THEIRS[1:]]:
        ratio, r = rl_ratio(frame, rl, other)
        if r and (ratio.exact or (r["ci_high"] is not None and r["ci_high"] == r["ci_high"])):
            cell = exact_digits(float(ratio)) if ratio.exact else _ratio_text(ratio)
            pair_rows.append([f"{rl} / {other}", cell, str(r["n"])])
    if whole:
        heads = ["ours (mean; exact)", "geometric mean ratio (exact)"]
        over = (
            f"Every one of the {whole:,} {HELD_OUT}, each once (the whole population, replayed deterministically): "
            "the means and ratios are its own, exact, with no interval (nothing is left to sample), and each "
            "claim below is decided by its ratio's side of 1 (at 1 itself, a claim that the agent beats a heuristic "
            "fails)."
        )
    else:
        heads = ["ours (mean ± 95 % CI)", "geometric mean ratio [95 % CI]"]
        over = "Held-out sequences drawn with replacement: means with 95 % t intervals, paired 95 % t intervals."
    return "\n".join(
        [
            md(["policy", heads[0], "published (Lublin-1, backfilling)"], rows),
            "",
            md(["paired", heads[1], "sequences"], pair_rows),
            "",
            over,
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
    """Per-sequence mean bounded slowdown of each policy / the agent's (log scale), with the geometric
    mean ratio (its paired 95 % interval; a point where it is exact: `rl_ratio`)."""
    import matplotlib.pyplot as plt
    import numpy as np
    import polars as pl

    frame, _, _ = data.table
    pair = ["replication", *_starts(frame)]
    agent = frame.filter(pl.col("policy") == "RL").select([*pair, pl.col(METRIC).alias("_rl")])
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    names = []
    for i, other in enumerate(RL_POLICIES[1:]):
        ratio, r = rl_ratio(frame, other, "RL")
        if r is None:
            continue
        same = frame.filter(pl.col("policy") == other).join(agent, on=pair).sort(pair)  # the same sequence
        per = (same[METRIC] / same["_rl"]).to_numpy()
        ax.scatter(np.full(len(per), i) + np.linspace(-0.2, 0.2, len(per)), per, s=6, alpha=0.5)
        v = float(ratio)
        lo, hi = (ratio.low, ratio.high) if np.isfinite([ratio.low, ratio.high]).all() else (v, v)
        ax.errorbar([i], [v], yerr=[[v - lo], [hi - v]], fmt="D", color="k", capsize=4)
        names.append(other)
    ax.axhline(1.0, color="grey", linestyle=":")
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), [f"{n} / RL" for n in names])
    ax.set_ylabel("mean bounded slowdown ratio (same sequence)")
    whole = population(frame)
    ax.set_title(f"Lublin-1, {f'all {whole:,} ' if whole else ''}{HELD_OUT}: heuristic / agent")
    ax.grid(True, axis="y", alpha=0.3)
    save(fig, path)
    return names


def rl_beats(data, claim):
    """``RL / X`` of ``quantity``: its paired 95 % CI over sequences below 1 (holds), wholly at or
    above 1 (fails), else inconclusive (`common.judge`); over the whole held-out population
    (`population`) the value itself decides: below 1 holds, at or above 1 fails (`rl_ratio`)."""
    frame, _, _ = data.table
    a, b = claim.quantity.split(" / ")
    ratio, r = rl_ratio(frame, a, b)
    n = f" over {r['n']} sequences" if r and not ratio.exact else ""
    return claim.verdict(judge(ratio, "<", BOUND), f"{a} / {b} = {_ratio_text(ratio)}{n}")


def rl_setting(data) -> dict[str, Any]:
    """The setting paper_says names: ``held_out``, the sequences the agent was compared on."""
    frame, summary, budget = data.table
    whole, sequence, within = population(frame), int(frame["sequence"].max()), int(frame["sequence_within"].max())
    held_out = (
        f"every one of the {whole:,} sequences of {sequence} consecutive jobs among the held-out first {within:,} "
        "jobs, each once (the whole population, replayed deterministically: its values are exact)"
        if whole
        else f"{int(summary['n'].max())} sequences of {sequence} jobs drawn among the held-out first {within:,} jobs"
    )
    return {
        "held_out": held_out,
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
