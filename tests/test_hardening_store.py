"""Results-dir hardening without Ray: damaged part files (issue 13, point 4),
write failures with a real EFBIG / ENOTDIR (point 5) and the one-writer lock
(point 3), all on real Parquet written by `ResultStore`."""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import schedlab
from schedlab.errors import UserError
from schedlab.platform.execution.runner import manifest_for, run_sweep
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.storage.store import LockedError, ResultStore, StoreWriteError

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
#: RLIMIT_FSIZE while a commit is written: far above pytest's own capture files,
#: far below the per-job file of `BIG_JOB_ROWS` rows.
FSIZE_LIMIT = 256 * 1024
BIG_JOB_ROWS = 200_000


def make_spec(out: Path):
    return parse_spec(
        {
            "name": "hardening-store",
            "engine": "queue",
            "seed": 3,
            "policies": ["FIFO", "PS"],
            "workload": {"kind": "synthetic", "njobs": 100, "shape": [0.5, 1.0]},
            "replications": {"n": 2},
            "outputs": {"dir": str(out), "per_job": True},
            "tracking": {"enabled": False},
        },
        "hardening-store.toml",
    )


def summary_rows(plan, replications) -> list[dict]:
    rows = []
    for cid, c in plan.configs.items():
        for r in replications:
            rows.append(
                {
                    "config_id": cid,
                    "replication": r,
                    "policy": c.policy,
                    "engine": "queue",
                    "workload_kind": "synthetic",
                    "seed": f"3/{r}",
                    "mst": float(r + 1),
                }
            )
    return rows


def job_tables(rows: list[dict], n: int = 10) -> list[tuple[str, pa.Table]]:
    rng = np.random.default_rng(0)
    return [
        (
            row["policy"],
            pa.table(
                {
                    "config_id": [row["config_id"]] * n,
                    "replication": [row["replication"]] * n,
                    "job_id": np.arange(n),
                    "sojourn": rng.uniform(size=n),
                }
            ),
        )
        for row in rows
    ]


@pytest.fixture
def committed(tmp_path):
    """A results dir of `make_spec` with replication 0 of every configuration
    committed (two batches: FIFO and PS partitions each get part files)."""
    spec = make_spec(tmp_path / "out")
    plan = build_plan(spec)
    store = ResultStore(spec.results_dir())
    store.prepare(manifest_for(spec, plan), fresh=False)
    rows = summary_rows(plan, [0])
    store.commit(rows, job_tables(rows), [])
    return spec, store


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# ---- point 4: damaged part files ------------------------------------------------------
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_part_file_is_named_everywhere(committed, damage):
    spec, store = committed
    victim = sorted((store.root / "summary").glob("*/part-*.parquet"))[0]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"not parquet at all" * 40)
    before = sorted(p.name for p in store.root.rglob("*.parquet"))

    with pytest.raises(UserError, match=rf"{victim}: damaged Parquet part file .*move it out of the results dir"):
        schedlab.load(store.root).collect()
    # resume: stops before any work (no Ray needed) and names the file
    with pytest.raises(UserError, match=rf"{victim}: damaged Parquet part file"):
        run_sweep(spec)
    for cmd in (["results", str(store.root)], ["track", str(store.root), "--uri", f"sqlite:///{store.root}/m.db"]):
        line = one_line_error(subprocess.run([*SCHEDLAB, *cmd], capture_output=True, text=True))
        assert str(victim) in line and "damaged Parquet part file" in line, line
    # nothing was dropped or rewritten behind the user's back
    assert sorted(p.name for p in store.root.rglob("*.parquet")) == before
    assert victim.exists()

    # The advice works: move the file away and the resume recomputes exactly its rows.
    victim.rename(store.root / "damaged.parquet.bak")
    configs = build_plan(spec).configs
    held = {cid for cid, c in configs.items() if f"policy={c.policy}" == victim.parent.name}
    assert store.done_keys() == {(cid, 0) for cid in configs if cid not in held}


def test_damaged_jobs_file_is_named(committed):
    _, store = committed
    victim = sorted((store.root / "jobs").glob("*/part-*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:100])
    with pytest.raises(UserError, match=rf"{victim}: damaged Parquet part file"):
        schedlab.load(store.root, "jobs")


# ---- point 5: a write that fails -------------------------------------------------------
@contextlib.contextmanager
def file_size_limit(limit: int):
    """RLIMIT_FSIZE for this process (root too): a write past it fails with
    EFBIG (Python ignores SIGXFSZ)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def visible_keys(root: Path, table: str) -> set[tuple[str, int]]:
    frame = schedlab.load(root, table).select("config_id", "replication").unique().collect()
    return set(zip(frame["config_id"].to_list(), frame["replication"].to_list()))


def test_file_too_large_rolls_back_the_batch_then_a_later_commit_works(committed):
    spec, store = committed
    plan = build_plan(spec)
    before = {t: visible_keys(store.root, t) for t in ("summary", "jobs")}
    rows = summary_rows(plan, [1])
    jobs = job_tables(rows[:1], BIG_JOB_ROWS) + job_tables(rows[1:])  # FIFO's per-job file is too large
    with file_size_limit(FSIZE_LIMIT), pytest.raises(StoreWriteError) as err:
        store.commit(rows, jobs, [])
    msg = str(err.value)
    assert "File too large" in msg and "not committed" in msg and "run again to resume" in msg, msg
    assert "\n" not in msg
    # Neither the failed partition nor anything else of the batch is visible; no temp file is left.
    after = {t: visible_keys(store.root, t) for t in ("summary", "jobs")}
    assert {t: after[t] - before[t] for t in after} in (
        {"summary": set(), "jobs": set()},
        # a partition written before the failing one is a committed batch of its own
        {
            "summary": {(r["config_id"], 1) for r in rows if r["policy"] == "PS"},
            "jobs": {(r["config_id"], 1) for r in rows if r["policy"] == "PS"},
        },
    )
    assert not list((store.root / ".tmp").glob("*"))
    assert all(
        (store.root / "summary" / f.parent.name / f.name).exists() for f in (store.root / "jobs").glob("*/*.parquet")
    ), "a per-job file without its summary twin"

    # Space freed: the same batch commits, nothing lost, no key twice.
    done = store.done_keys()
    todo = [r for r in rows if (r["config_id"], 1) not in done]
    store.commit(todo, job_tables(todo[:1], BIG_JOB_ROWS) + job_tables(todo[1:]), [])
    frame = schedlab.load(store.root).collect()
    assert frame.height == 2 * len(plan.configs)
    assert frame.select("config_id", "replication").is_duplicated().sum() == 0


def test_not_a_directory_is_one_line_error(committed):
    _, store = committed
    part = store.root / "summary" / "policy=PS"
    (store.root / "summary" / "policy=NEW").write_text("a file where a directory belongs")
    rows = [{"config_id": "x", "replication": 0, "policy": "NEW", "mst": 1.0}]
    with pytest.raises(StoreWriteError, match=r"cannot write results \(.*\).*run again to resume"):
        store.commit(rows, [], [])
    assert part.is_dir() and not list((store.root / ".tmp").glob("*"))


# ---- point 3: the lock -------------------------------------------------------------------
def test_lock_is_exclusive_and_released(tmp_path):
    a, b = ResultStore(tmp_path / "r"), ResultStore(tmp_path / "r")
    a.lock()
    with pytest.raises(
        LockedError, match=rf"{tmp_path / 'r'}: in use by another process \(schedlab run pid {os.getpid()}\)"
    ):
        b.lock()
    a.unlock()
    b.lock()  # released by unlock (a process's death releases it too: test_hardening_driver)
    b.unlock()
