"""A search's answer, without the search's optimism.

The best trials' values are optimistic: each was chosen *because* its
instances happened to favour it. So the ``top`` trials (distinct
configurations, best value first, ties by trial number) are run again on
``select.replications`` instances the trials never saw -- replications
``R, R+1, ...`` of the same workload point, R the trials' replications --
and the winner is chosen on those alone:

* with ``delta``: Kim & Nelson's KN (`statistics.selection.kn`, through the
  sweep runner's select-best mode: the same procedure, replayed from the rows
  after every stage, resumable), first stage ``n0``, at most
  ``replications``; *conclusive* when one candidate is left (then P(correct
  selection) >= confidence whenever the best is ``delta`` better than the
  rest); truncated at the maximum it names the best sample mean and says
  the guarantee does not hold;
* without ``delta``: every candidate gets all ``replications``; the winner is
  the best sample mean, and it is *conclusive* when each of the other
  candidates' paired intervals of the difference to it (Bonferroni: level
  1 - alpha / (k - 1)) lies wholly on the worse side of 0.

The report gives the winner's interval (t, at ``confidence``, over its fresh
instances), its paired difference to the runner-up (the last candidate KN
eliminated, else the second-best mean) and to ``baseline`` (a named setting
run on the same fresh instances; unpaired, Welch, when a searched workload
parameter puts it on another workload point).

The intervals are `statistics.stats`'s, the machinery ``schedlab compare``
uses: sums correctly rounded (the same bits in any order), and n equal
values or paired differences are *one* sample (``identical``,
``n_effective`` 1: no interval, not a zero-width one). A comparison whose
interval is degenerate -- no interval, zero width, or ``n_effective`` < 2
-- never makes a selection conclusive, with KN too (its variance estimate
of that pair is 0): the guarantee then says which candidate and why.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from schedlab.platform.planning.spec import ReplicationsSpec
from schedlab.platform.search.space import TrialRecord, workload_key
from schedlab.platform.statistics.selection import SOURCE, kn, write

if TYPE_CHECKING:
    from schedlab.platform.planning.spec import SweepSpec
    from schedlab.platform.storage.seam import ResultsStore


class _Runs(Protocol):
    """What the selection asks of the search loop's runner (``loop._Runs``)."""

    def ids(self, settings: list[dict[str, Any]], reps: ReplicationsSpec) -> list[str]: ...
    def run(self, settings: list[dict[str, Any]], reps: ReplicationsSpec, label: str) -> None: ...


PROCEDURE_KN = "search, then KN (Kim & Nelson 2001) on fresh instances"
PROCEDURE_T = "search, then paired t intervals to the best (Bonferroni) on fresh instances"


def candidates(recs: list[TrialRecord], top: int, minimize: bool) -> list[TrialRecord]:
    """The ``top`` best completed trials, one per configuration (its first trial)."""
    seen: set[str] = set()
    ranked = []
    for r in sorted(
        (r for r in recs if r.state == "complete" and r.value is not None and r.config_id),
        key=lambda r: ((r.value if minimize else -r.value) if r.value is not None else math.inf, r.number),
    ):
        if r.config_id not in seen:
            seen.add(str(r.config_id))
            ranked.append(r)
    return ranked[:top]


def interval(x: list[float], confidence: float) -> dict[str, Any]:
    """Mean and t interval of ``x`` (`stats.mean_sd`: order-independent);
    n equal values are one sample: no interval, ``n_effective`` 1."""
    from schedlab.platform.statistics.stats import identical, mean_sd, t_quantile

    a = np.asarray(x, dtype=float)
    n = int(a.size)
    mean, sd = mean_sd(a)
    same = identical(a)
    half = t_quantile(n, confidence) * sd / math.sqrt(n) if n >= 2 and not same else math.nan
    if same:
        mean = float(a[0])
    return {
        "mean": mean,
        "low": mean - half,
        "high": mean + half,
        "n": n,
        "n_effective": 1 if same else n,
        "identical": same,
    }


def difference(a: list[float], b: list[float], confidence: float, paired: bool) -> dict[str, Any]:
    """Interval of mean(a) - mean(b): paired over their common replications
    (`stats.paired`, as ``schedlab compare``: identical differences are one
    sample, no interval), else Welch's (independent instances; two samples
    each of identical values have no interval either)."""
    from schedlab.platform.statistics.stats import identical, mean_sd
    from schedlab.platform.statistics.stats import paired as paired_t

    if paired:
        n = min(len(a), len(b))
        p = paired_t([x - y for x, y in zip(a[:n], b[:n], strict=True)], confidence)
        return {
            "mean": p.mean,
            "low": p.low,
            "high": p.high,
            "n": p.n,
            "n_effective": p.n_effective,
            "identical": p.identical,
            "paired": True,
        }
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = int(min(xa.size, xb.size))
    same = identical(xa) and identical(xb)
    nan = {"low": math.nan, "high": math.nan, "n": n, "n_effective": 1 if same else n, "identical": same}
    if xa.size < 2 or xb.size < 2:
        return {"mean": math.nan, **nan, "paired": False}
    (ma, sa), (mb, sb) = mean_sd(xa), mean_sd(xb)
    mean = float(ma - mb)
    va, vb = sa * sa / xa.size, sb * sb / xb.size
    se = math.sqrt(va + vb)
    if same or se == 0.0:
        return {"mean": mean, **nan, "paired": False}
    dof = (va + vb) ** 2 / ((va**2 / (xa.size - 1) if va else 0) + (vb**2 / (xb.size - 1) if vb else 0))
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, dof)) * se
    return {
        "mean": mean,
        "low": mean - half,
        "high": mean + half,
        "n": n,
        "n_effective": n,
        "identical": False,
        "paired": False,
    }


def degenerate(d: dict[str, Any]) -> str | None:
    """Why the interval ``d`` (of `interval` or `difference`) cannot decide
    anything, or None when it can: every value or paired difference equal
    (one sample), fewer than two independent samples, no interval, or one
    of zero width."""
    low, high = d.get("low"), d.get("high")
    if d.get("identical"):
        return "every paired difference equal" if d.get("paired") else "every value equal"
    if (d.get("n_effective") or 0) < 2:
        return f"n_eff = {d.get('n_effective') or 0} < 2"
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "no interval"
    if low == high:
        return "a zero-width interval"
    return None


def _outputs(store: ResultsStore, config_ids: list[str], metric: str, first: int) -> dict[str, list[float]]:
    import polars as pl

    from schedlab.platform.statistics.stopping import outputs_prefix as prefix

    if not store.has("summary"):
        return {c: [] for c in config_ids}
    rows = store.scan().select("config_id", "replication", metric).collect()
    rows = rows.with_columns(pl.col(metric).cast(pl.Float64))
    return prefix(rows, config_ids, metric, first)


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def _pair_degenerate(a: list[float], b: list[float]) -> str | None:
    """Why the paired differences of ``a`` and ``b`` cannot separate them
    (`degenerate`), None when they can."""
    return degenerate(difference(a, b, 0.5, paired=True))  # the width's level does not matter here


def _inconclusive(flat: list[tuple[str, str]], entries: list[dict[str, Any]]) -> str:
    """The guarantee of a selection that a degenerate comparison keeps from
    being conclusive: which candidates, with their parameters, and why."""
    by_name = {e["name"]: e for e in entries}
    parts = [f"{nm} ({params_text(by_name[nm]['params'])}): {why}" for nm, why in flat]
    return (
        "inconclusive: no interval separates the winner from " + "; ".join(parts) + " (equal differences are one "
        "sample, not a zero-width interval)"
    )


def params_text(params: dict[str, Any]) -> str:
    """``name=value, ...`` of a setting, floats to 6 significant digits."""
    return ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def select(spec: SweepSpec, store: ResultsStore, recs: list[TrialRecord], runs: _Runs) -> dict[str, Any] | None:
    """Run the final selection (see the module docstring); write and return ``selection.json``."""
    search = spec.search
    if search is None:
        raise ValueError("select needs a spec with [search]")
    sel_spec = search.select
    minimize = search.direction == "minimize"
    R, S, conf = search.replications, sel_spec.replications, sel_spec.confidence
    top = candidates(recs, sel_spec.top, minimize)
    settings = [r.params for r in top]
    base = dict(sel_spec.baseline) if sel_spec.baseline is not None else None
    fixed = ReplicationsSpec(n=S, start=R)
    same_point = len({workload_key(spec, s) for s in settings}) <= 1
    use_kn = sel_spec.delta is not None and same_point and len(top) >= 2
    doc: dict[str, Any] = {
        "procedure": PROCEDURE_KN if use_kn else PROCEDURE_T,
        "source": SOURCE if use_kn else "paired t intervals (Student t), Bonferroni over the k - 1 comparisons",
        "metric": search.metric,
        "minimize": minimize,
        "confidence": conf,
        "delta": sel_spec.delta,
        "n0": sel_spec.n0,
        "max": S,
        "first_replication": R,
        "search": {
            "sampler": search.sampler,
            "trials": len(recs),
            "completed": sum(r.state == "complete" for r in recs),
            "failed": sum(r.state == "fail" for r in recs),
            "parallel": search.parallel,
            "replications": R,
            "seed": spec.seed,
            "configurations": len({r.config_id for r in recs if r.config_id}),
        },
    }
    if sel_spec.delta is not None and not use_kn:
        doc["note"] = (
            "KN needs at least two candidates on common instances"
            if same_point
            else "the candidates are on different workload points (a searched workload parameter): no common "
            "instances for KN; every candidate got all replications, intervals are unpaired (Welch)"
        )
    if not top:
        doc.update(winner=None, conclusive=False, guarantee="none: no trial completed")
        write(store.root, _clean(doc))
        return doc
    if base is not None:
        runs.run([base], fixed, "baseline")
    if use_kn:
        reps = ReplicationsSpec(
            mode="select-best",
            metric=search.metric,
            delta=sel_spec.delta,
            confidence=conf,
            minimize=minimize,
            min=sel_spec.n0,
            max=S,
            start=R,
        )
        runs.run(settings, reps, "selection (KN)")
    else:
        runs.run(settings, fixed, "selection")
    ids = runs.ids(settings, fixed)
    base_id = runs.ids([base], fixed)[0] if base is not None else None
    outs = {  # at most S fresh replications each (rows beyond are a larger earlier selection's)
        c: v[:S] for c, v in _outputs(store, ids + ([base_id] if base_id else []), search.metric, R).items()
    }
    names = [f"trial {r.number}" for r in top]
    x = {names[i]: outs[ids[i]] for i in range(len(top))}
    entries = []
    for i, r in enumerate(top):
        entries.append(
            {
                "name": names[i],
                "trial": r.number,
                "config_id": ids[i],
                "params": r.params,
                "search_value": r.value,
                **interval(x[names[i]], conf),
            }
        )
    kn_doc = None
    if use_kn:
        if sel_spec.delta is None:  # use_kn implies delta
            raise ValueError("KN without delta")
        k_sel = kn(x, sel_spec.delta, conf, sel_spec.n0, minimize, 1, S)
        kn_doc = k_sel.to_dict()
        winner = k_sel.winner or names[0]
        runner = k_sel.order[-1] if k_sel.order else None
        guarantee = kn_doc["guarantee"]
        # KN's variance of a pair whose differences are all equal is 0: its elimination then rests on one sample
        flat = [(nm, why) for nm in names if nm != winner for why in [_pair_degenerate(x[winner], x[nm])] if why]
        conclusive = k_sel.stopped == "one left" and not flat
        if k_sel.stopped == "one left" and flat:
            guarantee = _inconclusive(flat, entries)
    else:
        sign = 1.0 if minimize else -1.0
        means = {nm: (sign * float(np.mean(v)) if v else math.inf) for nm, v in x.items()}
        winner = min(names, key=lambda nm: (means[nm], names.index(nm)))
        others = [nm for nm in names if nm != winner]
        runner = min(others, key=lambda nm: (means[nm], names.index(nm))) if others else None
        level = 1.0 - (1.0 - conf) / max(len(others), 1)
        worse = []
        flat = []
        for nm in others:
            d = difference(x[nm], x[winner], level, same_point)
            why = degenerate(d)
            if why:
                flat.append((nm, why))
            worse.append(not why and (d["low"] > 0 if minimize else d["high"] < 0))
        conclusive = bool(others) and all(worse)
        guarantee = (
            f"each other candidate is worse than the winner with simultaneous confidence >= {conf:g} "
            f"(paired t, Bonferroni over {len(others)} comparisons)"
            if conclusive
            else _inconclusive(flat, entries)
            if flat
            else "not conclusive: some candidate's interval of the difference to the winner contains 0"
        )
    w = names.index(winner)
    for e in entries:  # each candidate's own difference to the winner, for the report (at ``confidence``)
        if e["name"] != winner:
            e["vs_winner"] = difference(x[e["name"]], x[winner], conf, same_point)
    doc["candidates"] = entries
    doc["winner"] = entries[w]
    doc["conclusive"] = conclusive
    doc["guarantee"] = guarantee
    if runner is not None:
        ru = names.index(runner)
        doc["runner_up"] = {
            **entries[ru],
            "difference": difference(x[winner], x[runner], conf, same_point),
        }
    if base is not None and base_id is not None:
        paired = workload_key(spec, base) == workload_key(spec, settings[w])
        doc["baseline"] = {
            "params": base,
            "config_id": base_id,
            **interval(outs[base_id], conf),
            "difference": difference(x[winner], outs[base_id], conf, paired),
        }
    if kn_doc is not None:
        doc["kn"] = kn_doc
    doc["simulations"] = {
        "trials": R * doc["search"]["configurations"],
        "selection": sum(len(v) for v in x.values()) + (len(outs[base_id]) if base_id else 0),
    }
    doc = _clean(doc)
    write(store.root, doc)
    return doc


def report_markdown(doc: dict[str, Any], figure: str | None = None) -> str:
    """``search/report.md``: the selection for people -- every candidate with
    its parameter values, its search value, its mean and interval on the
    fresh instances and its difference to the winner; the winner, the
    runner-up and the baseline with theirs; the guarantee in words."""
    from schedlab.platform.statistics.selection import describe_search

    metric = doc["metric"]
    lines = [f"# Search: {metric}, {'smaller' if doc.get('minimize') else 'larger'} is better", ""]
    lines += ["```", *describe_search(doc), "```", ""]
    cands = doc.get("candidates") or []
    if cands:
        names = list(dict.fromkeys(k for c in cands for k in c["params"]))
        conf = f"{doc['confidence']:.0%}"
        head = ["trial", *names, "search value", f"fresh: mean [{conf} CI]", f"minus the winner [{conf} CI]"]
        rows = []
        win = (doc.get("winner") or {}).get("trial")
        for c in cands:
            role = " (winner)" if c["trial"] == win else ""
            rows.append(
                [
                    f"{c['trial']}{role}",
                    *(_cell(c["params"].get(n)) for n in names),
                    _cell(c.get("search_value")),
                    _interval_text(c),
                    "–" if c["trial"] == win else _interval_text(c.get("vs_winner") or {}),
                ]
            )
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        lines.append("")
    b = doc.get("baseline")
    if b:
        lines += [
            f"Baseline {params_text(b['params'])}: {_interval_text(b)}; winner minus baseline: "
            f"{_interval_text(b['difference'])}.",
            "",
        ]
    lines += [f"Guarantee: {doc.get('guarantee')}.", ""]
    if figure:
        lines += [f"![convergence]({figure})", ""]
    return "\n".join(lines)


def _cell(v: Any) -> str:
    return "–" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v)


def _interval_text(d: dict[str, Any]) -> str:
    if d.get("mean") is None:
        return "–"
    if d.get("identical"):
        what = "paired difference" if d.get("paired") else "value"
        return f"{d['mean']:.6g} (no interval: every {what} equal, n = {d.get('n')})"
    if d.get("low") is None or d.get("high") is None:
        return f"{d['mean']:.6g} (no interval, n = {d.get('n')})"
    return f"{d['mean']:.6g} [{d['low']:.6g}, {d['high']:.6g}] (n = {d.get('n')})"
