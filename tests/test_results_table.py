"""`schedlab results` never averages what the user did not ask to average:
one row per configuration (policy x every swept parameter, `plotting.swept`,
the grouping `plot` draws) by default, `--by` to pool explicitly (each
replication's mean over what is pooled, n counting replications, a header
saying so), `--where`/`--policy`/`--config` to select rows like `view`, and
every mean with its interval in one notation (`format_estimate`)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from scipy import stats as sst

import schedlab
from schedlab.cli import main
from schedlab.cli.analysis import HALFWIDTH_DIGITS, format_estimate, format_value
from schedlab.platform.execution.runner import run_sweep
from schedlab.platform.planning.validate import parse_spec

REPS = 20
SHAPES = [0.25, 1.0, 4.0]
#: Relative agreement of the printed CSV numbers with a computation by hand (float summation order).
REL = 1e-12


@pytest.fixture(scope="module")
def three_shapes(tmp_path_factory) -> Path:
    """The issue's sweep: 3 shapes x 20 replications, two policies."""
    folder = tmp_path_factory.mktemp("shapes")
    spec = {
        "name": "shapes",
        "engine": "queue",
        "seed": 17,
        "policies": ["PS", "PSBS"],
        "workload": {"kind": "synthetic", "njobs": 200, "shape": SHAPES, "sigma": 0.5},
        "replications": {"n": REPS},
        "outputs": {"dir": str(folder / "results")},
        "tracking": {"enabled": False},
        "execution": {"backend": "local"},
    }
    report = run_sweep(parse_spec(spec, "shapes.toml", folder))
    assert not report.failures
    return Path(report.results_dir)


def results(*args: str):
    return CliRunner().invoke(main, ["results", *args])


def table(output: str) -> list[list[str]]:
    """The printed table's rows (header first), cells split on runs of 2+ spaces."""
    lines = [line for line in output.splitlines() if "  " in line]
    return [re.split(r"\s{2,}", line.strip()) for line in lines]


def test_by_default_one_row_per_configuration_with_n_replications(three_shapes):
    out = results(str(three_shapes))
    assert out.exit_code == 0, out.output
    header, *rows = table(out.output)
    assert header[:2] == ["policy", "shape"] and header[-1] == "n"
    assert len(rows) == 2 * len(SHAPES)  # was: one row per policy, n = 60
    assert {r[-1] for r in rows} == {str(REPS)}
    assert "pooled" not in out.output
    csv = pl.read_csv(results(str(three_shapes), "--csv").stdout.encode())
    rows_ = schedlab.load(three_shapes).collect()
    ps = rows_.filter((pl.col("policy") == "PS") & (pl.col("shape") == 4.0))["mst"]
    got = csv.filter((pl.col("policy") == "PS") & (pl.col("shape") == 4.0))
    assert got["n"].item() == REPS and got["mst_mean"].item() == pytest.approx(ps.mean(), rel=REL)


def test_by_pools_only_what_is_left_out_and_says_so(three_shapes):
    out = results(str(three_shapes), "--by", "policy")
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0].startswith("pooled over shape (0.25, 1, 4)")
    header, *rows = table(out.output)
    assert [r[0] for r in rows] == ["PS", "PSBS"] and {r[-1] for r in rows} == {str(REPS)}  # replications, not 60
    run = CliRunner().invoke(main, ["results", str(three_shapes), "--by", "policy", "--csv"])
    assert "pooled over shape" in run.stderr and "pooled" not in run.stdout
    csv = pl.read_csv(run.stdout.encode())
    # by hand: each replication's mean over the three shapes, then a t interval over the 20 replications
    per_rep = (
        schedlab.load(three_shapes)
        .filter(pl.col("policy") == "PSBS")
        .group_by("replication")
        .agg(pl.col("mst").mean())
        .collect()["mst"]
        .to_numpy()
    )
    half = sst.t.ppf(0.975, REPS - 1) * per_rep.std(ddof=1) / math.sqrt(REPS)
    got = csv.filter(pl.col("policy") == "PSBS")
    assert got["n"].item() == REPS
    assert got["mst_mean"].item() == pytest.approx(per_rep.mean(), rel=REL)
    assert got["mst_ci95"].item() == pytest.approx(half, rel=1e-9)


def test_where_policy_and_config_select_rows_like_view(three_shapes):
    out = results(str(three_shapes), "--where", "shape=1", "--policy", "PSBS")
    assert out.exit_code == 0, out.output
    header, *rows = table(out.output)
    assert header[0] == "policy" and "shape" not in header and [r[0] for r in rows] == ["PSBS"]
    config = schedlab.load(three_shapes).filter((pl.col("policy") == "PS") & (pl.col("shape") == 0.25)).collect()
    out = results(str(three_shapes), "--config", config["config_id"][0])
    assert [r[0] for r in table(out.output)[1:]] == ["PS"]
    for bad, says in (
        (["--where", "shape"], "--where 'shape': expected COL=VALUE"),
        (["--where", "shape=3"], "--where shape=3: no rows; shape takes 0.25, 1.0, 4.0"),
        (["--where", "nope=1"], "'nope' is not a column"),
        (["--policy", "SRPT"], "--policy SRPT: no rows"),
        (["--config", "0000"], "--config 0000: no such configuration"),
    ):
        run = results(str(three_shapes), *bad)
        assert run.exit_code == 2 and says in run.output and "Traceback" not in run.output, (bad, run.output)


@pytest.mark.parametrize(
    "mean,half,text",
    [
        (2623.34, 1880.0, "2600 ± 1900"),  # the "2623.34 ± 1.88e+03"
        (9.41388, 1.4, "9.4 ± 1.4"),  # the "9.41388 ± 1.4"
        (0.0123456, 0.00451, "0.0123 ± 0.0045"),
        (4.48, 0.93, "4.48 ± 0.93"),
        (26_012_345.0, 1_912_345.0, "(2.60 ± 0.19)e+07"),
        (1.5e-5, 2.5e-6, "(1.50 ± 0.25)e-05"),
        (3.0, 250.0, "0 ± 250"),
        (7.0, None, "7.00000"),
        (7.0, math.nan, "7.00000"),
        (None, None, "–"),
    ],
)
def test_format_estimate(mean, half, text):
    assert format_estimate(mean, half) == text


@pytest.mark.parametrize("exponent", range(-8, 10))
def test_mean_and_halfwidth_share_one_notation_and_one_decimal_place(exponent):
    for mean, half in (
        (1.2345 * 10.0**exponent, 0.0678 * 10.0**exponent),
        (9.87 * 10.0**exponent, 3.21 * 10.0**exponent),
    ):
        text = format_estimate(mean, half)
        scientific = text.startswith("(")
        inner = text[1 : text.index(")")] if scientific else text
        a, b = inner.split(" ± ")
        assert "e" not in a and "e" not in b, text  # never an e-notation number beside a fixed one
        assert len(a.partition(".")[2]) == len(b.partition(".")[2]), text
        scale = 10.0 ** int(text[text.index("e") + 1 :]) if scientific else 1.0
        assert float(b) * scale == pytest.approx(float(f"{half:.{HALFWIDTH_DIGITS - 1}e}"), rel=1e-9), text
        assert float(a) * scale == pytest.approx(mean, rel=0.05), text


def test_format_value_fixed_inside_the_range_scientific_outside():
    assert format_value(2623.34) == "2623.34" and format_value(9.41388) == "9.41388"
    assert format_value(1.0e26) == "1.00000e+26" and format_value(0.0) == "0.00000"


def test_a_long_pooled_list_is_shown_by_its_ends_and_length():
    """A note pooling over many values (e.g. every start of a trace's sequences) stays one readable line."""
    from schedlab.cli.analysis import LISTED_VALUES, _listed

    assert _listed([0.25, 1.0, 4.0]) == "0.25, 1, 4"
    assert _listed(list(range(LISTED_VALUES))) == ", ".join(map(str, range(LISTED_VALUES)))
    assert _listed(list(range(1977))) == "0, 1, 2, ..., 1976: 1,977 values"
