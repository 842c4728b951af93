"""The `schedlab` command: light start-up, summaries, per-job output, and
clean errors (one line, exit 2, no traceback)."""

import json
import subprocess
import sys

import polars as pl
import pytest


def cli(*args):
    return subprocess.run([sys.executable, "-m", "schedlab.cli", *args], capture_output=True, text=True)


def test_help_does_not_import_heavy_modules():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from schedlab.cli import main\n"
        "r = CliRunner().invoke(main, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "r = CliRunner().invoke(main, ['policies'])\n"
        "assert 'PSBS' in r.output\n"
        "heavy = [m for m in ('ray', 'mlflow', 'polars', 'pyarrow') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_policies_lists_every_policy():
    out = cli("policies")
    assert out.returncode == 0
    for name in (
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
    ):
        assert f" {name} " in out.stdout


def test_simulate_summary_and_jobs_out(tmp_path):
    out_file = tmp_path / "jobs.parquet"
    out = cli("simulate", "--policy", "PSBS", "--njobs", "2000", "--seed", "3", "--jobs-out", str(out_file), "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    jobs = pl.read_parquet(out_file)
    assert jobs.columns == ["job_id", "submit", "size", "estimate", "weight", "completion", "sojourn", "slowdown"]
    assert jobs.height == 2000 == summary["n_jobs"]
    assert summary["mst"] == pytest.approx(jobs["sojourn"].mean(), rel=1e-12)  # summation order differs
    text = cli("simulate", "--policy", "PSBS", "--njobs", "2000", "--seed", "3")
    for label in ("mean sojourn time", "slowdown p99", "slowdown max", "wall time"):
        assert label in text.stdout


def test_simulate_workload_file(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit,size\n1,0,10\n2,3,5\n3,5,2\n")
    out = cli("simulate", "--policy", "FSPE+PS", "--workload-file", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["mst"] == (17 - 0 + 10 - 3 + 7 - 5) / 3  # FSP schedule of the paper's Fig. 2


def test_simulate_errors(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("job_id,submit,size\n1,0,10\n2,3,-5\n")
    cases = [
        (["simulate", "--policy", "NOPE"], "unknown policy 'NOPE'"),
        (["simulate", "--policy", "PS", "--engine", "nope"], "unknown engine 'nope'"),
        (["simulate", "--policy", "PS", "--workload-file", str(path)], "bad.csv:3"),
        (["simulate", "--policy", "PS", "--workload-file", str(tmp_path / "missing.csv")], "missing.csv: no such file"),
        (
            ["simulate", "--policy", "PS", "--workload-file", str(path), "--shape", "1"],
            "cannot be combined with --shape",
        ),
        (["simulate", "--policy", "PS", "--sigma", "-1"], "sigma"),
        (["simulate", "--policy", "PS", "--jobs-out", str(tmp_path / "x.txt")], ".parquet or .csv"),
    ]
    for args, expected in cases:
        out = cli(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert expected in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
