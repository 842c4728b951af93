"""The slot-scoring agent (schedlab.gym.slot_scorer; the ``rl`` extra, the
Lublin log): the teacher's picks in the vector environment are F1+EASY's
schedule, to the bit; F1's order is a linear score of two slot features; a
short real training run clones F1 (its picks on most fresh decisions),
evolves, resumes from its checkpoint, logs to MLflow, and the exported
``SlotAgent`` gives in the engine the schedule its network gives in the
environment, bit for bit."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("gymnasium")

from schedlab.engines.batch.features import LOG_TIME_SCALE, SLOT_FEATURES  # noqa: E402
from schedlab.engines.batch.policies import BATCH_POLICIES  # noqa: E402
from schedlab.engines.batch.sim.engine import run_table  # noqa: E402
from schedlab.gym import slot_scorer as S  # noqa: E402

LUBLIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "lublin" / "lublin_256.swf.gz"
ENV = {"trace": str(LUBLIN), "sequence": 128, "window": 32, "backfill": "easy", "span": (3000, 10000)}
#: The clone must take the teacher's slot on at least this share of fresh decisions.
MIN_AGREEMENT = 0.8
#: A linear score equal to F1's order up to float32 rounding of the features: the share of picks it must match.
LINEAR_F1_AGREEMENT = 0.99

pytestmark = pytest.mark.skipif(not LUBLIN.exists(), reason="Lublin log not present")


def test_the_teachers_picks_are_the_heuristics_schedule():
    """With a window wider than the queue ever gets here, the teacher sees every waiting job, as the policy does."""
    venv = S.make_vec({**ENV, "window": 128}, 3)
    starts = np.array([0, 700, 2500])
    for teacher, policy in (("F1", "F1+EASY"), ("SJF", "SJF+EASY")):
        schedules = {}
        bsld = S.run_episodes(venv, starts, S.teacher_chooser(teacher), schedules=schedules)
        for e, k in enumerate(starts):
            per_job, summary = run_table(venv.env.source.slice(int(k), 128), BATCH_POLICIES[policy], procs=256)
            assert schedules[e].tolist() == per_job["start"].tolist() and bsld[e] == summary["stretch_mean"]


def test_f1_is_a_linear_score_of_the_slot_features():
    venv = S.make_vec(ENV, 4)
    x, m, p, _ = S.record_teacher(venv, np.array([10, 900, 1800, 3300]), "F1")
    f1 = np.zeros((1, SLOT_FEATURES), np.float32)
    f1[0, 3] = -1.0  # log10(r) n / (nodes LOG_TIME_SCALE)
    f1[0, 5] = 870.0 / (256 * LOG_TIME_SCALE)  # log10(now / s): minus log10(s) up to a shared constant
    layers = [
        (np.zeros((1, SLOT_FEATURES), np.float32), np.zeros(1, np.float32)),
        (np.zeros((1, 1), np.float32), np.zeros(1, np.float32)),
        (f1, np.zeros(1, np.float32)),
    ]
    assert len(p) > 100 and S.agreement(layers, x, m, p) >= LINEAR_F1_AGREEMENT


def test_clone_evolve_resume_export_and_run_the_agent(tmp_path):
    kwargs = {
        "clone_episodes": 8,
        "clone_epochs": 15,
        "hidden": 8,
        "population": 4,
        "batch": 4,
        "validation": 4,
        "seed": 3,
    }
    record = S.train(ENV, out=tmp_path, generations=2, **kwargs)
    assert record["clone"]["agreement_fresh"] >= MIN_AGREEMENT
    assert record["clone"]["loss"][-1] < record["clone"]["loss"][0]
    assert record["generations"] == 2 and len(record["curve"]) == 2
    assert record["validation"]["chosen"] in ("clone", "evolved") and record["cpu_seconds"] > 0
    assert len(record["commit"]) == 40

    again = S.train(ENV, out=tmp_path, generations=3, **kwargs)  # resumes from checkpoint.pkl
    assert again["generations"] == 3 and again["curve"][:2] == record["curve"]
    assert again["mlflow_run_id"] == record["mlflow_run_id"] and again["clone"] == record["clone"]
    with pytest.raises(S.UserError, match="another training spec"):
        S.train({**ENV, "window": 16}, out=tmp_path, generations=3, **kwargs)

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    history = client.get_metric_history(record["mlflow_run_id"], "ratio_best")
    assert [m.value for m in history] == pytest.approx([best for _, best, _ in again["curve"]])
    assert json.loads((tmp_path / "training.json").read_text())["generations"] == 3

    spec = importlib.util.spec_from_file_location("slot_agent", tmp_path / "agent.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["slot_agent"] = module
    spec.loader.exec_module(module)
    Agent = module.Agent
    assert Agent.window == 32 and Agent.backfill

    from schedlab.api.agent import load_layers

    venv = S.make_vec(ENV, 2)
    starts = np.array([5, 4000])
    schedules = {}
    bsld = S.run_episodes(venv, starts, S.network_chooser(load_layers(Agent.weights)), schedules=schedules)
    for e, k in enumerate(starts):
        per_job, summary = run_table(venv.env.source.slice(int(k), 128), Agent, procs=256)
        assert schedules[e].tolist() == per_job["start"].tolist() and bsld[e] == summary["stretch_mean"]


def test_shift_adds_the_span_with_submit_times_from_zero():
    plain, shifted = S.sources(ENV, shift=True)
    assert plain == ENV and S.sources(ENV, shift=False) == [ENV]
    a, b = S.make_vec(plain, 1).env, S.make_vec(shifted, 1).env
    assert b.source["submit"][0] == 0.0 and a.source.height == b.source.height == 7000 and b.nodes == a.nodes
    assert (a.source["submit"] - b.source["submit"]).unique().to_list() == [a.source["submit"][0]]
    assert a.source.drop("submit").equals(b.source.drop("submit"))


def test_offsets_shift_what_the_teacher_reads_and_keep_the_schedule(tmp_path):
    """--offsets: each episode's first submit is drawn (seeded: the same draw twice), the episode's
    times as F1 reads them are the log's shifted by whole seconds, so the teacher's schedule is
    F1+EASY's on the shifted log (to the bit), and a chooser that reads no absolute time (SJF)
    keeps its schedule."""
    venv = S.make_vec({**ENV, "window": 128}, 3)
    starts = np.array([0, 700, 2500])
    firsts = S.draw_firsts(venv, np.random.default_rng([7, 2]), 2_000_000)
    assert (
        firsts is not None and S.draw_firsts(venv, np.random.default_rng([7, 2]), 2_000_000).tolist() == firsts.tolist()
    )
    assert ((firsts >= 1) & (firsts <= 2_000_000) & (firsts == np.round(firsts))).all()
    assert S.draw_firsts(venv, np.random.default_rng(0), None) is None
    source = venv.env.source
    for teacher, policy in (("F1", "F1+EASY"), ("SJF", "SJF+EASY")):
        shifted, plain = {}, {}
        bsld = S.run_episodes(venv, starts, S.teacher_chooser(teacher), schedules=shifted, firsts=firsts)
        S.run_episodes(venv, starts, S.teacher_chooser(teacher), schedules=plain)
        for e, k in enumerate(starts):
            jobs = source.slice(int(k), 128)
            delta = firsts[e] - jobs["submit"].min()
            per_job, summary = run_table(jobs.with_columns(jobs["submit"] + delta), BATCH_POLICIES[policy], procs=256)
            assert (shifted[e] + delta).tolist() == per_job["start"].tolist() and bsld[e] == summary["stretch_mean"]
            if teacher == "SJF":
                assert shifted[e].tolist() == plain[e].tolist()
    f1_plain, f1_shifted = {}, {}
    S.run_episodes(venv, starts, S.teacher_chooser("F1"), schedules=f1_plain)
    S.run_episodes(venv, starts, S.teacher_chooser("F1"), schedules=f1_shifted, firsts=firsts)
    assert any(f1_plain[e].tolist() != f1_shifted[e].tolist() for e in range(3))  # F1 reads absolute times


def test_invariant_features_do_not_move_with_the_times_and_export(tmp_path):
    """--features invariant: the slot features read differences of times only (shifting every time
    leaves them equal); an exported SlotAgent carries its feature set and gives in the engine the
    schedule its network gives in the environment, bit for bit."""
    from schedlab.engines.batch.features import slot_features
    from schedlab.gym.train import export

    rng = np.random.default_rng(5)
    submit = rng.integers(0, 10_000, (4, 6)).astype(np.float64)
    requested = rng.integers(1, 50_000, (4, 6)).astype(np.float64)
    need = rng.integers(1, 256, (4, 6)).astype(np.float64)
    now, free = np.full((4, 1), 12_000.0), np.full((4, 1), 40.0)
    x = slot_features(submit, requested, need, now, free, 256, "invariant")
    assert np.array_equal(x, slot_features(submit + 3e6, requested, need, now + 3e6, free, 256, "invariant"))
    assert not np.array_equal(x, slot_features(submit, requested, need, now, free, 256))  # the sixth differs
    with pytest.raises(ValueError, match="features must be one of"):
        slot_features(submit, requested, need, now, free, 256, "absolute")

    layers = S.init_layers(8, np.random.default_rng(2))
    layers[-1] = (np.random.default_rng(3).normal(size=(1, SLOT_FEATURES)).astype(np.float32), np.zeros(1, np.float32))
    export(
        layers,
        tmp_path,
        window=32,
        runtime_scale=1.0,
        backfill=True,
        name="RLinv",
        training={},
        base="SlotAgent",
        attributes={"features": "invariant"},
    )
    spec = importlib.util.spec_from_file_location("slot_agent_inv", tmp_path / "agent.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["slot_agent_inv"] = module
    spec.loader.exec_module(module)
    Agent = module.Agent
    assert Agent.features == "invariant"

    venv = S.make_vec(ENV, 2)
    starts = np.array([5, 4000])
    schedules = {}
    bsld = S.run_episodes(venv, starts, S.network_chooser(layers), schedules=schedules, features="invariant")
    for e, k in enumerate(starts):
        per_job, summary = run_table(venv.env.source.slice(int(k), 128), Agent, procs=256)
        assert schedules[e].tolist() == per_job["start"].tolist() and bsld[e] == summary["stretch_mean"]


def test_train_records_offsets_and_features_and_exports_them(tmp_path):
    """A short run with --offsets and --features invariant: both in the spec (a resume with other
    offsets is refused), the exported agent reads the invariant features."""
    kwargs = {"clone_episodes": 4, "clone_epochs": 3, "hidden": 4, "population": 4, "batch": 2, "validation": 2}
    record = S.train(ENV, out=tmp_path, generations=1, offsets=2_000_000, features="invariant", **kwargs)
    assert record["offsets"] == 2_000_000 and record["features"] == "invariant" and record["generations"] == 1
    with pytest.raises(S.UserError, match="another training spec"):
        S.train(ENV, out=tmp_path, generations=1, offsets=1_000, features="invariant", **kwargs)
    with pytest.raises(S.UserError, match="features must be one of"):
        S.train(ENV, out=tmp_path / "other", generations=1, features="absolute", **kwargs)
    assert '    features = "invariant"\n' in (tmp_path / "agent.py").read_text()
