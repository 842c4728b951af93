"""Reproduction pages (`schedlab pipelines pages`): a real smoke-scale run of a
pipeline, twice (the second resumes), read back into a page and the index."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from schedlab.cli import main
from schedlab.pipelines import pages
from schedlab.pipelines.runlog import read_runs
from tests.pipeline_outputs import run_smoke

NAME = "psbs-shape"


@pytest.fixture(scope="module")
def twice(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipes")
    first = run_smoke([NAME], root)[NAME]
    second = run_smoke([NAME], root)[NAME]
    return root, first, second


def test_run_log_records_each_invocation(twice):
    root, first, second = twice
    runs = read_runs(root / NAME)
    assert len(runs) == 2
    assert runs[0]["rows_new"] == sum(r.rows_written for r in first.sweeps) > 0
    assert runs[1]["rows_new"] == 0 and runs[1]["rows_resumed"] == runs[0]["rows_new"]
    for r in runs:
        assert r["scale"] == "smoke" and r["failures"] == 0 and r["wall_seconds"] > 0
        assert r["machine"]["cores"] >= 1 and r["machine"]["python"]
        assert r["commit"] is None or len(r["commit"].split("+")[0]) == 40


def test_page_and_index(twice, tmp_path):
    root, first, _ = twice
    out = CliRunner().invoke(main, ["pipelines", "pages", NAME, "--results", str(root), "--to", str(tmp_path)])
    assert out.exit_code == 0, out.output
    page = (tmp_path / f"{NAME}.md").read_text()
    report = first.report_md.read_text()
    # every verdict of the report, counted by label, in the page's summary and its summary file
    labels = pages.verdict_counts(report)
    assert labels and sum(labels.values()) == sum(len(f.checks) for f in first.figures)
    summary = json.loads((tmp_path / NAME / pages.SUMMARY).read_text())
    assert summary["verdicts"] == dict(labels) and summary["scale"] == "smoke"
    assert summary["rows"] == sum(r.rows_written for r in first.sweeps)
    assert f"schedlab pipelines run {NAME}" in page or "| command |" in page
    assert "| invocations | 2," in page
    assert "(from the repository root; resumes: rows on disk are kept)" in page  # run twice, resuming
    for f in first.figures:  # figures copied beside the page and linked there
        assert (tmp_path / NAME / f.png.name).read_bytes() == f.png.read_bytes()
        assert f"]({NAME}/{f.png.name})" in page
    index = (tmp_path / pages.INDEX).read_text()
    assert f"| [{NAME}]({NAME}.md) |" in index
    assert "| psbs-sigma |" in index and "not run" in index  # a pipeline without a page


def test_failing_verdicts_need_a_note(twice, tmp_path):
    root, _, _ = twice
    page = pages.read_page(NAME, root / NAME)
    page.verdicts = Counter({"holds": 2, "does not hold": 1})
    assert "**Not explained yet:** 1 verdict(s)" in pages.render(page, None)
    explained = pages.render(page, "The claim's threshold is ours: measured case ...")
    assert "## Why verdicts do not hold" in explained and "measured case" in explained
    assert "Not explained yet" not in explained
    page.verdicts = Counter({"holds": 3})
    assert "Why verdicts do not hold" not in pages.render(page, None)
    page.verdicts = Counter({"holds": 2, "inconclusive": 1})  # its interval is its reason: no note asked
    text = pages.render(page, None)
    assert "1 verdict(s) are inconclusive" in text and "Why verdicts do not hold" not in text
    assert "## Notes on the verdicts" in pages.render(page, "what the interval says, measured")


def test_unknown_pipeline_and_missing_report(tmp_path):
    out = CliRunner().invoke(main, ["pipelines", "pages", "nope", "--results", str(tmp_path)])
    assert out.exit_code == 2 and "unknown pipeline" in out.output
    out = CliRunner().invoke(main, ["pipelines", "pages", "--results", str(tmp_path)])
    assert out.exit_code == 2 and "no pipeline output dir" in out.output


def test_rows_computed_before_the_log_are_said(twice):
    root, _, _ = twice
    page = pages.read_page(NAME, root / NAME)
    text = pages.render(page, None)
    assert "computed before the first recorded invocation" not in text  # the log covers every row
    page.runs = page.runs[1:]  # as if the first invocation had not been recorded
    assert f"{page.rows:,} of the rows were computed before the first recorded invocation" in pages.render(page, None)
    page.runs = []
    text = pages.render(page, None)
    assert "not recorded: the run predates run logs" in text and "| simulation |" in text


def test_short_simulation_times_are_not_rounded_to_zero(twice):
    """pg-fig3's six compiled simulations take 0.07 s together: the page says so, not "0 s"."""
    assert [pages._duration(s) for s in (0.0, 0.0701, 3.46, 42.4, 600.0, 9000.0)] == [
        "0 s",
        "0.07 s",
        "3.5 s",
        "42 s",
        "10.0 min",
        "2.50 h",
    ]
    root, _, _ = twice
    page = pages.read_page(NAME, root / NAME)
    page.sim_seconds = 0.0701
    page.runs[-1]["command"] = f"schedlab pipelines run {NAME} --scale paper --fresh --out x"
    text = pages.render(page, None)
    assert "`--fresh`: its sweeps' earlier rows were discarded first" in text and "resumes:" not in text
    assert "| simulation | 0.07 s (`sim_seconds`" in text and pages.ENGINE_TIME in text
    page.runs = []  # a run from before run logs says it too
    assert "| simulation | 0.07 s (`sim_seconds`" in pages.render(page, None)


def test_a_subset_or_a_run_in_progress_is_said_first_and_other_sweeps_are_not_counted(twice, tmp_path):
    """A DFRS report's scope (a seeded subset, a run in progress) heads the page; rows of sweeps the
    report does not show (a smaller subset run first in the same dir, to measure its cost) and the
    invocations that ran them are not the page's cost, and the page says so."""
    import shutil

    root, first, _ = twice
    out = tmp_path / NAME
    shutil.copytree(root / NAME, out)
    (sweep,) = [d.name for d in out.iterdir() if (d / "manifest.json").exists()]
    assert pages.report_sweeps(first.report_md.read_text()) == [sweep]
    shutil.copytree(out / sweep, out / f"{sweep}-sub0.02")  # another fraction's sweep beside it
    probe = {**read_runs(out)[0], "overrides": {"subset": 0.02}, "wall_seconds": 61.0}
    with open(out / "runs.jsonl", "a") as fh:
        fh.write(json.dumps(probe) + "\n")
    page = pages.read_page(NAME, out)
    assert page.rows == sum(r.rows_written for r in first.sweeps) and len(page.runs) == 2
    assert page.other_runs == [probe]
    text = pages.render(page, None)
    assert "1 other invocation(s) in the same output dir ran other sweeps (`--subset 0.02`, 61 s wall)" in text
    scope = "**Run in progress** (not every instance ...): instances scaled synthetic 36 of the paper's 900."
    cost = "Simulation cost: 5.2 h measured ...; **extrapolated ..., an extrapolation, not a measurement**: ..."
    page.report = page.report.replace("### Measured\n", f"### Measured\n\n{scope}\n\n{cost}\n", 1)
    lines = pages.render(page, None).splitlines()
    assert lines[2].startswith("Verdicts:") and lines[4:7] == [scope, "", cost]
    assert lines[8] == "| how it was made | |"
    assert page.scale == "smoke, run in progress"  # what the index shows
    page.runs[0]["overrides"] = {"subset": 0.1}
    assert page.scale == "smoke, subset 0.1, run in progress"


def test_which_invocations_ran_a_reports_sweeps():
    full, sub = ["dfrs-fig1-scaled-dfrs-paper"], ["dfrs-fig1-scaled-dfrs-paper-sub0.1"]
    assert pages.ran_sweeps({"overrides": {}}, full) and not pages.ran_sweeps({"overrides": {}}, sub)
    assert pages.ran_sweeps({"overrides": {"subset": 0.1}}, sub)
    assert not pages.ran_sweeps({"overrides": {"subset": 0.02}}, sub)
    assert not pages.ran_sweeps({"overrides": {"subset": 0.1}}, full)
    assert pages.ran_sweeps({"overrides": {"subset": 1}}, full)  # a fraction of 1 is the full run
    assert pages.ran_sweeps({}, [])  # a report without a sweeps line: every invocation is its own
    md = "Scale `paper`; sweeps: `a-sub0.1` (2 configurations, 0 rows new, 4 resumed), `b-sub0.1` (1 rows on disk)."
    assert pages.report_sweeps(md) == ["a-sub0.1", "b-sub0.1"]


def test_a_page_names_a_command_a_reader_can_rerun():
    """An absolute ``--out`` (a folder on the machine that ran it) is dropped, so the command runs from the
    repository root into the default results/pipelines/NAME; a relative one is kept. So are ``--data``
    and ``--agent``."""
    assert pages.rerunnable("schedlab pipelines run a --scale paper --out /srv/x/a") == (
        "schedlab pipelines run a --scale paper"
    )
    assert pages.rerunnable("schedlab pipelines run a --out=/srv/x/a --fresh") == "schedlab pipelines run a --fresh"
    assert pages.rerunnable("schedlab pipelines run a --out runs/a") == "schedlab pipelines run a --out runs/a"
    # the traces' and the agent's folders likewise: the reader's are the defaults, or the relative ones named
    assert pages.rerunnable("schedlab pipelines run a --data /srv/traces --agent=/srv/rl --decide") == (
        "schedlab pipelines run a --decide"
    )
    assert pages.rerunnable("schedlab pipelines run a --data=traces") == "schedlab pipelines run a --data=traces"


def test_checked_in_pages_name_no_machine_paths():
    root = Path(__file__).resolve().parents[1]
    machine = re.compile(r"(?<![\w.])/(?:work|root|home)/")  # where a machine keeps its checkouts
    found = [
        f"{f.relative_to(root)}:{i}"
        for f in sorted((root / "docs").rglob("*.md"))
        for i, line in enumerate(f.read_text().splitlines(), 1)
        if machine.search(line)
    ]
    assert not found, found
