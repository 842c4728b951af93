"""Compaction of a results dir (`schedlab.platform.storage.compact`): many small
commits merged into one part file per partition and table, rows unchanged
(all tables, in order, and what MLflow is computed from), resume after it,
the lock, no ``.tmp/`` left -- and real SIGKILLs of `schedlab compact`
subprocesses at seeded moments of its protocol: after each, readers see every
key exactly once, and the next open repairs the dir.

Kill moments come from ``SCHEDLAB_KILL_SEED`` (default `SEED`);
``SCHEDLAB_COMPACT_KILLS=all`` kills at every moment of the protocol instead
of one seeded moment per kind of step.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import schedlab
from schedlab.platform.execution.runner import manifest_for
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.storage.compact import MERGED, ROW_GROUP_ROWS, compact, merged_name
from schedlab.platform.storage.store import COMPACTING, LockedError, ResultStore
from schedlab.platform.tracking.data import expected_runs, read_manifest

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
SEED = int(os.environ.get("SCHEDLAB_KILL_SEED", "13"))
TABLES = ("summary", "jobs", "series", "failures")
ROOT = Path(__file__).resolve().parents[1]


# ---- a results dir of many small commits, written through the store ---------------------
def make_spec(out: Path, policies=("FIFO", "PS", "PSBS"), reps: int = 1):
    return parse_spec(
        {
            "name": "compact",
            "engine": "queue",
            "seed": 5,
            "policies": list(policies),
            "workload": {"kind": "synthetic", "njobs": 50, "shape": [0.5, 1.0]},
            "replications": {"n": reps},
            "outputs": {"dir": str(out), "per_job": True},
            "tracking": {"enabled": False},
        },
        "compact.toml",
    )


def write_batches(
    root: Path, batches: int, job_rows: int = 8, seed: int = 0, first: int = 0, policies=("FIFO", "PS", "PSBS")
) -> ResultStore:
    """``batches`` commits, one replication of every configuration each (all
    partitions), with what real batches vary: a per-class metric only some
    batches have, an all-null column in some, series in some, failures in
    some; per-job and series rows for every summary row that has them."""
    spec = make_spec(root, policies)
    plan = build_plan(spec)
    store = ResultStore(root)
    store.prepare(manifest_for(spec, plan), fresh=False)
    rng = np.random.default_rng(seed)
    for r in range(first, first + batches):
        rows, jobs, series, failures = [], [], [], []
        for cid, c in sorted(plan.configs.items()):
            row = {
                "config_id": cid,
                "replication": r,
                "policy": c.policy,
                "engine": "queue",
                "workload_kind": "synthetic",
                "seed": f"5/{r}",
                "mst": float(rng.lognormal()),
                "slowdown_p99": float(rng.lognormal(2.0)),
            }
            if r % 4 == 0:
                row["mst_class_1"] = float(rng.uniform())
            if r % 5 == 0:
                row["note"] = None  # Arrow's null type in this batch only
            rows.append(row)
            jobs.append(
                (
                    c.policy,
                    pa.table(
                        {
                            "config_id": [cid] * job_rows,
                            "replication": [r] * job_rows,
                            "job_id": np.arange(job_rows),
                            "sojourn": rng.uniform(size=job_rows),
                        }
                    ),
                )
            )
            if r % 3:
                series.append(
                    (
                        c.policy,
                        pa.table(
                            {
                                "config_id": [cid] * 4,
                                "replication": [r] * 4,
                                "t": np.arange(4.0),
                                "queue": rng.integers(0, 9, 4),
                            }
                        ),
                    )
                )
        if r % 6 == 0:
            failures.append({"config_id": "broken", "replication": r, "policy": "FIFO", "error": "boom"})
        store.commit(rows, jobs, failures, series)
    return store


def tables(root: Path) -> dict[str, pl.DataFrame]:
    """Every table that has rows, as the readers see it, in their order."""
    return {t: schedlab.load(root, t).collect() for t in TABLES if ResultStore(root).files(t)}


def assert_same_rows(root: Path, before: dict[str, pl.DataFrame]) -> None:
    after = tables(root)
    assert list(after) == list(before)
    for t in before:
        assert after[t].schema == before[t].schema, t
        assert after[t].equals(before[t]), f"{t}: rows differ"
    keys = after["summary"].select("config_id", "replication")
    assert keys.is_duplicated().sum() == 0
    assert ResultStore(root).done_keys() == set(keys.iter_rows())
    for t in {"jobs", "series"} & set(after):
        assert (
            after[t]
            .select("config_id", "replication", pl.col("t" if t == "series" else "job_id"))
            .is_duplicated()
            .sum()
            == 0
        ), t


def part_files(root: Path) -> dict[str, dict[str, list[str]]]:
    """table -> partition folder -> part file names (everything on disk, committed or not)."""
    out: dict[str, dict[str, list[str]]] = {}
    for t in TABLES:
        found = defaultdict(list)
        for f in sorted((root / t).rglob("*.parquet")):
            found[f.parent.name].append(f.name)
        out[t] = dict(found)
    return out


def assert_tidy(root: Path) -> None:
    """No journal, no .tmp/, no per-job or series file without its summary twin."""
    assert not (root / COMPACTING).exists()
    assert not (root / ".tmp").exists(), list((root / ".tmp").rglob("*"))
    for t in ("jobs", "series"):
        for f in (root / t).rglob("*.parquet"):
            assert (root / "summary" / f.parent.name / f.name).exists(), f


def mlflow_inputs(root: Path):
    return expected_runs(root, read_manifest(root))


# ---- what compaction does ----------------------------------------------------------------
def test_compaction_leaves_one_file_per_partition_and_table_with_the_same_rows(tmp_path):
    root = tmp_path / "out"
    write_batches(root, 24)
    before, expected = tables(root), mlflow_inputs(root)
    files = part_files(root)
    assert [len(v) for v in files["summary"].values()] == [24, 24, 24]
    assert [len(v) for v in files["series"].values()] == [16, 16, 16]
    assert len(files["failures"]["failures"]) == 4

    report = compact(root)
    assert (report.before, report.after) == (
        {"summary": 72, "jobs": 72, "series": 48, "failures": 4},
        {"summary": 3, "jobs": 3, "series": 3, "failures": 1},
    )
    assert report.line() == (
        f"compacted {root}: 196 -> 10 part files (summary 72 -> 3, jobs 72 -> 3, series 48 -> 3, failures 4 -> 1)"
    )
    files = part_files(root)
    for t in ("summary", "jobs", "series"):
        assert sorted(files[t]) == ["policy=FIFO", "policy=PS", "policy=PSBS"]
        assert all(len(names) == 1 and MERGED in names[0] for names in files[t].values()), files[t]
    assert files["jobs"] == files["summary"] == files["series"]  # merged twins keep the pairing by name
    assert_same_rows(root, before)
    assert mlflow_inputs(root) == expected  # MLflow's values, rows and rows digests: exactly the same
    assert_tidy(root)
    assert (root / ".lock").read_text().startswith("schedlab compact pid")

    again = compact(root)
    assert again.groups == 0 and again.files_before == again.files_after == 10
    assert again.line().endswith("10 -> 10 part files (nothing to merge)")


def test_later_commits_merge_after_the_compacted_rows(tmp_path):
    root = tmp_path / "out"
    write_batches(root, 6)
    compact(root)
    store = write_batches(root, 5, seed=1, first=6)  # a resumed sweep adds batches
    before = tables(root)
    assert before["summary"]["replication"].to_list()[:6] == [0, 0, 1, 1, 2, 2]  # partition FIFO first
    compact(root)
    assert_same_rows(root, before)
    assert [len(v) for v in part_files(root)["summary"].values()] == [1, 1, 1]
    assert store.done_keys() == {(cid, r) for cid in read_manifest(root)["configs"] for r in range(11)}


def test_merged_names_sort_where_the_batches_they_replace_sorted():
    a, b, c = (
        "part-00000000000000000100-aaaaaaaa.parquet",
        "part-00000000000000000200-00000000.parquet",
        "part-00000000000000000300-ffffffff.parquet",
    )
    m = merged_name(b)
    assert a < b < m < c and m.startswith("part-00000000000000000200-00000000_c")
    m2 = merged_name(m)  # a merged file merged again keeps the base once
    assert m2.count(MERGED) == 1 and b < m2 < c and m2 != m


def test_a_size_cap_splits_a_partition_into_bounded_files(tmp_path):
    root = tmp_path / "out"
    write_batches(root, 20, job_rows=400)
    before = tables(root)
    jobs_sizes = [f.stat().st_size for f in sorted((root / "jobs" / "policy=PS").glob("*.parquet"))]
    cap = 4 * max(jobs_sizes)
    compact(root, max_bytes=cap)
    assert_same_rows(root, before)
    files = part_files(root)
    for part, names in files["jobs"].items():
        assert 20 / 4 <= len(names) <= 20 / 2, (part, names)  # groups of 2..4 batches
        for name in names:
            assert (root / "jobs" / part / name).stat().st_size <= cap
    assert files["jobs"] == files["summary"]
    assert_tidy(root)


def test_batches_with_a_large_file_are_left_alone(tmp_path):
    """A batch with a file of ``large_bytes`` or more (a task's many per-job
    rows) is not re-encoded: its files keep their names and bytes, and only
    the runs of small batches between such batches are merged, each where it
    was, so the rows keep their order."""
    root = tmp_path / "out"
    big = {3, 4, 8}
    for r in range(10):  # one commit each, so batch r holds replication r
        write_batches(root, 1, job_rows=2000 if r in big else 8, seed=r, first=r)
    before = tables(root)
    part = root / "jobs" / "policy=PS"
    names = sorted(f.name for f in part.glob("*.parquet"))
    sizes = [(part / n).stat().st_size for n in names]
    large_bytes = min(sizes[r] for r in big)
    assert large_bytes > 4 * max(sizes[r] for r in range(10) if r not in big)
    kept = {n: (part / n).read_bytes() for r, n in enumerate(names) if r in big}
    compact(root, large_bytes=large_bytes)
    assert_same_rows(root, before)
    after = sorted(f.name for f in part.glob("*.parquet"))
    assert {n: (part / n).read_bytes() for n in after if n in kept} == kept  # untouched
    # [0, 1, 2] merged, 3, 4, [5, 6, 7] merged, 8, 9 alone (a run of one is not merged)
    merged = [n for n in after if MERGED in n]
    assert len(after) == 6 and len(merged) == 2, after
    assert after == sorted([*merged, *kept, names[9]])
    assert part_files(root)["jobs"] == part_files(root)["summary"]
    assert_tidy(root)


def test_row_groups_stream_in_bounded_chunks(tmp_path, monkeypatch):
    """A partition bigger than a row group is written in several row groups
    (never one table of the whole partition), rows unchanged."""
    import schedlab.platform.storage.compact as compact_module

    monkeypatch.setattr(compact_module, "ROW_GROUP_ROWS", 100)
    root = tmp_path / "out"
    write_batches(root, 12, job_rows=30)
    before = tables(root)
    compact(root)
    assert_same_rows(root, before)
    (merged,) = (root / "jobs" / "policy=PS").glob("*.parquet")
    meta = pq.read_metadata(merged)
    assert meta.num_rows == 12 * 2 * 30 and meta.num_row_groups == 8
    assert all(meta.row_group(i).num_rows == 100 for i in range(7))
    assert ROW_GROUP_ROWS >= 64 * 1024  # the real row groups are large


def test_equal_footers_share_one_schema_object(tmp_path):
    """A compaction holds every batch's schemas at once (and the footer
    check caches one per file): files with equal schemas share one Arrow
    schema object, so what it holds does not grow with the part files; files
    whose schemas differ keep their own, each equal to the file's footer."""
    from schedlab.platform.storage.compact import _batch
    from schedlab.platform.storage.damage import part_schema

    root = tmp_path / "out"
    store = write_batches(root, 8, job_rows=2)
    files = store.files("summary")
    schemas = [part_schema(f) for f in files]
    for f, schema in zip(files, schemas, strict=True):
        assert schema.equals(pq.read_schema(f), check_metadata=True)
    distinct = {id(s) for s in schemas}
    assert len(distinct) < len(files)  # most batches share a schema ...
    equal_groups = {s.serialize().to_pybytes() for s in schemas}
    assert len(distinct) == len(equal_groups)  # ... exactly one object per distinct schema
    batches = [_batch(store, f.name, {"summary": f}) for f in files]
    assert all(b.schemas["summary"] is s for b, s in zip(batches, schemas, strict=True))


def test_batches_whose_columns_conflict_are_not_merged_together(tmp_path):
    """A column that is an integer in some batches and text in others is left
    to the readers' relaxed concatenation: merging across the change would
    cast values differently from what `schedlab.load` gives."""
    root = tmp_path / "out"
    store = ResultStore(root)
    spec = make_spec(root)
    store.prepare(manifest_for(spec, build_plan(spec)), fresh=False)
    cid = next(iter(read_manifest(root)["configs"]))
    for r, label in enumerate([1, 2, "x", "y", 3]):
        store.commit([{"config_id": cid, "replication": r, "policy": "PS", "mst": 1.0 + r, "label": label}], [], [])
    before = tables(root)
    compact(root)
    assert_same_rows(root, before)
    assert len(part_files(root)["summary"]["policy=PS"]) == 3  # [1, 2], ["x", "y"], [3]
    assert before["summary"]["label"].to_list() == ["1", "2", "x", "y", "3"]


def test_compact_command_and_the_lock(tmp_path):
    root = tmp_path / "out"
    write_batches(root, 3)
    holder = ResultStore(root)
    holder.lock()  # a running `schedlab run`
    try:
        with pytest.raises(LockedError):
            compact(root)
        proc = subprocess.run([*SCHEDLAB, "compact", str(root)], capture_output=True, text=True, cwd=ROOT)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert lines == [
            f"schedlab: error: {root}: in use by another process (schedlab run pid {os.getpid()}); "
            f"only one `schedlab run` may write a results dir at a time: wait for it to end, or stop it"
        ]
    finally:
        holder.unlock()
    assert len(part_files(root)["summary"]["policy=PS"]) == 3  # untouched
    proc = subprocess.run([*SCHEDLAB, "compact", str(root)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        f"compacted {root}: 25 -> 10 part files (summary 9 -> 3, jobs 9 -> 3, series 6 -> 3, failures 1 -> 1)\n"
    )
    assert_tidy(root)
    proc = subprocess.run([*SCHEDLAB, "compact", str(tmp_path / "nothing")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr == (
        f"schedlab: error: {tmp_path / 'nothing'}: not a schedlab results dir (no manifest.json)\n"
    )


# ---- kills -------------------------------------------------------------------------------
#: Runs `schedlab compact DIR` and SIGKILLs itself just before the N-th call of
#: a step of the protocol (a Parquet write, an fsync, a rename, a deletion);
#: with N = 0 it runs through and writes the steps it took to LOG.
KILLER = textwrap.dedent("""\
    import os, signal, sys
    import pyarrow.parquet as pq
    from schedlab import cli
    import schedlab.platform.storage.compact, schedlab.platform.storage.store
    at, log, calls = int(sys.argv[1]), open(sys.argv[3], "w"), [0]
    def wrap(owner, name):
        real = getattr(owner, name)
        def step(*args, **kwargs):
            calls[0] += 1
            if calls[0] == at:
                os.kill(os.getpid(), signal.SIGKILL)
            log.write(name + " " + " ".join(str(a) for a in args[:2] if isinstance(a, (str, os.PathLike))) + "\\n")
            return real(*args, **kwargs)
        setattr(owner, name, step)
    for name in ("replace", "unlink", "rmdir", "fsync"):
        wrap(os, name)
    wrap(pq.ParquetWriter, "write_table")
    try:
        cli.main(["compact", sys.argv[2]])
    finally:
        log.close()
""")


def kind(step: str, root: Path) -> str:
    """What a logged step does, e.g. ``replace -> summary`` (the commit), ``unlink jobs``."""
    op, *paths = step.replace(str(root) + "/", "").split()
    if op == "replace":
        return f"replace -> {paths[-1].split('/')[0]}"
    if op == "unlink":
        return f"unlink {paths[0].split('/')[0]}"
    return op


def killed_at(moment: int, source: Path, work: Path) -> subprocess.CompletedProcess:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work)
    return subprocess.run(
        [sys.executable, "-c", KILLER, str(moment), str(work), str(work.parent / "steps.log")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_sigkills_during_compaction_lose_and_duplicate_nothing(tmp_path):
    source = tmp_path / "source"
    write_batches(source, 7, policies=("FIFO", "PS"))
    before = tables(source)
    work = tmp_path / "work"

    full = killed_at(0, source, work)  # the whole protocol once, to learn its steps
    assert full.returncode == 0, full.stderr
    steps = (tmp_path / "steps.log").read_text().splitlines()
    kinds = [kind(s, work) for s in steps]
    for must in (
        "write_table",
        "fsync",
        "replace -> compacting.json",
        "replace -> jobs",
        "replace -> series",
        "replace -> summary",
        "replace -> failures",
        "unlink jobs",
        "unlink series",
        "unlink summary",
        "unlink failures",
        "unlink compacting.json",
        "rmdir",
    ):
        assert must in kinds, (must, sorted(set(kinds)))
    if os.environ.get("SCHEDLAB_COMPACT_KILLS") == "all":
        moments = list(range(1, len(steps) + 1))
    else:  # one seeded moment of every kind of step, and the very last step
        rng = random.Random(SEED)
        by_kind = defaultdict(list)
        for i, k in enumerate(kinds, start=1):
            by_kind[k].append(i)
        moments = sorted({rng.choice(v) for v in by_kind.values()} | {len(steps)})

    landed = []
    for moment in moments:
        proc = killed_at(moment, source, work)
        assert proc.returncode == -signal.SIGKILL, (moment, proc.returncode, proc.stderr)
        journal = (work / COMPACTING).exists()
        landed.append(
            f"kill before step {moment}/{len(steps)} ({kinds[moment - 1]}): "
            f"{'journal left' if journal else 'no journal'}, "
            f"{sum(len(v) for v in part_files(work)['summary'].values())} summary files"
        )
        # Readers, before any repair: every key exactly once, the rows as they were.
        assert_same_rows(work, before)
        # The next writer's open repairs (as `schedlab run` does on start) ...
        store = ResultStore(work)
        store.lock()
        store.clean()
        store.unlock()
        assert not (work / COMPACTING).exists() and not (work / ".tmp").exists()
        assert_same_rows(work, before)
        # ... and the next compaction finishes the job.
        again = subprocess.run([*SCHEDLAB, "compact", str(work)], capture_output=True, text=True, cwd=ROOT)
        assert again.returncode == 0, again.stderr
        assert_same_rows(work, before)
        assert_tidy(work)
        files = part_files(work)
        assert [len(files[t][p]) for t in ("summary", "jobs", "series") for p in files[t]] == [1] * 6
        assert len(files["failures"]["failures"]) == 1
    print("\n" + "\n".join(landed))


def holds_lock(root: Path, proc: subprocess.Popen) -> bool:
    """The process wrote its pid into the results dir's lock file (it does so once it holds the lock)."""
    try:
        return f"pid {proc.pid}" in (root / ".lock").read_text()
    except OSError:
        return False


def compact_process(root: Path) -> tuple[subprocess.Popen, float]:
    """`schedlab compact ROOT` started, and the moment it took the lock."""
    proc = subprocess.Popen([*SCHEDLAB, "compact", str(root)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not holds_lock(root, proc):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.002)
    return proc, time.monotonic()


def test_sigkills_of_the_real_command_at_seeded_times(tmp_path):
    """`schedlab compact` as users run it, SIGKILLed at seeded times within
    its measured compaction time (from taking the lock to its exit)."""
    source = tmp_path / "source"
    write_batches(source, 60, job_rows=2000, policies=("FIFO", "PS"))
    before = tables(source)
    work = tmp_path / "work"
    shutil.copytree(source, work)
    proc, locked = compact_process(work)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    duration = time.monotonic() - locked
    rng = random.Random(SEED)
    landed = []
    for _ in range(5):
        shutil.rmtree(work)
        shutil.copytree(source, work)
        proc, locked = compact_process(work)
        moment = rng.uniform(0.0, 1.0) * duration
        time.sleep(max(0.0, locked + moment - time.monotonic()))  # the kill moment itself
        proc.kill()
        proc.wait()
        summary = sum(len(v) for v in part_files(work)["summary"].values())
        landed.append(
            f"kill {moment:.3f} s into a {duration:.3f} s compaction: rc {proc.returncode}, "
            f"journal {'left' if (work / COMPACTING).exists() else 'none'}, {summary} summary files"
        )
        assert_same_rows(work, before)
        report = compact(work)
        assert report.after == {"summary": 2, "jobs": 2, "series": 2, "failures": 1}
        assert_same_rows(work, before)
        assert_tidy(work)
    print("\n" + "\n".join(landed))


# ---- a real sweep: compaction at the end of `run_sweep` ----------------------------------
def test_a_sweep_compacts_at_its_end_and_resumes_and_tracks_after_it(tmp_path):
    """Small tasks, one in flight: many commits; the run ends compacted, with
    MLflow (SQLite) matching the compacted rows exactly, and a resume
    recomputes nothing."""
    import ray
    from mlflow.tracking import MlflowClient

    from schedlab.platform.execution import runner
    from schedlab.platform.execution.runner import run_sweep
    from schedlab.platform.tracking.mirror import RunState as _RunState
    from schedlab.platform.tracking.mirror import up_to_date
    from schedlab.platform.tracking.tracker import track_results

    db = tmp_path / "mlflow.db"
    spec = parse_spec(
        {
            "name": "compact-sweep",
            "engine": "queue",
            "seed": 11,
            "policies": ["FIFO", "PS", "SRPT"],
            "workload": {"kind": "synthetic", "njobs": 200, "shape": [0.5, 1.0]},
            "replications": {"n": 4},
            "outputs": {"dir": str(tmp_path / "out"), "per_job": True},
            "tracking": {"uri": f"sqlite:///{db}"},
            "execution": {"task_jobs": 200, "max_in_flight": 1, "num_cpus": 1},
        },
        "compact-sweep.toml",
    )
    commits = []
    real_commit = ResultStore.commit

    def counting(self, summary, *args, **kwargs):
        commits.append(len(summary))
        return real_commit(self, summary, *args, **kwargs)

    if ray.is_initialized():
        ray.shutdown()
    runner.forget_ray()
    ResultStore.commit = counting
    try:
        runner.FLUSH_SECONDS, flush = 0.0, runner.FLUSH_SECONDS  # a commit per finished task
        report = run_sweep(spec)
    finally:
        runner.FLUSH_SECONDS = flush
        ResultStore.commit = real_commit
    root = spec.results_dir()
    assert report.rows_written == 24 and not report.failures and not report.compaction_error
    assert report.tracking is not None and not report.tracking.failed
    assert len(commits) >= 8  # many small batches (one per task; tasks hold one instance)
    c = report.compaction
    assert c.before["summary"] == c.before["jobs"] == sum(1 for _ in commits) * 3
    assert c.after == {"summary": 3, "jobs": 3, "series": 0, "failures": 0}
    assert_tidy(root)
    files = part_files(root)
    assert [len(v) for v in files["summary"].values()] == [1, 1, 1] and files["jobs"] == files["summary"]
    rows = tables(root)
    assert rows["summary"].height == 24 and rows["jobs"].height == 24 * 200

    # MLflow was checked before the compaction; the compacted rows give exactly what it holds.
    expected, _ = mlflow_inputs(root)
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("compact-sweep")
    children = [
        r for r in client.search_runs([exp.experiment_id], max_results=100) if "mlflow.parentRunId" in r.data.tags
    ]
    assert sorted(r.data.tags["schedlab.config_id"] for r in children) == sorted(expected)
    for r in children:
        assert up_to_date(_RunState.of(r), expected[r.data.tags["schedlab.config_id"]])
    assert track_results(root, uri=f"sqlite:///{db}").logged == 6

    again = run_sweep(spec)  # resume after compaction: nothing recomputed, nothing to merge
    assert (again.rows_written, again.rows_skipped, again.tasks) == (0, 24, 0)
    assert again.compaction.groups == 0 and not again.tracking.failed
    assert_same_rows(root, rows)
    assert_tidy(root)
    ray.shutdown()
    runner.forget_ray()


def test_a_batch_keeps_columns_its_first_row_lacks(tmp_path):
    """A per-class metric (or a failure's traceback) that only later rows of a
    batch have is committed, not dropped (it would change what compaction and
    MLflow see)."""
    root = tmp_path / "out"
    store = ResultStore(root)
    spec = make_spec(root)
    store.prepare(manifest_for(spec, build_plan(spec)), fresh=False)
    store.commit(
        [
            {"config_id": "a", "replication": 0, "policy": "PS", "mst": 1.0},
            {"config_id": "b", "replication": 0, "policy": "PS", "mst": 2.0, "mst_class_1": 0.5},
        ],
        [],
        [
            {"config_id": "c", "replication": 0, "policy": "PS", "error": "x"},
            {"config_id": "d", "replication": 0, "policy": "PS", "error": "y", "traceback": "t"},
        ],
    )
    assert schedlab.load(root).collect()["mst_class_1"].to_list() == [None, 0.5]
    assert schedlab.load(root, "failures").collect()["traceback"].to_list() == [None, "t"]
