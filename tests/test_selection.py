"""Ranking and selection (Kim & Nelson's KN): the constants against the
paper's defining equation and hand-worked values, a hand-worked screening,
the probability of correct selection on normal slippage configurations, the
spec fields, and a real select-best sweep of the 13 queue policies."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

import schedlab
from schedlab.cli import main
from schedlab.errors import UserError
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.statistics.selection import kn, kn_constants
from schedlab.platform.tracking.selection import log_selection

TOL = 1e-12


# ---------------------------------------------------------------- constants


@pytest.mark.parametrize("k, n0, confidence", [(2, 10, 0.95), (5, 10, 0.95), (10, 20, 0.9), (13, 5, 0.99)])
def test_kn_constants_solve_the_papers_equation(k, n0, confidence):
    """KN (Kim & Nelson 2001, §3): eta is the solution of
    (1 + 2 eta)^(-(n0 - 1)/2) = 2 alpha / (k - 1), and h^2 = 2 eta (n0 - 1)."""
    eta, h2 = kn_constants(k, n0, confidence)
    alpha = 1 - confidence
    assert (1 + 2 * eta) ** (-(n0 - 1) / 2) == pytest.approx(2 * alpha / (k - 1), rel=1e-12)
    assert h2 == pytest.approx(2 * eta * (n0 - 1), rel=TOL)


def test_kn_constants_hand_worked():
    # k = 2, n0 = 10, alpha = 0.05: eta = (0.1^(-2/9) - 1) / 2 = (10^(2/9) - 1) / 2
    eta, h2 = kn_constants(2, 10, 0.95)
    assert eta == pytest.approx((10 ** (2 / 9) - 1) / 2, rel=TOL)
    assert eta == pytest.approx(0.334050, abs=1e-6)
    assert h2 == pytest.approx(6.012905, abs=1e-6)
    with pytest.raises(ValueError):
        kn_constants(1, 10, 0.95)


def test_kn_screening_hand_worked():
    """Two systems, n0 = 3, delta = 1, maximise. First stage: A = 1, 2, 3;
    B = 0, 0, 3 -> differences 1, 2, 0, S^2 = 1. h^2 = 2 eta 2 with
    eta = ((2 alpha)^(-1) - 1)/2 = 4.5 (alpha 0.05): h^2 = 18. At r = 3:
    W = max(0, 1/6 (18 - 3)) = 2.5; means 2 and 1: 1 >= 2 - 2.5, both stay.
    With a fourth output A = 10, B = 0: W(4) = 1/8 (18 - 4) = 1.75; means 4
    and 0.75: 0.75 < 4 - 1.75, B is eliminated at r = 4."""
    eta, h2 = kn_constants(2, 3, 0.95)
    assert eta == pytest.approx(4.5) and h2 == pytest.approx(18.0)
    first = kn({"A": [1, 2, 3], "B": [0, 0, 3]}, delta=1.0, n0=3, minimize=False)
    assert not first.done and first.need == 4 and first.survivors == ["A", "B"]
    sel = kn({"A": [1, 2, 3, 10], "B": [0, 0, 3, 0]}, delta=1.0, n0=3, minimize=False)
    assert sel.done and sel.winner == "A" and sel.eliminated_at == {"B": 4} and sel.stopped == "one left"
    # the same problem as minimisation of the negated outputs
    neg = kn({"A": [-1, -2, -3, -10], "B": [0, 0, -3, 0]}, delta=1.0, n0=3, minimize=True)
    assert neg.winner == "A" and neg.eliminated_at == {"B": 4}


def test_kn_ties_truncation_and_steps():
    same = kn({"PS": [5.0, 6.0, 7.0], "GPS": [5.0, 6.0, 7.0]}, delta=0.1, n0=3)
    assert same.winner == "PS" and same.eliminated_by["GPS"].startswith("PS (identical")
    rng = np.random.default_rng(1)
    x = {f"s{i}": rng.normal(0, 5, 30) for i in range(3)}  # equal means, large spread: never resolved
    cut = kn(x, delta=0.01, n0=5, max_n=30)
    assert cut.stopped == "max reached" and cut.r == 30
    assert cut.winner == min(cut.survivors, key=lambda s: x[s].mean())
    stepped = kn({k: v[:7] for k, v in x.items()}, delta=0.01, n0=5, step=5)
    assert stepped.need == 10 and stepped.r == 5  # screens only at 5, 10, ...


# ---------------------------------------------------------------- probability of correct selection

PCS_SEED = 2001
PCS_MACRO = 500
PCS_NOMINAL = 0.95
PCS_N0 = 10


def _slippage_trial(rng, k: int, rho: float) -> tuple[bool, int]:
    """Normal outputs, variance 1, the best (system 0, smaller is better) at
    -delta, the others at 0 (slippage configuration, delta = 1 sigma);
    correlation rho between systems (common random numbers induce rho > 0).
    Returns (correct selection, replications used over all systems)."""
    cov = np.full((k, k), rho) + np.eye(k) * (1 - rho)
    mean = np.zeros(k)
    mean[0] = -1.0
    have = np.empty((k, 0))
    while True:
        names = [f"s{i}" for i in range(k)]
        sel = kn({nm: have[i] for i, nm in enumerate(names)}, delta=1.0, confidence=PCS_NOMINAL, n0=PCS_N0)
        if sel.done:
            used = sum(sel.eliminated_at.get(nm, sel.r) for nm in names)
            return sel.winner == "s0", used
        more = sel.need - have.shape[1]
        have = np.hstack([have, rng.multivariate_normal(mean, cov, size=more).T])


@pytest.mark.slow
@pytest.mark.parametrize("k", [5, 10])
@pytest.mark.parametrize("rho", [0.0, 0.5])
def test_kn_probability_of_correct_selection(k, rho):
    rng = np.random.default_rng([PCS_SEED, k, int(rho * 10)])
    results = [_slippage_trial(rng, k, rho) for _ in range(PCS_MACRO)]
    pcs = float(np.mean([ok for ok, _ in results]))
    reps = float(np.mean([n for _, n in results]))
    print(
        f"KN k={k} rho={rho}: PCS {pcs:.3f} over {PCS_MACRO}, {reps:.1f} replications on average "
        f"({reps / k:.1f} per system)"
    )
    assert pcs >= PCS_NOMINAL


# ---------------------------------------------------------------- spec fields


@pytest.mark.parametrize(
    "reps, where",
    [
        ({"mode": "select-best", "metric": "mst"}, "replications.delta"),
        ({"mode": "select-best", "delta": 0.1}, "replications.metric"),
        ({"mode": "select-best", "metric": "mst", "delta": 0}, "replications.delta"),
        ({"mode": "select-best", "metric": "mst", "delta": 0.1, "confidence": 1.0}, "replications.confidence"),
        ({"mode": "select-best", "metric": "mst", "delta": 0.1, "min": 1}, "replications.min"),
        ({"mode": "select-best", "metric": "mst", "delta": 0.1, "n": 5}, "replications.n"),
        ({"mode": "select-best", "metric": "mst", "delta": 0.1, "rel_halfwidth": 0.1}, "replications.rel_halfwidth"),
        ({"mode": "select-best", "metric": "mst", "delta": 0.1, "minimize": "sometimes"}, "replications.minimize"),
        ({"mode": "best", "metric": "mst", "delta": 0.1}, "replications.mode"),
        ({"n": 5, "delta": 0.1}, "replications.delta"),
    ],
)
def test_select_best_validation_names_the_field(reps, where):
    data = {
        "name": "v",
        "engine": "queue",
        "policies": ["PS", "FIFO"],
        "workload": {"njobs": 100},
        "replications": reps,
    }
    with pytest.raises(UserError) as err:
        parse_spec(data, "v.toml")
    assert str(err.value).startswith(f"v.toml: {where}: ")


def test_select_best_needs_two_policies():
    with pytest.raises(UserError, match="replications.mode: select-best needs at least 2"):
        parse_spec(
            {
                "name": "v",
                "engine": "queue",
                "policies": ["PS"],
                "workload": {"njobs": 100},
                "replications": {"mode": "select-best", "metric": "mst", "delta": 0.1},
            },
            "v.toml",
        )


# ---------------------------------------------------------------- a real sweep

QUEUE_13 = [
    "FIFO",
    "PS",
    "GPS",
    "LAS",
    "SRPT",
    "SRPTE",
    "SRPTE+PS",
    "SRPTE+LAS",
    "FSP",
    "FSPE",
    "FSPE+PS",
    "FSPE+LAS",
    "PSBS",
]


@pytest.fixture(scope="module")
def local_ray():
    import ray

    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_select_best_sweep_of_the_13_queue_policies(tmp_path, local_ray):
    """One PSBS point (shape 1, sigma 0.5, load 0.9), 300 jobs. SRPT minimises
    the MST of every instance (it is optimal for the mean sojourn time on any
    job sequence), so the correct selection is known."""
    from schedlab.platform.execution.runner import run_sweep

    spec = parse_spec(
        {
            "name": "sel",
            "engine": "queue",
            "seed": 5,
            "policies": QUEUE_13,
            "workload": {"kind": "synthetic", "njobs": 300, "shape": 1.0, "sigma": 0.5, "load": 0.9},
            "replications": {"mode": "select-best", "metric": "mst", "delta": 0.1, "min": 10, "max": 100, "batch": 5},
            "outputs": {"dir": str(tmp_path / "sel")},
            "tracking": {"enabled": False},
        },
        "sel.toml",
    )
    report = run_sweep(spec)
    assert not report.failures
    doc = json.loads((spec.results_dir() / "selection.json").read_text())
    (point,) = doc["points"]
    assert point["winner"] == "SRPT" and point["stopped"] == "one left"
    assert sorted(point["elimination_order"]) == sorted(set(QUEUE_13) - {"SRPT"})
    assert doc["n0"] == 10 and doc["delta"] == 0.1 and doc["confidence"] == 0.95 and doc["step"] == 5
    assert point["eta"] == pytest.approx(kn_constants(13, 10, 0.95)[0])
    assert "Kim & Nelson (2001)" in doc["source"]
    rows = schedlab.load(spec.results_dir()).collect()
    for pol in point["policies"]:  # eliminated policies got no replications after their elimination
        n = rows.filter(rows["policy"] == pol["policy"]).height
        assert n == (pol["eliminated_at"] or point["replications"])
    out = CliRunner().invoke(main, ["results", str(spec.results_dir())])
    assert out.exit_code == 0 and "SRPT selected after" in out.output and "eliminated:" in out.output
    print(
        "\n".join(
            line
            for line in out.output.splitlines()
            if "selection" in line or "eliminated" in line or "selected" in line
        )
    )
    again = run_sweep(spec)  # resume: the procedure replays from the rows on disk, nothing new runs
    assert again.rows_written == 0
    assert json.loads((spec.results_dir() / "selection.json").read_text())["points"][0]["winner"] == "SRPT"


def test_selection_goes_to_the_mlflow_parent_run(tmp_path):
    from schedlab.platform.statistics.selection import write

    write(
        tmp_path,
        {
            "procedure": "KN (Kim & Nelson 2001)",
            "delta": 0.1,
            "confidence": 0.95,
            "n0": 10,
            "points": [{"where": {"shape": 1.0}, "winner": "SRPT", "eta": 0.9, "h2": 17.0}],
        },
    )
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"spec": {"replications": {"n": 3}}}))  # not a select-best sweep: ignored
    silent = []
    log_selection(
        type("C", (), {"log_artifact": lambda *a: silent.append(a), "log_batch": lambda *a, **k: silent.append(a)})(),
        "parent",
        tmp_path,
    )
    assert silent == []
    manifest.write_text(json.dumps({"spec": {"replications": {"mode": "select-best"}}}))

    class Client:
        def __init__(self):
            self.calls = []

        def log_artifact(self, run_id, path):
            self.calls.append(("artifact", run_id, path))

        def log_batch(self, run_id, tags=(), synchronous=True):
            self.calls.append(("tags", run_id, {t.key: t.value for t in tags}))

    client = Client()
    log_selection(client, "parent", tmp_path)
    assert client.calls[0] == ("artifact", "parent", str(tmp_path / "selection.json"))
    tags = client.calls[1][2]
    assert tags["schedlab.selection.winners"] == "shape=1.0: SRPT" and tags["schedlab.selection.eta"] == "0.9"
    log_selection(client, "parent", tmp_path / "nothing-here")  # no selection.json: nothing logged
    assert len(client.calls) == 2
    assert math.isfinite(float(tags["schedlab.selection.h2"]))
