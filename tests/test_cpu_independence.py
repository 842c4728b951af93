"""The computations whose bits used to follow the CPU give the same bits under
every SIMD target numpy and OpenBLAS can be made to pick.

Rows must not depend on the machine (docs/architecture.md, "Bits across
CPUs"). numpy picks its SIMD code for the CPU when it is imported, and
OpenBLAS its kernels when it is loaded; both can be steered by the
environment: ``NPY_DISABLE_CPU_FEATURES`` (numpy's dispatch targets above its
baseline) and ``OPENBLAS_CORETYPE`` (``Prescott``: the generic x86-64
kernels, not the Haswell/Zen/Skylake-X ones). `PROBE` runs the affected
computations -- `portable.dot` (lengths around OpenBLAS's 16-term kernel
blocks and past its 10,000-term thread split), the overlapping batch-means
half-width (``mst_obm_ci95``), Jain's index, a Lublin workload (``exp``,
``exp2``) and a batch run's summary (``utilisation``) -- and prints a digest
of every float's bits; it runs in fresh interpreters, as is and under each
setting of `SETTINGS`, and the digests must be equal. The probe also prints
a plain ``np.dot``: where the setting moves OpenBLAS to another kernel, that
differs, which shows the settings do reach the code the fix took out of the
rows' way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Longest a probe may take (it runs in about 3 s; a loaded machine is slower).
PROBE_TIMEOUT_S = 300

PROBE = r"""
import hashlib, json
import numpy as np
import polars as pl
from schedlab.api.metrics import jain
from schedlab.engines import batch
from schedlab.engines.batch.policies import EASY
from schedlab.platform.statistics.stats import obm
from schedlab.sim.common.portable import dot
from schedlab.workloads.lublin import lublin_workload

h = hashlib.sha256()
def add(*values):
    h.update(np.asarray(values, dtype=np.float64).tobytes())

rng = np.random.default_rng(20261207)
for n in (0, 1, 15, 16, 17, 31, 33, 1001, 10_001, 40_000):
    a, b = rng.lognormal(0.0, 2.0, (2, n))
    add(dot(a, b))
series = np.cumsum(rng.standard_normal(4000)) + 50.0
add(obm(series).halfwidth, obm(series[:999]).halfwidth)
add(jain(pl.DataFrame({"sojourn": rng.lognormal(0.0, 1.5, 2000)}), column="sojourn"))
jobs = lublin_workload(np.random.default_rng(7), njobs=2000, nodes=64)
for name in ("submit", "runtime", "procs"):
    h.update(jobs[name].to_numpy().tobytes())
_, summary = batch.run_table(jobs, EASY, model="procs", procs=64)
add(*(v for k, v in sorted(summary.items()) if isinstance(v, float) and k not in ("sim_seconds", "bound_seconds")))
x = np.random.default_rng(1).lognormal(0.0, 2.0, 40_000)
print(json.dumps({"digest": h.hexdigest(), "np_dot": float(np.dot(x, x)).hex()}))
"""


def _dispatch_targets() -> str:
    """numpy's SIMD dispatch targets (above its baseline), as
    ``NPY_DISABLE_CPU_FEATURES`` names them: disabling all leaves numpy on
    its baseline code, whatever this CPU has."""
    from numpy._core import _multiarray_umath

    return " ".join(_multiarray_umath.__cpu_dispatch__)


#: Environments the probe runs under besides the plain one.
SETTINGS: dict[str, dict[str, str]] = {
    "numpy-baseline": {"NPY_DISABLE_CPU_FEATURES": _dispatch_targets()},
    "openblas-generic": {"OPENBLAS_CORETYPE": "Prescott"},
    "both": {"NPY_DISABLE_CPU_FEATURES": _dispatch_targets(), "OPENBLAS_CORETYPE": "Prescott"},
}


def _probe(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")}
    env.update(extra, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def plain() -> dict[str, str]:
    return _probe({})


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_same_bits_under_every_simd_target(plain, setting):
    found = _probe(SETTINGS[setting])
    assert found["digest"] == plain["digest"], f"{setting}: the result computations' bits follow the CPU"


def test_the_blas_setting_reaches_blas(plain):
    """``OPENBLAS_CORETYPE=Prescott`` changes a plain ``np.dot`` of 40,000
    terms here -- what the results went through before `portable.dot` --
    unless this machine's OpenBLAS runs the generic kernel already."""
    from threadpoolctl import threadpool_info

    kernels = {i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"}
    if not kernels or kernels <= {"Prescott", "Katmai"}:
        pytest.skip(f"OpenBLAS kernel here: {kernels or 'none'} (the generic one: nothing to compare)")
    assert _probe(SETTINGS["openblas-generic"])["np_dot"] != plain["np_dot"]
