"""The /per family against the authors' simulator itself (vcsim, Python 2.7),
when it is on this machine (``VCSIM_DIR`` / ``VCSIM_PYTHON``, as
``benchmarks/vcsim_compare.py``; skipped otherwise, e.g. in CI): on the
comparison's 300-job Lublin trace (seed 1, 128 nodes), each of Table 2's
13 ``/per`` algorithms gives every job vcsim's completion time under the
vcsim-reading options (``VCSIM_OPTIONS``), and schedlab's defaults do not.
The options' own effects are pinned by hand-worked cases without vcsim
(tests/test_dfrs_vcsim_remap.py, test_dfrs_victims_settle.py,
test_dfrs_mcb8_remaps.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

VCSIM_DIR = Path(os.environ.get("VCSIM_DIR", "vcsim-run/src"))
VCSIM_PYTHON = Path(os.environ.get("VCSIM_PYTHON") or shutil.which("python2.7") or "python2.7")
SIM = VCSIM_DIR / "results" / "scripts" / "sim.py"
BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "vcsim_compare.py"


def _compare_module():
    spec = importlib.util.spec_from_file_location("vcsim_compare", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PER_ALGORITHMS = [
    "Greedy/per/OPT=MIN",
    "GreedyP/per/OPT=MIN",
    "GreedyPM/per/OPT=MIN",
    "Greedy*/per/OPT=MIN",
    "GreedyP*/per/OPT=MIN",
    "GreedyPM*/per/OPT=MIN",
    "GreedyP/per/OPT=MIN/MINVT=600",
    "GreedyPM/per/OPT=MIN/MINVT=600",
    "GreedyP*/per/OPT=MIN/MINVT=600",
    "GreedyPM*/per/OPT=MIN/MINVT=600",
    "MCB8/per/OPT=MIN/MINVT=600",
    "MCB8*/per/OPT=MIN/MINVT=600",
    "/per/OPT=MIN/MINVT=600",
]


def test_every_per_algorithm_has_its_vcsim_words():
    """The comparison knows vcsim's command-line words for each of the 13 (its fixnames.sh names)."""
    assert set(PER_ALGORITHMS) <= set(_compare_module().VCSIM_ALGOS)


@pytest.mark.skipif(
    not (SIM.is_file() and VCSIM_PYTHON.is_file()),
    reason=f"vcsim ({SIM}) or Python 2 ({VCSIM_PYTHON}) not present: see benchmarks/vcsim_compare.py",
)
@pytest.mark.parametrize("policy", PER_ALGORITHMS)
def test_real_vcsim_equals_the_vcsim_options(policy):
    mod = _compare_module()
    jobs = mod.build_trace(300, 1, 0.0, "first")
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        (work / "shim").mkdir()
        (work / "shim" / "pymprog.py").write_text(mod.PYMPROG_SHIM)
        (work / "driver.py").write_text(mod.DRIVER)
        mod.write_dat(jobs, work / "trace.dat")
        ends, _out, _wall = mod.run_vcsim(str(VCSIM_PYTHON), SIM, work, work / "trace.dat", mod.VCSIM_ALGOS[policy])
    ref = np.array([ends[int(i)] for i in jobs["job_id"]], dtype=float)
    ours, _ = mod.run_schedlab(jobs, policy, dict(mod.VCSIM_OPTIONS))
    default, _ = mod.run_schedlab(jobs, policy, {})
    assert np.array_equal(ours, ref)
    assert not np.array_equal(default, ref)
