"""Sweeps' rows and Parquet files are those of the code before issue 42's array path, to the bit.

Issue 42 moved the built-in workload kinds, the queue engine and the task's
rows off small polars frames (`schedlab.workloads.arrays.JobArrays`, rows
accumulated column-wise). That is a speed change, so it must leave every row
alone. Each sweep of `SPECS` runs in-process (``local`` backend, one CPU);
every Parquet file of its results dir (summary, per-job, time series) is read
back and digested -- each file's column names and Arrow types, and every value
(floats by their bits), rows in key order -- and the digests are compared with
`GOLDEN`, which were computed by this very file on the code before the change
(``python tests/test_rows_golden.py --write`` at commit 38e5943 of main),
except two: the ``batch`` and ``queue-user-metrics-warmup`` digests were
rewritten when ``utilisation`` and ``mst_obm_ci95`` moved off BLAS (`np.dot`,
whose bits follow the CPU's OpenBLAS kernel) to
`schedlab.sim.common.portable.dot`, once every digest was shown the same under
each CPU setting of tests/test_cpu_independence.py. The cases cover the array
path and the frame path side by side: queue FIFO/PS/SRPT on ``synthetic`` with
per-job rows, the reference engine path, a user's policy, extra metrics
(built-in and a user's) and warm-up deletion, a user's generator, a packing
sweep and a batch sweep.

Columns left out of the digests: what measures the machine (``TIMINGS``)
and ``schedlab_digest`` (the engines' source digest: it changes with any
edit to an engine's files, by design, to tell rows of two code versions
apart).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
GOLDEN = Path(__file__).with_name("rows_golden.json")
#: Summary values that measure the machine, not the schedule (``views.replay.TIMING_METRICS``).
TIMINGS = ("sim_seconds", "bound_seconds")
#: Left out of the digests besides the timings (see the module docstring).
UNSTABLE = (*TIMINGS, "schedlab_digest")
#: The results dir's tables (``schedlab.platform.storage.store``: SUMMARY, JOBS, SERIES).
TABLES = ("summary", "jobs", "series")

_QUEUE_WORKLOAD = {"kind": "synthetic", "njobs": 300, "load": [0.7, 0.95], "sigma": [0.5, 2.0], "beta": 1.0}
SPECS: dict[str, dict[str, Any]] = {
    "queue-per-job": {
        "engine": "queue",
        "policies": ["FIFO", "PS", "SRPT"],
        "workload": _QUEUE_WORKLOAD,
        "replications": {"n": 2},
        "outputs": {"per_job": True},
    },
    "queue-reference": {
        "engine": "queue",
        "policies": ["FIFO", "PSBS"],
        "workload": {"kind": "synthetic", "njobs": 120, "shape": [0.25, 1.0], "size_dist": "weibull"},
        "replications": {"n": 2},
        "execution": {"engine_path": "reference"},
    },
    "queue-user-metrics-warmup": {
        "engine": "queue",
        "policies": [
            "SRPTE",
            {"name": "AgedSRPT", "use": "mypolicies/aged_srpt.py:AgedSRPT", "params": {"alpha": [0.0, 0.01]}},
            "PSBS",
        ],
        "workload": {"kind": "synthetic", "njobs": 400, "load": 0.9, "sigma": [0.5, 1.0], "weight_classes": 3},
        "metrics": [
            {"name": "big_job_slowdown", "use": "mymetrics.py:top_mean", "params": {"top": 0.05}},
            {"name": "sojourn_p90", "use": "quantile", "params": {"column": "sojourn", "q": 0.9}},
        ],
        "replications": {"n": 2},
        "outputs": {"warmup": "mser5", "per_job": True},
    },
    "queue-user-generator": {
        "engine": "queue",
        "policies": ["FIFO", "SRPTE"],
        "workload": {"use": "mygenerators.py:bursty", "njobs": 300, "load": 0.9, "sigma": [0.5, 2.0]},
        "replications": {"n": 2},
    },
    "packing": {
        "engine": "packing",
        "policies": ["FIFO-FF", "BF-J"],
        "workload": {
            "kind": "packing",
            "slots": 60,
            "uniform_lo": 0.05,
            "uniform_hi": 0.5,
            "service": "geometric",
            "mean_service": 10,
            "intensity": [0.6, 0.9],
            "intensity_servers": 3,
        },
        "system": {"servers": 3, "capacity": 1.0, "epoch": 1.0},
        "replications": {"n": 2},
        "outputs": {"per_job": True},
    },
    "batch": {
        "engine": "batch",
        "policies": ["FCFS", "EASY"],
        "system": {"model": "procs", "procs": 64},
        "workload": {"kind": "lublin", "njobs": 80, "nodes": 64},
        "replications": {"n": 2},
    },
}


def _value(v: Any) -> str:
    """A value as text that tells every float apart by its bits (NaN, -0.0 included)."""
    return float(v).hex() if isinstance(v, float) else repr(v)


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["config_id"], row["replication"], *(_value(row[k]) for k in ("job_id", "time") if k in row))


def table_digest(folder: Path) -> dict[str, Any]:
    """Digest of every Parquet file under ``folder``: each file's columns and
    Arrow types (the set of the files' schemas: how rows split into files
    follows the task sizing, which reads the clock), and every row but the
    `UNSTABLE` columns, in key order."""
    files = sorted(folder.rglob("*.parquet"))
    schemas = sorted({json.dumps([(f.name, str(f.type)) for f in pq.read_schema(p)]) for p in files})
    rows = []
    for p in files:
        table = pq.read_table(p)
        table = table.drop_columns([c for c in UNSTABLE if c in table.column_names])
        rows += table.to_pylist()
    rows.sort(key=_key)
    h = hashlib.sha256()
    for schema in schemas:
        h.update(schema.encode() + b"\n")
    for row in rows:
        h.update(json.dumps([(k, _value(v)) for k, v in row.items()]).encode() + b"\n")
    return {"rows": len(rows), "sha256": h.hexdigest()}


def sweep_digests(name: str, out: Path) -> dict[str, Any]:
    """Run sweep ``name`` of `SPECS` in this process into ``out``; its tables' digests."""
    from schedlab.platform.execution.runner import run_sweep
    from schedlab.platform.planning.validate import parse_spec

    data = {
        "name": f"golden-{name}",
        "seed": 7,
        **SPECS[name],
        "outputs": {**SPECS[name].get("outputs", {}), "dir": str(out)},
        "tracking": {"enabled": False},
        "execution": {**SPECS[name].get("execution", {}), "backend": "local", "num_cpus": 1},
    }
    spec = parse_spec(data, f"{name}.toml", base_dir=EXAMPLES)
    report = run_sweep(spec, tracking=False)
    assert not report.failures, report.failures
    found = {t: table_digest(out / t) for t in TABLES if (out / t).exists()}
    assert found["summary"]["rows"] == report.configs * SPECS[name]["replications"]["n"]
    return found


@pytest.mark.parametrize("name", sorted(SPECS))
def test_rows_equal_the_code_before_the_array_path(name, tmp_path):
    golden = json.loads(GOLDEN.read_text())
    found = sweep_digests(name, tmp_path / name)
    assert found == golden[name], f"{name}: rows differ from the stored digests"


def test_digest_tells_floats_apart_by_their_bits(tmp_path):
    """The digest sees a one-ulp change and the sign of a zero (what "to the bit" means here)."""
    folder = tmp_path / "summary"
    folder.mkdir()
    digests = []
    for x in (0.1, math.nextafter(0.1, 1.0), 0.0, -0.0):
        pq.write_table(pa.table({"config_id": ["a"], "replication": [0], "mst": [x]}), folder / "p.parquet")
        digests.append(table_digest(folder)["sha256"])
    assert len(set(digests)) == 4


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.write_text(json.dumps({n: sweep_digests(n, Path(tmp) / n) for n in sorted(SPECS)}, indent=1) + "\n")
    print(f"wrote {GOLDEN}")
