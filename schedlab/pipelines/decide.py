"""Claim-driven replications: a pipeline run until every claim is decided or its budget is spent.

A verdict is *inconclusive* when an interval straddles the claim's bound: the
run did not have enough replications to say, which tells a reader nothing of
the paper's claim. `decide_pipeline` (``schedlab pipelines run NAME
--decide``) runs the pipeline as declared, evaluates its claims, and for each
inconclusive one raises the replications of the sweeps that claim reads
(`base.Check.reads`: its panel's sweep, else its figure's ``reads``, else every sweep), doubling
them, then evaluates again -- until each claim holds or fails, or its sweeps
reach the budget of replications per point. A claim that names the policies
it reads (its ``policies``, `declare.Claim`) grows only their configurations
of those sweeps: the grown spec is the sweep's with its policies cut to the
union of what the undecided claims read (a configuration's id does not depend
on the policy list, so the results dir grows, and the declared spec still
resumes on it with nothing to run). The readers pair a policy's replication r
with its baseline's replication r, so a policy with fewer replications has
fewer pairs, never unpaired ones. The new replications are
replications n, n+1, ... of the same workload points, so they are paired with
the old under common random numbers, and a sweep only grows (`run.grown`):
nothing on disk is recomputed. A claim drawn from one sample path is judged
on the share of paths that satisfy it (`Claim.share`), so more replications
decide it too.

The rounds are kept in ``OUT/decide.json`` (per sweep the replications asked
for, ``grown``, and the policies asked of it when not all, ``policies``; per
round the replications each policy of each sweep has and each claim's
verdict; a file of the first format, without ``policies``, grew whole sweeps), written before each round runs: a
run interrupted anywhere resumes with the replications it had asked for, and
the rows on disk are kept. ``report.md`` then gets a section *Replications
per claim*: the replications each claim took, and for a claim still
inconclusive at the budget, how close it came (its interval and bound) and
the replications the trend predicts (`base.Straddle.predicted`, said to be
an extrapolation).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from schedlab.errors import UserError
from schedlab.pipelines.base import INCONCLUSIVE, Check, PipelineResult, Straddle

DECIDE_FILE = "decide.json"
#: Replications per point a claim may take, unless ``--budget`` says otherwise: past 64 a
#: paired interval shrinks by under 30 % per doubling of an already long run.
DEFAULT_BUDGET = 64
#: The section of report.md that says what each claim took.
SECTION = "## Replications per claim"


def read_state(out_dir: Path, scale: str) -> dict[str, Any]:
    """``decide.json`` of an output dir, or a new state (none yet, or one of another scale)."""
    path = Path(out_dir) / DECIDE_FILE
    if path.exists():
        try:
            state = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise UserError(f"{path}:{err.lineno}: not JSON ({err.msg}); remove it to start the rounds anew") from None
        if state.get("scale") == scale:
            return state
    return {"scale": scale, "grown": {}, "policies": {}, "rounds": []}


def write_state(out_dir: Path, state: dict[str, Any]) -> None:
    path = Path(out_dir) / DECIDE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def _reads(check: Check, sweeps: list[str]) -> list[str]:
    """The sweeps (full names) a claim reads."""
    return [s for s in sweeps if not check.reads or any(s.startswith(r) for r in check.reads)]


def _policies(check: Check, counts: dict[str, int]) -> list[str]:
    """The policies of a sweep ({policy: replications}) a claim reads: its ``policies``, else all."""
    return [p for p in check.policies if p in counts] if check.policies else list(counts)


def _took(check: Check, counts: dict[str, int]) -> int:
    """A claim's replications per point on a sweep ({policy: replications}): the most any point of its policies took."""
    return max((counts[p] for p in _policies(check, counts)), default=0)


def _asked(state: dict[str, Any], sweep: str, policies: list[str]) -> int:
    """The replications per point asked of ``policies`` of a sweep by the last growth of it
    (0 when that growth left some of them out). A state file of the first format has
    no ``policies``: its growths were of whole sweeps."""
    kept = state.get("policies", {}).get(sweep)
    return state["grown"].get(sweep, 0) if kept is None or set(policies) <= set(kept) else 0


def decide_pipeline(
    name: str, scale: str, budget: int = DEFAULT_BUDGET, out: str | Path | None = None, **run: Any
) -> PipelineResult:
    """Run ``name`` (`run.run_pipeline`, ``run``: its other arguments), then
    grow the sweeps of its inconclusive claims round by round (doubling, up
    to ``budget`` replications per point) until every claim is decided or
    at its budget; returns the last round's result, its report.md with the
    section `SECTION`."""
    from schedlab.pipelines.run import replications_per_policy, run_pipeline

    if budget < 1:
        raise UserError(f"--budget: {budget} replications per point; give at least 1")
    out_dir = Path(out) if out is not None else Path("results") / "pipelines" / name
    out_dir.mkdir(parents=True, exist_ok=True)
    state = read_state(out_dir, scale)
    if run.get("fresh"):
        state = {"scale": scale, "grown": {}, "policies": {}, "rounds": []}
    state["budget"] = budget
    state.setdefault("policies", {})  # a state file of the first format grew whole sweeps only
    while True:
        write_state(out_dir, state)  # before the round: an interrupted round resumes with what it asked for
        result = run_pipeline(name, scale, out=out_dir, grow=state["grown"], grow_policies=state["policies"], **run)
        run["fresh"] = False
        # the most any point took: an adaptive sweep gives a noisy point up to its max, a quiet one its min
        per_policy = {s: replications_per_policy(d) for s, d in result.results_dirs.items()}
        have = {s: max(counts.values(), default=0) for s, counts in per_policy.items()}
        windowed = {s for s, d in result.results_dirs.items() if replays_windows(d)}
        checks = [c for f in result.figures for c in f.checks]

        claims: dict[str, dict[str, Any]] = {}
        for c in checks:
            n = min((_took(c, per_policy[s]) for s in _reads(c, list(have))), default=0)
            claims[c.claim] = {"outcome": c.outcome, "n": n, "straddle": _straddle(c.straddle)}
        this = {"replications": have, "per_policy": per_policy, "claims": claims, "windowed": sorted(windowed)}
        last = state["rounds"][-1] if state["rounds"] else {"replications": None}
        if (last["per_policy"] == per_policy) if "per_policy" in last else (last["replications"] == have):
            state["rounds"][-1] = this  # the same round again (resumed, or re-run): not a new one
        else:
            state["rounds"].append(this)
        grow: dict[str, int] = {}
        kept: dict[str, list[str] | None] = {}  # per grown sweep, the policies grown (None: all)
        for c in checks:
            if c.outcome != INCONCLUSIVE or not growable(c, claims[c.claim]["n"]):
                continue
            for s in _reads(c, list(have)):
                policies = _policies(c, per_policy[s])
                if s in windowed or not policies:
                    continue
                n = _took(c, per_policy[s])
                target = min(budget, 2 * max(n, 1))
                if n < budget and _asked(state, s, policies) < target:  # asked for before and not grown: stop
                    grow[s] = max(grow.get(s, 0), target)
                    was = kept.get(s, [])
                    kept[s] = None if was is None or not c.policies else list(dict.fromkeys([*was, *policies]))
        if not grow:
            break
        state["grown"] = {**state["grown"], **grow}
        for s, some in kept.items():
            if some is None:
                state["policies"].pop(s, None)
            else:
                state["policies"][s] = some
    write_state(out_dir, state)
    result.report_md.write_text(result.report_md.read_text().rstrip("\n") + "\n\n" + section(state) + "\n")
    return result


def replays_windows(results_dir: Path) -> bool:
    """Whether a sweep's instances are trace windows (a `base.WINDOW_COLUMNS`
    parameter with several values): a replay's instances are its windows, and
    more replications of the same windows are not new instances -- they are
    not grown. A replay of one window (a whole trace) has its instances in
    its replications."""
    import polars as pl

    from schedlab import load
    from schedlab.pipelines.base import WINDOW_COLUMNS
    from schedlab.platform.storage.seam import require_manifest

    manifest = require_manifest(results_dir)
    columns = [c for c in manifest.get("param_columns", []) if c in WINDOW_COLUMNS]
    rows = load(results_dir)
    return any(rows.select(pl.col(c).n_unique()).collect().item() > 1 for c in columns)


def growable(check: Check, n: int) -> bool:
    """Whether more replications can decide an inconclusive claim: it has an
    interval that straddles its bound, or fewer than 2 replications per point
    (no interval yet). One without an interval at 2 or more rests on
    identical replications (a deterministic replay) or a dominated mean:
    more of the same would not change it. An estimate on its bound with an
    interval around it (a share of exactly one half: 1 of 2 samples) has no
    trend to extrapolate, but more samples move it off: it grows too."""
    s = check.straddle
    return n < 2 or (s is not None and (math.isfinite(s.predicted(n)) or on_bound(s)))


def on_bound(s: Straddle) -> bool:
    """An estimate that sits on its bound, inside a finite interval around it."""
    return s.distance == 0 and math.isfinite(s.low) and math.isfinite(s.high) and s.low < s.bound < s.high


def _straddle(s: Straddle | None) -> dict[str, float] | None:
    return None if s is None else {"value": s.value, "low": s.low, "high": s.high, "bound": s.bound}


def section(state: dict[str, Any]) -> str:
    """report.md's `SECTION`: per claim the replications per point of each
    round and its verdicts, then how close each claim still inconclusive came."""
    budget, rounds = state["budget"], state["rounds"]
    lines = [
        SECTION,
        "",
        f"Run with `--decide`: after the declared run, the sweeps each inconclusive claim reads got more "
        f"replications (doubling; replications n, n+1, ... of the same points, paired with the earlier ones "
        f"under common random numbers), until the claim held or failed or reached the budget of {budget} "
        f"replications per point. {len(rounds)} round(s).",
        "",
        "| claim | replications per point (the fewest of the sweeps it reads; of a sweep, the most any point took), "
        "by round | verdicts, by round |",
        "|---|---|---|",
    ]
    last = rounds[-1]["claims"]
    for claim in last:
        seen = [r["claims"][claim] for r in rounds if claim in r["claims"]]
        ns = " → ".join(str(s["n"]) for s in seen)
        outcomes = ", ".join(s["outcome"] for s in seen)
        lines.append(f"| {claim.replace('|', '/')} | {ns} | {outcomes} |")
    first, final = rounds[0]["replications"], rounds[-1]["replications"]
    grown = [s for s in final if s in first and final[s] != first[s]]  # a sweep added since is not grown
    if grown:
        lines += [
            "",
            "Grown: " + ", ".join(f"`{s}` {first.get(s, 0)} → {final[s]}{_only(state, s)}" for s in grown) + " "
            "replications per point (a claim undecided on some of its sweeps only reads those, so only they grow; "
            "a claim that names its policies grows only their configurations).",
        ]
    windowed = rounds[-1].get("windowed", [])
    if windowed:
        lines += [
            "",
            f"Not grown: {', '.join(f'`{w}`' for w in windowed)}, whose instances are trace windows (more "
            "replications of the same windows are not new instances; more windows would be).",
        ]
    open_ = [(c, s) for c, s in last.items() if s["outcome"] == INCONCLUSIVE]
    if open_:
        lines += ["", f"Still inconclusive ({len(open_)}):", ""]
        for claim, s in open_:
            lines.append(f"- {claim}: {closeness(s['n'], s['straddle'])}")
    return "\n".join(lines)


def _only(state: dict[str, Any], sweep: str) -> str:
    """' (policies A, B only; C, D at 1200)' when the last growth of a sweep was of some of its
    policies (`decide_pipeline`'s ``policies``); '' when it was of the whole sweep."""
    grew = state.get("policies", {}).get(sweep)
    counts = state["rounds"][-1].get("per_policy", {}).get(sweep, {})
    if not grew:
        return ""
    rest: dict[int, list[str]] = {}
    for p, n in counts.items():
        if p not in grew:
            rest.setdefault(n, []).append(p)
    others = "".join(f"; {', '.join(ps)} at {n}" for n, ps in sorted(rest.items()))
    return f" (policies {', '.join(grew)} only{others})"


def closeness(n: int, straddle: dict[str, float] | None) -> str:
    """How close an inconclusive claim came at ``n`` replications per point, and what the trend predicts."""
    if straddle is None or not (math.isfinite(Straddle(**straddle).predicted(n)) or on_bound(Straddle(**straddle))):
        return (
            f"at {n} replications per point no interval could be formed (see its verdict above): its values, or "
            "the pairs it compares, are identical in every replication (a deterministic replay, or two policies "
            "that schedule alike) or its mean is dominated by one job, so more replications would not decide it; "
            "its rounds stopped there."
        )
    s = Straddle(**straddle)
    text = (
        f"at {n} replications per point the estimate {s.value:.4g} has the interval [{s.low:.4g}, {s.high:.4g}] "
        f"around the bound {s.bound:.4g} (distance {s.distance:.3g}; the interval reaches {s.reach:.3g} towards it)"
    )
    predicted = s.predicted(n)
    if not math.isfinite(predicted):
        return text + "; no budget can be extrapolated (the estimate sits on the bound, or has no interval)."
    return (
        f"{text}; the trend predicts it decided at about {math.ceil(predicted):,} replications per point "
        f"(an extrapolation: n × (reach / distance)², as if the estimate stayed put and the interval "
        f"shrank as 1/√n)."
    )
