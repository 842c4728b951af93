"""Ranking and selection: Kim & Nelson's fully sequential procedure KN.

Reference: S.-H. Kim and B. L. Nelson, "A fully sequential procedure for
indifference-zone selection in simulation", ACM TOMACS 11(3):251-273, 2001,
procedure KN (§3). It selects the best of k systems with probability at least
1 - alpha whenever the best is at least ``delta`` better than every other
(the indifference zone), for normal data with unknown and unequal variances,
*and under common random numbers*: it works with the variances of the
pairwise differences S^2_il, so the positive correlation CRN induces shrinks
the continuation region. Constants (the paper's, for a comparison of k
systems with a first stage of n0 replications):

    eta  = ((2 alpha / (k - 1)) ** (-2 / (n0 - 1)) - 1) / 2
    h^2  = 2 eta (n0 - 1)
    S^2_il = sample variance of X_ij - X_lj, j = 1..n0   (first stage only)
    W_il(r) = max(0, delta / (2 r) * (h^2 S^2_il / delta^2 - r))

Screening at stage r (largest is best; schedlab negates a metric to minimise):
system i survives if mean_i(r) >= mean_l(r) - W_il(r) for every other
survivor l. Stop when one system is left. Each further stage takes one
replication of every survivor; with ``step`` > 1 screening happens only at
r = n0, n0 + step, ... -- the incorrect-selection event (the best leaving the
continuation region at a screened stage) is then a subset of KN's, so the
guarantee holds. At ``max_n`` replications the procedure is truncated: the
survivor with the best sample mean is named, and the result says that the
guarantee does not cover it.

Two systems whose first r outputs are identical (e.g. GPS and PS with equal
weights make the same schedule) are a tie KN never resolves (S^2 = 0 and equal
means): the later-listed one is dropped as identical -- any of them is a
correct selection.

`kn` is a pure function of the outputs observed so far, so the sweep runner
replays it from the rows on disk after every round (and after a resume).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

SOURCE = (
    "Kim & Nelson (2001), A fully sequential procedure for indifference-zone selection in simulation, "
    "ACM TOMACS 11(3):251-273, procedure KN: eta = ((2 alpha/(k-1))^(-2/(n0-1)) - 1)/2, "
    "h^2 = 2 eta (n0-1), W_il(r) = max(0, delta/(2r) (h^2 S_il^2/delta^2 - r)), S_il^2 from the first n0 "
    "paired differences"
)
FILE = "selection.json"


def kn_constants(k: int, n0: int, confidence: float) -> tuple[float, float]:
    """(eta, h^2) of procedure KN for k systems, first stage n0, PCS 1 - alpha."""
    if k < 2 or n0 < 2 or not 0.0 < confidence < 1.0:
        raise ValueError(f"KN needs k >= 2, n0 >= 2 and 0 < confidence < 1 (k={k}, n0={n0}, confidence={confidence})")
    alpha = 1.0 - confidence
    eta = 0.5 * ((2.0 * alpha / (k - 1)) ** (-2.0 / (n0 - 1)) - 1.0)
    return eta, 2.0 * eta * (n0 - 1)


@dataclass
class Selection:
    """Where procedure KN stands on the outputs seen so far."""

    names: list[str]
    k: int
    n0: int
    delta: float
    confidence: float
    minimize: bool
    eta: float
    h2: float
    survivors: list[str]
    eliminated_at: dict[str, int] = field(default_factory=dict)  # name -> r at the screening that dropped it
    eliminated_by: dict[str, str] = field(default_factory=dict)  # name -> the survivor it fell behind
    order: list[str] = field(default_factory=list)  # elimination order
    r: int = 0  # stage reached (replications of every survivor)
    need: int = 0  # replications every survivor needs next (0: finished)
    winner: str | None = None
    stopped: str | None = None  # "one left", "max reached" or None (still running)
    means: dict[str, float] = field(default_factory=dict)  # at each system's last screened stage
    n: dict[str, int] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.stopped is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "n0": self.n0,
            "delta": self.delta,
            "confidence": self.confidence,
            "alpha": 1.0 - self.confidence,
            "minimize": self.minimize,
            "eta": self.eta,
            "h2": self.h2,
            "winner": self.winner,
            "stopped": self.stopped,
            "replications": self.r,
            "guarantee": (
                "P(correct selection) >= confidence when the best is at least delta better than the rest"
                if self.stopped == "one left"
                else "none: truncated at max; the winner is the best sample mean among the survivors"
                if self.stopped == "max reached"
                else "not finished"
            ),
            "survivors": list(self.survivors),
            "elimination_order": list(self.order),
            "policies": [
                {
                    "policy": nm,
                    "eliminated_at": self.eliminated_at.get(nm),
                    "eliminated_by": self.eliminated_by.get(nm),
                    "n": self.n.get(nm),
                    "mean": self.means.get(nm),
                }
                for nm in self.names
            ],
        }


def kn(
    outputs: Mapping[str, npt.ArrayLike],
    delta: float,
    confidence: float = 0.95,
    n0: int = 10,
    minimize: bool = True,
    step: int = 1,
    max_n: int | None = None,
) -> Selection:
    """Replay procedure KN on ``outputs`` (system name -> its outputs in
    replication order; systems are compared replication by replication, so
    output j of every system must come from the same instance j). Returns
    the state reached: finished, or the number of replications every
    survivor needs before the next screening (``need``)."""
    names = list(outputs)
    k = len(names)
    eta, h2 = kn_constants(k, n0, confidence)
    sel = Selection(names, k, n0, float(delta), float(confidence), bool(minimize), eta, h2, list(names))
    sign = -1.0 if minimize else 1.0
    x = {nm: sign * np.asarray(outputs[nm], dtype=float) for nm in names}
    if any(x[nm].size < n0 for nm in names):
        sel.need = n0
        return sel
    first = np.stack([x[nm][:n0] for nm in names])
    diff = first[:, None, :] - first[None, :, :]
    s2 = diff.var(axis=2, ddof=1)  # S^2_il
    index = {nm: i for i, nm in enumerate(names)}
    r = n0
    while True:
        alive = sel.survivors
        if any(x[nm].size < r for nm in alive):
            sel.need = r
            return sel
        sel.r = r
        means = {nm: float(x[nm][:r].mean()) for nm in alive}
        for nm in alive:
            sel.means[nm] = sign * means[nm]
            sel.n[nm] = r
        dropped: dict[str, str] = {}
        for i_nm in alive:
            i = index[i_nm]
            for l_nm in alive:
                if l_nm == i_nm:
                    continue
                ll = index[l_nm]
                w = max(0.0, delta / (2.0 * r) * (h2 * s2[i, ll] / delta**2 - r))
                if means[i_nm] < means[l_nm] - w:
                    dropped[i_nm] = l_nm
                    break
        # identical systems (a tie KN cannot break): keep the first listed
        for a_pos, a in enumerate(alive):
            if a in dropped:
                continue
            for b in alive[a_pos + 1 :]:
                if b not in dropped and np.array_equal(x[a][:r], x[b][:r]):
                    dropped[b] = f"{a} (identical outputs)"
        survivors = [nm for nm in alive if nm not in dropped]
        if not survivors:  # cannot happen (the best sample mean always survives); kept for safety
            survivors = [max(alive, key=lambda nm: means[nm])]
        for nm in alive:
            if nm in dropped and nm not in survivors:
                sel.eliminated_at[nm] = r
                sel.eliminated_by[nm] = dropped[nm]
                sel.order.append(nm)
        sel.survivors = survivors
        if len(survivors) == 1:
            sel.winner, sel.stopped = survivors[0], "one left"
            return sel
        if max_n is not None and r >= max_n:
            sel.winner = max(survivors, key=lambda nm: means[nm])
            sel.stopped = "max reached"
            return sel
        r = r + step if max_n is None else min(r + step, max_n)


def write(results_dir: str | Path, document: dict[str, Any]) -> Path:
    """Write ``selection.json`` atomically into a results dir."""
    import os
    import tempfile

    root = Path(results_dir)
    path = root / FILE
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".selection-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(
            document,
            fh,
            indent=2,
            sort_keys=False,
            allow_nan=False,
            default=lambda v: None if isinstance(v, float) and math.isnan(v) else str(v),
        )
    os.replace(tmp, path)
    return path


def read(results_dir: str | Path) -> dict[str, Any] | None:
    """The results dir's ``selection.json``, if its spec (manifest) is a
    select-best sweep (a file left by an earlier spec under --fresh is not
    this sweep's)."""
    root = Path(results_dir)
    path = root / FILE
    if not path.exists():
        return None
    from schedlab.errors import UserError
    from schedlab.platform.storage.seam import read_manifest

    try:
        manifest = read_manifest(root)
    except UserError:  # an unreadable manifest: not a selection of this dir's to show
        return None
    if manifest is None:
        return None
    spec = manifest.get("spec") or {}
    if spec.get("replications", {}).get("mode") != "select-best" and not spec.get("search"):
        return None  # neither a select-best sweep nor a search (`schedlab.platform.search.select`)
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def describe(document: dict[str, Any]) -> list[str]:
    """Lines for `schedlab results`: the procedure, its constants, and per
    workload point the winner and the elimination order."""
    c = document
    if "search" in c:  # a search's final selection
        return describe_search(c)
    lines = [
        f"selection ({c['procedure']}; {c['metric']}, {'smaller' if c['minimize'] else 'larger'} is better): "
        f"delta = {c['delta']:g}, 1-alpha = {c['confidence']:g}, n0 = {c['n0']}, step = {c['step']}, "
        f"max = {c['max']}"
    ]
    for pt in c["points"]:
        label = ", ".join(f"{k}={v}" for k, v in pt["where"].items()) or "(one workload point)"
        pol = {p["policy"]: p for p in pt["policies"]}
        order = ", ".join(
            f"{nm} (r={pol[nm]['eliminated_at']}"
            + (
                f", identical to {pol[nm]['eliminated_by'].split(' ')[0]}"
                if "identical" in str(pol[nm].get("eliminated_by"))
                else ""
            )
            + ")"
            for nm in pt["elimination_order"]
        )
        state = {"one left": "selected", "max reached": "best sample mean at max (no PCS guarantee)"}.get(
            pt["stopped"], pt["stopped"] or "not finished"
        )
        lines.append(
            f"  {label}: {pt['winner'] or '–'} {state} after {pt['replications']} replications "
            f"(k = {pt['k']}, eta = {pt['eta']:.4g}, h^2 = {pt['h2']:.4g})"
        )
        if order:
            lines.append(f"    eliminated: {order}")
    return lines


def describe_search(doc: dict[str, Any]) -> list[str]:
    """A search's selection (``schedlab.platform.search.select``) in a few lines
    (`schedlab run`, `schedlab results`)."""
    s = doc.get("search", {})
    better = "smaller" if doc.get("minimize") else "larger"
    lines = [
        f"search: {s.get('trials')} trials ({s.get('sampler')}, {s.get('completed')} completed, "
        f"{s.get('failed')} failed), {s.get('configurations')} configurations x {s.get('replications')} "
        f"replications; {doc['metric']}, {better} is better"
    ]
    w = doc.get("winner")
    if not w:
        lines.append(f"selection: {doc.get('guarantee')}")
        return lines

    def num(v: Any) -> str:
        return "nan" if v is None else f"{v:.6g}"

    def iv(d: dict[str, Any]) -> str:
        if d.get("identical"):
            what = "paired difference" if d.get("paired") else "value"
            return f"{num(d.get('mean'))}, no interval: every {what} equal, one sample (n = {d.get('n')})"
        return f"{num(d.get('mean'))} [{num(d.get('low'))}, {num(d.get('high'))}] (n = {d.get('n')})"

    def setting(p: dict[str, Any]) -> str:
        return ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in p.items())

    params = setting(w["params"])
    lines.append(
        f"selection ({doc['procedure']}; 1-alpha = {doc['confidence']:g}"
        + (f", delta = {doc['delta']:g}" if doc.get("delta") is not None else "")
        + f", fresh replications {doc['first_replication']}..): "
        + ("conclusive" if doc.get("conclusive") else "NOT conclusive")
    )
    ru = doc.get("runner_up")
    lines.append(f"  candidates ({doc['metric']} on the fresh instances; search value in the trial's own):")
    for c in doc.get("candidates") or []:
        role = " (winner)" if c["trial"] == w["trial"] else " (runner-up)" if ru and c["trial"] == ru["trial"] else ""
        lines.append(
            f"    trial {c['trial']}{role} {setting(c['params'])}: {iv(c)}; search {num(c.get('search_value'))}"
        )
    lines.append(f"  winner: trial {w['trial']} {params}: {doc['metric']} {iv(w)}")
    if ru:
        lines.append(f"  vs runner-up trial {ru['trial']} {setting(ru['params'])}: difference {iv(ru['difference'])}")
    b = doc.get("baseline")
    if b:
        lines.append(f"  vs baseline {setting(b['params'])}: {iv(b)}; difference {iv(b['difference'])}")
    lines.append(f"  {doc.get('guarantee')}")
    return lines
