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
    from schedlab.platform.storage.store import ResultStore


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


def _t(n: int, confidence: float) -> float:
    from schedlab.platform.statistics.stats import t_quantile

    return t_quantile(n, confidence)


def interval(x: list[float], confidence: float) -> dict[str, Any]:
    """Mean and t interval of ``x``."""
    a = np.asarray(x, dtype=float)
    n = int(a.size)
    mean = float(a.mean()) if n else math.nan
    half = _t(n, confidence) * float(a.std(ddof=1)) / math.sqrt(n) if n >= 2 else math.nan
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def difference(a: list[float], b: list[float], confidence: float, paired: bool) -> dict[str, Any]:
    """Interval of mean(a) - mean(b): paired over their common replications,
    else Welch's (independent instances)."""
    if paired:
        n = min(len(a), len(b))
        out = interval([x - y for x, y in zip(a[:n], b[:n], strict=True)], confidence)
        return {**out, "paired": True}
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size < 2 or xb.size < 2:
        return {"mean": math.nan, "low": math.nan, "high": math.nan, "n": int(min(xa.size, xb.size)), "paired": False}
    va, vb = xa.var(ddof=1) / xa.size, xb.var(ddof=1) / xb.size
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / ((va**2 / (xa.size - 1) if va else 0) + (vb**2 / (xb.size - 1) if vb else 0) or 1e-300)
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, dof)) * se if se > 0 else 0.0
    mean = float(xa.mean() - xb.mean())
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": int(min(xa.size, xb.size)), "paired": False}


def _outputs(store: ResultStore, config_ids: list[str], metric: str, first: int) -> dict[str, list[float]]:
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


def select(spec: SweepSpec, store: ResultStore, recs: list[TrialRecord], runs: _Runs) -> dict[str, Any] | None:
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
        conclusive = k_sel.stopped == "one left"
        runner = k_sel.order[-1] if k_sel.order else None
        guarantee = kn_doc["guarantee"]
    else:
        sign = 1.0 if minimize else -1.0
        means = {nm: (sign * float(np.mean(v)) if v else math.inf) for nm, v in x.items()}
        winner = min(names, key=lambda nm: (means[nm], names.index(nm)))
        others = [nm for nm in names if nm != winner]
        runner = min(others, key=lambda nm: (means[nm], names.index(nm))) if others else None
        level = 1.0 - (1.0 - conf) / max(len(others), 1)
        worse = []
        for nm in others:
            d = difference(x[nm], x[winner], level, same_point)
            worse.append(d["low"] > 0 if minimize else d["high"] < 0)
        conclusive = bool(others) and all(worse)
        guarantee = (
            f"each other candidate is worse than the winner with simultaneous confidence >= {conf:g} "
            f"(paired t, Bonferroni over {len(others)} comparisons)"
            if conclusive
            else "not conclusive: some candidate's interval of the difference to the winner contains 0"
        )
    w = names.index(winner)
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
