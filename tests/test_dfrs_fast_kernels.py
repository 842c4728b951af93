"""The compiled max-min allocation (``schedlab.engines.dfrs.sim.fast``) against its
numpy definition, bit for bit (IEEE bytes), on random incidence matrices:
the two sums with an order of their own (``A[:, mask].sum(axis=1)`` and
``A[:, mask] @ y[mask]``) and the whole progressive filling."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines.dfrs.sim import _LOAD_EPS, max_min_yields, max_min_yields_numpy
from schedlab.engines.dfrs.sim import fast as dfrs_fast


def test_the_bridge_reaches_numpys_blas():
    """On this install (numpy's PyPI wheel) the kernel path is the one that
    runs: otherwise the comparisons below would compare numpy with itself."""
    assert dfrs_fast.blas_functions() is not None


@settings(max_examples=300, deadline=None)
@given(K=st.integers(0, 140), J=st.integers(0, 300), seed=st.integers(0, 2**32 - 1), density=st.floats(0.0, 1.0))
def test_masked_sums_as_numpy(K, J, seed, density):
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.0, 1.0, (K, J)) * rng.integers(0, 3, (K, J))
    take = rng.uniform(0.0, 1.0, J) < density
    y = rng.uniform(0.0, 1.0, J)
    sums, prod = dfrs_fast.masked_ops_kernel(A, take, y, *dfrs_fast.blas_functions())
    assert sums.tobytes() == A[:, take].sum(axis=1).tobytes()
    assert prod.tobytes() == (A[:, take] @ y[take]).tobytes()


def _incidence(rng, K, J, cpu_choices):
    """An engine-like matrix: job j has tasks on a few rows, entry = c_j x tasks there."""
    A = np.zeros((K, J))
    for j in range(J):
        c = float(rng.choice(cpu_choices)) if len(cpu_choices) else float(rng.uniform(0.01, 1.0))
        for _ in range(int(rng.integers(1, 9))):
            A[int(rng.integers(0, K)), j] += c
    return A


@settings(max_examples=400, deadline=None)
@given(
    K=st.integers(1, 130),
    J=st.integers(1, 160),
    seed=st.integers(0, 2**32 - 1),
    cpu=st.sampled_from([(), (0.25, 0.5, 1.0), (1.0,), (0.1, 0.3, 0.7)]),
)
def test_max_min_kernel_identical_to_numpy(K, J, seed, cpu):
    A = _incidence(np.random.default_rng(seed), K, J, cpu)
    got = max_min_yields(A)
    assert got.tobytes() == max_min_yields_numpy(A).tobytes()
    assert np.all(A @ got <= 1.0 + 1e-9)  # feasible (an independent check of the common result)


def test_max_min_kernel_edge_shapes():
    for A in (
        np.zeros((0, 0)),
        np.zeros((0, 3)),
        np.zeros((2, 0)),
        np.zeros((3, 2)),
        np.full((1, 1), 2.0),
        np.array([[0.5, 0.5, 0.5]]),
        np.array([[1.0, 1.0], [1.0, 0.0]]),
    ):
        assert max_min_yields(A).tobytes() == max_min_yields_numpy(A).tobytes()
    blas = dfrs_fast.blas_functions()
    A = np.array([[0.5, 0.5, 1.0], [0.0, 1.0, 1.0]])
    assert dfrs_fast.max_min_kernel(A, *blas, _LOAD_EPS).tolist() == [0.5, 0.5, 0.5]
