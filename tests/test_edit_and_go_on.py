"""Edit your own policy (or generator) and go on (issue #41): a comment,
docstring or formatting edit changes nothing; a real edit re-runs exactly
that code's configurations on the next `schedlab run`, moves their old rows
to ``superseded/<n>/`` (recorded in manifest.json, loadable), keeps every
other row bit for bit, and says so before it starts; `view` after an edit
replays the stored run; adding a built-in policy says only "policies".

Real sweeps in tmp dirs, in-process (``backend = "local"``), real Parquet.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import schedlab
from schedlab import usercode
from schedlab.cli import main
from schedlab.errors import UserError
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.storage.store import ResultStore
from schedlab.views import replay as rp

POLICY = '''
from schedlab.api import queue


class MyFIFO(queue.Policy):
    """First come, first served, without preemption."""

    def __init__(self, server, *, crash_at: int = -1):
        super().__init__(server)
        self.queue = []
        self.crash_at = crash_at

    def arrive(self, job, estimate, weight):
        if job == self.crash_at:
            raise ZeroDivisionError("crash_at reached")
        self.queue.append(job)
        if len(self.queue) == 1:
            self.server.serve_job(job)

    def depart(self, job):
        self.queue.remove(job)
        self.server.serve_job(self.queue[0] if self.queue else None)
'''

#: The same code as POLICY: comments, another docstring, another layout.
RESTYLED = (
    POLICY.replace('"""First come, first served, without preemption."""', '"""FIFO.\n\n    Edited docs."""  # note')
    .replace(
        "        self.queue = []\n", "        # the waiting jobs, oldest first\n        self.queue = [\n        ]\n"
    )
    .replace("    def depart(self, job):", "    def depart(self, job):\n        '''A job left.'''")
)

#: A real edit: another statement (the newest waiting job is served next).
EDITED = POLICY.replace("self.queue[0] if self.queue", "self.queue[-1] if self.queue")

GENERATOR = """
import numpy as np
import polars as pl


def bursty(rng, *, njobs: int = 60, burst: float = 4.0):
    gaps = rng.exponential(1.0, njobs)
    gaps[::10] *= burst
    return pl.DataFrame({"job_id": np.arange(njobs), "submit": np.cumsum(gaps), "size": rng.weibull(0.5, njobs) + 1e-3})
"""

KEY = ["config_id", "replication"]


def spec_of(folder: Path, policies: list, workload: dict | None = None) -> dict:
    return {
        "name": "mine",
        "engine": "queue",
        "seed": 5,
        "workload": workload or {"kind": "synthetic", "njobs": 60, "load": [0.5, 0.8]},
        "policies": policies,
        "replications": {"n": 2},
        "tracking": {"enabled": False},
        "execution": {"backend": "local"},
        "outputs": {"dir": str(folder / "results" / "mine")},
    }


def sweep(spec: dict, folder: Path):
    return run_sweep(parse_spec(spec, "spec.toml", folder))


def summary(root: str | Path) -> pl.DataFrame:
    return schedlab.load(root).collect().sort(KEY)


def failures(root: str | Path) -> pl.DataFrame:
    return schedlab.load(root, "failures").collect().sort(KEY)


def manifest(root: str | Path) -> dict:
    return json.loads((Path(root) / "manifest.json").read_text())


MINE = {"name": "MyFIFO", "use": "pol.py:MyFIFO", "params": {"crash_at": [-1, 3]}}
OTHER = {"name": "Other", "use": "other.py:MyFIFO", "params": {"crash_at": [-1, 3]}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pol.py").write_text(POLICY)
    (tmp_path / "other.py").write_text(POLICY)
    return tmp_path


def test_the_digest_is_of_the_syntax_tree(tmp_path):
    a, b, c = tmp_path / "a" / "pol.py", tmp_path / "b" / "pol.py", tmp_path / "c" / "pol.py"
    for path, text in ((a, POLICY), (b, RESTYLED), (c, EDITED)):
        path.parent.mkdir()
        path.write_text(text)
    assert usercode.source_digest(a) == usercode.source_digest(b) != usercode.source_digest(c)
    assert usercode.file_digest(a) != usercode.file_digest(b)  # the bytes differ: the engines' digest sees it
    broken = tmp_path / "d" / "pol.py"
    broken.parent.mkdir()
    broken.write_text("def f(:\n")  # does not parse: its bytes count
    assert usercode.code_form("pol.py", broken.read_bytes()) == broken.read_bytes()


def test_a_comment_or_docstring_edit_reruns_nothing(project):
    spec = spec_of(project, ["PS", MINE])
    first = sweep(spec, project)
    before = summary(first.results_dir)
    (project / "pol.py").write_text(RESTYLED)
    again = sweep(spec, project)
    assert (again.rows_written, again.reruns, again.grew) == (0, None, None)
    assert not (Path(again.results_dir) / "superseded").exists()
    assert summary(again.results_dir).equals(before)


def test_a_real_edit_reruns_only_that_policy_and_moves_its_rows_aside(project):
    spec = spec_of(project, ["PS", MINE, OTHER])
    spec["outputs"]["per_job"] = True
    first = sweep(spec, project)
    root = Path(first.results_dir)
    before, failed, jobs = summary(root), failures(root), schedlab.load(root, "jobs").collect()
    mixed = [f for f in (root / "failures").glob("*.parquet") if pl.read_parquet(f)["policy"].n_unique() == 2]
    assert mixed  # a failures file holds MyFIFO's and Other's: it is split below
    old_sha = manifest(root)["user_code"]["policies[1].use"]["sha256"]
    (project / "pol.py").write_text(EDITED)
    heard: list[str] = []
    again = run_sweep(parse_spec(spec, "spec.toml", project), notify=heard.append)
    new_sha = manifest(root)["user_code"]["policies[1].use"]["sha256"]
    # Said before it starts: the field, the file, old -> new digest, what re-runs, where the old rows go.
    assert heard == [again.reruns]
    assert f"policies[1].use (pol.py:MyFIFO): sha256 {old_sha[:12]} -> {new_sha[:12]}" in heard[0]
    assert "its 4 configurations re-run" in heard[0] and str(root / "superseded" / "1") in heard[0]
    mine = pl.col("policy") == "MyFIFO"
    # Only MyFIFO's configurations ran: its ok runs (2 points x 2 replications) and its failing ones.
    assert again.rows_written == before.filter(mine).height and again.grew is None
    after = summary(root)
    assert after.filter(~mine).equals(before.filter(~mine))  # every other row, bit for bit
    assert set(after.filter(mine)["code_sha256"]) == {new_sha}
    # Failed simulations are tried again on every run (Other's too); the old failure rows stay, untouched.
    others = failed.filter(pl.col("policy") != "MyFIFO")
    assert others.join(failures(root), on=others.columns, how="anti").is_empty()
    assert failures(root).filter(mine)["error"].unique().to_list() == ["ZeroDivisionError: crash_at reached"]
    # The old rows are findable: recorded in manifest.json, loadable as a results dir of their own.
    record = manifest(root)["superseded"]
    assert [r["dir"] for r in record] == ["superseded/1"] and record[0]["rows"] == before.filter(mine).height
    assert record[0]["code"] == [{"field": "policies[1].use", "use": "pol.py:MyFIFO", "old": old_sha, "new": new_sha}]
    assert set(record[0]["configs"]) == set(before.filter(mine)["config_id"]) | set(failed.filter(mine)["config_id"])
    assert not set(record[0]["configs"]) & set(manifest(root)["configs"])
    moved = root / record[0]["dir"]
    assert summary(moved).select(before.columns).equals(before.filter(mine))
    assert failures(moved).select(failed.columns).equals(failed.filter(mine))
    job_key = ["config_id", "replication", "job_id"]
    moved_jobs = schedlab.load(moved, "jobs").collect()
    assert moved_jobs.select(jobs.columns).sort(job_key).equals(jobs.filter(mine).sort(job_key))
    kept_jobs = schedlab.load(root, "jobs").collect().filter(~mine)
    assert kept_jobs.select(jobs.columns).sort(job_key).equals(jobs.filter(~mine).sort(job_key))
    assert set(manifest(moved)["configs"]) == set(record[0]["configs"])
    # Run again: a plain resume, nothing moves twice.
    third = sweep(spec, project)
    assert (third.rows_written, third.reruns) == (0, None) and len(manifest(root)["superseded"]) == 1


def test_run_says_what_reruns_before_it_starts(project):
    spec_file = project / "spec.toml"
    spec_file.write_text(
        "\n".join(
            [
                'name = "mine"',
                'engine = "queue"',
                "[workload]",
                'kind = "synthetic"',
                "njobs = 40",
                "[[policies]]",
                'name = "PS"',
                "[[policies]]",
                'name = "MyFIFO"',
                'use = "pol.py:MyFIFO"',
                "[replications]",
                "n = 2",
                "[execution]",
                'backend = "local"',
                "[outputs]",
                f'dir = "{project / "results" / "cli"}"',
            ]
        )
    )
    args = ["run", str(spec_file), "--no-tracking", "--no-progress"]
    assert CliRunner().invoke(main, args).exit_code == 0
    (project / "pol.py").write_text(EDITED)
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "your code changed since these rows were written (policies[1].use (pol.py:MyFIFO)" in lines[0]
    assert "2 rows written, 2 already on disk" in lines[1]


def test_view_after_an_edit_replays_the_stored_run_or_names_the_file(project, monkeypatch):
    spec = spec_of(project, ["PS", {"name": "MyFIFO", "use": "pol.py:MyFIFO"}])
    root = Path(sweep(spec, project).results_dir)
    (project / "pol.py").write_text(EDITED)  # edited, not re-run yet
    monkeypatch.chdir(project.parent)  # and viewed from another folder
    for policy in ("PS", "MyFIFO"):
        sel = rp.select(root, policy=policy, where={"load": 0.5})
        assert rp.replay(sel).n_jobs == 60  # checked against the stored row, to the bit
    shutil.rmtree(root / "code")  # no copy of the code the rows came from: the edited file is named
    monkeypatch.chdir(project)
    sel = rp.select(root, policy="MyFIFO", where={"load": 0.5})
    with pytest.raises(UserError, match=r"policies\[1\]\.use \(pol\.py:MyFIFO\): sha256 \w{12} in manifest.json, "):
        rp.replay(sel)
    assert rp.replay(rp.select(root, policy="PS", where={"load": 0.5})).n_jobs == 60


def test_adding_a_builtin_says_only_policies(project):
    root = Path(sweep(spec_of(project, [{"name": "MyFIFO", "use": "pol.py:MyFIFO"}]), project).results_dir)
    before = summary(root)
    grown = sweep(spec_of(project, ["LAS", {"name": "MyFIFO", "use": "pol.py:MyFIFO"}]), project)
    assert grown.grew is not None and "(policies changed)" in grown.grew and "user_code" not in grown.grew
    assert grown.reruns is None and grown.rows_written == before.height
    assert summary(root).filter(pl.col("policy") == "MyFIFO").select(before.columns).equals(before)


def test_a_results_dir_hashed_by_bytes_moves_its_user_code_rows_aside(project, monkeypatch):
    spec = spec_of(project, ["PS", {"name": "MyFIFO", "use": "pol.py:MyFIFO"}])
    with monkeypatch.context() as m:
        m.setattr(usercode, "source_digest", usercode.file_digest)  # how the code was hashed before
        root = Path(sweep(spec, project).results_dir)
    before = summary(root)
    again = sweep(spec, project)  # the same file, hashed by its syntax tree now
    assert again.reruns is not None and "policies[1].use (pol.py:MyFIFO)" in again.reruns
    after = summary(root)
    mine = pl.col("policy") == "MyFIFO"
    assert after.filter(~mine).equals(before.filter(~mine))
    assert after.filter(mine).height == before.filter(mine).height  # re-run, not mixed with the old rows
    assert set(after.filter(mine)["code_sha256"]) == {usercode.source_digest(project / "pol.py")}
    assert summary(root / "superseded" / "1").select(before.columns).equals(before.filter(mine))


def test_an_edited_generator_reruns_its_configurations(project):
    (project / "gen.py").write_text(GENERATOR)
    spec = spec_of(project, ["PS", "FIFO"], workload={"use": "gen.py:bursty", "burst": [2.0, 8.0]})
    root = Path(sweep(spec, project).results_dir)
    before = summary(root)
    (project / "gen.py").write_text(GENERATOR.replace("gaps[::10] *= burst", "gaps[::5] *= burst"))
    again = sweep(spec, project)
    assert again.reruns is not None and "workload.use (gen.py:bursty)" in again.reruns
    assert again.rows_written == before.height
    assert summary(root / "superseded" / "1").select(before.columns).equals(before)
    assert not set(summary(root)["config_id"]) & set(before["config_id"])


def test_a_mixed_part_file_is_split_once(tmp_path):
    """A file with rows of moved and kept configurations (a workload's code
    reaches every policy; failures are not partitioned): the moved rows are
    written aside once, the file keeps the others; doing it again (a run
    killed half-way) moves nothing twice."""
    store = ResultStore(tmp_path / "r")
    rows = pa.table({"config_id": ["a", "b", "a", "c"], "replication": [0, 0, 1, 0], "mst": [1.5, 2.5, 3.5, 4.5]})
    part = tmp_path / "r" / "summary" / "policy=P" / "part-1.parquet"
    part.parent.mkdir(parents=True)
    pq.write_table(rows, part)
    dest = tmp_path / "r" / "superseded" / "1" / "summary" / "policy=P" / "part-1.parquet"
    ids = pa.array(["a"], pa.string())
    assert store._move_rows(part, ids, dest) == 2
    assert pq.read_table(dest).equals(rows.filter(pa.array([True, False, True, False])))
    assert pq.read_table(part).equals(rows.filter(pa.array([False, True, False, True])))
    assert store._move_rows(part, ids, dest) == 0
    assert store._move_rows(part, pa.array(["b", "c"], pa.string()), dest.with_name("part-2.parquet")) == 2
    assert not part.exists()  # only moved rows left: the file itself moved


def test_an_edited_metric_is_refused_naming_it(project):
    (project / "metric.py").write_text("def share(jobs, *, threshold: float = 5.0):\n    return 0.5\n")
    spec = spec_of(project, ["PS"])
    spec["metrics"] = [{"name": "share", "use": "metric.py:share"}]
    sweep(spec, project)
    (project / "metric.py").write_text("def share(jobs, *, threshold: float = 5.0):\n    return 0.25\n")
    with pytest.raises(UserError, match=r"the code of metrics\[0\]\.use \(metric\.py:share\): sha256 \w{12} -> "):
        sweep(spec, project)


def test_results_and_compare_read_the_stored_rows_after_an_edit(project):
    spec = spec_of(project, ["PS", {"name": "MyFIFO", "use": "pol.py:MyFIFO"}])
    root = Path(sweep(spec, project).results_dir)
    (project / "pol.py").write_text(EDITED)  # not re-run
    shown = CliRunner().invoke(main, ["results", str(root)])
    assert shown.exit_code == 0 and "MyFIFO" in shown.output, shown.output
    paired = CliRunner().invoke(main, ["compare", str(root), "--baseline", "PS"])
    assert paired.exit_code == 0 and "MyFIFO" in paired.output, paired.output
    drawn = CliRunner().invoke(
        main, ["plot", str(root), "--x", "load", "--y", "mst", "--out", str(project / "fig.png")]
    )
    assert drawn.exit_code == 0, drawn.output
    table = pl.read_csv(project / "fig.csv")
    assert "MyFIFO" in table["line"].to_list()  # the stored rows, drawn


def test_a_run_killed_while_moving_rows_aside_finishes_the_move(project, monkeypatch):
    """Killed after every summary row moved, before the failures did and
    before the manifest recorded the move: the next run finishes it."""
    spec = spec_of(project, [MINE])
    root = Path(sweep(spec, project).results_dir)
    before, failed = summary(root), failures(root)
    (project / "pol.py").write_text(EDITED)
    real = ResultStore._move_rows

    def killed(self, f, ids, dest):
        if f.parent.name == "failures":
            raise KeyboardInterrupt
        return real(self, f, ids, dest)

    with monkeypatch.context() as m:
        m.setattr(ResultStore, "_move_rows", killed)
        with pytest.raises(KeyboardInterrupt):
            sweep(spec, project)
    assert not ResultStore(root).has("summary") and "superseded" not in manifest(root)
    again = sweep(spec, project)
    assert again.reruns is not None and again.rows_written == before.height
    moved = root / "superseded" / "1"
    assert summary(moved).select(before.columns).equals(before)  # each old row once
    assert failures(moved).select(failed.columns).equals(failed)
    assert [r["dir"] for r in manifest(root)["superseded"]] == ["superseded/1"]
    assert manifest(root)["superseded"][0]["rows"] == before.height
