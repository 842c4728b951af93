"""`schedlab.workloads.streams` gives the very generators numpy's own spawning
gives: the children's PCG64 states, hence their draws, for any seed words."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines.instance import Draws, build_workload, seeded
from schedlab.platform.planning.plan import Instance, WorkloadPoint
from schedlab.workloads.arrays import column
from schedlab.workloads.streams import Streams, spawned_states

#: Seed words of any size a plan can make (a seed, 64-bit point ids, replications), 0 included.
WORDS = st.lists(
    st.one_of(st.integers(0, 3), st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**130)),
    min_size=1,
    max_size=9,
).map(tuple)


def numpy_states(words: tuple[int, ...], n: int) -> list[tuple[int, int]]:
    states = [g.bit_generator.state["state"] for g in seeded(words).spawn(n)]
    return [(s["state"], s["inc"]) for s in states]


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=12), st.integers(1, 6))
def test_spawned_states_are_numpys(seed_words, n):
    """Every child's (state, inc), for seed words of mixed lengths in one call."""
    assert spawned_states(seed_words, n) == [numpy_states(words, n) for words in seed_words]


@settings(max_examples=50, deadline=None)
@given(WORDS, WORDS)
def test_reused_generators_draw_as_numpys_children(first, second):
    """Set one instance's states, draw, set the next one's: each draws what its own children draw (no buffered
    32-bit half of a draw carried over: `integers` of a small range uses them)."""
    streams = Streams(4)
    for words in (first, second):
        ours = streams.set(spawned_states([words], 4)[0])
        theirs = seeded(words).spawn(4)
        for a, b in zip(ours, theirs, strict=True):
            assert np.array_equal(a.integers(1, 6, size=7), b.integers(1, 6, size=7))
            assert np.array_equal(a.weibull(0.3, 5), b.weibull(0.3, 5))
            assert np.array_equal(a.lognormal(0.0, 0.5, 3), b.lognormal(0.0, 0.5, 3))


def column_of(jobs):
    return lambda name: column(jobs, name)


def test_draws_build_what_build_workload_builds():
    """A task's `Draws` gives each instance the columns `build_workload` draws for it, array path and frame path."""
    params = {"njobs": 40, "load": 0.7, "sigma": 0.5, "shape": 0.3, "weight_classes": 3}
    point = WorkloadPoint("p", "synthetic", params, ())
    instances = [Instance(point, r, (7, 2**40 + r, r)) for r in range(5)]
    for arrays in (True, False):
        draws = Draws(instances, arrays)
        assert bool(draws.states) is arrays
        for k, instance in enumerate(instances):
            ours = column_of(draws.build(k, "queue", instance, None, arrays))
            theirs = column_of(build_workload("queue", point, seeded(instance.seed_words), None, arrays))
            for name in ("submit", "size", "estimate", "weight", "weight_class"):
                assert np.array_equal(ours(name), theirs(name)), name
