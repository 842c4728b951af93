"""Google clusterdata-2011 task_events reader: the real 14-shard prefix (parsed
once per module), hand-worked crafted event files, bad inputs, garbage lines
(hypothesis) and the Parquet cache."""

from __future__ import annotations

import gzip
import re
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.errors import UserError
from schedlab.workloads.traces import google

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "google-clusterdata-2011"
needs_data = pytest.mark.skipif(
    not (DATA / "task_events").is_dir(), reason=f"Google clusterdata-2011 shards not found in {DATA}"
)

S = 1_000_000  # microseconds per second
END = (1 << 63) - 1
SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(9)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path / "cache"))


def event(ts, job, index, ev, cpu="0.1", mem="0.2"):
    """One task_events line (13 fields); ts in microseconds."""
    return f"{ts},,{job},{index},12345,{ev},user=,0,2,{cpu},{mem},0.0001,0"


def write(path: Path, lines: list[str], gz: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


# ---------------------------------------------------------------- real shards


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """The real prefix, parsed once (then read back from the Parquet cache)."""
    if not (DATA / "task_events").is_dir():
        pytest.skip(f"Google clusterdata-2011 shards not found in {DATA}")
    cache = tmp_path_factory.mktemp("google-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCHEDLAB_CACHE_DIR", str(cache))
        first = google.read(DATA, single_resource=True)
        mp.setattr(google, "open_lines", _no_parsing)
        second = google.read(DATA / "task_events", single_resource=True)
    return first, second, cache


def _no_parsing(*args, **kwargs):
    raise AssertionError("the cached read parsed the shards again")


@needs_data
def test_real_event_totals_match_provenance(real):
    tr = real[0]
    assert tr.counts["lines"] == tr.counts["events"] == 2_609_335
    assert tr.counts["skipped_bad_lines"] == 0
    assert tr.meta["event_counts"] == {
        "SUBMIT": 936_182,
        "SCHEDULE": 890_517,
        "EVICT": 219_839,
        "FAIL": 18_604,
        "FINISH": 330_742,
        "KILL": 213_308,
        "LOST": 0,
        "UPDATE_PENDING": 3,
        "UPDATE_RUNNING": 140,
    }
    assert tr.counts["tasks"] == 614_019  # distinct (job, task index), PROVENANCE.md
    assert len(tr.meta["shards"]) == 14
    assert tr.meta["first_event_s"] == 0 and tr.meta["last_event_s"] == pytest.approx(70_756.165077)


@needs_data
def test_real_filter_counts(real):
    c = real[0].counts
    # Cross-checked with an independent vectorised polars group-by over all
    # 2.6M events: tasks whose first event is a SUBMIT after t=0, that have a
    # FINISH and no EVICT/FAIL/KILL/LOST event.
    assert c["jobs"] == 292_358
    assert c["dropped_started_before_trace"] == 144_339  # 614,019 - 469,680 tasks first seen after t=0
    assert (c["dropped_evicted"], c["dropped_failed"], c["dropped_killed"], c["dropped_lost"]) == (
        28_975,
        9_029,
        111_230,
        0,
    )
    assert c["dropped_unfinished"] == 28_088
    assert c["dropped_finish_without_schedule"] == 0 and c["dropped_missing_request"] == 0
    assert c["reruns_after_finish"] == 2_279
    assert c["events_after_trace_end"] == 0
    drops = sum(v for k, v in c.items() if k.startswith("dropped_"))
    assert c["jobs"] + drops == c["tasks"]


@needs_data
def test_real_job_table(real):
    df = real[0].jobs
    assert df.columns == ["job_id", "submit", "size", "runtime", "cpu", "mem", "demand", "google_job_id", "task_index"]
    assert all(df.schema[c] == pl.Float64 for c in ("submit", "size", "runtime", "cpu", "mem", "demand"))
    assert all(df.schema[c] == pl.Int64 for c in ("job_id", "google_job_id", "task_index"))
    assert df.height == 292_358
    assert df["job_id"].to_list() == list(range(df.height))
    assert df.select("google_job_id", "task_index").is_unique().all()
    assert df["submit"].is_sorted()
    assert df["submit"].min() >= 600 and df["submit"].max() <= 70_757  # real activity starts at 600 s
    assert (df["size"] == df["runtime"]).all()
    assert df["runtime"].min() > 0
    assert df["runtime"].max() <= 70_757 - 600
    assert df["runtime"].median() == pytest.approx(454.74, abs=0.01)
    assert df["cpu"].min() >= 0 and df["cpu"].max() <= 0.5  # PROVENANCE: CPU 0-0.5, memory 0-0.9551
    assert df["mem"].min() >= 0 and df["mem"].max() <= 0.9551
    assert df.select((pl.col("demand") == pl.max_horizontal("cpu", "mem")).all()).item()


@needs_data
def test_real_cache_second_read_is_equal_and_from_parquet(real):
    first, second, cache = real
    assert len(list(cache.glob("google-*.parquet"))) == 1
    assert second.jobs.equals(first.jobs)
    assert second.jobs.schema == first.jobs.schema
    assert second.counts == first.counts
    assert second.meta == {**first.meta, "source": str(DATA / "task_events")}


# ---------------------------------------------------------------- crafted, hand-worked


def crafted_events() -> list[str]:
    """Tasks (job, index) and what the reader must do with them."""
    ev = [
        (0, 1, 0, SUBMIT),
        (0, 1, 0, SCHEDULE),
        (700, 1, 0, FINISH),  # present at t=0: dropped
        (600, 2, 0, SUBMIT),
        (610, 2, 0, SCHEDULE),
        (650, 2, 0, FINISH),  # kept: 600, runtime 40
        (601, 2, 1, SUBMIT),
        (611, 2, 1, SCHEDULE),
        (620, 2, 1, EVICT),  # evicted, then finished:
        (621, 2, 1, SUBMIT),
        (630, 2, 1, SCHEDULE),
        (700, 2, 1, FINISH),  # dropped
        (602, 3, 0, SUBMIT),
        (612, 3, 0, SCHEDULE),
        (613, 3, 0, FAIL),  # failed
        (603, 3, 1, SUBMIT),
        (604, 3, 1, KILL),  # killed while pending
        (603.5, 3, 2, SUBMIT),
        (604, 3, 2, SCHEDULE),
        (606, 3, 2, LOST),  # lost
        (609, 5, 0, SUBMIT),
        (610, 5, 0, SCHEDULE),  # never finishes
        (609.5, 5, 1, SUBMIT),  # still pending
        (611, 6, 0, SUBMIT),
        (612, 6, 0, SCHEDULE),
        (613, 6, 0, FINISH),  # kept (first run):
        (640, 6, 0, SUBMIT),
        (641, 6, 0, SCHEDULE),
        (650, 6, 0, FINISH),  # 611, runtime 1, a rerun
        (611.5, 6, 1, SUBMIT),
        (612, 6, 1, SCHEDULE),
        (615, 6, 1, FINISH),  # finished, resubmitted,
        (616, 6, 1, SUBMIT),
        (617, 6, 1, SCHEDULE),
        (618, 6, 1, KILL),  # killed: dropped
        (623, 7, 1, SUBMIT),
        (624, 7, 1, FINISH),  # finish without schedule
        (625, 8, 0, SUBMIT),
        (626, 8, 0, SCHEDULE),
        (630, 8, 0, SCHEDULE),  # kept: 625, runtime 10
        (640, 8, 0, FINISH),  # (from the last SCHEDULE)
        (631, 9, 1, SUBMIT),
        (631, 9, 0, SUBMIT),  # tie at 631: (9,1) first
        (632, 9, 0, SCHEDULE),
        (632, 9, 1, SCHEDULE),
        (633, 9, 0, FINISH),
        (634, 9, 1, FINISH),  # kept both, runtimes 1, 2
    ]
    lines = [event(round(t * S), j, i, e) for t, j, i, e in ev]
    # Task (4,0): requests updated while pending, SCHEDULE/FINISH rows without requests.
    lines += [
        event(605 * S, 4, 0, SUBMIT, "0.1", "0.1"),
        event(605_500_000, 4, 0, UPDATE_PENDING, "0.3", "0.05"),
        event(606 * S, 4, 0, SCHEDULE, "", ""),
        event(608 * S, 4, 0, FINISH, "", ""),
    ]
    # Task (7,0): no request ever given.
    lines += [
        event(620 * S, 7, 0, SUBMIT, "", ""),
        event(621 * S, 7, 0, SCHEDULE, "", ""),
        event(622 * S, 7, 0, FINISH, "", ""),
    ]
    lines.sort(key=lambda line: int(line.split(",")[0]))  # stable: ties keep the order above
    lines.append(event(END, 5, 0, FINISH))  # after the end of the trace: ignored
    return lines


@pytest.fixture
def dataset(tmp_path):
    """The crafted events as a dataset folder: two shards plus a job_events folder."""
    lines = crafted_events()
    half = len(lines) // 2
    write(tmp_path / "ds" / "task_events" / "part-00000-of-00002.csv.gz", lines[:half])
    write(tmp_path / "ds" / "task_events" / "part-00001-of-00002.csv.gz", lines[half:])
    write(tmp_path / "ds" / "job_events" / "part-00000-of-00002.csv.gz", ["0,,1,0,u,0,n,l"])
    return tmp_path / "ds"


def test_crafted_hand_worked(dataset):
    tr = google.read(dataset, single_resource=True)
    df = tr.jobs
    assert df.select("google_job_id", "task_index").rows() == [(2, 0), (4, 0), (6, 0), (8, 0), (9, 1), (9, 0)]
    assert df["job_id"].to_list() == [0, 1, 2, 3, 4, 5]
    assert df["submit"].to_list() == [600, 605, 611, 625, 631, 631]
    assert df["runtime"].to_list() == [40, 2, 1, 10, 2, 1]
    assert df["size"].to_list() == df["runtime"].to_list()
    assert df["cpu"].to_list() == [0.1, 0.3, 0.1, 0.1, 0.1, 0.1]
    assert df["mem"].to_list() == [0.2, 0.05, 0.2, 0.2, 0.2, 0.2]
    assert df["demand"].to_list() == [0.2, 0.3, 0.2, 0.2, 0.2, 0.2]
    assert tr.counts == {
        "lines": 55,
        "events": 55,
        "skipped_bad_lines": 0,
        "tasks": 16,
        "jobs": 6,
        "dropped_started_before_trace": 1,
        "dropped_evicted": 1,
        "dropped_failed": 1,
        "dropped_killed": 2,
        "dropped_lost": 1,
        "dropped_finish_without_schedule": 1,
        "dropped_missing_request": 1,
        "dropped_unfinished": 2,
        "events_after_trace_end": 1,
        "reruns_after_finish": 1,
    }
    assert tr.meta["reader"] == "google" and tr.meta["source"] == str(dataset)
    assert tr.meta["shards"] == ["part-00000-of-00002.csv.gz", "part-00001-of-00002.csv.gz"]
    assert tr.meta["options"] == {"single_resource": True, "on_bad_line": "error"}
    assert tr.meta["event_counts"]["FINISH"] == 13


def test_crafted_minimal_evicted_vs_normal(tmp_path):
    p = write(
        tmp_path / "task_events" / "part-00000-of-00001.csv",
        [
            event(600 * S, 1, 0, SUBMIT),
            event(600 * S, 1, 1, SUBMIT),
            event(601 * S, 1, 0, SCHEDULE),
            event(601 * S, 1, 1, SCHEDULE),
            event(602 * S, 1, 0, EVICT),
            event(603 * S, 1, 0, SUBMIT),
            event(604 * S, 1, 0, SCHEDULE),
            event(625_500_000, 1, 1, FINISH),
            event(630 * S, 1, 0, FINISH),
        ],
        gz=False,
    )
    tr = google.read(p)  # a single shard file
    assert tr.jobs.rows() == [(0, 600.0, 24.5, 24.5, 0.1, 0.2, 1, 1)]
    assert "demand" not in tr.jobs.columns
    assert tr.counts["dropped_evicted"] == 1 and tr.counts["jobs"] == 1


def test_folder_forms_agree_and_job_events_folder_refused(dataset):
    a = google.read(dataset, use_cache=False)
    b = google.read(dataset / "task_events", use_cache=False)
    assert a.jobs.equals(b.jobs) and a.counts == b.counts
    with pytest.raises(UserError, match=re.escape(f"{dataset / 'job_events'}: this reader needs task_events")):
        google.read(dataset / "job_events")


def test_crafted_cache(dataset, monkeypatch, tmp_path):
    first = google.read(dataset)
    assert len(list((tmp_path / "cache").glob("google-*.parquet"))) == 1
    monkeypatch.setattr(google, "open_lines", _no_parsing)
    second = google.read(dataset)
    assert second.jobs.equals(first.jobs) and second.meta == first.meta and second.counts == first.counts
    with pytest.raises(AssertionError):
        google.read(dataset, single_resource=True)  # other options: another cache entry


# ---------------------------------------------------------------- bad input

GOOD = [
    event(600 * S, 1, 0, SUBMIT),
    event(601 * S, 1, 0, SCHEDULE),
    event(602 * S, 1, 0, FINISH),
    event(603 * S, 2, 0, SUBMIT),
    event(604 * S, 2, 0, SCHEDULE),
    event(609 * S, 2, 0, FINISH),
]


@pytest.mark.parametrize(
    "bad_line,message",
    [
        ("600500000,,1,1,5,0,u,0,2,0.1,0.2,0", "expected 13 comma-separated fields, got 12"),
        ("", "expected 13 comma-separated fields, got 1"),
        (event("soon", 1, 1, SUBMIT), "field 1 (timestamp): not an integer: 'soon'"),
        (event(-5, 1, 1, SUBMIT), "field 1 (timestamp): out of range: -5"),
        (event(1 << 63, 1, 1, SUBMIT), f"field 1 (timestamp): out of range: {1 << 63}"),
        (event(599 * S, 1, 1, SUBMIT), "field 1 (timestamp): 599000000 is before the previous event's 602000000"),
        (event(602 * S, "j1", 1, SUBMIT), "fields 3-4 (job ID, task index): not integers: 'j1', '1'"),
        (event(602 * S, 1, 1 << 32, SUBMIT), f"fields 3-4 (job ID, task index): out of range: 1, {1 << 32}"),
        (event(602 * S, 1, 1, 9), "field 6 (event type): must be an integer 0-8; got '9'"),
        (event(602 * S, 1, 1, "SUBMIT"), "field 6 (event type): must be an integer 0-8; got 'SUBMIT'"),
        (event(602 * S, 1, 1, SUBMIT, cpu="lots"), "field 10 (CPU request): must be a number in [0, 1]; got 'lots'"),
        (event(602 * S, 1, 1, SUBMIT, cpu="nan"), "field 10 (CPU request): must be a number in [0, 1]; got 'nan'"),
        (event(602 * S, 1, 1, SUBMIT, mem="1.5"), "field 11 (memory request): must be a number in [0, 1]; got '1.5'"),
    ],
)
def test_bad_line_names_shard_and_line(tmp_path, bad_line, message):
    shard0 = write(tmp_path / "task_events" / "part-00000-of-00002.csv.gz", GOOD[:2])
    shard1 = write(tmp_path / "task_events" / "part-00001-of-00002.csv.gz", GOOD[2:3] + [bad_line] + GOOD[3:])
    with pytest.raises(UserError) as err:
        google.read(tmp_path)
    assert str(err.value).startswith(f"{shard1}:2: {message}")
    assert shard0.name not in str(err.value)

    tr = google.read(tmp_path, on_bad_line="skip")
    assert tr.counts["skipped_bad_lines"] == 1
    assert tr.counts["lines"] == 7 and tr.counts["events"] == 6
    assert tr.jobs["runtime"].to_list() == [1.0, 5.0]
    assert tr.meta["first_skipped_bad_line"].startswith(f"{shard1}:2: {message}")


def test_skip_counts_over_shards(tmp_path):
    write(tmp_path / "task_events" / "part-00000-of-00002.csv", ["x", *GOOD[:3], "y,z"], gz=False)
    write(tmp_path / "task_events" / "part-00001-of-00002.csv.gz", [*GOOD[3:], event(1, 1, 1, SUBMIT)])
    tr = google.read(tmp_path, on_bad_line="skip")
    assert tr.counts["skipped_bad_lines"] == 3  # two garbage lines, one event back in time
    assert tr.counts["lines"] == 9 and tr.counts["events"] == 6 and tr.counts["jobs"] == 2
    assert tr.meta["first_skipped_bad_line"].startswith(f"{tmp_path / 'task_events' / 'part-00000-of-00002.csv'}:1:")


def test_empty_shard(tmp_path):
    write(tmp_path / "task_events" / "part-00000-of-00002.csv.gz", GOOD)
    empty = write(tmp_path / "task_events" / "part-00001-of-00002.csv.gz", [])
    with pytest.raises(UserError, match=re.escape(f"{empty}: empty file (no events)")):
        google.read(tmp_path)


def test_missing_and_empty_folders(tmp_path):
    with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'nope'}: no such file or folder")):
        google.read(tmp_path / "nope")
    (tmp_path / "task_events").mkdir()
    (tmp_path / "task_events" / "README").write_text("not a shard")
    with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'task_events'}: no task_events shards")):
        google.read(tmp_path)


def test_missing_shard_in_sequence(tmp_path):
    write(tmp_path / "task_events" / "part-00000-of-00500.csv.gz", GOOD[:3])
    write(tmp_path / "task_events" / "part-00002-of-00500.csv.gz", GOOD[3:])
    with pytest.raises(
        UserError,
        match=re.escape("shards between part-00000-of-00500.csv.gz and part-00002-of-00500.csv.gz are missing"),
    ):
        google.read(tmp_path)


def test_truncated_gzip_shard(tmp_path):
    lines = [event((610 + i) * S, i, 0, SUBMIT) for i in range(3000)]
    data = gzip.compress("".join(line + "\n" for line in lines).encode())
    write(tmp_path / "task_events" / "part-00000-of-00002.csv.gz", GOOD[:3])
    cut = tmp_path / "task_events" / "part-00001-of-00002.csv.gz"
    cut.write_bytes(data[: len(data) // 2])
    for kwargs in ({}, {"on_bad_line": "skip"}, {"use_cache": False}):
        with pytest.raises(UserError, match=re.escape(str(cut)) + ".*truncated"):
            google.read(tmp_path, **kwargs)


def test_nothing_kept(tmp_path):
    p = write(tmp_path / "t.csv", [event(0, 1, 0, SUBMIT), event(600 * S, 2, 0, SUBMIT)], gz=False)
    with pytest.raises(
        UserError,
        match=re.escape(
            f"{p}: no task completed without interruption in the window "
            "(2 tasks: dropped_started_before_trace 1, dropped_unfinished 1"
        ),
    ):
        google.read(p)


@pytest.mark.parametrize(
    "options,message",
    [
        ({"single_resource": "yes"}, "single_resource: must be true or false"),
        ({"resource": "max"}, "resource: unknown option of the google reader"),
        ({"on_bad_line": "warn"}, "on_bad_line: must be one of error, skip"),
    ],
)
def test_option_validation(dataset, options, message):
    with pytest.raises(UserError, match=re.escape(message)):
        google.read(dataset, **options)


# ---------------------------------------------------------------- garbage (hypothesis)

_TOKENS = st.sampled_from(
    [
        "0",
        "1",
        "4",
        "9",
        "-1",
        "600000000",
        "9223372036854775807",
        "1e3",
        "nan",
        "0.5",
        "2",
        "",
        " ",
        "x",
        "\u0663",
        ",",
        "\t",
    ]
)
_FIELDISH = st.lists(
    _TOKENS | st.text(max_size=5).filter(lambda s: "\n" not in s and "\r" not in s), min_size=10, max_size=14
).map(lambda fs: ",".join(fs).encode("utf-8", "surrogatepass"))
_TEXT = st.text(max_size=40).map(lambda s: s.replace("\n", "").replace("\r", "").encode("utf-8", "surrogatepass"))
_BYTES = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b""))
GARBAGE = st.lists(st.tuples(st.integers(0, len(GOOD)), _FIELDISH | _TEXT | _BYTES), min_size=1, max_size=5)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage=GARBAGE, gz=st.booleans())
def test_garbage_lines_give_user_error_or_counted_skip(garbage, gz):
    lines = [line.encode() for line in GOOD]
    for pos, junk in sorted(garbage, key=lambda g: g[0], reverse=True):
        lines.insert(pos, junk)
    data = b"".join(line + b"\n" for line in lines)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / ("part-00000-of-00001.csv.gz" if gz else "part-00000-of-00001.csv")
        p.write_bytes(gzip.compress(data) if gz else data)
        if not gz and data[:2] == b"\x1f\x8b":  # plain text starting with the gzip magic number
            for mode in ("error", "skip"):
                with pytest.raises(UserError, match=re.escape(str(p)) + ": corrupt or truncated gzip"):
                    google.read(p, on_bad_line=mode, use_cache=False)
            return
        try:
            google.read(p, use_cache=False)
        except UserError as err:
            # A garbage line that parses as a (late) event can make a later
            # good line go back in time, so any line may be named.
            m = re.match(re.escape(str(p)) + r":(\d+): ", str(err))
            assert m, str(err)
            assert 1 <= int(m.group(1)) <= len(lines)
        try:
            tr = google.read(p, on_bad_line="skip", use_cache=False)
        except UserError as err:  # everything filtered out: a file-level message
            assert str(err).startswith(f"{p}: no task completed"), str(err)
        else:
            assert tr.counts["lines"] == len(lines)
            assert tr.counts["events"] + tr.counts["skipped_bad_lines"] == len(lines)
            drops = sum(v for k, v in tr.counts.items() if k.startswith("dropped_"))
            assert tr.counts["jobs"] + drops == tr.counts["tasks"]
            assert tr.jobs["submit"].is_sorted()
            assert tr.jobs.select("google_job_id", "task_index").is_unique().all()
