"""Figures a paper can use: `schedlab plot` / `schedlab.plot` on a real sweep
(PDF + 300-dpi PNG, CSV of the drawn points, log axes chosen by the data,
intervals that never cross 0 on a log axis, ``--ratio-to`` = the paired ratio
of `schedlab.compare`), one-line errors, the shared interval helper, the
pipelines' error bars above their floors, and the report's caveat for a
verdict from too few replications."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from PIL import Image

import schedlab
from schedlab.cli import main
from schedlab.errors import UserError
from schedlab.plotting import PNG_DPI, floor_interval
from tests.test_compare import make_results

EXACT = 1e-12
#: shape spans 2.4 decades (a log x axis); with 3 replications the MST of the
#: heavy-tailed point is so noisy that its symmetric t interval crosses 0.
WORKLOAD = {"kind": "synthetic", "njobs": 200, "shape": [0.0625, 1.0, 16.0], "sigma": [0.5, 2.0]}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    return make_results(
        tmp_path_factory.mktemp("plot"), policies=("FIFO", "PS", "PSBS"), workload=WORKLOAD, n=3, name="plotsweep"
    )


def run(*args):
    return CliRunner().invoke(main, ["plot", *map(str, args)])


def test_cli_writes_pdf_and_300_dpi_png(sweep):
    res = run(sweep, "--x", "shape", "--y", "mst", "--facet", "sigma")
    assert res.exit_code == 0, res.output
    pdf = sweep / "plots" / "mst-vs-shape-per-sigma.pdf"
    png, csv = pdf.with_suffix(".png"), pdf.with_suffix(".csv")
    assert str(pdf) in res.output and str(png) in res.output
    assert pdf.read_bytes()[:5] == b"%PDF-"
    with Image.open(png) as im:
        assert tuple(round(d) for d in im.info["dpi"]) == (PNG_DPI, PNG_DPI)
        w, h = im.size
    # the PNG is the PDF's page (both cut to the drawing) at 300 dpi: two 3.6-inch panels, far beyond 431 px
    box = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf.read_bytes())
    inches = float(box.group(1)) / 72, float(box.group(2)) / 72
    assert abs(w - inches[0] * PNG_DPI) <= 2 and abs(h - inches[1] * PNG_DPI) <= 2
    assert inches[0] > 6 and inches[1] > 2.5
    drawn = pl.read_csv(csv)
    assert drawn.height == 2 * 3 * 3 and set(drawn["n"].to_list()) == {3}
    assert pdf.read_bytes() == schedlab.plot(sweep, x="shape", y="mst", facet="sigma").vector.read_bytes()


def test_log_axes_and_intervals_on_log_scale(sweep):
    res = schedlab.plot(sweep, x="shape", y="mst", where={"sigma": 0.5})
    assert res.logx and res.logy  # shape spans 2.4 decades, MST from ~1e-3 to ~6
    t = res.table
    assert t.height == 9 and (t["value"] > 0).all()
    # the symmetric t interval would cross 0 here; the drawn one is log-transformed and stays above it
    assert ((t["value"] - t["halfwidth"]) <= 0).any()
    assert (t["low"] > 0).all() and (t["low"] <= t["value"]).all() and (t["high"] >= t["value"]).all()
    for rec in t.iter_rows(named=True):
        k = np.exp(rec["halfwidth"] / rec["value"])
        assert rec["low"] == pytest.approx(rec["value"] / k, rel=EXACT)
        assert rec["high"] == pytest.approx(rec["value"] * k, rel=EXACT)
    back = pl.read_csv(res.csv)
    assert back["low"].to_list() == pytest.approx(t["low"].to_list(), rel=1e-9)
    assert "log scale" in back["method"][0]
    # the means are those of `schedlab results` (stats.summarize)
    from schedlab.platform.statistics.stats import summarize

    ref = summarize(schedlab.load(sweep).filter(pl.col("sigma") == 0.5), ["shape", "policy"], ["mst"])
    joined = t.join(ref, left_on=["shape", "line"], right_on=["shape", "policy"])
    assert joined.height == 9 and (joined["value"] - joined["mst_mean"]).abs().max() < EXACT


def test_linear_axis_when_values_do_not_span_decades(sweep):
    res = schedlab.plot(sweep, x="sigma", y="n_jobs", where={"shape": 1.0}, out=sweep / "figs" / "n.svg")
    assert not res.logx and not res.logy
    assert res.vector.suffix == ".svg" and res.vector.read_text().lstrip().startswith("<?xml")
    assert res.png == sweep / "figs" / "n.png" and res.png.exists()
    # linear axis: the symmetric t interval (here zero width: every run has all its jobs)
    assert (res.table["low"] == res.table["value"]).all()
    off = schedlab.plot(sweep, x="shape", y="mst", where={"sigma": 0.5}, logx="off", logy="off")
    assert not off.logx and not off.logy
    t = off.table
    assert (t["low"] - (t["value"] - t["halfwidth"])).abs().max() < EXACT


def test_ratio_to_is_the_paired_ratio_of_compare(sweep):
    res = run(sweep, "--x", "shape", "--y", "mst", "--facet", "sigma", "--ratio-to", "PS")
    assert res.exit_code == 0, res.output
    drawn = pl.read_csv(sweep / "plots" / "mst-over-PS-vs-shape-per-sigma.csv")
    ref = schedlab.compare(sweep, "PS", metric="mst", by=["sigma", "shape"], ratio=True)
    assert drawn.height == ref.height == 2 * 3 * 2 and "PS" not in drawn["line"].to_list()
    joined = drawn.join(ref, left_on=["sigma", "shape", "line"], right_on=["sigma", "shape", "policy"])
    assert joined.height == ref.height
    for a, b in (("value", "ratio"), ("low", "ci_low"), ("high", "ci_high"), ("n", "n_right")):
        assert (joined[a].cast(pl.Float64) - joined[b].cast(pl.Float64)).abs().max() < 1e-9
    assert (drawn["low"] > 0).all() and (drawn["low"] <= drawn["value"]).all()
    assert (drawn["value"] <= drawn["high"]).all()
    # FIFO / PS spans more than two decades with PSBS / PS: a log y axis
    assert schedlab.plot(sweep, x="shape", y="mst", facet="sigma", ratio_to="PS").logy


@pytest.mark.parametrize(
    "args, message",
    [
        (["--x", "nope", "--y", "mst"], "--x: 'nope' is not a column"),
        (["--x", "shape", "--y", "nope"], "--y: 'nope' is not a metric column"),
        (["--x", "shape", "--y", "mst", "--by", "nope"], "--by: 'nope' is not a column"),
        (["--x", "shape", "--y", "mst", "--facet", "nope"], "--facet: 'nope' is not a column"),
        (["--x", "shape", "--y", "mst"], "sigma varies within a plotted point (0.5, 2.0)"),
        (
            ["--x", "shape", "--y", "mst", "--facet", "sigma", "--ratio-to", "SRPT"],
            "--ratio-to: 'SRPT' is not a policy",
        ),
        (["--x", "shape", "--y", "mst", "--where", "sigma=0.7"], "--where sigma=0.7: no rows; sigma takes 0.5, 2.0"),
        (["--x", "shape", "--y", "mst", "--where", "sigma"], "--where 'sigma': expected COL=VALUE"),
        (["--x", "shape", "--y", "mst", "--facet", "sigma", "--out", "fig.xyz"], "unknown figure format '.xyz'"),
        (["--x", "shape", "--y", "mst", "--by", "sigma"], "policy varies within a plotted point"),
        (["--x", "shape", "--y", "mst", "--facet", "sigma", "--by", "policy", "--x", "policy"], "must be different"),
    ],
)
def test_bad_input_is_one_line_exit_2(sweep, args, message):
    res = run(sweep, *args)
    assert res.exit_code == 2, res.output
    assert res.output.startswith("schedlab: error: ") and res.output.count("\n") == 1
    assert message in res.output and "Traceback" not in res.output


def test_missing_dir_and_logy_on_with_nonpositive(tmp_path):
    from schedlab.plotting import _decide

    res = run(tmp_path / "nothing", "--x", "shape", "--y", "mst")
    assert res.exit_code == 2 and "no such results directory" in res.output and res.output.count("\n") == 1
    with pytest.raises(UserError, match=r"--logy on: mst has values <= 0 \(e.g. 0.0\)"):
        _decide("--logy", "on", [1.0, 0.0], "mst")
    assert _decide("--logy", "auto", [0.01, 1.0], "mst") and not _decide("--logy", "auto", [0.02, 1.0], "mst")
    assert not _decide("--logy", "auto", [0.0, 0.001, 1.0], "mst")  # not all positive: linear


def test_help_imports_no_matplotlib():
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom schedlab.cli import main\n"
        "for args in (['--help'], ['plot', '--help']):\n"
        "    r = CliRunner().invoke(main, args)\n"
        "    assert r.exit_code == 0, r.output\n"
        "print([m for m in ('matplotlib', 'ray', 'mlflow', 'polars') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- intervals


def test_floor_interval_hand_worked():
    # mean 1.5 over a floor of 1, half-width 0.8: k = exp(0.8 / 0.5) = e^1.6
    lo, hi = floor_interval(1.5, 0.8, 1.0)
    assert lo == pytest.approx(1 + 0.5 / np.exp(1.6), rel=EXACT) and hi == pytest.approx(
        1 + 0.5 * np.exp(1.6), rel=EXACT
    )
    assert 1.0 < lo < 1.5 - 0.8 + 1  # the symmetric one (0.7) would cross the floor
    assert floor_interval(1.5, 0.8, None) == (0.7, 2.3)
    assert floor_interval(2.0, None, 1.0) == (2.0, 2.0) and floor_interval(2.0, float("nan"), 0.0) == (2.0, 2.0)
    assert floor_interval(1.0, 0.0, 1.0) == (1.0, 1.0)  # every replication at the floor
    # small half-widths: first-order agreement with the symmetric interval
    lo, hi = floor_interval(10.0, 0.01, 0.0)
    assert lo == pytest.approx(9.99, abs=1e-5) and hi == pytest.approx(10.01, abs=1e-5)


def _ratio_table(means, cis, n=2):
    return pl.DataFrame(
        {"shape": [0.25, 1.0, 4.0], "policy": ["PSBS"] * 3, "n": [n] * 3, "ratio_mean": means, "ratio_ci95": cis}
    )


def _bar_bottoms(ax) -> list[float]:
    from matplotlib.container import ErrorbarContainer

    bottoms = []
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            for seg in c.lines[2][0].get_segments():
                bottoms.append(min(seg[:, 1]))
    return bottoms


def test_pipeline_ratio_bars_stay_above_one(tmp_path, monkeypatch):
    """MST / optimal with 2 replications: mean 1.02 +- 0.4 would draw a bar to
    0.62; the pipelines' bars (plot_lines, line_figure) stay above 1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from schedlab.pipelines import common

    table = _ratio_table([1.02, 1.3, 5.0], [0.4, 0.9, 8.0])
    fig, ax = plt.subplots()
    common.plot_lines(ax, table, "shape", "ratio", ["PSBS"], common.RATIO_FLOOR)
    bottoms = _bar_bottoms(ax)
    plt.close(fig)
    assert len(bottoms) == 3 and min(bottoms) > 1.0
    assert min(m - c for m, c in zip([1.02, 1.3, 5.0], [0.4, 0.9, 8.0])) < 0  # the floor mattered

    seen = []
    from schedlab import plotting

    monkeypatch.setattr(plotting, "save", lambda f, p: seen.append(_bar_bottoms(f.axes[0])) or plt.close(f))
    layout = {"x": "shape", "y": "ratio", "series": ["PSBS"], "floor": common.RATIO_FLOOR, "ylabel": "MST / optimal"}
    common.line_figure(
        [(table, table, {"title": "all"})], {**layout, "logx": True, "yscale": "log"}, tmp_path / "r.png"
    )
    assert len(seen[0]) == 3 and min(seen[0]) > 1.0


def test_pipeline_figure_written_as_pdf_and_300_dpi_png(tmp_path):
    from schedlab.pipelines.declare import FigureData
    from schedlab.pipelines.registry import PIPELINES
    from schedlab.plotting import style

    table = pl.DataFrame(
        {
            "shape": [0.25, 1.0, 4.0] * 2,
            "policy": ["PSBS"] * 3 + ["PS"] * 3,
            "n": [2] * 6,
            "ratio_mean": [1.02, 1.05, 1.1, 1.5, 1.3, 1.2],
            "ratio_ci95": [0.4, 0.1, 0.2, 0.3, 0.2, 0.1],
        }
    )
    png = tmp_path / "psbs-shape-fig5.png"
    with style():
        shape = PIPELINES["psbs-shape"]
        assert shape.draw(shape.doc["figures"][0], FigureData(table, {}, {}), png) == ["PS", "PSBS"]
    assert png.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
    with Image.open(png) as im:
        assert tuple(round(d) for d in im.info["dpi"]) == (PNG_DPI, PNG_DPI)
        assert im.size[0] > 3 * 431  # was 431 x 315 px at 80 dpi; 300 / 80 = 3.75 times the pixels per inch


# ---------------------------------------------------------------- report caveat


def test_report_flags_verdicts_from_too_few_replications(sweep, tmp_path):
    from schedlab.pipelines.base import MIN_REPLICATIONS, Check, FigureReport
    from schedlab.pipelines.run import instances_per_point

    assert instances_per_point(sweep) == 3
    checks = [
        Check("A beats B", "holds", "0.9 [0.8, 0.95] < 1"),
        Check("C beats B", "fails", "1.1 [1.05, 1.2] > 1"),
        Check("D beats B", "holds", "pooled over 40 windows", n=40),
    ]
    few = FigureReport("f", "Fig. 1", tmp_path / "f.png", ["A"], "says", "table", checks, replications=2)
    md = few.markdown()
    assert "- **holds** (n = 2: too few replications to rely on) — A beats B" in md
    assert "- **fails** (n = 2: too few replications to rely on) — C beats B" in md
    assert "- **holds** — D beats B" in md and f"fewer than {MIN_REPLICATIONS}" in md
    enough = FigureReport(
        "f", "Fig. 1", tmp_path / "f.png", ["A"], "says", "table", checks[:2], replications=MIN_REPLICATIONS
    )
    text = enough.markdown()
    assert "too few" not in text and "- **holds** — A beats B" in text and "f.pdf" in text


# ---------------------------------------------------------------- figures a paper can use (issue 26)


def test_any_format_matplotlib_writes(sweep, tmp_path):
    """--out fig.png is a PNG at 300 dpi with the PDF beside it; a JPEG too; an EPS gets a PNG beside."""
    for name, vector, bitmap in (("fig.png", "fig.pdf", "fig.png"), ("fig.jpg", "fig.pdf", "fig.jpg"),
                                 ("fig.eps", "fig.eps", "fig.png")):  # fmt: skip
        res = run(sweep, "--x", "shape", "--y", "mst", "--facet", "sigma", "--out", tmp_path / name)
        assert res.exit_code == 0, res.output
        assert (tmp_path / vector).stat().st_size > 0 and (tmp_path / bitmap).stat().st_size > 0
    assert (tmp_path / "fig.pdf").read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "fig.eps").read_bytes()[:4] == b"%!PS"
    with Image.open(tmp_path / "fig.jpg") as im:
        assert im.format == "JPEG" and tuple(round(d) for d in im.info["dpi"]) == (PNG_DPI, PNG_DPI)


def test_a_policy_keeps_its_colour_and_marker_across_figures(sweep, tmp_path, monkeypatch):
    """The spec's policy order (FIFO, PS, PSBS) gives each its look: the same in a figure of all three
    and in the ratio figures that leave PS or FIFO out -- not the colour cycle's next colour."""
    from matplotlib.colors import to_hex

    import schedlab.plotting as plotting

    looks: list[dict] = []
    real = plotting.save

    def spy(fig, out):
        seen = {}
        for ax in fig.axes:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                line = handle[0] if isinstance(handle, tuple) else handle  # an errorbar container: its data line
                seen[label] = (to_hex(line.get_color()), line.get_marker())
        looks.append(seen)
        return real(fig, out)

    monkeypatch.setattr(plotting, "save", spy)
    schedlab.plot(sweep, x="shape", y="mst", where={"sigma": 0.5}, out=tmp_path / "a.pdf")
    schedlab.plot(sweep, x="shape", y="mst", where={"sigma": 0.5}, ratio_to="PS", out=tmp_path / "b.pdf")
    schedlab.plot(sweep, x="shape", y="mst", where={"sigma": 2.0}, ratio_to="FIFO", out=tmp_path / "c.pdf")
    every, to_ps, to_fifo = looks
    assert set(every) == {"FIFO", "PS", "PSBS"} and set(to_ps) == {"FIFO", "PSBS"} and set(to_fifo) == {"PS", "PSBS"}
    assert to_ps["PSBS"] == every["PSBS"] == to_fifo["PSBS"] and to_fifo["PS"] == every["PS"]
    assert to_ps["FIFO"] == every["FIFO"]
    assert len(set(every.values())) == 3  # three policies, three looks
    assert every["FIFO"] == (plotting.COLOURS[0], plotting.MARKER_CYCLE[0])  # first in the spec
    assert every["PSBS"] == (plotting.COLOURS[2], plotting.MARKER_CYCLE[2])


def test_log_x_from_one_decade_labels_and_caption(tmp_path):
    """Shape 0.125-4 spans 1.5 decades: a log x axis (it did not trigger at the old 2-decade rule);
    the axes say what the columns are (docs/columns.md), the caption what was held fixed."""
    d = make_results(
        tmp_path, policies=("PS", "LAS"), workload={"kind": "synthetic", "njobs": 100, "shape": [0.125, 1.0, 4.0]},
        n=2, name="decade",
    )  # fmt: skip
    import matplotlib.pyplot as plt

    import schedlab.plotting as plotting

    texts = {}
    real = plotting.save

    def spy(fig, out):
        ax = fig.axes[0]
        texts.update(x=ax.get_xlabel(), y=ax.get_ylabel(), notes=[t.get_text() for t in ax.texts])
        return real(fig, out)

    plotting.save = spy
    try:
        res = schedlab.plot(d, x="shape", y="mst", out=tmp_path / "f.svg")
    finally:
        plotting.save = real
        plt.close("all")
    assert res.logx and not plotting.spans_decades([0.125, 4.0], plotting.LOG_DECADES)
    assert texts["x"] == "Weibull shape of job sizes (mean 1)"
    assert texts["y"].replace("\n", " ").startswith("mean sojourn time [time units of the workload")
    (caption,) = texts["notes"]
    assert "Fixed: njobs = 100," in caption.replace("\n", " ") and "load = 0.9" in caption.replace("\n", " ")
    assert "2 replications per point" in caption.replace("\n", " ") and res.caption.startswith("Fixed: njobs = 100")
    assert " shape = " not in res.caption  # the x axis is not a fixed parameter
