"""A results dir is Parquet anyone can read: every part of a table has the
same columns and types (a column only some rows carry -- a user policy's
``code_sha256``, a parameter only one policy takes -- is there, null, in every
other part), so plain polars and DuckDB read the directory as it is, and
they read exactly the rows `schedlab.load` gives. A results dir written
before (parts lacking those columns) still loads with `schedlab.load`."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

import schedlab
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.validate import parse_spec

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "your-own-policy.md"


def _limited_ps() -> str:
    """The guide's LimitedPS (a user policy with an integer parameter ``k``)."""
    text = GUIDE.read_text()
    start = text.index("# file: limited_ps.py\n") + len("# file: limited_ps.py\n")
    return text[start : text.index("```", start)]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """A sweep where parts differ in what they carry: built-ins, a user policy
    with a parameter, a copy of a built-in as user code, per-job rows."""
    folder = tmp_path_factory.mktemp("mixed")
    (folder / "limited_ps.py").write_text(_limited_ps())
    (folder / "copied.py").write_text(
        textwrap.dedent(
            """
            from schedlab.engines.queue.policies.basic import FIFO as Copy
            """
        )
    )
    spec = {
        "name": "mixed",
        "engine": "queue",
        "seed": 3,
        "policies": [
            "PS",
            "PSBS",
            {"name": "LimitedPS", "use": "limited_ps.py:LimitedPS", "params": {"k": [1, 2]}},
            {"name": "Copy", "use": "copied.py:Copy"},
        ],
        "workload": {"kind": "synthetic", "njobs": 200, "shape": [0.25, 1.0]},
        "replications": {"n": 3},
        "outputs": {"dir": str(folder / "results"), "per_job": True},
        "tracking": {"enabled": False},
        "execution": {"backend": "local"},
    }
    report = run_sweep(parse_spec(spec, "mixed.toml", folder))
    assert not report.failures
    return Path(report.results_dir)


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(sorted(frame.columns)).sort(
        "config_id", "replication", *(["job_id"] if "job_id" in frame.columns else [])
    )


@pytest.mark.parametrize("table", ["summary", "jobs"])
def test_every_part_of_a_table_has_the_same_columns_and_types(mixed, table):
    parts = sorted((mixed / table).rglob("*.parquet"))
    assert len({p.parent.name for p in parts}) == 4  # PS, PSBS, LimitedPS, Copy
    schemas = {p: pq.read_schema(p).remove_metadata() for p in parts}
    first = next(iter(schemas.values()))
    assert all(s.equals(first) for s in schemas.values()), {str(p): s.names for p, s in schemas.items()}


def test_plain_polars_reads_the_directory_as_schedlab_load_does(mixed):
    loaded = _sorted(schedlab.load(mixed).collect())
    # a built-in's rows carry the user code's columns, null; a policy without k has policy_k null, typed
    assert loaded.filter(pl.col("policy") == "PS")["code_sha256"].null_count() == 6
    assert loaded.schema["policy_k"] == pl.Int64
    assert set(loaded.filter(pl.col("policy") == "LimitedPS")["policy_k"]) == {1, 2}
    direct = pl.read_parquet(mixed / "summary")
    scanned = pl.scan_parquet(mixed / "summary" / "**" / "*.parquet").collect()
    assert _sorted(direct).equals(loaded)
    assert _sorted(scanned).equals(loaded.drop("policy"))  # a glob has no hive directory to name the policy
    jobs = pl.read_parquet(mixed / "jobs")
    assert _sorted(jobs).equals(_sorted(schedlab.load(mixed, "jobs").collect()))


def test_duckdb_reads_the_directory_as_schedlab_load_does(mixed):
    loaded = _sorted(schedlab.load(mixed).collect())
    glob = (mixed / "summary" / "**" / "*.parquet").as_posix()
    read = duckdb.sql(f"select * from read_parquet('{glob}', hive_partitioning = true)").pl()
    assert read.height == loaded.height == 5 * 2 * 3
    assert _sorted(read.select(loaded.columns)).equals(loaded.select(sorted(loaded.columns)))


def test_a_results_dir_written_before_still_loads(mixed, tmp_path):
    """Parts as schedlab wrote them before: a built-in's part without the user
    code's and the other policy's parameter columns."""
    old = tmp_path / "old"
    shutil.copytree(mixed, old)
    for part in (old / "summary" / "policy=PS").glob("*.parquet"):
        t = pq.read_table(part)
        pq.write_table(t.drop_columns(["code_sha256", "policy_k"]), part)
    before = _sorted(schedlab.load(mixed).collect())
    after = _sorted(schedlab.load(old).collect())
    assert after.select(before.columns).equals(before)
