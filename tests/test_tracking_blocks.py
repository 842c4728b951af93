"""What tracking must hold, made a block at a time (`ExpectedRuns`) from the
aggregated rows and a manifest read lazily (`OnDiskConfigs`), equals what
the whole-dict definitions give: every run, the grid axes, the parent's
note (cut to fit), the results table and the saved view. The references
below are those definitions written out plainly (every run made at once,
every configuration parsed), checked on a real sweep's results dir."""

from __future__ import annotations

import csv
import gc
import io
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.platform.planning.validate import parse_spec
from schedlab.platform.storage.manifest import OnDiskConfigs, manifest_text, read_lean
from schedlab.platform.tracking import data as tracking_data
from schedlab.platform.tracking import sync as tracking_sync
from schedlab.platform.tracking.data import (
    CONFIG_TAG,
    DOMINATED_TAG,
    IDENTICAL_TAG,
    MAX_NOTE,
    Expected,
    ExpectedRuns,
    aggregate_summary,
    expected_runs,
    headline_metrics,
    read_manifest,
    run_contents,
    sweep_note,
    varying_params,
)
from schedlab.platform.tracking.sync import Sync
from schedlab.platform.tracking.ui import results_csv, view_state


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    """A real sweep: two policies over 12 x 10 grid points, 2 replications (240 configurations:
    the note's table is cut), its manifest written as `manifest_text` lays it out."""
    from schedlab.platform.execution.runner import run_sweep

    out = tmp_path_factory.mktemp("blocks") / "results"
    spec = {
        "name": "blocks",
        "engine": "queue",
        "seed": 3,
        "policies": ["FIFO", "PS"],
        "workload": {
            "kind": "synthetic",
            "njobs": 8,
            "load": [round(0.1 + 0.05 * i, 2) for i in range(12)],
            "sigma": [round(0.2 + 0.1 * i, 2) for i in range(10)],
        },
        "replications": {"n": 2},
        "outputs": {"dir": str(out)},
        "tracking": {"enabled": False},
        "execution": {"backend": "local", "num_cpus": 1},
    }
    report = run_sweep(parse_spec(spec, "test"), tracking=False)
    assert report.rows_written == 480 and not report.failures
    return out


# ----------------------------------------------------------------------------- the plain definitions


def reference_varying(manifest: dict) -> list[str]:
    configs = list(manifest["configs"].values())
    keys = list(dict.fromkeys(k for c in configs for k in (c.get("params") or {})))
    return [k for k in keys if len({json.dumps((c.get("params") or {}).get(k), sort_keys=True) for c in configs}) > 1]


def reference_runs(results_dir: Path, manifest: dict) -> dict[str, Expected]:
    """Every run at once: each aggregated row with its parsed manifest entry."""
    frame, metrics = aggregate_summary(results_dir, manifest.get("param_columns") or [])
    varying = reference_varying(manifest)
    assert frame is not None
    return {
        row["config_id"]: run_contents(manifest, row["config_id"], row, metrics, varying) for row in frame.to_dicts()
    }


def reference_note_rows(expected: dict[str, Expected], metrics: list[str]) -> list[str]:
    rows = []
    for exp in sorted(expected.values(), key=lambda e: (e.run_name, e.config_id)):
        cells = [exp.run_name]
        for m in metrics:
            v, ci = exp.values.get(m), exp.values.get(f"{m}_ci95")
            if m in exp.tags.get(DOMINATED_TAG, "").split(","):
                cells.append("dominated (flagged: not a result)")
            elif v is None:
                cells.append("")
            elif m in exp.tags.get(IDENTICAL_TAG, "").split(","):
                cells.append(f"{v:.4g} (identical replications: one sample)")
            else:
                cells.append(f"{v:.4g}" + (f" ± {ci:.2g}" if ci is not None else ""))
        cells.append(str(exp.n))
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def reference_csv(manifest: dict, expected: dict[str, Expected], names: list[str]) -> str:
    """Every value any run holds, each metric's mean then its CI half-width, in the order of the
    metric columns (``names``), then n: an order that does not depend on the runs' order."""
    axes = [a for a in reference_varying(manifest) if a != "policy"]
    held = {k for e in expected.values() for k in e.values}
    metrics = [k for m in names for k in (m, f"{m}_ci95") if k in held] + ["n"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "config_id", "policy", *axes, *metrics])
    for exp in sorted(expected.values(), key=lambda e: (e.run_name, e.config_id)):
        writer.writerow(
            [
                exp.run_name,
                exp.tags[CONFIG_TAG],
                exp.params.get("policy", ""),
                *[exp.params.get(a, "") for a in axes],
                *[repr(exp.values[m]) if m in exp.values else "" for m in metrics],
            ]
        )
    return out.getvalue()


# ----------------------------------------------------------------------------- the tests


def test_lean_manifest_is_read_lazily_and_equals_the_parsed_one(sweep_dir):
    whole = read_manifest(sweep_dir, lean=False)
    lean = read_manifest(sweep_dir)
    configs = lean["configs"]
    assert isinstance(configs, OnDiskConfigs) and isinstance(whole["configs"], dict)
    assert len(configs) == 240 and dict(configs.items()) == whole["configs"]
    assert list(configs.values()) == list(whole["configs"].values())
    some = list(whole["configs"])[::7] + ["0000000000000000", "not-an-id"]
    assert configs.entries(some) == {cid: whole["configs"][cid] for cid in some if cid in whole["configs"]}
    assert not configs.stale()
    (sweep_dir / "manifest.json").touch()  # written again (its time moved): its lines may have moved
    assert configs.stale() and not read_manifest(sweep_dir)["configs"].stale()


def test_runs_made_in_blocks_equal_every_run_made_at_once(sweep_dir, monkeypatch):
    """`ExpectedRuns` (lean manifest, blocks of 7 rows) equals the plain dict: every run, in
    every way it is read -- walked, looked up, asked for a block, missing ids left out."""
    monkeypatch.setattr(tracking_data, "ROW_SLICE", 7)
    manifest = read_manifest(sweep_dir)
    runs, unknown = expected_runs(sweep_dir, manifest)
    want = reference_runs(sweep_dir, read_manifest(sweep_dir, lean=False))
    assert not unknown and isinstance(runs, ExpectedRuns)
    assert len(runs) == len(want) == 240
    assert list(runs) == sorted(want)  # config-id order
    assert dict(runs.items()) == want and runs == want
    assert sum(len(b) for b in runs.blocks(7)) == 240
    ids = sorted(want)[::5]
    assert runs.some([*ids, "ffffffffffffffff", "nope"]) == {cid: want[cid] for cid in ids}
    assert runs[ids[0]] == want[ids[0]] and ids[0] in runs and "nope" not in runs
    with pytest.raises(KeyError):
        runs["ffffffffffffffff"]
    # restricted to some configurations, as the live tracker asks
    part, _ = expected_runs(sweep_dir, manifest, ids[:3])
    assert dict(part.items()) == {cid: want[cid] for cid in ids[:3]}


def test_rows_of_configurations_the_manifest_lacks_are_named(sweep_dir, tmp_path):
    """A configuration in the rows but not in the manifest (lean or parsed) is reported, not made."""
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(sweep_dir, d)
    whole = json.loads((d / "manifest.json").read_text())
    gone = sorted(whole["configs"])[:2]
    for cid in gone:
        del whole["configs"][cid]
    (d / "manifest.json").write_bytes(b"".join(manifest_text(whole)))
    assert isinstance(read_lean(d / "manifest.json")["configs"], OnDiskConfigs)
    for lean in (True, False):
        runs, unknown = expected_runs(d, read_manifest(d, lean=lean))
        assert sorted(unknown) == gone and len(runs) == 238 and not set(gone) & set(runs)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["a", "b", "c", "d"]),
            st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=False), st.text(max_size=2)),
            max_size=4,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_grid_axes_streamed_equal_the_definition(params):
    """`varying_params` (one streamed pass) equals every configuration's params compared as JSON
    text, a missing parameter as null -- on a parsed and on a lean manifest alike."""
    manifest = {"configs": {f"{i:016x}": {"params": p} for i, p in enumerate(params)}}
    assert varying_params(manifest) == reference_varying(manifest)


def test_grid_axes_of_a_lean_manifest(sweep_dir):
    assert varying_params(read_manifest(sweep_dir)) == reference_varying(read_manifest(sweep_dir, lean=False))
    assert varying_params(read_manifest(sweep_dir)) == ["load", "sigma"]


def test_note_table_and_view_equal_the_definitions(sweep_dir):
    """The parent's note shows the longest run of rows that fits (in run-name order), says how
    many it shows of how many; the results table is every run in that order; the view equals
    the one made from the plain dict."""
    manifest = read_manifest(sweep_dir)
    runs, _ = expected_runs(sweep_dir, manifest)
    plain_manifest = read_manifest(sweep_dir, lean=False)
    want = reference_runs(sweep_dir, plain_manifest)

    note = sweep_note(manifest, runs)
    assert note == sweep_note(plain_manifest, want) and len(note) <= MAX_NOTE
    assert headline_metrics(manifest, runs) == headline_metrics(plain_manifest, want) == ["mst", "slowdown_mean"]
    rows = reference_note_rows(want, ["mst", "slowdown_mean"])
    shown = [line for line in note.splitlines() if line.startswith("| ") and not line.startswith("| run |")]
    assert 0 < len(shown) < len(rows) and shown == rows[: len(shown)]
    assert f"(first {len(shown)} of 240 configurations; all of them: `schedlab results`)" in note
    assert len(note) + len(rows[len(shown)]) + 1 > MAX_NOTE - 120  # the next row would not have fitted

    out = io.StringIO()
    results_csv(manifest, runs, out)
    names = aggregate_summary(sweep_dir, plain_manifest["param_columns"])[1]
    assert out.getvalue() == reference_csv(plain_manifest, want, names)
    assert view_state(manifest, runs) == view_state(plain_manifest, want)


def test_a_small_sweep_note_is_whole(sweep_dir):
    manifest = read_manifest(sweep_dir)
    ids = sorted(read_manifest(sweep_dir, lean=False)["configs"])[:4]
    runs, _ = expected_runs(sweep_dir, manifest, ids)
    note = sweep_note(manifest, runs)
    assert "(first" not in note and "**configurations with rows:** 4." in note
    assert sum(line.startswith("| FIFO") or line.startswith("| PS") for line in note.splitlines()) == 4


def test_tracking_holds_a_block_of_runs_not_the_sweep(sweep_dir, tmp_path, monkeypatch):
    """A whole `schedlab track` into SQLite, blocks made small: the runs are right (the
    verify passes) and at no commit are more `Expected` alive than a few blocks' worth --
    not one per configuration, as when they were all made first."""
    monkeypatch.setattr(tracking_data, "ROW_SLICE", 10)
    monkeypatch.setattr(tracking_sync, "BULK_RUNS", 16)
    from schedlab.platform.tracking import mirror as tracking_mirror

    alive: list[int] = []
    commit = tracking_mirror.Mirror.commit_new

    def counting(self, batch):
        gc.collect()
        # type(), not isinstance(): isinstance reads __class__, which a dead weak proxy left by
        # another test (or a lazily deprecated module attribute) answers with an error or a warning
        alive.append(sum(type(o) is Expected for o in gc.get_objects()))
        return commit(self, batch)

    monkeypatch.setattr(tracking_mirror.Mirror, "commit_new", counting)
    report = Sync(f"sqlite:///{tmp_path / 'mlflow.db'}", None, sweep_dir).finalize()
    assert not report.failed and report.logged == 240, report.error
    assert len(alive) == math.ceil(240 / 16)
    # at most: the batch committing, the one being built, the next being gathered, the last one's
    # result not yet let go, and one block of rows made
    assert max(alive) <= 4 * 16 + 10, alive


def test_a_manifest_written_again_is_read_again(sweep_dir, tmp_path):
    """The live tracker's manifest grows (a search's trials, a grown resume): the lines of the
    lean one it holds moved; making runs then reads the new manifest, not the old offsets."""
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(sweep_dir, d)
    manifest = read_manifest(d)
    runs, _ = expected_runs(d, manifest)
    whole = json.loads((d / "manifest.json").read_text())
    whole["description"] = "x" * 5000  # every configuration's line moves
    (d / "manifest.json").write_bytes(b"".join(manifest_text(whole)))
    assert manifest["configs"].stale()
    want = reference_runs(d, read_manifest(d, lean=False))
    assert dict(runs.items()) == want
    sync = Sync(f"sqlite:///{tmp_path / 'mlflow.db'}", None, d)
    sync.manifest = manifest  # as read before the write
    assert sync.finalize().logged == 240


def test_the_verify_gathers_what_describing_needs(sweep_dir, tmp_path):
    """The final verify makes every run to compare it: what the note, view and table need of
    all runs is gathered there, and equals a pass of its own (run-name order included)."""
    from schedlab.platform.tracking.data import _overview_pass

    sync = Sync(f"sqlite:///{tmp_path / 'mlflow.db'}", None, sweep_dir)
    assert sync.finalize().logged == 240
    runs, _ = expected_runs(sweep_dir, read_manifest(sweep_dir))
    assert runs._overview is None
    sync.verify(runs)
    gathered, own = runs._overview, _overview_pass(runs)
    assert gathered is not None and gathered.order.to_list() == own.order.to_list()
    assert (gathered.value_keys, gathered.dominated, gathered.marks) == (own.value_keys, own.dominated, own.marks)
    assert (
        (gathered.policies, gathered.param_keys) == (own.policies, own.param_keys) == ({"FIFO", "PS"}, own.param_keys)
    )
    assert own.order.to_list() == sorted(runs, key=lambda cid: (runs[cid].run_name, cid))


def test_the_results_table_from_the_verify_equals_the_one_made_again(sweep_dir, tmp_path):
    """The table's rows written by the verify (`TableRows`, read back in run-name order with
    the keys some run holds) equal the table made from the runs again, and the definition."""
    from schedlab.platform.tracking.ui import TableRows

    sync = Sync(f"sqlite:///{tmp_path / 'mlflow.db'}", None, sweep_dir)
    assert sync.finalize().logged == 240
    manifest = read_manifest(sweep_dir)
    spilled, _ = expected_runs(sweep_dir, manifest)
    sync.verify(spilled)
    assert isinstance(spilled.overview().rows, TableRows)
    made_again, _ = expected_runs(sweep_dir, manifest)
    assert made_again.overview().rows is None
    a, b = io.StringIO(), io.StringIO()
    results_csv(manifest, spilled, a)
    results_csv(manifest, made_again, b)
    plain = read_manifest(sweep_dir, lean=False)
    names = aggregate_summary(sweep_dir, plain["param_columns"])[1]
    assert a.getvalue() == b.getvalue() == reference_csv(plain, reference_runs(sweep_dir, plain), names)


def test_table_rows_read_back_with_all_keys_or_some():
    """Rows with awkward text (commas, quotes, a newline) read back whole, or with some value columns."""
    from schedlab.platform.tracking.ui import TableRows

    runs = [
        Expected("a", {"policy": "P", "x": 'say "hi", then\nbye'}, {CONFIG_TAG: "a"}, {"m": 1.5, "n": 2.0}, 2, "P x=1"),
        Expected("b", {"policy": "Q", "x": "2"}, {CONFIG_TAG: "b"}, {"m": 0.1, "m_ci95": 0.2, "n": 3.0}, 3, "Q x=2"),
    ]
    table = TableRows(["x"], ["m", "m_ci95", "n"])
    places = [table.add(exp) for exp in runs]
    whole, some = io.StringIO(), io.StringIO()
    table.write(whole, reversed(places), ["m", "m_ci95", "n"])
    table.write(some, places, ["n", "m"])
    table.close()
    assert list(csv.reader(io.StringIO(whole.getvalue()))) == [
        ["Q x=2", "b", "Q", "2", "0.1", "0.2", "3.0"],
        ["P x=1", "a", "P", 'say "hi", then\nbye', "1.5", "", "2.0"],
    ]
    assert list(csv.reader(io.StringIO(some.getvalue()))) == [
        ["P x=1", "a", "P", 'say "hi", then\nbye', "2.0", "1.5"],
        ["Q x=2", "b", "Q", "2", "3.0", "0.1"],
    ]
