"""Bring your own code: user policies, generators, readers and metrics
referenced from a spec with ``use``, run through the real sweep runner on
local Ray (which ships them with runtime_env py_modules), with their source
digest in configuration ids and rows.

User files live in pytest's tmp dirs (outside the repository). Sweeps share
one module-scoped local Ray that ``run_sweep`` itself starts (so that it can
ship the user code), and is shut down at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import schedlab
from schedlab.engines import get_engine
from schedlab.errors import PolicyError, UserError
from schedlab.platform.planning.plan import build_plan
from schedlab.platform.planning.validate import parse_spec
from schedlab.usercode import source_digest

ENGINES = Path(schedlab.__file__).parent / "engines"
#: Columns that may differ between a built-in and its verbatim copy: identity,
#: the policy's name and code digest, and wall-clock time.
IDENTITY = ["config_id", "policy", "code_sha256", "sim_seconds"]


@pytest.fixture(scope="module")
def ray_owner():
    """Sweeps below start Ray themselves (``run_sweep``); stop it after."""
    yield
    import ray

    from schedlab.platform.execution import runner

    if ray.is_initialized():
        ray.shutdown()
    runner.forget_ray()


def sweep(spec: dict, folder: Path, fresh: bool = False):
    from schedlab.platform.execution.runner import run_sweep

    spec = {
        "tracking": {"enabled": False},
        "outputs": {"dir": str(folder / "results" / spec["name"])},
        "execution": {
            "num_cpus": 2,
            "backend": "ray",
        },  # user code shipped to Ray's workers (the local backends: test_backends)
        **spec,
    }
    return run_sweep(parse_spec(spec, "spec.toml", folder), fresh=fresh)


def rows(report) -> pl.DataFrame:
    return schedlab.load(report.results_dir).collect()


def same_rows(df: pl.DataFrame, a: str, b: str) -> None:
    """Rows of policies a and b equal in every column but IDENTITY."""
    keep = [c for c in df.columns if c not in IDENTITY]
    left = df.filter(pl.col("policy") == a).select(keep).sort(keep)
    right = df.filter(pl.col("policy") == b).select(keep).sort(keep)
    assert left.height > 0
    assert left.equals(right), f"{a} vs {b} differ"


# ---- verbatim copies of built-ins give identical rows ------------------------------------------------
@pytest.mark.parametrize(
    "engine,module,cls,builtin,workload,system",
    [
        (
            "queue",
            "queue/fsp.py",
            "FSPEPlusPS",
            "FSPE+PS",
            {"kind": "synthetic", "njobs": 400, "shape": [0.25, 1.0], "sigma": 1.0},
            {},
        ),
        (
            "packing",
            "packing/best_fit.py",
            "BFJS",
            "BF-J/S",
            {
                "kind": "packing",
                "slots": 2000,
                "uniform_lo": 0.01,
                "uniform_hi": 0.5,
                "intensity": 0.9,
                "intensity_servers": 3,
                "mean_service": 20,
            },
            {"servers": 3, "capacity": 1.0, "epoch": 1.0},
        ),
        (
            "batch",
            "batch/easy.py",
            "EASY",
            "EASY",
            {"kind": "lublin", "njobs": 300, "nodes": 64, "load": 0.8},
            {"model": "procs", "procs": 64},
        ),
    ],
)
def test_a_verbatim_copy_of_a_builtin_gives_identical_rows(
    tmp_path, ray_owner, engine, module, cls, builtin, workload, system
):
    shutil.copy(ENGINES / engine / "policies" / module.split("/", 1)[1], tmp_path / "copied.py")
    spec = {
        "name": f"copy-{engine}",
        "engine": engine,
        "seed": 11,
        "workload": workload,
        "policies": [builtin, {"name": "Copy", "use": f"copied.py:{cls}"}],
        "replications": {"n": 2},
    }
    if system:
        spec["system"] = system
    report = sweep(spec, tmp_path)
    assert not report.failures
    df = rows(report)
    same_rows(df, builtin, "Copy")
    sha = source_digest(tmp_path / "copied.py")
    assert df.filter(pl.col("policy") == "Copy")["code_sha256"].unique().to_list() == [sha]
    assert df.filter(pl.col("policy") == builtin)["code_sha256"].null_count() == df.height // 2
    assert (Path(report.results_dir) / "code" / sha / "copied.py").read_bytes() == (tmp_path / "copied.py").read_bytes()
    assert df["schedlab_digest"].unique().to_list() == [get_engine(engine).digest()]


# ---- user code in a sweep: generator, metric, failures, provenance, edits -----------------------------
GENERATOR = '''
import numpy as np
import polars as pl


def bursty(rng, *, njobs: int = 200, burst: float = 4.0):
    """Poisson arrivals in bursts: exponential gaps, every 10th gap x burst."""
    gaps = rng.exponential(1.0, njobs)
    gaps[::10] *= burst
    size = rng.weibull(0.5, njobs)
    return pl.DataFrame({"job_id": np.arange(njobs), "submit": np.cumsum(gaps), "size": size + 1e-3})
'''

METRIC = """
def share_above(jobs, *, column: str = "slowdown", threshold: float = 5.0):
    return float((jobs[column] > threshold).mean())
"""

POLICY = '''
import os

from schedlab.api import queue

with open(os.environ["SCHEDLAB_TEST_IMPORT_LOG"], "a") as log:
    log.write(__file__ + "\\n")


class LIFO(queue.Policy):
    """Preemptive LIFO: the newest job holds the server."""

    def __init__(self, server, *, crash_at: int = -1):
        super().__init__(server)
        self.stack = []
        self.crash_at = crash_at

    def arrive(self, job, estimate, weight):
        if job == self.crash_at:
            raise ZeroDivisionError("crash_at reached")  # the user's own bug, on this line
        self.stack.append(job)
        self.server.serve_job(job)

    def depart(self, job):
        self.stack.remove(job)
        self.server.serve_job(self.stack[-1] if self.stack else None)
'''


def test_user_generator_policy_metric_failures_and_code_edits(tmp_path, ray_owner, monkeypatch):
    log = tmp_path / "imports.log"
    monkeypatch.setenv("SCHEDLAB_TEST_IMPORT_LOG", str(log))
    project = tmp_path / "project"
    project.mkdir()
    (project / "gen.py").write_text(GENERATOR)
    (project / "metric.py").write_text(METRIC)
    (project / "lifo.py").write_text(POLICY)
    spec = {
        "name": "mine",
        "engine": "queue",
        "seed": 2,
        "workload": {"use": "gen.py:bursty", "burst": [2.0, 8.0]},
        "policies": ["PS", {"name": "LIFO", "use": "lifo.py:LIFO", "params": {"crash_at": [-1, 7]}}],
        "metrics": [
            {"name": "share_slow", "use": "metric.py:share_above", "params": {"threshold": 3.0}},
            {"name": "sojourn_p90", "use": "quantile", "params": {"column": "sojourn", "q": 0.9}},
        ],
        "replications": {"n": 2},
    }
    report = sweep(spec, project)
    df = rows(report)
    # 2 points x (PS, LIFO ok) x 2 replications land; LIFO with crash_at = 7 fails every time, the sweep goes on.
    assert df.height == 8 and set(df["policy"]) == {"PS", "LIFO"}
    assert set(df["workload_kind"]) == {"bursty"}
    assert df["workload_code_sha256"].n_unique() == 1
    assert df["share_slow"].is_between(0, 1).all() and df["sojourn_p90"].is_finite().all()
    # LIFO's own result checked against the engine run directly on the generator's table.
    import importlib.util

    gen_spec = importlib.util.spec_from_file_location("gen_direct", project / "gen.py")
    gen = importlib.util.module_from_spec(gen_spec)
    gen_spec.loader.exec_module(gen)
    plan = build_plan(parse_spec({**spec, "name": "mine"}, "spec.toml", project))
    inst = plan.instances([0], [p for p in plan.points if p.params["burst"] == 2.0])[0]
    table = gen.bursty(np.random.default_rng(np.random.SeedSequence(list(inst.seed_words))), burst=2.0)
    direct = get_engine("queue").run(
        table.with_columns(pl.col("size").alias("estimate"), pl.lit(1.0).alias("weight")), "PS"
    )
    got = df.filter((pl.col("policy") == "PS") & (pl.col("burst") == 2.0) & (pl.col("replication") == 0))
    assert got["mst"][0] == direct.summary["mst"]
    # Failures keep the user's own frames (their file, their line), not schedlab's.
    failures = schedlab.load(report.results_dir, "failures").collect()
    assert failures.height == 4 and set(failures["policy"]) == {"LIFO"}
    assert failures["error"][0] == "ZeroDivisionError: crash_at reached"
    trace = failures["traceback"][0]
    assert str(project / "lifo.py") in trace and "raise ZeroDivisionError" in trace
    assert "schedlab/engines/queue/sim/engine.py" not in trace
    # The workers imported the shipped copy (Ray's runtime_env), not the driver's file.
    imported = set(log.read_text().split())
    assert any("runtime_resources" in p or "_ray_pkg_" in p for p in imported), imported
    # Provenance: each user file under code/<sha256>/, listed in the manifest.
    manifest = schedlab.platform.storage.store.ResultStore(report.results_dir).read_manifest()
    assert set(manifest["user_code"]) == {"workload.use", "policies[1].use", "metrics[0].use"}
    for info in manifest["user_code"].values():
        assert (Path(report.results_dir) / "code" / info["sha256"]).is_dir()

    # Editing only the policy's docstring changes nothing: a plain resume.
    (project / "lifo.py").write_text(POLICY.replace("Preemptive LIFO", "Preemptive LIFO (edited)"))
    same = sweep(spec, project)
    assert (same.rows_written, same.reruns) == (0, None)
    # A real edit re-runs the policy's configurations only; its old rows and failures move aside.
    (project / "lifo.py").write_text(POLICY.replace('"crash_at reached"', '"crash_at hit"'))
    again = sweep(spec, project)
    assert again.reruns and "policies[1].use (lifo.py:LIFO)" in again.reruns
    df2 = rows(again)
    assert df2.height == 8 and again.rows_written == 4
    assert set(df2.filter(pl.col("policy") == "LIFO")["code_sha256"]) != set(
        df.filter(pl.col("policy") == "LIFO")["code_sha256"]
    )
    ps = ["config_id", "replication"]
    assert df2.filter(pl.col("policy") == "PS").sort(ps).equals(df.filter(pl.col("policy") == "PS").sort(ps))
    old = schedlab.load(Path(report.results_dir) / "superseded" / "1").collect()
    assert old.sort(ps).equals(df.filter(pl.col("policy") == "LIFO").sort(ps).select(old.columns))
    failures = schedlab.load(again.results_dir, "failures").collect()
    assert set(failures["error"]) == {"ZeroDivisionError: crash_at hit"}


def test_a_user_trace_reader(tmp_path, ray_owner):
    (tmp_path / "log.txt").write_text("".join(f"{t} {s}\n" for t, s in [(0, 2.0), (1, 0.5), (1.5, 3.0), (4, 1.0)]))
    (tmp_path / "reader.py").write_text(
        textwrap.dedent("""
        import polars as pl

        def read_log(path, *, scale: float = 1.0, on_bad_line: str = "error"):
            rows = []
            for n, line in enumerate(open(path), 1):
                t, s = line.split()
                rows.append((n, float(t), float(s) * scale))
            return pl.DataFrame(rows, schema=["job_id", "submit", "size"], orient="row")
    """)
    )
    spec = {
        "name": "reader",
        "engine": "queue",
        "workload": {
            "kind": "trace",
            "reader": "reader.py:read_log",
            "path": str(tmp_path / "log.txt"),
            "reader_scale": 2.0,
        },
        "policies": ["FIFO"],
    }
    df = rows(sweep(spec, tmp_path))
    # FIFO by hand on sizes x2: 4, 1, 6, 2 arriving at 0, 1, 1.5, 4 -> completions 4, 5, 11, 13.
    assert df["mst"][0] == pytest.approx(((4 - 0) + (5 - 1) + (11 - 1.5) + (13 - 4)) / 4, rel=1e-12)
    assert df["workload_code_sha256"][0] == build_plan(parse_spec(spec, "s", tmp_path)).points[0].code.sha256
    with pytest.raises(UserError, match=r"workload\.reader_scale: input should be a valid number"):
        parse_spec({**spec, "workload": {**spec["workload"], "reader_scale": "big"}}, "spec.toml", tmp_path)


# ---- errors name the spec field, at validate time --------------------------------------------------------
GOOD = """
from schedlab.api import queue

class Mine(queue.Policy):
    def __init__(self, server, *, alpha: float = 0.5, rounds: int = 1):
        super().__init__(server)
    def arrive(self, job, estimate, weight):
        self.server.serve_job(job)
    def depart(self, job):
        pass

class Half(queue.Policy):
    def arrive(self, job, estimate, weight):
        pass

not_a_class = 3
"""


@pytest.mark.parametrize(
    "entry,message",
    [
        ({"name": "X", "use": "nothere.py:Mine"}, r"policies\[1\]\.use: no such file nothere\.py \(resolved against "),
        ({"name": "X", "use": "mine.py:Missing"}, r"policies\[1\]\.use.*has no attribute 'Missing'"),
        ({"name": "X", "use": "mine.py:not_a_class"}, r"policies\[1\]\.use: int is not a queue policy"),
        ({"name": "X", "use": "mine.py:Half"}, r"policies\[1\]\.use: class Half does not implement depart"),
        ({"name": "X", "use": "mine.py"}, r"policies\[1\]\.use: 'mine\.py' is not a code reference"),
        ({"name": "X", "use": "no_such_module_xyz:Mine"}, r"policies\[1\]\.use: cannot import 'no_such_module_xyz'"),
        ({"name": "PS", "use": "mine.py:Mine"}, r"policies\[1\]\.name: 'PS' is a built-in queue policy"),
        (
            {"name": "X", "use": "mine.py:Mine", "params": {"beta": 1}},
            r"policies\[1\]\.params\.beta: policy 'Mine' takes: alpha, rounds",
        ),
        (
            {"name": "X", "use": "mine.py:Mine", "params": {"alpha": "high"}},
            r"policies\[1\]\.params\.alpha: input should be a valid number",
        ),
        (
            {"name": "X", "use": "mine.py:Mine", "params": {"rounds": [1, 2.5]}},
            r"policies\[1\]\.params\.rounds: input should be a valid integer",
        ),
    ],
)
def test_bad_policy_references_name_the_field(tmp_path, entry, message):
    (tmp_path / "mine.py").write_text(GOOD)
    spec = {"name": "bad", "engine": "queue", "policies": ["PS", entry]}
    with pytest.raises(UserError, match="^spec.toml: " + message):
        parse_spec(spec, "spec.toml", tmp_path)


def test_bad_workload_and_metric_references_name_the_field(tmp_path):
    (tmp_path / "mine.py").write_text(GOOD + "\ndef gen(rng, *, n: int = 5):\n    return None\n")
    base = {"name": "bad", "engine": "queue", "policies": ["PS"]}
    cases = [
        ({"workload": {"use": "mine.py:gen", "n": 1.5}}, r"workload\.n: input should be a valid integer"),
        ({"workload": {"use": "mine.py:gen", "m": 1}}, r"workload\.m: unknown parameter"),
        ({"workload": {"use": "mine.py:gen", "kind": "synthetic"}}, r"workload\.kind: 'synthetic' is a built-in"),
        ({"metrics": [{"name": "m", "use": "p999"}]}, r"metrics\[0\]\.use: unknown metric 'p999'"),
        (
            {"metrics": [{"name": "m", "use": "quantile", "params": {"colum": "x"}}]},
            r"metrics\[0\]\.params\.colum: metric",
        ),
        (
            {"metrics": [{"name": "m", "use": "mine.py:not_a_class"}]},
            r"metrics\[0\]\.use: mine\.py:not_a_class is not a function",
        ),
        ({"metrics": [{"name": "mst x", "use": "mean"}]}, r"metrics\[0\]\.name: must be letters"),
    ]
    for extra, message in cases:
        with pytest.raises(UserError, match="^spec.toml: " + message):
            parse_spec({**base, **extra}, "spec.toml", tmp_path)


def test_cli_validate_reports_one_line_and_exit_2(tmp_path):
    (tmp_path / "mine.py").write_text(GOOD)
    (tmp_path / "s.toml").write_text(
        'name = "s"\nengine = "queue"\npolicies = ["PS", {name = "M", use = "mine.py:Mine", params = {alpha = "x"}}]\n'
    )
    other = tmp_path / "elsewhere"
    other.mkdir()
    res = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "validate", str(tmp_path / "s.toml")],
        capture_output=True,
        text=True,
        cwd=other,
        timeout=60,
    )
    assert res.returncode == 2
    assert (
        res.stderr.strip().count("\n") == 0
        and "policies[1].params.alpha" in res.stderr
        and "Traceback" not in res.stderr
    )
    ok = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "validate", str(tmp_path / "s.toml").replace("s.toml", "s2.toml")],
        capture_output=True,
        text=True,
        cwd=other,
        timeout=60,
    )
    assert ok.returncode == 2  # a missing spec file: one line too
    (tmp_path / "s2.toml").write_text((tmp_path / "s.toml").read_text().replace('alpha = "x"', "alpha = [0.1, 1]"))
    ok = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "validate", str(tmp_path / "s2.toml")],
        capture_output=True,
        text=True,
        cwd=other,
        timeout=60,
    )
    assert ok.returncode == 0 and "3 configurations" in ok.stdout


def test_configuration_ids_hold_the_code_digest_not_the_path(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "mine.py").write_text(GOOD)
    spec = {"name": "s", "engine": "queue", "policies": ["PS", {"name": "M", "use": "mine.py:Mine"}]}
    ids = [set(build_plan(parse_spec(spec, "s", tmp_path / d)).configs) for d in ("a", "b")]
    assert ids[0] == ids[1]  # the same code in another folder: the same configurations
    (tmp_path / "b" / "mine.py").write_text(GOOD + "\n# a comment is not an edit\n")
    assert set(build_plan(parse_spec(spec, "s", tmp_path / "b")).configs) == ids[0]
    (tmp_path / "b" / "mine.py").write_text(GOOD + "\nEDITED = True\n")
    changed = set(build_plan(parse_spec(spec, "s", tmp_path / "b")).configs)
    assert len(changed & ids[0]) == 1  # PS keeps its id; the edited policy gets a new one
    builtin_only = set(build_plan(parse_spec({**spec, "policies": ["PS"]}, "s", tmp_path / "a")).configs)
    assert builtin_only < ids[0]


def test_a_package_folder_is_hashed_whole(tmp_path):
    pkg = tmp_path / "lab"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def first(stack):\n    return stack[-1]\n")
    (pkg / "policies.py").write_text(
        GOOD.replace("from schedlab.api import queue", "from schedlab.api import queue\nfrom lab.helpers import first")
    )
    spec = {"name": "s", "engine": "queue", "policies": [{"name": "M", "use": "lab/policies.py:Mine"}]}
    plan = build_plan(parse_spec(spec, "s", tmp_path))
    code = plan.code["policies[0].use"]
    assert code.module == "lab.policies" and Path(code.root) == pkg and code.shipped
    assert set(code.sources()) == {"lab/__init__.py", "lab/helpers.py", "lab/policies.py"}
    (pkg / "helpers.py").write_text("def first(stack):\n    return stack[0]\n")
    assert build_plan(parse_spec(spec, "s", tmp_path)).code["policies[0].use"].sha256 != code.sha256


# ---- invalid actions name the policy, the simulated time and the job --------------------------------
def test_invalid_actions_name_policy_time_and_job():
    from schedlab.api import dfrs, packing, queue

    class Idle(queue.Policy):
        name = "Idle"

        def arrive(self, job, estimate, weight):
            self.server.serve(None if job == 1 else self.server.pool_of(job))

        def depart(self, job):
            pass

    jobs = pl.DataFrame(
        {"job_id": [0, 1], "submit": [0.0, 0.5], "size": [1.0, 1.0], "estimate": [1.0, 1.0], "weight": [1.0, 1.0]}
    )
    with pytest.raises(PolicyError, match=r"^policy 'Idle': t=0\.5: job 0: the server is idle with 2 jobs unserved"):
        get_engine("queue").run(jobs, Idle)

    class Server0(packing.Policy):
        name = "Server0"

        def __init__(self, cluster):
            super().__init__(cluster)
            self.queue = []

        def arrive(self, job):
            self.queue.append(job)

        def depart(self, job, server):
            pass

        def schedule(self):
            out, self.queue = [(j, 0) for j in self.queue], []
            return out

    pjobs = pl.DataFrame({"job_id": [0, 1], "submit": [0.0, 0.0], "duration": [5.0, 5.0], "demand": [0.6, 0.6]})
    with pytest.raises(
        PolicyError, match=r"^policy 'Server0': t=0\.0: job 1 \(demand \[0\.6\]\) does not fit on server 0"
    ):
        get_engine("packing").run(pjobs, Server0, None, {"servers": 2, "capacity": 1.0, "epoch": 0.0})

    from tests.test_batch import _Greedy as StartAll  # starts every queued job

    bjobs = pl.DataFrame({"job_id": [0, 1], "submit": [0.0, 2.0], "runtime": [10.0, 10.0], "procs": [3, 3]})
    with pytest.raises(PolicyError, match=r"^policy '_Greedy': t=2\.0: job 1 needs 3 units but only 1 are free"):
        get_engine("batch").run(bjobs, StartAll, None, {"procs": 4})

    class Node0(dfrs.Policy):
        name = "Node0"

        def on_arrival(self, state, job):
            state.apply(places={job: [0] * state.tasks[job]})

        def on_completion(self, state):
            pass

    djobs = pl.DataFrame(
        {"job_id": [0, 1], "submit": [0.0, 1.0], "runtime": [10.0, 10.0], "procs": [1, 1], "memory": [0.7, 0.7]}
    )
    with pytest.raises(PolicyError, match=r"^policy 'Node0': t=1\.0: placing job 1 overfills the memory of node 0"):
        get_engine("dfrs").run(djobs, Node0, None, {"nodes": 2})


def test_results_warns_when_engine_digests_are_mixed(tmp_path):
    from schedlab.platform.storage.store import mixed_digests

    a = pl.DataFrame({"engine": ["queue", "queue"], "schedlab_digest": ["aaaa", "aaaa"]}).lazy()
    assert mixed_digests(a) is None
    b = pl.DataFrame({"engine": ["queue", "queue", "batch"], "schedlab_digest": ["aaaa", "bbbb", "cccc"]}).lazy()
    assert mixed_digests(b).startswith(
        "rows come from more than one version of schedlab's engine code (schedlab_digest queue engine: aaaa, bbbb)"
    )
    assert mixed_digests(pl.DataFrame({"engine": ["queue"]}).lazy()) is None


def test_api_modules_expose_the_seams_the_builtins_use():
    from schedlab.api import batch, dfrs, packing, queue
    from schedlab.engines import ENGINES

    seams = {"queue": queue.Policy, "packing": packing.Policy, "batch": batch.Policy, "dfrs": dfrs.Policy}
    for name, engine in ENGINES.items():
        assert engine.seam_class() is seams[name]
        for cls in engine.policies.values():  # a built-in is a user policy that ships with schedlab
            assert issubclass(cls, seams[name]), cls
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = (
        "import sys, schedlab.api.queue, schedlab.api.packing, schedlab.api.batch, schedlab.api.dfrs, "
        "schedlab.api.workloads, schedlab.api.metrics; print(sorted({'ray', 'mlflow'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
