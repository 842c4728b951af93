"""Tests for the synthetic generator, the canonical job table and file I/O.

Statistical checks use fixed seeds, so they are deterministic; the tolerances
below are nevertheless the ones a correct generator would pass for almost
every seed, so that a failure means a real bug, not bad luck.
"""

from __future__ import annotations

import gzip
import math

import numpy as np
import polars as pl
import pytest
from scipy import stats
from scipy.special import gamma

from schedlab.errors import UserError
from schedlab.workloads.files import read_job_table, write_job_table
from schedlab.workloads.schema import QUEUE_COLUMNS, QUEUE_SCHEMA, validate_queue_table
from schedlab.workloads.synthetic import WORKLOAD_COLUMNS, queue_workload

# Sample means must lie within Z_TOL standard errors (sd / sqrt(n), by the
# CLT) of the true mean; a correct generator fails with probability ~5.7e-7.
Z_TOL = 5.0
# A Kolmogorov-Smirnov test passes when its p-value is at least this.
KS_P_MIN = 1e-3
# Realized load is set by one rescaling, so it is exact up to rounding.
REALIZED_LOAD_RTOL = 1e-12

N_STAT = 200_000


def workload(seed: int = 0, **kwargs) -> pl.DataFrame:
    return queue_workload(np.random.default_rng(seed), **kwargs)


def weibull_cv(k: float) -> float:
    """Coefficient of variation of a Weibull(k): sd / mean."""
    return math.sqrt(gamma(1 + 2 / k) / gamma(1 + 1 / k) ** 2 - 1)


def weibull_unit_scale(k: float) -> float:
    return 1 / gamma(1 + 1 / k)


# ---------------------------------------------------------------- generator


def test_output_columns_and_dtypes():
    df = workload(njobs=100)
    assert df.columns == list(WORKLOAD_COLUMNS)
    assert WORKLOAD_COLUMNS[:5] == QUEUE_COLUMNS
    assert dict(df.schema) == {**QUEUE_SCHEMA, "weight_class": pl.Int64}
    assert df["job_id"].to_list() == list(range(100))
    # A generated workload is itself a valid queue table.
    assert validate_queue_table(df, "generated", None).equals(df.select(QUEUE_COLUMNS))


@pytest.mark.parametrize("shape", [1.0, 2.0])
def test_weibull_size_mean_is_one(shape):
    size = workload(1, njobs=N_STAT, shape=shape)["size"].to_numpy()
    tolerance = Z_TOL * weibull_cv(shape) / math.sqrt(N_STAT)  # mean is 1, so sd = cv
    assert abs(size.mean() - 1.0) <= tolerance


@pytest.mark.parametrize("shape", [0.25, 1.0, 2.0])
def test_weibull_size_distribution_ks(shape):
    size = workload(2, njobs=N_STAT, shape=shape)["size"].to_numpy()
    scale = weibull_unit_scale(shape)
    assert stats.kstest(size, stats.weibull_min(shape, scale=scale).cdf).pvalue >= KS_P_MIN
    # The test has teeth: a 25% error in the scale is rejected (5% is too
    # subtle to detect reliably at shape 0.25, whose spread is enormous).
    assert stats.kstest(size, stats.weibull_min(shape, scale=1.25 * scale).cdf).pvalue < KS_P_MIN


@pytest.mark.parametrize("sigma", [0.5, 2.0])
def test_estimate_error_is_lognormal(sigma):
    df = workload(3, njobs=N_STAT, sigma=sigma)
    ratio = (df["estimate"] / df["size"]).to_numpy()
    assert stats.kstest(ratio, stats.lognorm(sigma).cdf).pvalue >= KS_P_MIN
    assert stats.kstest(ratio, stats.lognorm(1.05 * sigma).cdf).pvalue < KS_P_MIN


def test_sigma_zero_gives_exact_estimates():
    df = workload(4, njobs=1000, sigma=0.0)
    assert (df["estimate"] == df["size"]).all()


@pytest.mark.parametrize("alpha", [1.0, 2.0])
def test_pareto_sizes_are_lomax(alpha):
    size = workload(5, njobs=N_STAT, size_dist="pareto", alpha=alpha)["size"].to_numpy()
    assert size.min() > 0
    assert stats.kstest(size, stats.lomax(alpha).cdf).pvalue >= KS_P_MIN
    # scipy's pareto with x_m = 0 is the same law.
    assert stats.kstest(size, stats.pareto(alpha, loc=-1).cdf).pvalue >= KS_P_MIN
    assert stats.kstest(size, stats.lomax(1.05 * alpha).cdf).pvalue < KS_P_MIN


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"load": 0.5, "timeshape": 0.125},
        {"load": 0.999, "shape": 4.0},
        {"size_dist": "pareto", "alpha": 1.0},
        {"njobs": 2},
    ],
)
def test_realized_load_is_exact(kwargs):
    df = workload(6, **kwargs)
    load = kwargs.get("load", 0.9)
    realized = df["size"].sum() / df["submit"][-1]
    assert abs(realized - load) <= REALIZED_LOAD_RTOL * load
    assert df["submit"][0] == 0.0
    assert (df["submit"].diff().drop_nulls() >= 0).all()


def test_single_job_arrives_at_zero():
    assert workload(7, njobs=1)["submit"].to_list() == [0.0]


@pytest.mark.parametrize(
    ("timeshape", "size_kwargs", "mean_size"),
    [(1.0, {}, 1.0), (0.5, {}, 1.0), (2.0, {}, 1.0), (1.0, {"size_dist": "pareto", "alpha": 3.0}, 0.5)],
)
def test_nominal_mean_gap(timeshape, size_kwargs, mean_size):
    load = 0.8
    df = workload(8, njobs=N_STAT, timeshape=timeshape, load=load, load_mode="nominal", **size_kwargs)
    mean_gap = df["submit"][-1] / (N_STAT - 1)
    expected = mean_size / load
    tolerance = Z_TOL * expected * weibull_cv(timeshape) / math.sqrt(N_STAT - 1)
    assert abs(mean_gap - expected) <= tolerance


@pytest.mark.parametrize("beta", [0.0, 1.0, 2.0])
def test_weights_follow_classes(beta):
    df = workload(9, njobs=N_STAT, beta=beta)
    cls = df["weight_class"].to_numpy()
    weight = df["weight"].to_numpy()
    assert set(np.unique(cls)) == {1, 2, 3, 4, 5}
    np.testing.assert_array_equal(weight, 1.0 / cls.astype(float) ** beta)
    if beta == 0.0:
        assert (weight == 1.0).all()
    p = 1 / 5
    tolerance = Z_TOL * math.sqrt(p * (1 - p) / N_STAT)
    freq = np.bincount(cls, minlength=6)[1:] / N_STAT
    assert np.all(np.abs(freq - p) <= tolerance)


def test_single_weight_class():
    df = workload(10, njobs=100, weight_classes=1, beta=2.0)
    assert (df["weight_class"] == 1).all() and (df["weight"] == 1.0).all()


def test_same_seed_same_workload():
    assert workload(11, njobs=5000).equals(workload(11, njobs=5000))
    assert not workload(11, njobs=5000).equals(workload(12, njobs=5000))


def test_common_random_numbers_across_sigma_and_beta():
    base = workload(13, njobs=5000, sigma=0.5, beta=0.0)
    other_sigma = workload(13, njobs=5000, sigma=2.0, beta=0.0)
    other_beta = workload(13, njobs=5000, sigma=0.5, beta=2.0)
    for col in ("size", "submit"):
        assert base[col].equals(other_sigma[col])
        assert base[col].equals(other_beta[col])
    assert not base["estimate"].equals(other_sigma["estimate"])
    assert base["estimate"].equals(other_beta["estimate"])
    assert base["weight_class"].equals(other_sigma["weight_class"])


def test_common_random_numbers_across_load():
    a = workload(14, njobs=1000, load=0.5)
    b = workload(14, njobs=1000, load=0.9)
    assert a["size"].equals(b["size"])
    np.testing.assert_allclose(a["submit"].to_numpy() * 0.5 / 0.9, b["submit"].to_numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"njobs": 0}, "njobs"),
        ({"njobs": 2.5}, "njobs"),
        ({"njobs": True}, "njobs"),
        ({"shape": 0}, "shape"),
        ({"shape": float("nan")}, "shape"),
        ({"timeshape": -1}, "timeshape"),
        ({"load": 0}, "load"),
        ({"load": float("inf")}, "load"),
        ({"sigma": -0.1}, "sigma"),
        ({"alpha": 0}, "alpha"),
        ({"beta": -1}, "beta"),
        ({"weight_classes": 0}, "weight_classes"),
        ({"size_dist": "lognormal"}, "size_dist"),
        ({"load_mode": "exact"}, "load_mode"),
        ({"shape": "1"}, "shape"),
        ({"size_dist": "pareto", "alpha": 1.0, "load_mode": "nominal"}, "alpha"),
    ],
)
def test_bad_parameters(kwargs, name):
    with pytest.raises(UserError, match=rf"^{name}: must be"):
        workload(**kwargs)


# ------------------------------------------------------------------ readers


def write_text(tmp_path, text: str, name: str = "jobs.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def read_error(path) -> str:
    with pytest.raises(UserError) as info:
        read_job_table(path)
    return str(info.value)


HEADER = "job_id,submit,size,estimate,weight\n"


@pytest.mark.parametrize(
    ("rows", "line", "words"),
    [
        (["1,0,1,1,1", "2,1,2,2,1", "3,2,abc,1,1"], 4, "size is not a number: 'abc'"),
        (["1,0,1,1,1", "2.5,1,2,2,1"], 3, "job_id is not an integer"),
        (["1,0,1,1,1", "2,1,NaN,2,1"], 3, "size is NaN"),
        (["1,0,1,1,1", "2,1,1,inf,1"], 3, "estimate is inf"),
        (["1,0,1,1,1", "2,1,,2,1"], 3, "missing value in column 'size'"),
        (["1,0,1,1,1", "2,1"], 3, "missing value in column 'size'"),
        (["1,0,1,1,1", "", "3,2,1,1,1"], 3, "missing value in column 'job_id'"),
        (["1,0,1,1,1", "2,1,1,1,1", "3,2,0,1,1"], 4, "size must be > 0, got 0.0"),
        (["1,0,-2,1,1"], 2, "size must be > 0, got -2.0"),
        (["1,0,1,0,1"], 2, "estimate must be > 0"),
        (["1,0,1,1,-1"], 2, "weight must be > 0"),
        (["1,-1,1,1,1"], 2, "submit must be >= 0"),
        (["1,0,1,1,1", "2,5,1,1,1", "3,4,1,1,1"], 4, "submit 4.0 is smaller than the previous row's 5.0"),
        (["7,0,1,1,1", "8,1,1,1,1", "9,1,1,1,1", "7,2,1,1,1"], 5, "duplicate job_id 7"),
        (["1,0,1,1,1", "2,1,1,1,1,9"], 3, "6 fields, but the header has 5"),
    ],
)
def test_csv_row_errors_name_file_and_line(tmp_path, rows, line, words):
    path = write_text(tmp_path, HEADER + "\n".join(rows) + "\n")
    message = read_error(path)
    assert message.startswith(f"{path}:{line}: ")
    assert words in message


def test_duplicate_id_names_first_occurrence(tmp_path):
    path = write_text(tmp_path, HEADER + "7,0,1,1,1\n8,1,1,1,1\n7,2,1,1,1\n")
    assert read_error(path) == f"{path}:4: duplicate job_id 7 (first used at {path}:2)"


def test_earliest_bad_row_is_reported(tmp_path):
    path = write_text(tmp_path, HEADER + "1,0,1,1,1\n2,1,1,1,0\n3,2,x,1,1\n")
    assert read_error(path).startswith(f"{path}:3: weight must be > 0")


def test_invalid_utf8_names_line(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_bytes(HEADER.encode() + b"1,0,1,1,1\n2,1,\xff,1,1\n")
    assert read_error(path).startswith(f"{path}:3: not valid UTF-8")


def test_missing_column(tmp_path):
    path = write_text(tmp_path, "job_id,submit\n1,0\n")
    message = read_error(path)
    assert message.startswith(f"{path}: missing required column 'size'")


def test_duplicate_header_column(tmp_path):
    path = write_text(tmp_path, "job_id,submit,size,size\n1,0,1,2\n")
    assert read_error(path) == f"{path}:1: column 'size' appears more than once in the header"


def test_empty_and_header_only_files(tmp_path):
    assert "empty" in read_error(write_text(tmp_path, "", "empty.csv"))
    assert "no jobs" in read_error(write_text(tmp_path, HEADER, "header.csv"))


def test_missing_file(tmp_path):
    path = tmp_path / "nope.csv"
    assert read_error(path) == f"{path}: no such file"


def test_bad_extension(tmp_path):
    path = write_text(tmp_path, HEADER + "1,0,1,1,1\n", "jobs.txt")
    message = read_error(path)
    assert message.startswith(f"{path}: unsupported file type")
    assert ".csv" in message and ".parquet" in message


def test_unreadable_parquet(tmp_path):
    path = write_text(tmp_path, "not parquet", "jobs.parquet")
    assert read_error(path).startswith(f"{path}: not a readable Parquet file")


@pytest.mark.parametrize(
    ("frame", "row", "words"),
    [
        ({"job_id": [1, 2, 3], "submit": [0.0, 1.0, 2.0], "size": [1.0, float("nan"), 1.0]}, 2, "size is NaN"),
        ({"job_id": [1, 2, 2], "submit": [0.0, 1.0, 2.0], "size": [1.0, 1.0, 1.0]}, 3, "duplicate job_id 2"),
        ({"job_id": [1, 2, 3], "submit": [0.0, 1.0, 2.0], "size": [1.0, None, 1.0]}, 2, "missing value"),
        ({"job_id": [1.0, 2.5], "submit": [0.0, 1.0], "size": [1.0, 1.0]}, 2, "job_id is not an integer"),
    ],
)
def test_parquet_errors_name_row(tmp_path, frame, row, words):
    path = tmp_path / "jobs.parquet"
    pl.DataFrame(frame).write_parquet(path)
    message = read_error(path)
    assert message.startswith(f"{path}: row {row}: ")
    assert words in message


def test_non_numeric_parquet_column(tmp_path):
    path = tmp_path / "jobs.parquet"
    pl.DataFrame({"job_id": [1], "submit": [0.0], "size": [True]}).write_parquet(path)
    assert read_error(path) == f"{path}: column 'size' has type Boolean, expected numbers"


def test_optional_columns_default_and_extras_dropped(tmp_path):
    path = write_text(tmp_path, "size,note,submit,job_id\n2.5,a,0,10\n0.5,b,3,11\n")
    df = read_job_table(path)
    assert df.columns == list(QUEUE_COLUMNS)
    assert dict(df.schema) == QUEUE_SCHEMA
    assert df["estimate"].to_list() == [2.5, 0.5]
    assert df["weight"].to_list() == [1.0, 1.0]
    assert df["job_id"].to_list() == [10, 11]


def test_whitespace_around_numbers_is_accepted(tmp_path):
    path = write_text(tmp_path, "job_id,submit,size\n 1 , 0.5 ,1e-3\n")
    assert read_job_table(path).row(0) == (1, 0.5, 1e-3, 1e-3, 1.0)


@pytest.mark.parametrize("name", ["w.csv", "w.csv.gz", "w.parquet"])
def test_round_trip(tmp_path, name):
    df = workload(15, njobs=2000, beta=1.0, size_dist="pareto", alpha=1.5)
    path = tmp_path / name
    write_job_table(df, path)
    if name.endswith(".gz"):
        with gzip.open(path, "rt") as f:
            assert f.readline().startswith("job_id,")
    assert read_job_table(path).equals(df.select(QUEUE_COLUMNS))
