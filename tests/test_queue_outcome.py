"""The queue engine's summary kernel (``schedlab.engines.queue.sim.fast.outcome``)
gives ``queue_summary``'s numbers to the bit, and the engine's fast path
returns the rows the numpy route returns."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines.queue import outcome as numpy_outcome
from schedlab.engines.queue import run
from schedlab.engines.queue.policies import QUEUE_POLICIES
from schedlab.engines.queue.sim.fast import outcome
from schedlab.sim.common.metrics import queue_summary, slowdown
from schedlab.workloads.arrays import JobArrays
from schedlab.workloads.synthetic import WORKLOAD_SCHEMA, queue_columns


def bits(summary: dict[str, float]) -> dict[str, str]:
    return {k: float(v).hex() for k, v in summary.items()}


@st.composite
def runs(draw):
    """A run's submit times, sizes and completion times (completion >= submit + size / 1e6 > submit), with
    magnitudes over many decades (pairwise sums that a plain loop would round differently), ties and classes."""
    n = draw(st.integers(1, 700))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    submit = np.cumsum(rng.exponential(1.0, n) * 10.0 ** rng.integers(-3, 4, n))
    size = rng.weibull(0.3, n) * 10.0 ** rng.integers(-4, 4, n) + 1e-9
    if draw(st.booleans()):
        size[: n // 2] = size[0]  # ties
    completion = submit + size * rng.uniform(1.0, 50.0, n) ** rng.integers(0, 3, n)
    low = draw(st.integers(-3, 3))
    classes = rng.integers(low, low + draw(st.integers(1, 9)), n).astype(np.int64)
    return submit, size, completion, classes


@settings(max_examples=300, deadline=None)
@given(runs(), st.booleans())
def test_summary_kernel_is_queue_summary_to_the_bit(run_arrays, with_classes):
    submit, size, completion, classes = run_arrays
    sojourn = completion - submit
    slowdowns = slowdown(sojourn, size)
    expected = queue_summary(size, sojourn, classes if with_classes else None, slowdowns)
    expected["makespan"] = float(completion.max())
    got_sojourn, got_slowdowns, got = outcome.summarise(submit, size, completion, classes if with_classes else None)
    assert list(got) == list(expected)  # the same columns in the same order
    assert bits(got) == bits(expected)
    assert got_sojourn.tobytes() == sojourn.tobytes()
    assert got_slowdowns.tobytes() == slowdowns.tobytes()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e12, 1e12, allow_nan=False, width=64), min_size=1, max_size=3000), st.booleans())
def test_means_are_numpys_pairwise_sums(values, reverse):
    """The mean sojourn is np.mean's float for any values and length (blocks of 8, 128, the halves above)."""
    sojourn = np.array(sorted(values, reverse=reverse))
    submit = np.zeros(sojourn.size)
    _, _, got = outcome.summarise(submit, np.ones(sojourn.size), sojourn, None)
    assert got["mst"].hex() == float(np.mean(sojourn)).hex()


def test_readonly_and_unusual_classes():
    """JobArrays' read-only columns are taken; classes spanning more than CLASS_SPAN, or not int64, are declined
    (the engine then takes numpy's route)."""
    ro = np.array([0.0, 1.0, 2.0])
    ro.flags.writeable = False
    assert outcome.summarise(ro, np.ones(3), np.array([1.0, 2.0, 3.0]), None) is not None
    wide = np.array([0, outcome.CLASS_SPAN, 1], np.int64)
    assert outcome.summarise(ro, np.ones(3), np.array([1.0, 2.0, 3.0]), wide) is None
    assert outcome.summarise(ro, np.ones(3), np.array([1.0, 2.0, 3.0]), wide.astype(np.int32)) is None


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2**32 - 1), st.sampled_from(sorted(QUEUE_POLICIES)))
def test_fast_path_rows_are_the_numpy_routes(njobs, seed, policy):
    """Every built-in on a synthetic instance: the kernel's summary and per-job columns equal `outcome`'s (numpy)."""
    jobs = JobArrays(queue_columns(np.random.default_rng(seed), njobs=njobs, weight_classes=4), WORKLOAD_SCHEMA)
    got = run(jobs, QUEUE_POLICIES[policy])
    expected = numpy_outcome(jobs, got.jobs["completion"], int(got.summary["events"]), got.summary["sim_seconds"])
    assert bits(got.summary) == bits(expected.summary)
    for name, values in expected.jobs.items():
        assert np.asarray(got.jobs[name]).tobytes() == np.asarray(values).tobytes(), name
