"""Closed-form queueing results the engine must reproduce.

Workloads are drawn here with numpy directly (not with schedlab's generator),
at load rho = 0.5 with Poisson arrivals, over SEEDS x JOBS jobs.

Tolerance: REL_TOL = 3 %. At rho = 0.5 the standard error of the mean sojourn
over 4 x 50,000 jobs is about 0.7 % (M/M/1) to 1.2 % (the PS case with
Weibull shape 0.5 sizes, squared coefficient of variation 5), so 3 % is more
than 2.5 standard errors in the worst case and a wrong discipline (e.g. PS vs
FIFO under non-exponential sizes: 2.0 vs 4.0) misses it by far.
"""

from math import gamma

import numpy as np
import pytest

from tests.conftest import run

#: Every test here runs on both engine paths: the Python reference and the
#: compiled kernels (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("engine_path")

REL_TOL = 0.03
RHO = 0.5
JOBS = 50_000
SEEDS = (11, 12, 13, 14)


def mean_sojourn(policy, draw_size, mean_size):
    total = 0.0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        size = draw_size(rng)
        gaps = rng.exponential(mean_size / RHO, JOBS)
        submit = np.cumsum(gaps)
        total += np.mean(run(policy, submit, size) - submit)
    return total / len(SEEDS)


def exponential(rng):
    return rng.exponential(1.0, JOBS)


def weibull(shape):
    scale = 1.0 / gamma(1 + 1 / shape)  # mean 1
    return lambda rng: scale * rng.weibull(shape, JOBS)


@pytest.mark.parametrize("policy", ["FIFO", "PS"])
def test_mm1_mean_sojourn(policy):
    """M/M/1: E[T] = E[S] / (1 - rho) for FIFO and PS alike."""
    expected = 1.0 / (1 - RHO)
    assert mean_sojourn(policy, exponential, 1.0) == pytest.approx(expected, rel=REL_TOL)


def test_mg1_fifo_pollaczek_khinchine():
    """M/G/1 FIFO with Weibull(shape 2) sizes: E[T] = E[S] + lam E[S^2] / (2 (1 - rho))."""
    shape = 2.0
    scale = 1.0 / gamma(1 + 1 / shape)
    second_moment = scale**2 * gamma(1 + 2 / shape)
    lam = RHO / 1.0
    expected = 1.0 + lam * second_moment / (2 * (1 - RHO))
    assert mean_sojourn("FIFO", weibull(shape), 1.0) == pytest.approx(expected, rel=REL_TOL)


@pytest.mark.parametrize("shape", [0.5, 2.0])
def test_mg1_ps_insensitivity(shape):
    """M/G/1 PS: E[T] = E[S] / (1 - rho) whatever the size distribution."""
    assert mean_sojourn("PS", weibull(shape), 1.0) == pytest.approx(1.0 / (1 - RHO), rel=REL_TOL)


def test_mg1_fifo_differs_from_ps_under_high_variance():
    """The same check is sharp: with shape 0.5 (SCV 5) FIFO's P-K value is 4."""
    shape = 0.5
    scale = 1.0 / gamma(1 + 1 / shape)
    expected = 1.0 + RHO * scale**2 * gamma(1 + 2 / shape) / (2 * (1 - RHO))
    assert expected == pytest.approx(4.0)
    assert mean_sojourn("FIFO", weibull(shape), 1.0) == pytest.approx(expected, rel=REL_TOL)
