"""`--decide` grows only the policies a claim reads (its ``policies``): a real smoke-scale
run of PSBS Fig. 11(a)'s stability claim (psbs-load's TOML cut to its load sweep and that
claim) grows SRPTE, FSPE, PSBS and SRPT and leaves PS and LAS alone (rows counted per
policy on disk); the declared spec then resumes on that dir with nothing to run; the
grown rows are bit for bit those of the whole sweep grown; a decide.json of the first
format (``{"grown": {sweep: n}}``) is read; a policy the sweeps do not have is an error
naming its TOML field."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import schedlab
from schedlab.errors import UserError
from schedlab.pipelines import decide, psbs_load, registry, run
from schedlab.pipelines.common import paired_ratios, relative_to, row_at
from schedlab.pipelines.declare import Declared
from schedlab.pipelines.runlog import read_runs

NAME = "psbs-load-cfg-test"
SWEEP = "psbs-load-cfg-test-smoke"
GROWN = ["SRPTE", "FSPE", "PSBS", "SRPT"]
KEPT = ["PS", "LAS"]
LOADS = 3  # the smoke grid of loads
#: a measured wall time, the one column of a row that is not a function of spec and seed
TIMING = "sim_seconds"
#: a mean of ratios summed in another order than numpy's
RATIO_REL = 1e-12

TOML = f"""
name = "{NAME}"
paper = "PSBS (2014)"
figure = "Fig. 11 (a)"
description = "psbs-load's load panel and its stability claim, for the test."
sweeps = [{{name = "{NAME}-{{scale}}", seed = 15, workload = {{load = "$load"}}}}]

[every_sweep]
engine = "queue"
policies = ["PS", "LAS", "SRPTE", "FSPE", "PSBS", "SRPT"]
workload = {{kind = "synthetic", njobs = "$njobs", shape = 0.25, sigma = 0.5, load = 0.9, timeshape = 1.0}}
replications = "$replications"

[scales]
smoke = {{njobs = 400, load = [0.5, 0.9, 0.99], replications = {{n = 2}}}}

[[figures]]
key = "fig11a"
title = "Fig. 11 (a)"
png = "fig11a.png"
paper_says = "size-based policies are not heavily impacted by load"
table = {{metric = "mst", ratio_to = "SRPT"}}
plot = {{y = "ratio", series = ["PS", "LAS", "SRPTE", "FSPE", "PSBS"], ylabel = "MST / optimal"}}
panels = [{{name = "load", sweep = "{NAME}-", table = {{keys = ["load"]}}, x = "load", title = "(a)", caption = "(a)"}}]
claims = [
  {{says = "(a) stable over loads {{lo:g}}–{{hi:g}}", quantity = "SRPTE, FSPE, PSBS", comparison = "<=", \
tolerance = 0.5, check = "stable_over_load", panel = "load", policies = {json.dumps(GROWN)}}},
]
"""


def rows(results_dir: Path) -> pl.DataFrame:
    """A sweep's rows without the measured time, in a fixed order."""
    return schedlab.load(results_dir).collect().drop(TIMING).sort(["policy", "config_id", "replication"])


@pytest.fixture
def pipeline(tmp_path, monkeypatch):
    path = tmp_path / "cfg.toml"
    path.write_text(TOML)
    monkeypatch.setitem(registry.PIPELINES, NAME, Declared(path, psbs_load))
    return path


def test_only_the_claims_policies_grow_and_the_declared_spec_resumes(pipeline, tmp_path):
    out = tmp_path / "decide"
    result = decide.decide_pipeline(NAME, "smoke", 4, out=out, tracking=False, backend="local")
    state = json.loads((out / decide.DECIDE_FILE).read_text())
    # the claim is undecided at 2 replications (an interval across its bound), so its policies grew to 4
    assert state["rounds"][0]["claims"] and [r["per_policy"][SWEEP] for r in state["rounds"]] == [
        dict.fromkeys(sorted(GROWN + KEPT), 2),
        {**dict.fromkeys(GROWN, 4), **dict.fromkeys(KEPT, 2)},
    ]
    assert state["grown"] == {SWEEP: 4} and state["policies"] == {SWEEP: GROWN}
    on_disk = rows(out / SWEEP).group_by("policy").len()
    assert dict(on_disk.iter_rows()) == {**dict.fromkeys(GROWN, 4 * LOADS), **dict.fromkeys(KEPT, 2 * LOADS)}
    assert (
        f"Grown: `{SWEEP}` 2 → 4 (policies SRPTE, FSPE, PSBS, SRPT only; LAS, PS at 2) replications per point"
        in result.report_md.read_text()
    )

    # the readers pair replication r with SRPT's replication r: PS has its 2 pairs, FSPE its 4
    table = relative_to(out / SWEEP, "mst", "SRPT", ["load"])
    frame = rows(out / SWEEP)
    for policy, n in (("PS", 2), ("FSPE", 4)):
        for load in (0.5, 0.9, 0.99):
            at = frame.filter(pl.col("load") == load)
            mine = at.filter(pl.col("policy") == policy).sort("replication")["mst"].to_numpy()
            base = at.filter(pl.col("policy") == "SRPT").sort("replication")["mst"].to_numpy()[:n]
            row = row_at(table, policy, load=load)
            assert row["n"] == n and row["ratio_mean"] == pytest.approx((mine / base).mean(), rel=RATIO_REL)
    pairs = paired_ratios(frame, "mst", "FSPE", "PS", ["load"], ["replication"])
    assert pairs["n"].to_list() == [2] * LOADS  # the replications both have

    # the declared spec (all six policies, 2 replications) resumes on the grown dir: nothing runs
    run.run_pipeline(NAME, "smoke", out=out, tracking=False, backend="local")
    last = read_runs(out)[-1]
    assert (last["rows_new"], last["rows_resumed"]) == (0, 6 * 2 * LOADS)

    # the grown replications are the whole sweep's: the same rows, bit for bit, as every policy grown to 4
    whole = tmp_path / "whole"
    run.run_pipeline(NAME, "smoke", out=whole, tracking=False, backend="local", grow={SWEEP: 4})
    assert rows(whole / SWEEP).height == 6 * 4 * LOADS
    kept = pl.col("policy").is_in(GROWN) | (pl.col("replication") < 2)
    assert rows(out / SWEEP).equals(rows(whole / SWEEP).filter(kept))


def test_a_state_file_of_the_first_format_is_read(pipeline, tmp_path):
    """decide.json as paper-scale out dirs have it: ``grown`` per sweep, rounds without per-policy counts."""
    out = tmp_path / "old"
    run.run_pipeline(NAME, "smoke", out=out, tracking=False, backend="local")
    claim = "(a) stable over loads 0.5–0.99"
    old = {
        "scale": "smoke",
        "budget": 2,
        "grown": {SWEEP: 2},
        "rounds": [{"replications": {SWEEP: 2}, "claims": {claim: {"n": 2, "outcome": "inconclusive"}}}],
    }
    (out / decide.DECIDE_FILE).write_text(json.dumps(old))
    assert decide._asked(decide.read_state(out, "smoke"), SWEEP, GROWN) == 2  # a whole sweep asked for
    decide.decide_pipeline(NAME, "smoke", 2, out=out, tracking=False, backend="local")
    state = json.loads((out / decide.DECIDE_FILE).read_text())
    # the resumed round is the same round (same replications), now with its per-policy counts
    assert len(state["rounds"]) == 1
    assert state["rounds"][0]["per_policy"][SWEEP] == dict.fromkeys(sorted(GROWN + KEPT), 2)
    assert state["grown"] == {SWEEP: 2} and state["policies"] == {}
    assert read_runs(out)[-1]["rows_new"] == 0


def test_a_policy_the_sweeps_lack_names_the_field(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(TOML.replace('"FSPE", "PSBS", "SRPT"]}', '"FSPE", "PBSB", "SRPT"]}'))
    with pytest.raises(UserError, match=r"bad\.toml: figures\[0\]\.claims\[0\]\.policies: 'PBSB' is not a policy"):
        Declared(path)
    path.write_text(TOML.replace('"FSPE", "PSBS", "SRPT"]}', '"FSPE", "PSBS"]}'))
    with pytest.raises(UserError, match=r"claims\[0\]\.policies: the figure's ratios are to 'SRPT'"):
        Declared(path)
    path.write_text(TOML.replace(f"policies = {json.dumps(GROWN)}", 'policies = "SRPT"'))
    with pytest.raises(UserError, match=r"claims\[0\]\.policies: must be a non-empty list of policy names"):
        Declared(path)
