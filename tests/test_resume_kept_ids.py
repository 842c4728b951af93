"""A resume of an unchanged sweep does not plan it again (issue 42): the
checking pass's ids are read from the results dir (``plan_ids.bin``,
`schedlab.platform.planning.ids_file`) instead of hashed, the manifest is
left as it is, and the rows and ids are those of a sweep planned afresh; a
changed spec, changed code (yours or schedlab's) or a torn or damaged file
is not read: the plan hashes and checks as before, and the file is written
again.

Real sweeps in tmp dirs, in-process (``backend = "local"``), real Parquet;
the checking pass is observed through its own seam (`plan._hashing_pass`).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from schedlab.errors import UserError
from schedlab.platform.execution.backends import choose
from schedlab.platform.execution.runner import _Sweep, run_sweep
from schedlab.platform.planning import ids_file
from schedlab.platform.planning import plan as plan_module
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.storage.store import ResultStore

KEY = ["config_id", "replication"]

POLICY = '''
from schedlab.api import queue


class MyFIFO(queue.Policy):
    """First come, first served."""

    def __init__(self, server):
        super().__init__(server)
        self.queue = []

    def arrive(self, job, estimate, weight):
        self.queue.append(job)
        if len(self.queue) == 1:
            self.server.serve_job(job)

    def depart(self, job):
        self.queue.remove(job)
        self.server.serve_job(self.queue[0] if self.queue else None)
'''


def spec_data(tmp_path: Path, **changes) -> dict:
    data = {
        "name": "kept",
        "engine": "queue",
        "seed": 7,
        "policies": ["FIFO", "PS"],
        "workload": {"kind": "synthetic", "njobs": 20, "load": [0.3, 0.5, 0.7], "sigma": [0.5, 1.0, 2.0]},
        "replications": {"n": 2},
        "outputs": {"dir": str(tmp_path / "out")},
        "tracking": {"enabled": False},
        "execution": {"backend": "local", "num_cpus": 1},
    }
    data.update(changes)
    return data


def parse(data: dict, folder: Path | None = None):
    return parse_spec(data, "spec.toml", folder)


@pytest.fixture
def passes(monkeypatch):
    """How many times the checking pass hashed a plan (a wrapper on its own seam)."""
    count = [0]
    real = plan_module._hashing_pass

    def counted(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(plan_module, "_hashing_pass", counted)
    return count


def kill_after(spec, share: float) -> None:
    """What a sweep killed part-way leaves: its results dir prepared (manifest and
    kept ids) and the summary rows of the first ``share`` of its keys, committed."""
    plan = spec.checked_plan[1]
    store = ResultStore(spec.results_dir())
    store.lock()
    try:
        sweep = _Sweep(spec, plan, store, time.monotonic(), choose(spec, None, "local"), None, None)
        sweep.prepare(False)
    finally:
        store.unlock()
    full = run_sweep(spec)  # every row, then all but the first share removed (as if never committed)
    assert not full.failures
    rows = store.scan().collect().sort(KEY)
    shutil.rmtree(store.root / "summary")
    store.commit(rows.head(int(rows.height * share)).to_dicts(), [], [])


def plan_ids(plan) -> tuple:
    ids = plan.points.ids
    return (ids.points.tolist(), ids.configs.tolist())


def test_a_resume_reads_the_kept_ids_and_leaves_the_manifest(tmp_path, passes):
    """A fresh resume of a killed sweep: no checking pass (the ids read), the
    manifest and the kept ids left as they are, the rows those of one
    uninterrupted sweep, the ids those of a plan hashed afresh."""
    data = spec_data(tmp_path)
    whole = run_sweep(parse(spec_data(tmp_path, outputs={"dir": str(tmp_path / "whole")})))
    assert not whole.failures and passes[0] == 1
    spec = parse(data)
    assert passes[0] == 2 and not spec.checked_plan[1].ids_read  # nothing kept yet
    kill_after(spec, 0.4)
    root = spec.results_dir()
    stamps = (ids_file.stamp(root / "manifest.json"), ids_file.stamp(root / ids_file.IDS_FILE))
    before = passes[0]
    resumed = parse(data)  # a new process's plan: the spec parsed again
    plan = resumed.checked_plan[1]
    assert passes[0] == before and plan.ids_read  # read, not hashed
    again = run_sweep(resumed)
    assert again.rows_skipped == int(36 * 0.4) and again.rows_written == 36 - again.rows_skipped
    assert (ids_file.stamp(root / "manifest.json"), ids_file.stamp(root / ids_file.IDS_FILE)) == stamps
    hashed = build_plan(parse(data), kept=False)
    assert plan_ids(plan) == plan_ids(hashed) and list(plan.points) == list(hashed.points)
    assert plan.param_columns == hashed.param_columns and list(plan.configs) == list(hashed.configs)
    import schedlab

    got = schedlab.load(root).collect().sort(KEY)
    want = schedlab.load(tmp_path / "whole").collect().sort(KEY)
    timing = [c for c in got.columns if c.endswith("_seconds")]
    assert got.drop(timing).equals(want.drop(timing))


def test_a_changed_spec_or_schedlab_hashes_and_checks_again(tmp_path, passes, monkeypatch):
    """Another grid (a load added: the dir grows) or another schedlab (its
    source's digest) is another key: the pass hashes, the ids are a fresh
    plan's, the kept ids are rewritten for the new key; a bad value in a
    changed spec is still reported."""
    data = spec_data(tmp_path)
    run_sweep(parse(data))
    grown = spec_data(tmp_path, workload={**data["workload"], "load": [0.3, 0.5, 0.7, 0.9]})
    before = passes[0]
    spec = parse(grown)
    assert passes[0] == before + 1 and not spec.checked_plan[1].ids_read
    assert plan_ids(spec.checked_plan[1]) == plan_ids(build_plan(parse(grown), kept=False))
    report = run_sweep(spec)
    assert report.rows_skipped == 36 and report.rows_written == 12
    assert parse(grown).checked_plan[1].ids_read  # kept for the grown plan now
    bad = spec_data(tmp_path, workload={**data["workload"], "load": [0.3, -0.5]})
    with pytest.raises(UserError, match=r"workload\.load"):
        parse(bad)
    monkeypatch.setattr(ids_file, "source_digest", lambda: "another schedlab")
    before = passes[0]
    other = parse(grown)
    assert passes[0] == before + 1 and not other.checked_plan[1].ids_read
    assert plan_ids(other.checked_plan[1]) == plan_ids(spec.checked_plan[1])


def test_changed_user_code_hashes_again(tmp_path, passes):
    """Your policy edited: its digest enters its configurations' ids, so the
    kept ids are another key's; the plan hashes and gets the new ids."""
    (tmp_path / "pol.py").write_text(POLICY)
    data = spec_data(tmp_path, policies=[{"name": "mine", "use": "pol.py:MyFIFO"}])
    spec = parse(data, tmp_path)
    run_sweep(spec)
    assert parse(data, tmp_path).checked_plan[1].ids_read
    (tmp_path / "pol.py").write_text(POLICY.replace("self.queue[0] if", "self.queue[-1] if"))
    before = passes[0]
    edited = parse(data, tmp_path).checked_plan[1]
    assert passes[0] == before + 1 and not edited.ids_read
    assert plan_ids(edited) != plan_ids(spec.checked_plan[1])
    assert plan_ids(edited) == plan_ids(build_plan(parse(data, tmp_path), kept=False))


@pytest.mark.parametrize("damage", ["torn", "grown", "flipped id", "header", "empty"])
def test_a_torn_or_damaged_ids_file_is_not_read(tmp_path, passes, damage):
    """A truncated file, bytes added, a changed id (the checksum), a garbled
    header, an empty file: not read; the plan hashes (the same ids), and the
    next run writes the file again, which the one after reads."""
    data = spec_data(tmp_path)
    spec = parse(data)
    run_sweep(spec)
    path = spec.results_dir() / ids_file.IDS_FILE
    raw = bytearray(path.read_bytes())
    if damage == "torn":
        raw = raw[: len(raw) - 5]
    elif damage == "grown":
        raw += b"\0" * 8
    elif damage == "flipped id":
        raw[-3] ^= 0x10
    elif damage == "header":
        raw[len(ids_file.MAGIC) + 12] ^= 0x20
    else:
        raw = bytearray()
    path.write_bytes(bytes(raw))
    key = spec.checked_plan[1].ids_key
    assert key is not None and ids_file.read(spec.results_dir(), key) is None
    before = passes[0]
    again = parse(data)
    assert passes[0] == before + 1 and not again.checked_plan[1].ids_read
    assert plan_ids(again.checked_plan[1]) == plan_ids(spec.checked_plan[1])
    report = run_sweep(again)
    assert report.rows_skipped == 36 and report.rows_written == 0
    kept = ids_file.read(spec.results_dir(), key)
    assert kept is not None and kept.configs.tolist() == plan_ids(spec.checked_plan[1])[1]
    assert parse(data).checked_plan[1].ids_read


def test_fresh_drops_the_kept_ids_and_a_workload_that_reads_files_keeps_none(tmp_path):
    """--fresh discards the kept ids with the rows (and the run keeps them
    again); a trace's points depend on its file: never kept."""
    data = spec_data(tmp_path)
    run_sweep(parse(data))
    path = Path(data["outputs"]["dir"]) / ids_file.IDS_FILE
    first = ids_file.stamp(path)
    run_sweep(parse(data), fresh=True)
    assert ids_file.stamp(path) not in (None, first) and parse(data).checked_plan[1].ids_read
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit,size\n" + "".join(f"{i},{i * 1.5},{1 + i % 3}\n" for i in range(30)))
    files = spec_data(tmp_path, workload={"kind": "file", "path": str(trace)}, outputs={"dir": str(tmp_path / "f")})
    assert parse(files).checked_plan[1].ids_key is None


def test_a_round_counts_alike_with_njobs_one_value_or_many(tmp_path):
    """The counting pass counts by number when every point has the same
    njobs (`PlanPoints.same_value`), by each point's parameters when njobs is
    an axis: both as the generic pass over the instances made."""
    from schedlab.platform.execution import runner

    for njobs in (20, [20, 30]):
        data = spec_data(tmp_path, workload={"kind": "synthetic", "njobs": njobs, "load": [0.3, 0.5, 0.7]})
        spec = parse(data)
        plan = build_plan(spec)
        assert plan.points.same_value("njobs") == ((True, 20) if njobs == 20 else (False, None))
        store = ResultStore(tmp_path / "counting")
        sweep = runner._Sweep(spec, plan, store, time.monotonic(), choose(spec, None, "local"), None, None)
        ids = list(plan.configs)
        sweep.sink.written.add_numbers(np.array([int(c, 16) for c in ids[::3]], np.uint64), 0)
        counted = []
        for instances in (plan.each_instance(range(2)), list(plan.each_instance(range(2)))):
            sweep.report.rows_skipped, sweep.counts["total"] = 0, 0
            pending = sweep.round_work(instances)
            counted.append((pending.remaining, sweep.counts["total"], sweep.report.rows_skipped))
        assert counted[0] == counted[1] and counted[0][2] == len(ids[::3]) and counted[0][0] > 0
