"""Trace transforms: exact arithmetic on small hand-made tables."""

import numpy as np
import polars as pl
import pytest

from schedlab.errors import UserError
from schedlab.workloads import transforms as tf

JOBS = pl.DataFrame(
    {
        "job_id": [1, 2, 3, 4, 5],
        "submit": [100.0, 110.0, 150.0, 220.0, 300.0],
        "size": [10.0, 20.0, 30.0, 40.0, 60.0],
    }
)


def test_shift_and_offered_load():
    shifted = tf.shift_to_zero(JOBS)
    assert shifted["submit"].to_list() == [0.0, 10.0, 50.0, 120.0, 200.0]
    assert tf.offered_load(JOBS) == 160.0 / 200.0


def test_scale_load_hits_the_target_exactly():
    jobs = JOBS.with_columns((pl.col("size") * 2).alias("estimate"))
    scaled = tf.scale_load(jobs, 0.9)
    assert tf.offered_load(scaled) == pytest.approx(0.9, rel=1e-15)
    np.testing.assert_allclose(scaled["estimate"] / scaled["size"], 2.0)
    with pytest.raises(UserError, match="load"):
        tf.scale_load(JOBS, 0)


def test_traffic_scaling_multiplies_arrival_times():
    assert tf.scale_traffic(JOBS, 0.5)["submit"].to_list() == [50.0, 55.0, 75.0, 110.0, 150.0]


def test_windows_partition_the_trace():
    """Windows of 100 s from t0 = 100: [100,200) has jobs 1-3, [200,300) job 4,
    [300,400) job 5; each shifted to its own origin."""
    assert tf.window_count(JOBS, 100.0) == 3
    parts = [tf.window(JOBS, 100.0, k) for k in range(3)]
    assert [p["job_id"].to_list() for p in parts] == [[1, 2, 3], [4], [5]]
    assert parts[0]["submit"].to_list() == [0.0, 10.0, 50.0]
    assert parts[1]["submit"].to_list() == [20.0]
    assert sum(p.height for p in parts) == JOBS.height
    with pytest.raises(UserError, match="window"):
        tf.window(JOBS, 100.0, 3)


def test_estimates_are_lognormal_and_exact_at_sigma_zero():
    rng = np.random.default_rng(5)
    big = pl.DataFrame({"size": np.ones(200_000)})
    est = tf.add_estimates(big, rng, 0.5)["estimate"].to_numpy()
    # log(estimate) ~ N(0, 0.25): mean within 5 standard errors, sd within 1 %
    assert abs(np.log(est).mean()) < 5 * 0.5 / np.sqrt(len(est))
    assert np.log(est).std() == pytest.approx(0.5, rel=0.01)
    assert tf.add_estimates(JOBS, rng, 0.0)["estimate"].to_list() == JOBS["size"].to_list()


def test_attached_arrivals_give_the_load():
    rng = np.random.default_rng(9)
    jobs = pl.DataFrame({"job_id": np.arange(100_000), "size": rng.exponential(2.0, 100_000)})
    timed = tf.attach_arrivals(jobs, rng, 0.8)
    assert timed["submit"][0] == 0.0 and timed["submit"].is_sorted()
    assert tf.offered_load(timed) == pytest.approx(0.8, rel=0.02)  # Poisson count noise ~0.3 %


def test_rigid_load_scaling():
    """Jobs (runtime x procs) 10x4 + 20x2 + 30x1 = 110 processor-seconds over a
    100 s span on 4 processors: load 0.275; to reach 0.55 the span halves."""
    jobs = pl.DataFrame({"submit": [10.0, 60.0, 110.0], "runtime": [10.0, 20.0, 30.0], "procs": [4, 2, 1]})
    assert tf.rigid_offered_load(jobs, 4) == pytest.approx(0.275)
    scaled = tf.scale_rigid_load(jobs, 0.55, 4)
    assert scaled["submit"].to_list() == [10.0, 35.0, 60.0]
    assert tf.rigid_offered_load(scaled, 4) == pytest.approx(0.55)


def test_windows_from_a_given_origin():
    """Origin 0 (an SWF log's UnixStartTime): window k = floor(submit / 100); jobs at 100,
    110, 150 -> k 1; 220 -> 2; 300 -> 3; window 0 is empty and not among the indices."""
    assert tf.window_count(JOBS, 100.0, 0.0) == 4
    assert tf.window_indices(JOBS, 100.0, 0.0) == [1, 2, 3]
    assert tf.window_indices(JOBS, 100.0) == [0, 1, 2]  # from the first submission
    assert tf.window(JOBS, 100.0, 0, 0.0).is_empty()
    assert tf.window(JOBS, 100.0, 1, 0.0)["submit"].to_list() == [0.0, 10.0, 50.0]
    assert tf.window(JOBS, 100.0, 3, 0.0)["job_id"].to_list() == [5]
    # origin 50: k = floor((submit - 50) / 100): 100, 110 -> 0; 150, 220 -> 1; 300 -> 2
    assert tf.window_indices(JOBS, 100.0, 50.0) == [0, 1, 2]
    assert tf.window(JOBS, 100.0, 1, 50.0)["submit"].to_list() == [0.0, 70.0]
    with pytest.raises(UserError, match="^window_origin:"):
        tf.window(JOBS, 100.0, 0, 150.0)  # a job before the origin
