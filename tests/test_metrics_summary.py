"""The queue engine's summary metrics (schedlab.sim.common.metrics.queue_summary)
against their plain definition, frozen here as it stood before the single-pass
rewrite (issue 20): every value bit-identical, floats included, whatever the
sizes (zeros, tiny, huge), sojourns and weight classes (narrow or wide integer
ranges, negative, float)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from schedlab.sim.common.metrics import linear_percentiles, queue_summary, slowdown


def plain_slowdown(sojourn: np.ndarray, size: np.ndarray) -> np.ndarray:
    out = np.full(len(size), np.nan)
    positive = size > 0
    out[positive] = np.maximum(sojourn[positive] / size[positive], 1.0)
    return out


def plain_summary(size: np.ndarray, sojourn: np.ndarray, weight_class: np.ndarray | None) -> dict[str, float]:
    sd = plain_slowdown(sojourn, size)
    sd = sd[~np.isnan(sd)]
    if sd.size == 0:
        sd = np.array([np.nan])
    out = {
        "n_jobs": float(len(size)),
        "mst": float(np.mean(sojourn)),
        "slowdown_mean": float(np.mean(sd)),
        "slowdown_p50": float(np.percentile(sd, 50)),
        "slowdown_p99": float(np.percentile(sd, 99)),
        "slowdown_max": float(np.max(sd)),
    }
    if weight_class is not None:
        for c in np.unique(weight_class):
            out[f"mst_class_{int(c)}"] = float(np.mean(sojourn[weight_class == c]))
    return out


def bits(d: dict[str, float]) -> dict[str, bytes]:
    return {k: np.float64(v).tobytes() for k, v in d.items()}


positive = st.floats(min_value=1e-30, max_value=1e12, allow_nan=False, allow_infinity=False)
sizes = st.one_of(positive, st.just(0.0))


@st.composite
def jobs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    n = draw(st.integers(min_value=1, max_value=400))
    size = draw(hnp.arrays(np.float64, n, elements=sizes))
    sojourn = size + draw(hnp.arrays(np.float64, n, elements=st.floats(0.0, 1e9)))
    kind = draw(st.sampled_from(["none", "narrow", "negative", "wide", "float"]))
    classes: np.ndarray | None
    if kind == "none":
        classes = None
    elif kind == "narrow":  # the synthetic generator's 1..weight_classes
        classes = draw(hnp.arrays(np.int64, n, elements=st.integers(1, 5)))
    elif kind == "negative":
        classes = draw(hnp.arrays(np.int64, n, elements=st.integers(-300, 300)))
    elif kind == "wide":  # beyond a uint16 key: the mask-per-class path
        classes = draw(hnp.arrays(np.int64, n, elements=st.sampled_from([0, 7, 70_000, 2**40])))
    else:
        classes = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([1.0, 2.0, 3.0])))
    return size, sojourn, classes


@settings(max_examples=400, deadline=None)
@given(jobs())
def test_summary_is_bit_identical_to_the_plain_definition(case):
    size, sojourn, classes = case
    want = bits(plain_summary(size, sojourn, classes))
    assert list(want) == list(queue_summary(size, sojourn, classes))  # same keys, same order
    assert bits(queue_summary(size, sojourn, classes)) == want
    assert bits(queue_summary(size, sojourn, classes, slowdown(sojourn, size))) == want


@settings(max_examples=200, deadline=None)
@given(jobs())
def test_slowdown_is_bit_identical_to_the_plain_definition(case):
    size, sojourn, _ = case
    assert slowdown(sojourn, size).tobytes() == plain_slowdown(sojourn, size).tobytes()


def test_summary_at_the_scale_of_a_sweep():
    """10k jobs of the PSBS shapes (Weibull 0.125 sizes down to 1e-30), five classes."""
    rng = np.random.default_rng(20)
    for shape in (0.125, 1.0, 4.0):
        size = rng.weibull(shape, 10_000)
        size[::997] = 0.0
        sojourn = size * rng.uniform(1.0, 50.0, size.size) + rng.exponential(1.0, size.size)
        classes = rng.integers(1, 6, size.size)
        assert bits(queue_summary(size, sojourn, classes)) == bits(plain_summary(size, sojourn, classes))


any_floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
QS = st.lists(st.sampled_from([0, 1, 25, 50, 75, 90, 99, 99.9, 100]), min_size=1, max_size=4)


@settings(max_examples=500, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 300), elements=any_floats), QS)
def test_linear_percentiles_are_numpys_to_the_bit(values, qs):
    """Any values (ties, signed zeros, infinities, NaNs anywhere), any percentiles."""
    got = linear_percentiles(values, tuple(qs))
    want = [float(x) for x in np.percentile(values, qs)]
    assert [np.float64(x).tobytes() for x in got] == [np.float64(x).tobytes() for x in want]


def test_linear_percentiles_for_every_length_up_to_2000():
    """Every rank arithmetic numpy does for n = 1..2000 (ties included)."""
    rng = np.random.default_rng(7)
    for n in range(1, 2001):
        values = np.maximum(rng.lognormal(0.0, 3.0, n), 1.0)  # slowdowns: many exactly 1
        got = linear_percentiles(values, (50, 99))
        want = [float(np.percentile(values, 50)), float(np.percentile(values, 99))]
        assert [np.float64(x).tobytes() for x in got] == [np.float64(x).tobytes() for x in want], n
