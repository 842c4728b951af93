"""Issue 42's array path gives what the frame path gives, to the bit.

`schedlab.workloads.arrays.JobArrays` (the synthetic kind's draw as numpy
columns), the queue engine run on it, and `seeded`'s pre-converted entropy
against the polars frame and numpy's own conversion. The sweep-level check
(every row and Parquet file against the code before the change) is
tests/test_rows_golden.py.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from schedlab.engines import get_engine
from schedlab.engines.instance import run_instance, seeded
from schedlab.workloads import synthetic
from schedlab.workloads.arrays import JobArrays, column, frame
from schedlab.workloads.registry import workload_kind
from schedlab.workloads.streams import entropy_words

#: Seed words as plans make them (seed, a point's 64-bit seed id, replication) and the edges of the conversion.
WORDS = [
    (1, 9590729054846562659, 0),
    (0,),
    (0, 0, 0),
    (2**32 - 1, 2**32, 2**64 - 1),
    (7, 2**96 + 5, 3),
    (123456789,),
]
#: synthetic points: the defaults' shapes at a small size, Pareto, nominal load, weights, perfect estimates.
POINTS = [
    {"njobs": 50},
    {"njobs": 200, "shape": 0.125, "sigma": 2.0, "beta": 1.0, "weight_classes": 3},
    {"njobs": 120, "size_dist": "pareto", "alpha": 1.5, "load": 0.95, "sigma": 0.0},
    {"njobs": 80, "size_dist": "pareto", "alpha": 2.5, "load_mode": "nominal", "timeshape": 0.5},
    {"njobs": 1},
]


def _old_seeded(words):
    return np.random.default_rng(np.random.SeedSequence(list(words)))


@pytest.mark.parametrize("words", WORDS)
def test_seeded_is_numpys_seed_sequence_of_the_words(words):
    from numpy.random.bit_generator import _coerce_to_uint32_array

    assert entropy_words(words).tolist() == _coerce_to_uint32_array(list(words)).tolist()
    new, old = seeded(words), _old_seeded(words)
    assert new.bit_generator.state == old.bit_generator.state
    for a, b in zip(new.spawn(4), old.spawn(4), strict=True):
        assert a.bit_generator.state == b.bit_generator.state
        assert a.random(5).tobytes() == b.random(5).tobytes()


def test_seeded_refuses_a_negative_word_as_numpy_does():
    with pytest.raises(ValueError):
        _old_seeded((1, -1))
    with pytest.raises(ValueError):
        seeded((1, -1))


@pytest.mark.parametrize("params", POINTS)
def test_synthetic_arrays_are_the_frames_columns(params):
    kind = workload_kind("synthetic")
    arrays = kind.instance(seeded(WORDS[0]), params, None, arrays=True)
    table = kind.instance(seeded(WORDS[0]), params, None)
    assert isinstance(arrays, JobArrays) and isinstance(table, pl.DataFrame)
    assert arrays.columns == table.columns == list(synthetic.WORKLOAD_COLUMNS)
    assert arrays.height == len(arrays) == table.height == params["njobs"]
    for name in table.columns:
        a, b = column(arrays, name), column(table, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
        assert not a.flags.writeable  # as polars hands them out
    assert frame(arrays).equals(table) and frame(table) is table
    assert frame(arrays).schema == table.schema
    assert arrays.to_polars() is arrays.to_polars()  # built once


def test_kinds_without_arrays_build_their_frame():
    kind = workload_kind("packing")
    params = {**kind.defaults, "slots": 20, "rate": 0.5, "sizes": [0.5], "probs": [1.0]}
    table = kind.instance(np.random.default_rng(3), params, None, arrays=True)
    assert isinstance(table, pl.DataFrame)


@pytest.mark.parametrize("policy", ["FIFO", "PS", "SRPT", "PSBS", "LAS"])
@pytest.mark.parametrize("path", ["fast", "reference"])
@pytest.mark.parametrize("params", POINTS[:4])
def test_queue_engine_on_arrays_equals_on_the_frame(policy, path, params):
    kind = workload_kind("synthetic")
    runs = []
    for arrays in (True, False):
        jobs = kind.instance(seeded(WORDS[3]), params, None, arrays=arrays)
        runs.append(run_instance("queue", jobs, policy, path=path).result)
    a, b = runs
    assert a.summary.keys() == b.summary.keys()
    for k in a.summary:
        if k != "sim_seconds":
            assert np.float64(a.summary[k]).tobytes() == np.float64(b.summary[k]).tobytes(), k
    assert a.jobs.keys() == b.jobs.keys()
    for k in a.jobs:
        assert a.jobs[k].tobytes() == b.jobs[k].tobytes(), k


def test_queue_engine_runs_a_user_policy_on_arrays():
    """A user's class (a subclass of a built-in is never its kernel: the
    reference engine runs it through the seam) reads the same arrays."""
    from schedlab.engines.queue.policies import QUEUE_POLICIES

    class MySRPTE(QUEUE_POLICIES["SRPTE"]):
        pass

    engine = get_engine("queue")
    assert engine.job_arrays
    kind = workload_kind("synthetic")
    runs = [
        run_instance(engine, kind.instance(seeded(WORDS[0]), POINTS[1], None, arrays=a), cls).result
        for a in (True, False)
        for cls in (MySRPTE, QUEUE_POLICIES["SRPTE"])
    ]
    assert len({r.jobs["completion"].tobytes() for r in runs}) == 1
