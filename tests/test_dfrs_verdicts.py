"""How dfrs-table reads its verdicts: the averages of a whole fixed set (HPC2N's
182 weeks, every one run) are exact; a ratio of two algorithms' averages is
judged on its paired interval over the set's instances; a rank correlation is
read from the ranks each average can take (`rank_ranges`, `rho_range`)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from schedlab.pipelines import dfrs_common as dc
from schedlab.pipelines import dfrs_table
from schedlab.pipelines.common import bounds

#: How far a computed rho may sit outside its bounds: float summation only.
RHO_TOL = 1e-12


def stats_table(n: dict[str, int]) -> pl.DataFrame:
    """dfrs_table.stats' shape: every policy on every set, ``n`` instances per set."""
    rows = [
        {"set": s, "policy": p, "n": n[s], "mean": 5.0 + i, "std": 1.0, "max": 20.0, "ci95": 0.5}
        for s in dfrs_table.SETS
        for i, p in enumerate(dfrs_table.POLICIES)
    ]
    return pl.DataFrame(rows)


def test_a_whole_fixed_set_is_exact_a_sample_is_not():
    """HPC2N with all 182 weeks of the paper's set: every average is the set's
    own, an interval of one point saying why; one week missing, or a
    synthetic set (random draws), keeps its 95 % interval."""
    whole = stats_table({"hpc2n": 182, "unscaled": 100, "scaled": 900})
    assert dfrs_table.whole_set(whole, "hpc2n")
    assert not dfrs_table.whole_set(whole, "unscaled") and not dfrs_table.whole_set(whole, "scaled")
    e = dfrs_table.estimated(whole, "hpc2n", "EASY")
    assert bounds(e) == (6.0, 6.0) and e.basis == "all 182 weeks: exact"
    assert bounds(dfrs_table.estimated(whole, "unscaled", "EASY")) == (5.5, 6.5)
    cut = stats_table({"hpc2n": 181, "unscaled": 100, "scaled": 900})
    assert not dfrs_table.whole_set(cut, "hpc2n") and bounds(dfrs_table.estimated(cut, "hpc2n", "EASY")) == (5.5, 6.5)
    assert dc.FIXED_SETS == {"hpc2n"}


def test_paired_ratio_reads_the_same_instances(monkeypatch):
    """Two algorithms on the same three synthetic traces, b = 2 a + a small
    wobble: the ratio of their averages with the paired interval (the delta
    method's, worked here by hand), far narrower than the quotient of the two
    averages' own intervals; on the whole HPC2N set the exact ratio of means;
    a group's lowest ("min DFRS") is read as its algorithm of lowest average."""
    a, b = [2.0, 10.0, 30.0], [4.2, 19.8, 60.3]
    frames = {
        s: pl.DataFrame(
            {
                "policy": ["A"] * 3 + ["B"] * 3,
                "replication": [0, 1, 2] * 2,
                dc.instance_key(s)[0]: [float(k) for k in (0, 1, 2)] * 2,
                "degradation": a + b,
            }
        )
        for s in dfrs_table.SETS
    }
    monkeypatch.setattr(dfrs_table.dc, "rows", lambda dirs, prefix, s: frames[s])
    table = pl.DataFrame(
        [
            {"set": s, "policy": p, "n": n, "mean": m}
            for s, n in (("hpc2n", 182), ("unscaled", 3), ("scaled", 3))
            for p, m in (("A", sum(a) / 3), ("B", sum(b) / 3))
        ]
    )
    ratio = dfrs_table.paired(SimpleNamespace(dirs={"x": Path(".")}, table=table))
    r = ratio("A", "B", "unscaled")
    mean_a, mean_b = sum(a) / 3, sum(b) / 3
    want = mean_a / mean_b
    d = [x - want * y for x, y in zip(a, b, strict=True)]
    dm = sum(d) / 3
    sd = math.sqrt(sum((v - dm) ** 2 for v in d) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3) / mean_b  # t(0.975, 2)
    assert float(r) == pytest.approx(want, rel=1e-12)
    assert bounds(r) == pytest.approx((want - half, want + half), rel=1e-9)
    assert bounds(r)[1] - bounds(r)[0] < 0.05
    h = ratio("A", "B", "hpc2n")
    assert bounds(h) == (float(h), float(h)) and float(h) == pytest.approx(want, rel=1e-12)
    assert math.isnan(ratio("A", "nobody", "unscaled"))
    assert math.isnan(dfrs_table.paired(SimpleNamespace(dirs={}, table=table))("A", "B", "unscaled"))


def test_rank_ranges_by_hand():
    """Four averages, 1 and 2 not told apart: 0 is first, 3 last, 1 and 2 each
    second or third; an exact tie takes its mid-rank, as scipy ranks ties."""
    certain = {(0, 1), (0, 2), (0, 3), (1, 3), (2, 3)}

    def below(i, j):
        return True if (i, j) in certain else False if (j, i) in certain else None

    assert dfrs_table.rank_ranges([0, 1, 2, 3], below) == [(1.0, 1.0), (2.0, 3.0), (2.0, 3.0), (4.0, 4.0)]
    values = [1.0, 2.0, 2.0, 5.0]
    assert dfrs_table.rank_ranges(values, dfrs_table._exact(values)) == [(1.0, 1.0), (2.5, 2.5), (2.5, 2.5), (4.0, 4.0)]


def test_rho_range_exact_is_scipys():
    a = [(1.0, 1.0), (2.5, 2.5), (2.5, 2.5), (4.0, 4.0)]
    b = [(2.0, 2.0), (1.0, 1.0), (3.0, 3.0), (4.0, 4.0)]
    lo, hi = dfrs_table.rho_range(a, b)
    assert lo == hi == pytest.approx(float(spearmanr([1, 2.5, 2.5, 4], [2, 1, 3, 4])[0]), abs=RHO_TOL)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 10), st.floats(0, 3)), min_size=2, max_size=6),
    st.lists(st.tuples(st.floats(0, 10), st.floats(0, 3)), min_size=6, max_size=6),
)
def test_rho_range_contains_every_consistent_ranking(xs, ys):
    """Each average with an interval (centre, half-width); a pair is certain
    when the intervals do not touch (exact ties are test_rank_ranges_by_hand's). Every assignment of distinct values in
    the intervals ranks the lists in some way; its Spearman rho lies within
    `rho_range` of the two lists' `rank_ranges` (brute force over the rankings
    the intervals allow: every permutation whose order no certain pair
    contradicts)."""
    n = len(xs)
    ys = ys[:n]

    def relation(v):
        def below(i, j):
            (ci, wi), (cj, wj) = v[i], v[j]
            return True if ci + wi < cj - wj else False if ci - wi > cj + wj else None  # touching: not told apart

        return below

    ra, rb = dfrs_table.rank_ranges(xs, relation(xs)), dfrs_table.rank_ranges(ys, relation(ys))
    lo, hi = dfrs_table.rho_range(ra, rb)

    def orders(v):
        below = relation(v)
        for perm in itertools.permutations(range(n)):
            rank = {i: r + 1 for r, i in enumerate(perm)}
            if all(not (below(i, j) and rank[i] > rank[j]) for i in range(n) for j in range(n) if i != j):
                yield [rank[i] for i in range(n)]

    for p in orders(xs):
        for q in orders(ys):
            rho = 1 - 6 * sum((u - w) ** 2 for u, w in zip(p, q, strict=True)) / (n * (n * n - 1))
            assert lo - RHO_TOL <= rho <= hi + RHO_TOL


def test_period_growth_is_paired_and_exact_on_the_whole_hpc2n_set(monkeypatch):
    """dfrs-period's growth (degradation at the largest period / at the
    smallest) over the same traces: the paired interval on a synthetic set,
    the exact ratio of means on the whole HPC2N set; its verdict against the
    set's limit reads them."""
    from schedlab.pipelines import dfrs_period
    from schedlab.pipelines.declare import FigureData
    from schedlab.pipelines.registry import PIPELINES

    first, last, easy = [2.0, 3.0, 4.0, 5.0], [2.5, 3.5, 5.5, 6.0], [900.0, 1200.0, 1500.0, 2000.0]
    n = {"hpc2n": 182, "unscaled": 4, "scaled": 4}

    def frame(s):
        k = dc.instance_key(s)[0]
        rows = [
            {
                "policy": dc.BEST,
                "policy_period": per,
                "replication": r,
                k: 0.0,
                "degradation": v,
                "underutilization": 0.3,
            }
            for per, vs in ((600.0, first), (12000.0, last))
            for r, v in enumerate(vs)
        ]
        rows += [
            {
                "policy": "EASY",
                "policy_period": None,
                "replication": r,
                k: 0.0,
                "degradation": v,
                "underutilization": 0.1,
            }
            for r, v in enumerate(easy)
        ]
        return pl.DataFrame(rows)

    def summary(s):
        mean = lambda v: sum(v) / len(v)  # noqa: E731
        dfrs = pl.DataFrame(
            {
                "policy_period": [600.0, 12000.0],
                "n": [n[s]] * 2,
                "degradation_mean": [mean(first), mean(last)],
                "degradation_ci95": [1.0, 1.0],
                "underutilization_mean": [0.3, 0.3],
                "underutilization_ci95": [0.0, 0.0],
            }
        )
        e = pl.DataFrame(
            {
                "policy": ["EASY"],
                "n": [n[s]],
                "degradation_mean": [mean(easy)],
                "degradation_ci95": [100.0],
                "underutilization_mean": [0.1],
                "underutilization_ci95": [0.0],
            }
        )
        return dfrs, e

    monkeypatch.setattr(dfrs_period.dc, "rows", lambda dirs, prefix, s: frame(s))
    d = PIPELINES["dfrs-period"]
    fig = next(f for f in d.doc["figures"] if f["column"] == "degradation")
    data = FigureData({s: summary(s) for s in dfrs_period.SETS}, {}, {"x": Path(".")}, fig)
    ratio = dfrs_period._paired(data, "degradation")
    growth = sum(last) / sum(first)
    g = ratio("last", "first", "unscaled")
    unpaired = ((sum(last) / 4 - 1) / (sum(first) / 4 + 1), (sum(last) / 4 + 1) / (sum(first) / 4 - 1))
    assert float(g) == pytest.approx(growth, rel=1e-12)
    assert (
        0 < bounds(g)[1] - bounds(g)[0] < (unpaired[1] - unpaired[0]) / 4
    )  # the two averages' own intervals' quotient
    h = ratio("last", "first", "hpc2n")
    assert bounds(h) == (float(h), float(h)) and h.basis == "all 182 weeks: exact"
    assert ratio("EASY", "worst", "scaled") == pytest.approx(sum(easy) / sum(last), rel=1e-12)
    growth_claim = d.checks(fig, data)[0]
    assert "hpc2n: x1.25 from 600 s to 12000 s (growth / limit 0.625)" in growth_claim.detail


def test_an_undecided_claim_reads_only_its_undecided_sets():
    """A claim inconclusive on the unscaled set alone reads that set's sweeps,
    so --decide grows them and not the others; decided, or undecided
    everywhere, it keeps reading every sweep."""
    from schedlab.pipelines.base import FAILS, HOLDS, INCONCLUSIVE, Check

    outcome = {"hpc2n": HOLDS, "unscaled": INCONCLUSIVE, "scaled": HOLDS}

    def on(sets):
        per = [outcome[s] for s in sets]
        o = INCONCLUSIVE if INCONCLUSIVE in per else FAILS if FAILS in per else HOLDS
        return Check("claim", o, "")

    sets = list(outcome)
    assert dc.reads_undecided(on(sets), sets, "dfrs-period", on).reads == ("dfrs-period-unscaled-",)
    outcome["unscaled"] = HOLDS
    assert dc.reads_undecided(on(sets), sets, "dfrs-period", on).reads == ()
    outcome.update({s: INCONCLUSIVE for s in sets})
    assert dc.reads_undecided(on(sets), sets, "dfrs-period", on).reads == ()
