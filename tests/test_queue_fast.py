"""The compiled fast path (schedlab.engines.queue.sim.fast) against the reference
engine (schedlab.engines.queue.sim.engine with the Python policies).

The claim is bit-identity: for every built-in policy the kernels give the
reference's completion times to the last bit, and the same event count. So
every comparison here is exact equality (``tolist() ==``), never a tolerance.
Inputs are drawn to provoke ties and coincidences: grids on which sums
coincide (1/10 is not a binary fraction, so they coincide only up to rounding),
simultaneous arrivals, equal sizes, estimates far from sizes, unequal weights,
and arbitrary floats one ulp apart. Every other queue test also runs on both
paths (the `engine_path` fixture in conftest.py); speed is measured in
benchmarks/, never here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import schedlab
from schedlab.engines import ENGINE_PATHS, get_engine
from schedlab.engines.queue import kernel_id
from schedlab.engines.queue.policies import QUEUE_POLICIES
from schedlab.engines.queue.sim import fast as queue_fast
from schedlab.engines.queue.sim.engine import simulate as reference
from schedlab.engines.queue.sim.engine import tie_key
from schedlab.errors import UserError
from schedlab.workloads.synthetic import queue_workload
from tests.conftest import run_both
from tests.test_reference_agreement import REGRESSIONS

REPO = Path(__file__).resolve().parents[1]
POLICIES = sorted(QUEUE_POLICIES)
WEIGHTS = [1.0, 0.5, 0.25, 1 / 3, 0.2, 3.0]


def assert_identical(policy, submit, size, estimate, weight):
    ref_c, ref_e = run_both(policy, submit, size, estimate, weight, path="reference")
    fast_c, fast_e = run_both(policy, submit, size, estimate, weight, path="fast")
    assert fast_c.tolist() == ref_c.tolist(), (
        f"{policy}: fast {fast_c.tolist()} != reference {ref_c.tolist()} (submit={list(submit)}, "
        f"size={list(size)}, estimate={list(estimate)}, weight={list(weight)})"
    )
    assert fast_e == ref_e, policy


# ---- workloads ---------------------------------------------------------------------------


@st.composite
def grid_workloads(draw, max_jobs=24):
    """Values on one grid per array (1/10, 1/8, 1/1000 or 2**-20) from a
    small range, so that equal sizes, equal submits, sums that meet exactly
    and sums that meet only up to rounding are all common."""
    n = draw(st.integers(1, max_jobs))

    def grid(lo, hi, zeros=False):
        den = draw(st.sampled_from([10, 8, 1000, 2**20]))
        k = st.integers(int(np.ceil(lo * den)), int(np.floor(hi * den)))
        if zeros:
            k = st.one_of(st.just(0), k)
        return np.array(draw(st.lists(k, min_size=n, max_size=n)), dtype=float) / den

    submit = np.cumsum(grid(0.0, 2.0, zeros=True))
    size = grid(0.1, 3.0)
    estimate = draw(st.sampled_from(["exact", "grid", "factor"]))
    if estimate == "exact":
        est = size.copy()
    elif estimate == "grid":
        est = grid(0.1, 3.0)
    else:
        est = np.round(size * grid(0.1, 5.0), 9)
    weight = np.array(draw(st.lists(st.sampled_from(WEIGHTS), min_size=n, max_size=n)))
    return submit, size, est, weight


@st.composite
def float_workloads(draw, max_jobs=24):
    """Arbitrary floats (values one ulp apart included), some exact zero gaps."""
    n = draw(st.integers(1, max_jobs))
    positive = st.floats(1e-3, 10.0, allow_nan=False, allow_infinity=False)
    gaps = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 5.0)), min_size=n, max_size=n))
    size = np.array(draw(st.lists(positive, min_size=n, max_size=n)))
    factor = np.array(draw(st.lists(st.floats(0.05, 20.0), min_size=n, max_size=n)))
    weight = np.array(draw(st.lists(st.sampled_from(WEIGHTS), min_size=n, max_size=n)))
    submit = np.cumsum(gaps) - gaps[0]
    return submit, size, size * factor, weight


@st.composite
def batch_workloads(draw, max_jobs=30):
    """Few distinct values, many jobs at one instant: groups that meet, jobs
    turning late together, simultaneous completions."""
    n = draw(st.integers(2, max_jobs))
    values = [0.1, 0.2, 0.3, 0.5, 0.7, 1.0]
    submit = np.sort(np.array(draw(st.lists(st.sampled_from([0.0, 0.0, 0.1, 0.3, 1.0]), min_size=n, max_size=n))))
    size = np.array(draw(st.lists(st.sampled_from(values), min_size=n, max_size=n)))
    est = np.array(draw(st.lists(st.sampled_from([v / 10 for v in values] + values), min_size=n, max_size=n)))
    weight = np.array(draw(st.lists(st.sampled_from([1.0, 0.5, 2.0]), min_size=n, max_size=n)))
    return submit, size, est, weight


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=st.one_of(grid_workloads(), float_workloads(), batch_workloads()))
def test_fast_path_is_bit_identical_on_random_workloads(policy, w):
    # A run whose kernel reports AMBIGUOUS (jobs moved together with equal finish tags and different sizes: the
    # one case the kernels leave to the reference by design) is outside the kernels' remit; its fallback has its
    # own test (test_an_ambiguous_or_stalled_kernel_run_falls_back_to_the_reference).
    assume(kernel_status(policy, *w) != queue_fast.AMBIGUOUS)
    assert_identical(policy, *w)


def kernel_status(policy, submit, size, estimate, weight) -> int:
    """The status the policy's kernel returns on these arrays (with room for every pool)."""
    family, mode, exact_size = queue_fast._KERNELS[policy]
    arrays = [np.asarray(a, dtype=float) for a in (submit, size, size if exact_size else estimate, weight)]
    args = [queue_fast.writable(a) for a in arrays]
    return int(queue_fast._FUNCTIONS[family](*args, mode, queue_fast._pool_rows(len(arrays[0]), enough=True))[2])


@pytest.mark.parametrize("case", list(REGRESSIONS))
def test_fast_path_on_the_pinned_coincidences(case):
    policy, submit, size, est, _ = REGRESSIONS[case]
    est = size if est is None else est
    for name in {policy, "LAS", "SRPTE+LAS", "FSPE+LAS", "PSBS", "GPS"}:
        assert_identical(name, submit, size, est, [1.0] * len(size))
        assert_identical(name, submit, size, est, [[0.5, 2.0, 1.0][k % 3] for k in range(len(size))])


WORKLOADS = [  # (njobs, shape, load, sigma, beta): skew, overload, estimate errors, weights
    (3000, 0.25, 0.9, 0.5, 0.0),
    (3000, 0.125, 0.99, 2.0, 2.0),
    (3000, 1.0, 0.99, 0.0, 1.0),
    (2000, 4.0, 0.95, 1.0, 0.0),
]


@pytest.mark.parametrize("policy", POLICIES)
def test_fast_path_is_bit_identical_on_synthetic_workloads(policy):
    """Thousands of jobs: deep heaps, long LAS merges, many late jobs, the
    pool table and LAS's hash table outgrowing their first size."""
    for k, (njobs, shape, load, sigma, beta) in enumerate(WORKLOADS):
        jobs = queue_workload(
            np.random.default_rng(100 + k), njobs=njobs, shape=shape, load=load, sigma=sigma, beta=beta
        )
        assert_identical(policy, *(jobs[c].to_numpy() for c in ("submit", "size", "estimate", "weight")))


# ---- pieces -------------------------------------------------------------------------------


def test_tie_key_is_the_references_to_the_bit():
    from numba import njit

    @njit
    def keys(xs):
        out = np.empty_like(xs)
        for i in range(xs.shape[0]):
            out[i] = queue_fast.tie_key(xs[i])
        return out

    rng = np.random.default_rng(3)
    halves = [(2**39 + k + 0.5) * 2.0**e for k in range(4) for e in (-45, -40, 0, 7)]  # exact round-half cases
    xs = np.concatenate(
        [
            rng.standard_normal(20_000) * 10.0 ** rng.integers(-300, 300, 20_000),
            halves,
            [0.0, -0.0, 5e-324, 1e-310, -2.5, np.inf, -np.inf, 1.0 - 2**-53, 1.0 + 2**-52],
        ]
    )
    got = keys(xs)
    want = [tie_key(float(x)) for x in xs]
    assert [float(v) for v in got] == want
    nan = keys(np.array([np.nan]))
    assert np.isnan(nan[0])


def test_ambiguity_detector():
    """Two jobs moved together into one pool with bit-equal finish tags and
    different sizes are flagged (the reference's set order would decide
    between them); equal tags with equal sizes, or different tags, are not."""
    from numba import njit

    @njit
    def detect(ft, sz, moved):
        JF = np.zeros((ft.shape[0], 5))
        JL = np.zeros((ft.shape[0], 4), dtype=np.int64)
        for j in range(ft.shape[0]):
            JF[j, queue_fast.FT] = ft[j]
            JF[j, queue_fast.SZ] = sz[j]
        for k in range(moved.shape[0]):
            JL[k, queue_fast.SCR] = moved[k]
        return queue_fast._ambiguous(JF, JL, moved.shape[0])

    ft = np.array([5.0, 3.0, 4.0, 3.0, 7.0, 4.0])
    assert detect(ft, np.array([1.0, 2.0, 3.0, 2.5, 1.0, 3.0]), np.array([0, 1, 2, 3, 4, 5]))  # jobs 1, 3
    assert not detect(ft, np.array([1.0, 2.0, 3.0, 2.0, 1.0, 3.0]), np.array([0, 1, 2, 3, 4, 5]))
    assert not detect(ft, np.array([1.0, 2.0, 3.0, 2.5, 1.0, 3.0]), np.array([0, 1, 2, 4]))
    assert not detect(ft, np.array([1.0, 2.0]), np.array([0]))


def test_an_ambiguous_or_stalled_kernel_run_falls_back_to_the_reference(monkeypatch):
    jobs = queue_workload(np.random.default_rng(5), njobs=500)
    engine = get_engine("queue")
    want = engine.run(jobs, "LAS", path="reference")
    for status in (queue_fast.AMBIGUOUS, queue_fast.STALLED):

        def fake(submit, size, seen, weight, mode, cap, _status=status):
            return np.zeros(len(submit)), 0, _status

        monkeypatch.setitem(queue_fast._FUNCTIONS, "las", fake)
        arrays = [jobs[c].to_numpy() for c in ("submit", "size", "estimate", "weight")]
        assert queue_fast.simulate("LAS", *arrays) is None
        got = engine.run(jobs, "LAS")
        assert got.jobs["completion"].tolist() == want.jobs["completion"].tolist()


def test_a_kernel_out_of_pool_rows_runs_again_with_the_bound(monkeypatch):
    jobs = queue_workload(np.random.default_rng(6), njobs=400, sigma=2.0)
    arrays = [jobs[c].to_numpy() for c in ("submit", "size", "estimate", "weight")]
    real, caps = queue_fast._FUNCTIONS["srpt"], []

    def first_full(*args):
        caps.append(args[-1])
        if len(caps) == 1:
            return np.zeros(400), 0, queue_fast.POOLS_FULL
        return real(*args)

    monkeypatch.setitem(queue_fast._FUNCTIONS, "srpt", first_full)
    got = queue_fast.simulate("SRPTE+LAS", *arrays)
    assert caps == [2 * 400 + 16, 8 * 400 + 16]
    assert got[0].tolist() == reference(*arrays, QUEUE_POLICIES["SRPTE+LAS"])[0].tolist()


def test_declines_what_it_does_not_cover():
    cls = "PS"  # the kernel's id
    ok = [np.array([0.0, 1.0]), np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.array([1.0, 1.0])]
    assert queue_fast.simulate(cls, *ok) is not None
    bad = {
        "unsorted": [np.array([1.0, 0.0])] + ok[1:],
        "nan": [ok[0], np.array([1.0, np.nan])] + ok[2:],
        "zero weight": ok[:3] + [np.array([1.0, 0.0])],
        "ints": [np.array([0, 1])] + ok[1:],
        "lengths": [ok[0], np.array([1.0])] + ok[2:],
    }
    for label, arrays in bad.items():
        assert queue_fast.simulate(cls, *arrays) is None, label
    assert queue_fast.simulate(cls, *ok, params={"x": 1}) is None


# ---- which path runs ------------------------------------------------------------------------


def test_kernels_by_class_identity_only():
    for name, cls in QUEUE_POLICIES.items():
        assert kernel_id(cls) == name and queue_fast.kernel_for(kernel_id(cls)) is not None, name
        assert queue_fast._KERNELS[name][2] == cls.exact_size, name  # the kernel sees what the policy sees

    class MyPS(QUEUE_POLICIES["PS"]):
        pass

    assert kernel_id(MyPS) is None and queue_fast.kernel_for(None) is None
    assert queue_fast.simulate(None, np.array([0.0]), np.ones(1), np.ones(1), np.ones(1)) is None


def test_a_subclass_of_a_built_in_runs_on_the_reference(monkeypatch):
    """A user's subclass may change anything: here FIFO made LIFO-ish. The
    engine must run its code, not the FIFO kernel."""
    FIFO = QUEUE_POLICIES["FIFO"]

    class NewestFirst(FIFO):
        def arrive(self, job, estimate, weight):
            self.queue.appendleft(job)
            self.server.serve_job(job)

        def depart(self, job):
            self.queue.remove(job)
            self.server.serve_job(self.queue[0] if self.queue else None)

    calls = []
    monkeypatch.setattr(queue_fast, "simulate", lambda *a, **k: calls.append(a[0]))
    jobs = pl.DataFrame(
        {
            "job_id": [0, 1, 2],
            "submit": [0.0, 0.5, 0.6],
            "size": [2.0, 1.0, 1.0],
            "estimate": [2.0, 1.0, 1.0],
            "weight": [1.0, 1.0, 1.0],
        }
    )
    got = get_engine("queue").run(jobs, NewestFirst).jobs["completion"].tolist()
    assert got == [4.0, 2.5, 1.6] and calls == []  # J2 0.6-1.6, J1 1.6-2.5, J0 2.5-4
    get_engine("queue").run(jobs, "FIFO")
    assert calls == ["FIFO"]  # a built-in goes to the kernels


def test_engine_run_paths_agree_and_the_keyword_is_checked():
    engine = get_engine("queue")
    jobs = queue_workload(np.random.default_rng(9), njobs=2000, beta=1.0)
    for name in POLICIES:
        fast = engine.run(jobs, name, path="fast")
        ref = engine.run(jobs, name, path="reference")
        for column in ref.jobs:
            assert fast.jobs[column].tolist() == ref.jobs[column].tolist(), (name, column)
        assert {k: v for k, v in fast.summary.items() if k != "sim_seconds"} == {
            k: v for k, v in ref.summary.items() if k != "sim_seconds"
        }, name
    assert ENGINE_PATHS == ("fast", "reference")
    with pytest.raises(UserError, match="engine path must be one of fast, reference; got 'quick'"):
        engine.run(jobs, "PS", path="quick")
    assert [e for e in ("queue", "packing", "batch", "dfrs") if get_engine(e).fast_path] == [
        "queue",
        "packing",
        "batch",
    ]


# ---- the sweep platform --------------------------------------------------------------------


def _spec(**execution):
    from schedlab.platform.planning.validate import parse_spec

    data = tomllib.loads((REPO / "sweeps" / "psbs-shape.toml").read_text())
    data["workload"]["njobs"] = 1500  # the test budget; the policies and the shape axis as written
    data["replications"] = {"n": 2}
    data["tracking"] = {"enabled": False}
    if execution:
        data["execution"] = execution
    return parse_spec(data, "psbs-shape.toml")


def test_engine_path_is_an_execution_field_that_changes_no_id():
    from schedlab.platform.planning.plan import build_plan

    default, fast, ref = _spec(), _spec(engine_path="fast"), _spec(engine_path="reference")
    assert default.execution.engine_path == "fast" and ref.execution.engine_path == "reference"
    assert default.result_defining() == ref.result_defining() == fast.result_defining()
    ids = [list(build_plan(s).configs) for s in (default, ref)]
    assert ids[0] == ids[1] and len(ids[0]) == 6 * 6
    with pytest.raises(UserError, match=r"execution\.engine_path: Input should be 'fast' or 'reference'"):
        _spec(engine_path="quick")


def test_psbs_shape_sweep_gives_the_same_rows_on_both_paths():
    """sweeps/psbs-shape.toml at 1,500 jobs x 2 replications: every summary
    row (but the wall time) and every per-job row equal on both paths, as the
    platform's task function produces them."""
    from schedlab.platform.execution.tasks import run_instances
    from schedlab.platform.planning.plan import build_plan

    spec = _spec()
    plan = build_plan(spec)
    work = [(inst, list(inst.point.configs)) for inst in plan.instances(range(2))]
    out = {path: run_instances("queue", work, None, True, (), engine_path=path) for path in ENGINE_PATHS}
    assert not out["fast"].failures and not out["reference"].failures
    fast, ref = out["fast"].summary, out["reference"].summary
    assert len(fast) == len(ref) == 6 * 6 * 2
    for a, b in zip(fast, ref):
        a.pop("sim_seconds"), b.pop("sim_seconds")
        assert a == b
    for (pa, ta), (pb, tb) in zip(out["fast"].jobs, out["reference"].jobs):
        assert pa == pb and ta.equals(tb)


METRIC = '''
import sys


def fast_path_loaded(jobs):
    """1.0 if this worker has imported the compiled fast path."""
    return float("schedlab.engines.queue.sim.fast" in sys.modules)
'''


def test_engine_path_reaches_the_ray_workers(tmp_path):
    """On a fresh local Ray, a sweep with engine_path = "reference" never
    loads the kernels in the workers; the default then does."""
    import ray

    from schedlab.platform.execution import runner
    from schedlab.platform.planning.validate import parse_spec

    (tmp_path / "metric.py").write_text(METRIC)

    def sweep(name, **execution):
        data = {
            "name": name,
            "engine": "queue",
            "seed": 1,
            "policies": ["PS", "PSBS"],
            "workload": {"kind": "synthetic", "njobs": 300, "shape": [0.5, 1.0]},
            "metrics": [{"name": "fast_loaded", "use": "metric.py:fast_path_loaded"}],
            "replications": {"n": 2},
            "tracking": {"enabled": False},
            "outputs": {"dir": str(tmp_path / name)},
            "execution": {"num_cpus": 2, "backend": "ray", **execution},
        }
        report = runner.run_sweep(parse_spec(data, "spec.toml", tmp_path))
        assert not report.failures
        return schedlab.load(tmp_path / name).collect().sort("config_id", "replication")

    assert not ray.is_initialized()
    try:
        ref = sweep("ref", engine_path="reference")
        fast = sweep("fast")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        runner.forget_ray()
    assert ref["fast_loaded"].to_list() == [0.0] * 8
    assert fast["fast_loaded"].to_list() == [1.0] * 8
    assert ref["mst"].to_list() == fast["mst"].to_list()


# ---- CLI, imports, cache ------------------------------------------------------------------


def test_simulate_engine_path_option():
    import json

    from click.testing import CliRunner

    from schedlab.cli import main

    out = {}
    for path in ENGINE_PATHS:
        r = CliRunner().invoke(
            main, ["simulate", "--policy", "SRPTE+LAS", "--njobs", "2000", "--json", "--engine-path", path]
        )
        assert r.exit_code == 0, r.output
        out[path] = {k: v for k, v in json.loads(r.output).items() if k not in ("sim_seconds", "wall_seconds")}
    assert out["fast"] == out["reference"]
    r = CliRunner().invoke(main, ["simulate", "--policy", "PS", "--engine-path", "quick"])
    assert r.exit_code == 2 and "'quick' is not one of 'fast', 'reference'" in r.output


def test_help_and_policies_do_not_import_numba():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from schedlab.cli import main\n"
        "assert CliRunner().invoke(main, ['--help']).exit_code == 0\n"
        "assert CliRunner().invoke(main, ['simulate', '--help']).exit_code == 0\n"
        "assert 'PSBS' in CliRunner().invoke(main, ['policies']).output\n"
        "import schedlab.engines\n"
        "print([m for m in ('numba', 'schedlab.engines.queue.sim.fast') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_user_policies_do_not_import_numba(tmp_path):
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from schedlab.engines import get_engine
        from schedlab.engines.queue.policies import QUEUE_POLICIES
        from schedlab.workloads.synthetic import queue_workload

        class Mine(QUEUE_POLICIES["PS"]):
            pass

        get_engine("queue").run(queue_workload(np.random.default_rng(1), njobs=50), Mine)
        get_engine("queue").run(queue_workload(np.random.default_rng(1), njobs=50), "PS", path="reference")
        print("numba" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_numba_cache_dir(tmp_path, monkeypatch):
    """NUMBA_CACHE_DIR: the user's if set, else $SCHEDLAB_CACHE_DIR/numba/<digest>,
    else ~/.cache/schedlab/numba/<digest> (the digest of sim/common/jit.py, whose shared
    helpers numba's per-file cache check would not see change); set before numba
    is imported."""
    from schedlab.sim.common.jit import SHARED_DIGEST

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert queue_fast.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path / "sl"))
    assert queue_fast.cache_dir() == tmp_path / "sl" / "numba" / SHARED_DIGEST
    monkeypatch.delenv("SCHEDLAB_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert queue_fast.cache_dir() == tmp_path / "home" / ".cache" / "schedlab" / "numba" / SHARED_DIGEST

    code = "import schedlab.engines.queue.sim.fast, numba; print(numba.config.CACHE_DIR)"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["SCHEDLAB_CACHE_DIR"] = str(tmp_path / "shared")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "shared" / "numba" / SHARED_DIGEST)
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "users")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == str(tmp_path / "users")


def test_the_cache_digest_covers_every_module_of_the_kernel_package():
    """The kernels call helpers from sibling modules (server, las), and numba
    re-checks only a kernel's own file: the cache directory's digest must
    cover every module of the package, or an edited helper would leave stale
    cached kernels in use."""
    from pathlib import Path

    from schedlab.sim.common import jit

    modules = set(Path(queue_fast.__file__).parent.glob("*.py"))
    assert len(modules) >= 6 and modules <= set(jit.SHARED_SOURCES)
