"""Property tests over random workloads (hypothesis): invariants that hold for
any arrival pattern and sizes, checked against the FIFO recursion and against
each other."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines.queue.policies import QUEUE_POLICIES
from schedlab.engines.queue.sim.engine import DONE_REL_TOL
from tests.conftest import run_declinable as run

#: Every test here runs on both engine paths: the Python reference and the
#: compiled kernels (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("engine_path")

#: Relative tolerance for comparing times computed along different
#: floating-point paths (e.g. FSP vs PS). Times here are <= ~1e3, so this is
#: ~1e-6 absolute at most: far below any scheduling difference.
REL_TOL = 1e-9

positive = st.floats(min_value=0.01, max_value=10.0, allow_nan=False)


@st.composite
def workloads(draw, max_jobs=25):
    n = draw(st.integers(min_value=1, max_value=max_jobs))
    gaps = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 5.0)), min_size=n, max_size=n))
    size = draw(st.lists(positive, min_size=n, max_size=n))
    factor = draw(st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n))
    weight = draw(st.lists(st.sampled_from([1.0, 0.5, 0.25, 1 / 3, 0.2]), min_size=n, max_size=n))
    submit = np.cumsum(gaps) - gaps[0]
    size = np.array(size)
    return submit, size, size * np.array(factor), np.array(weight)


def fifo_recursion(submit, size):
    """C_i = max(a_i, C_{i-1}) + s_i, with the engine's one documented
    rounding rule (``DONE_REL_TOL``, engines/queue/sim/engine.py): a completion that an
    arrival precedes by at most DONE_REL_TOL x s_i happens at that arrival
    (hypothesis found such a case: an arrival one ULP before C_0)."""
    submit = np.asarray(submit, dtype=float)
    c = np.empty_like(size)
    prev = -np.inf
    for i in range(len(size)):
        prev = max(submit[i], prev) + size[i]
        near = submit[(submit >= prev - DONE_REL_TOL * size[i]) & (submit < prev)]
        if near.size:
            prev = float(near.min())
        c[i] = prev
    return c


@settings(max_examples=200, deadline=None)
@given(workloads())
def test_fifo_equals_recursion_exactly(w):
    submit, size, _, _ = w
    assert run("FIFO", submit, size).tolist() == fifo_recursion(submit, size).tolist()


def test_fifo_recursion_with_an_arrival_one_ulp_before_a_completion():
    """The case hypothesis found: job 1 arrives one ULP before job 0 would end."""
    s0 = 1.572244414979377
    submit, size = np.array([0.0, np.nextafter(s0, 0.0)]), np.array([s0, 1.0])
    assert fifo_recursion(submit, size).tolist() == [submit[1], submit[1] + 1.0]
    assert run("FIFO", submit, size).tolist() == fifo_recursion(submit, size).tolist()


@settings(max_examples=200, deadline=None)
@given(workloads())
def test_fsp_never_later_than_ps(w):
    submit, size, _, _ = w
    fsp, ps = run("FSP", submit, size), run("PS", submit, size)
    assert np.all(fsp <= ps * (1 + REL_TOL))


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_srpt_has_the_least_mean_sojourn(w):
    submit, size, estimate, weight = w
    best = run("SRPT", submit, size).mean()
    for name in QUEUE_POLICIES:
        assert best <= run(name, submit, size, estimate, weight).mean() * (1 + REL_TOL), name


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_psbs_fsp_fspe_plus_ps_coincide_on_exact_sizes(w):
    submit, size, _, _ = w
    fsp = run("FSP", submit, size)
    np.testing.assert_allclose(run("PSBS", submit, size), fsp, rtol=REL_TOL)
    np.testing.assert_allclose(run("FSPE+PS", submit, size), fsp, rtol=REL_TOL)


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_equal_weights_reduce_psbs_to_fspe_plus_ps_and_gps_to_ps(w):
    submit, size, estimate, _ = w
    assert run("PSBS", submit, size, estimate).tolist() == run("FSPE+PS", submit, size, estimate).tolist()
    assert run("GPS", submit, size).tolist() == run("PS", submit, size).tolist()


@settings(max_examples=100, deadline=None)
@given(workloads())
def test_work_conservation_same_busy_periods(w):
    """Every policy is work-conserving: the unfinished work is the same at all
    times, so each busy period (read off the exact FIFO recursion) ends at the
    same instant and with the same jobs completed, under every policy."""
    submit, size, estimate, weight = w
    fifo = fifo_recursion(submit, size)
    ends = [i for i in range(len(size)) if i == len(size) - 1 or submit[i + 1] > fifo[i]]
    for name in QUEUE_POLICIES:
        c = run(name, submit, size, estimate, weight)
        for i in ends:
            assert np.all(c[: i + 1] <= fifo[i] * (1 + REL_TOL) + REL_TOL), name
        np.testing.assert_allclose(c.max(), fifo[-1], rtol=REL_TOL, err_msg=name)


@settings(max_examples=100, deadline=None)
@given(workloads())
def test_no_job_faster_than_alone_and_runs_are_deterministic(w):
    submit, size, estimate, weight = w
    for name in QUEUE_POLICIES:
        c = run(name, submit, size, estimate, weight)
        assert np.all(c >= (submit + size) * (1 - REL_TOL)), name
        assert c.tolist() == run(name, submit, size, estimate, weight).tolist(), name


@settings(max_examples=100, deadline=None)
@given(workloads())
def test_exact_estimates_make_estimate_policies_exact(w):
    """With estimate = size nothing is ever late: SRPTE and its fixes are SRPT,
    FSPE and its fixes are FSP."""
    submit, size, _, _ = w
    srpt, fsp = run("SRPT", submit, size), run("FSP", submit, size)
    for name in ("SRPTE", "SRPTE+PS", "SRPTE+LAS"):
        np.testing.assert_allclose(run(name, submit, size, size), srpt, rtol=REL_TOL, err_msg=name)
    for name in ("FSPE", "FSPE+PS", "FSPE+LAS", "PSBS"):
        np.testing.assert_allclose(run(name, submit, size, size), fsp, rtol=REL_TOL, err_msg=name)
