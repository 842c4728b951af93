"""SWF reader: real Parallel Workloads Archive / Lublin files (figures from
their PROVENANCE.md), crafted bad inputs, cleaning rules, garbage lines, cache."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from schedlab.errors import UserError
from schedlab.workloads.traces import swf
from schedlab.workloads.traces.registry import read_trace

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
HPC2N = DATA / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"
SDSC_BLUE = DATA / "pwa-swf" / "SDSC-BLUE-2000-4.2-cln.swf.gz"
CTC = DATA / "pwa-swf" / "CTC-SP2-1996-3.1-cln.swf.gz"
KTH = DATA / "pwa-swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
LUBLIN = DATA / "lublin" / "lublin_256.swf.gz"
LUBLIN_NEW2 = DATA / "lublin" / "lublin_256_new2.swf.gz"

COLUMNS = list(swf.FIELDS) + ["size"]
DROPS = ("dropped_cancelled", "dropped_runtime_nonpositive", "dropped_no_procs")


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"trace data not available: {path} (the shared data folder {DATA} is absent or incomplete)")
    return path


def assert_accounted(trace) -> None:
    """Every physical line is a header, blank, bad, kept or dropped line."""
    c = trace.counts
    assert c["lines"] == (
        c["header_lines"] + c["blank_lines"] + c["skipped_bad_lines"] + c["jobs"] + sum(c[k] for k in DROPS)
    )
    assert c["jobs"] == trace.jobs.height


def assert_canonical(jobs: pl.DataFrame) -> None:
    assert jobs.columns == COLUMNS
    for name in swf.FIELDS:
        assert jobs.schema[name] == (pl.Float64 if name in swf.FLOAT_FIELDS else pl.Int64), name
    assert jobs.schema["size"] == pl.Float64
    submit = jobs["submit"].to_numpy()
    assert np.all(np.diff(submit) >= 0)
    assert jobs["job_id"].n_unique() == jobs.height
    assert_frame_equal(jobs.select(pl.col("runtime").alias("size")), jobs.select("size"))


# ---------------------------------------------------------------- real files


@pytest.fixture(scope="module")
def hpc2n():
    return swf.read(need(HPC2N), use_cache=False)


@pytest.fixture(scope="module")
def sdsc_blue():
    return swf.read(need(SDSC_BLUE), use_cache=False)


def test_hpc2n_matches_provenance(hpc2n):
    jobs, meta, counts = hpc2n.jobs, hpc2n.meta, hpc2n.counts
    assert_canonical(jobs)
    assert_accounted(hpc2n)
    assert jobs.height == 202_871
    assert counts["skipped_bad_lines"] == 0
    assert all(counts[k] == 0 for k in DROPS)
    assert counts["procs_from_requested"] == 0  # no job lacks a processor count
    assert counts["requested_time_from_runtime"] == 0  # every job has a requested time
    h = meta["header"]
    assert h["MaxProcs"] == 240 and h["MaxNodes"] == 240
    assert h["MaxJobs"] == 527_371 and h["MaxRecords"] == 202_871
    assert h["Computer"] == "Linux cluster (Seth)"
    assert h["StartTime"] == "Sun Jul 28 09:04:05 CEST 2002"
    assert h["EndTime"] == "Mon Jan 16 20:31:24 CET 2006"
    assert "uses MAUI scheduler" in h["Note"]
    # the continuation lines of the "cleaned version" note are kept with it
    assert any("user=2 (305178 jobs removed)" in note for note in h["Note"])
    assert meta["machine_procs"] == 240
    assert meta["reader"] == "swf" and meta["source"] == str(HPC2N)
    assert meta["options"] == {"on_bad_line": "error", "keep_nonpositive_runtime": False, "drop_cancelled": False}
    assert jobs["runtime"].mean() == pytest.approx(17_024, abs=0.5)
    assert jobs["runtime"].max() == 508_620
    assert jobs["procs"].mean() == pytest.approx(6.36, abs=0.005)
    assert jobs["procs"].max() == 200
    status = dict(jobs["status"].value_counts().iter_rows())
    assert status == {1: 201_993, -1: 878}
    span_days = (jobs["submit"].max() - jobs["submit"].min()) / 86_400
    assert span_days == pytest.approx(1264.4, abs=0.05)


def test_sdsc_blue_unknown_runtimes_and_cancelled(sdsc_blue):
    c = sdsc_blue.counts
    assert_canonical(sdsc_blue.jobs)
    assert_accounted(sdsc_blue)
    assert c["lines"] - c["header_lines"] - c["blank_lines"] == 243_306
    assert c["runtime_unknown"] == 10_744
    assert c["status_cancelled"] == 47_718
    # runtime -1 (10,744) plus a few runtime-0 jobs fall to the run-time rule
    assert c["dropped_runtime_nonpositive"] >= 10_744
    assert c["dropped_cancelled"] == 0
    # cancelled jobs that ran are kept
    assert c["cancelled_kept"] == sdsc_blue.jobs.filter(pl.col("status") == 5).height > 0
    assert sdsc_blue.jobs["runtime"].min() > 0
    assert sdsc_blue.jobs["procs"].min() > 0
    assert sdsc_blue.meta["header"]["MaxProcs"] == 1152
    assert sdsc_blue.meta["header"]["MaxNodes"] == 144
    assert len(sdsc_blue.meta["header"]["Queue"]) == 24


def test_ctc_header_keeps_string_and_leading_int():
    t = swf.read(need(CTC), use_cache=False)
    assert t.meta["header"]["MaxNodes"] == "338 (batch partition; 512 total)"
    assert t.meta["header_ints"]["MaxNodes"] == 338
    assert t.meta["header"]["MaxProcs"] == 338
    assert t.meta["machine_procs"] == 338
    # an indented comment line continues the previous key
    assert t.meta["header"]["Information"] == (
        "http://www.tc.cornell.edu/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"
    )
    assert t.counts["lines"] - t.counts["header_lines"] == 77_222
    assert_accounted(t)
    assert_canonical(t.jobs)


def test_kth_parses():
    t = swf.read(need(KTH), use_cache=False)
    assert t.jobs.height == 27_992
    assert t.meta["header"]["MaxRecords"] == 28_476  # unreliable for this copy (PROVENANCE)
    assert t.meta["machine_procs"] == 100
    assert_accounted(t)
    assert_canonical(t.jobs)


def test_lublin_files_parse():
    t = swf.read(need(LUBLIN), use_cache=False)
    jobs = t.jobs
    assert jobs.height == 10_000
    assert_canonical(jobs)
    assert t.meta["header"]["MaxNodes"] == 256 and t.meta["header"]["MaxRuntime"] == 162_754
    assert jobs["runtime"].mean() == pytest.approx(4862.8, abs=0.05)
    assert jobs["runtime"].max() == 124_707
    assert jobs["procs"].mean() == pytest.approx(22.10, abs=0.005)
    # no user estimates in the model output: every requested time is the run time
    assert t.counts["requested_time_from_runtime"] == 10_000
    assert (jobs["requested_time"] == jobs["runtime"]).all()
    new2 = swf.read(need(LUBLIN_NEW2), use_cache=False, on_bad_line="skip").jobs
    assert new2.height == 10_000
    assert dict(new2["queue"].value_counts().iter_rows()) == {0: 8704, 1: 1296}


def test_registry_reads_swf():
    t = read_trace("swf", str(need(LUBLIN)), use_cache=False)
    assert t.meta["reader"] == "swf" and t.jobs.height == 10_000


# ---------------------------------------------------------------- crafted files


def job(i, submit, runtime=100, procs=4, req_procs=-1, req_time=-1, status=1, queue=-1):
    f = [i, submit, 0, runtime, procs, -1, -1, req_procs, req_time, -1, status, 7, 1, -1, queue, -1, -1, -1]
    return "  ".join(str(x) for x in f)


HEADER = """; Version: 2.2
; Computer: Test machine
; Information: http://a.example/
;              http://b.example/
; MaxNodes: 64 (of 128 total)
; MaxProcs: 128
; MaxJobs: 9
; Queue: 1 batch
; Queue: 2 debug
;
; Note: cleaned
;       filter: user=3
"""


def write(path: Path, text: str | bytes, gz: bool = False) -> Path:
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_header_parsing(tmp_path):
    p = write(tmp_path / "h.swf", HEADER + job(1, 0) + "\n")
    t = swf.read(p, use_cache=False)
    h = t.meta["header"]
    assert h["Version"] == "2.2"
    assert h["Information"] == "http://a.example/\nhttp://b.example/"
    assert h["MaxNodes"] == "64 (of 128 total)" and t.meta["header_ints"]["MaxNodes"] == 64
    assert h["MaxProcs"] == 128 and h["MaxJobs"] == 9
    assert h["Queue"] == ["1 batch", "2 debug"]
    assert h["Note"] == "cleaned\nfilter: user=3"
    assert t.meta["machine_procs"] == 128
    assert t.counts["header_lines"] == 12
    # "; http://..." is not a "Key: value" line; an empty value takes its continuation
    p = write(tmp_path / "h2.swf", "; Information:\n; http://c.example/\n; Free text\n" + job(1, 0) + "\n")
    h = swf.read(p, use_cache=False).meta["header"]
    assert h == {"Information": "http://c.example/\nFree text"}
    p = write(tmp_path / "h3.swf", "; orphan text\n" + job(1, 0) + "\n")
    t = swf.read(p, use_cache=False)
    assert t.meta["header"] == {} and t.meta["header_comments"] == ["orphan text"]
    assert t.meta["machine_procs"] is None


def test_cleaning_rules(tmp_path):
    lines = [
        job(1, 10),  # kept
        job(2, 5, runtime=-1),  # runtime unknown -> dropped
        job(3, 5, runtime=0),  # runtime 0 -> dropped
        job(4, 7, procs=-1, req_procs=8),  # procs from requested
        job(5, 7, procs=0, req_procs=-1),  # no procs -> dropped
        job(6, 3, status=5),  # cancelled but ran: kept
        job(7, 3, status=5, runtime=-1),  # cancelled, never ran: runtime rule
        job(8, 3, req_time=500),  # has an estimate
        job(9, 1, runtime=-1, procs=-1),  # runtime rule counts it first
    ]
    p = write(tmp_path / "c.swf", HEADER + "\n".join(lines) + "\n\n")
    t = swf.read(p, use_cache=False)
    c = t.counts
    assert c["dropped_runtime_nonpositive"] == 4
    assert c["dropped_no_procs"] == 1
    assert c["dropped_cancelled"] == 0
    assert c["procs_from_requested"] == 1
    assert c["requested_time_from_runtime"] == 3  # jobs 1, 4, 6
    assert c["runtime_unknown"] == 3 and c["status_cancelled"] == 2 and c["cancelled_kept"] == 1
    assert c["blank_lines"] == 1
    assert_accounted(t)
    assert_canonical(t.jobs)
    # stable sort by submit: ties keep file order
    assert t.jobs["job_id"].to_list() == [6, 8, 4, 1]
    row = t.jobs.filter(pl.col("job_id") == 4).row(0, named=True)
    assert row["procs"] == 8 and row["req_procs"] == 8
    assert t.jobs.filter(pl.col("job_id") == 8)["requested_time"].item() == 500
    assert t.jobs.filter(pl.col("job_id") == 1)["requested_time"].item() == 100

    keep = swf.read(p, use_cache=False, keep_nonpositive_runtime=True)
    assert keep.counts["dropped_runtime_nonpositive"] == 0
    assert keep.counts["dropped_no_procs"] == 2  # jobs 5 and 9
    assert sorted(keep.jobs["job_id"].to_list()) == [1, 2, 3, 4, 6, 7, 8]
    # no estimate is invented from a non-positive run time
    assert keep.jobs.filter(pl.col("job_id") == 2)["requested_time"].item() == -1
    assert_accounted(keep)

    nocancel = swf.read(p, use_cache=False, drop_cancelled=True)
    assert nocancel.counts["dropped_cancelled"] == 2
    assert nocancel.counts["dropped_runtime_nonpositive"] == 3
    assert 5 not in nocancel.jobs["status"].to_list()
    assert_accounted(nocancel)


def test_every_job_dropped_is_a_user_error(tmp_path):
    p = write(tmp_path / "d.swf", job(1, 0, runtime=-1) + "\n")
    with pytest.raises(UserError, match=r"every job was dropped.*dropped_runtime_nonpositive 1"):
        swf.read(p, use_cache=False)


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("1 2 3", "expected 18 numeric fields, got 3"),
        (job(3, 0) + " 99", "expected 18 numeric fields, got 19"),
        (job(3, 0).replace("100", "abc", 1), "expected 18 numeric fields, got non-numeric field 4 (runtime): 'abc'"),
        (
            job(3, 0).replace("100", "1_000", 1),
            "expected 18 numeric fields, got non-numeric field 4 (runtime): '1_000'",
        ),
        (job(3, 0).replace("100", "nan", 1), "expected 18 numeric fields, got non-finite field 4 (runtime): nan"),
        (job(3, 0, procs="4.5"), "expected an integer in field 5 (procs), got 4.5"),
        (job(1, 0), "job number 1 repeats the job on line 2"),
    ],
)
def test_bad_line_messages(tmp_path, bad_line, message):
    text = "; Version: 2\n" + job(1, 0) + "\n" + bad_line + "\n" + job(4, 9) + "\n"
    for gz in (False, True):
        p = write(tmp_path / ("b.swf.gz" if gz else "b.swf"), text, gz)
        with pytest.raises(UserError) as err:
            swf.read(p, use_cache=False)
        assert str(err.value) == f"{p}:3: {message}"
        t = swf.read(p, use_cache=False, on_bad_line="skip")
        assert t.counts["skipped_bad_lines"] == 1
        assert t.jobs["job_id"].to_list() == [1, 4]
        assert t.meta["first_skipped"] == f"{p}:3: {message}"
        assert_accounted(t)


def test_error_names_first_bad_line_of_any_kind(tmp_path):
    # line 3 is only found bad after the bulk conversion, line 4 while reading
    text = job(1, 0) + "\n" + job(2, 0) + "\n" + job(3, 0, procs="x") + "\n1 2\n"
    p = write(tmp_path / "o.swf", text)
    with pytest.raises(UserError, match=re.escape(f"{p}:3: ")):
        swf.read(p, use_cache=False)
    t = swf.read(p, use_cache=False, on_bad_line="skip")
    assert t.counts["skipped_bad_lines"] == 2 and t.jobs.height == 2


def test_file_level_errors(tmp_path):
    empty = write(tmp_path / "empty.swf", "")
    with pytest.raises(UserError, match=re.escape(f"{empty}: no job lines (empty file)")):
        swf.read(empty)
    only_header = write(tmp_path / "hdr.swf", "; Version: 2\n\n")
    with pytest.raises(UserError, match=re.escape(f"{only_header}: no job lines (only header comments)")):
        swf.read(only_header, use_cache=False)
    all_bad = write(tmp_path / "allbad.swf", "x\ny\n")
    with pytest.raises(UserError, match=re.escape(f"{all_bad}: no valid job lines; 2 bad lines skipped")):
        swf.read(all_bad, use_cache=False, on_bad_line="skip")
    missing = tmp_path / "missing.swf"
    with pytest.raises(UserError, match=re.escape(f"{missing}: no such file")):
        swf.read(missing)
    with pytest.raises(UserError, match=re.escape(f"{tmp_path}: is a directory")):
        swf.read(tmp_path)


def test_truncated_gzip(tmp_path):
    text = HEADER + "\n".join(job(i, i) for i in range(1, 20_001)) + "\n"
    data = gzip.compress(text.encode())
    p = write(tmp_path / "cut.swf.gz", data[: len(data) // 2])
    for mode in ("error", "skip"):
        with pytest.raises(UserError, match=rf"^{re.escape(str(p))}: .*truncated"):
            swf.read(p, use_cache=False, on_bad_line=mode)


def test_option_validation(tmp_path):
    p = write(tmp_path / "ok.swf", job(1, 0) + "\n")
    with pytest.raises(UserError, match=r"^min_bytes: unknown option for the swf reader"):
        swf.read(p, min_bytes=1)
    with pytest.raises(UserError, match=r"^drop_cancelled: must be true or false"):
        swf.read(p, drop_cancelled="yes")
    with pytest.raises(UserError, match=r"^on_bad_line: must be one of error, skip"):
        swf.read(p, on_bad_line="ignore")


# ---------------------------------------------------------------- garbage lines

BASE = HEADER + "".join(job(i, 10 * i) + "\n" for i in range(1, 11))
BASE_LINES = BASE.splitlines(keepends=True)
GARBAGE = st.one_of(
    st.text(max_size=120).map(lambda s: s.encode("utf-8")),
    st.binary(max_size=120),
    st.lists(st.sampled_from(["1", "-1", "2.5", "x", "nan", "1e3", ";", "", "\t"]), min_size=15, max_size=20).map(
        lambda xs: " ".join(xs).encode()
    ),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage=st.lists(st.tuples(st.integers(1, len(BASE_LINES)), GARBAGE), min_size=1, max_size=4))
def test_garbage_lines_never_crash(tmp_path_factory, garbage):
    chunks = [line.encode() for line in BASE_LINES]
    for pos, blob in sorted(garbage, key=lambda g: -g[0]):
        chunks.insert(pos, blob + b"\n")
    data = b"".join(chunks)
    p = tmp_path_factory.getbasetemp() / "garbage.swf"
    p.write_bytes(data)
    physical = data.count(b"\n") + (not data.endswith(b"\n"))  # only LF ends a line
    try:
        strict = swf.read(p, use_cache=False)
        strict_error = None
    except UserError as err:
        strict_error = str(err)
        assert re.match(rf"^{re.escape(str(p))}:\d+: ", strict_error), strict_error
    t = swf.read(p, use_cache=False, on_bad_line="skip")
    assert t.counts["lines"] == physical
    assert_accounted(t)
    assert_canonical(t.jobs)
    if strict_error is None:
        assert t.counts["skipped_bad_lines"] == 0
        assert_frame_equal(strict.jobs, t.jobs)
    else:
        assert t.counts["skipped_bad_lines"] >= 1
        assert t.meta["first_skipped"] == strict_error


# ---------------------------------------------------------------- cache


def test_cache_roundtrip_and_option_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path / "cache"))
    p = write(
        tmp_path / "c.swf.gz",
        HEADER + "\n".join([job(1, 0), job(2, 5, status=5), job(3, 9, runtime=-1)]) + "\n",
        gz=True,
    )
    first = swf.read(p)
    assert len(list((tmp_path / "cache").glob("swf-*.parquet"))) == 1

    def boom(*args, **kwargs):
        raise AssertionError("parsed again instead of reading the cache")

    with monkeypatch.context() as m:
        m.setattr(swf, "_parse", boom)
        second = swf.read(p)
    assert_frame_equal(first.jobs, second.jobs)
    assert second.counts == first.counts
    assert {k: v for k, v in second.meta.items() if k != "from_cache"} == first.meta

    changed = swf.read(p, drop_cancelled=True)
    assert changed.jobs["job_id"].to_list() == [1]
    assert changed.meta["options"]["drop_cancelled"] is True
    skip = swf.read(p, on_bad_line="skip")
    assert skip.meta["options"]["on_bad_line"] == "skip"
    assert len(list((tmp_path / "cache").glob("swf-*.parquet"))) == 3
    # a copy at another path hits the same entry but reports its own source
    copy = tmp_path / "copy.swf.gz"
    copy.write_bytes(p.read_bytes())
    with monkeypatch.context() as m:
        m.setattr(swf, "_parse", boom)
        assert swf.read(copy).meta["source"] == str(copy)


# ---------------------------------------------------------------- windows from the header origin


def _trace_plan(path: Path, **workload):
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec

    return build_plan(
        parse_spec(
            {
                "name": "w",
                "engine": "batch",
                "seed": 1,
                "policies": ["FCFS"],
                "system": {"model": "procs", "procs": 240},
                "workload": {"kind": "trace", "reader": "swf", "path": str(path), **workload},
                "replications": {"n": 1},
            },
            "w.toml",
        )
    )


def test_header_origin_windows_skip_empty_weeks(tmp_path):
    """window_origin = "header": week k = floor(submit / 604800), submit counted from the
    header's UnixStartTime (SWF's time 0), and window = "all" lists the non-empty weeks only;
    from the first submission the same jobs fall into other weeks."""
    week = 604_800
    lines = [
        job(1, 3 * week + 10),
        job(2, 3 * week + 500),
        job(5, 4 * week + 5),
        job(3, 5 * week - 1),
        job(4, 6 * week + 7),
    ]
    p = write(tmp_path / "w.swf", "; UnixStartTime: 1000000000\n" + "\n".join(lines) + "\n")
    plan = _trace_plan(p, window_length=float(week), window="all", window_origin="header")
    assert sorted(pt.params["window"] for pt in plan.points) == [3, 4, 6]
    first = _trace_plan(p, window_length=float(week), window="all")
    # from t0 = 3 w + 10 s: 4 w + 5 s falls in window 0 with the first two jobs
    assert sorted(pt.params["window"] for pt in first.points) == [0, 1, 2]
    from schedlab.workloads.registry import workload_kind

    kind = workload_kind("trace")
    params = kind.complete(
        {"reader": "swf", "path": str(p), "window_length": float(week), "window": 4, "window_origin": "header"},
        "workload",
    )
    shared = kind.load_shared(params)
    jobs = kind.build(np.random.default_rng(0), params, shared)
    assert jobs["job_id"].to_list() == [5, 3] and jobs["submit"].to_list() == [5.0, week - 1.0]
    params = {**params, "window": 0, "window_origin": "first"}
    assert kind.build(np.random.default_rng(0), params, shared)["job_id"].to_list() == [1, 2, 5]
    # the field is late: left out of a point at its default, so earlier ids hold
    assert "window_origin" not in first.points[0].params
    assert "window_origin" in plan.points[0].params


def test_header_origin_needs_swf(tmp_path):
    from schedlab.errors import UserError
    from schedlab.workloads.registry import workload_kind

    kind = workload_kind("trace")
    for bad in ({"reader": "swim", "window_origin": "header"}, {"reader": "swf", "window_origin": "start"}):
        with pytest.raises(UserError, match="^window_origin:"):
            kind.check(kind.complete({"path": "x", **bad}, "workload"))


def test_hpc2n_has_182_weeks_from_unix_start_time():
    """The DFRS paper's 182 HPC2N weeks: week k = floor(submit / 604800 s) from the header's
    UnixStartTime gives 182 non-empty weeks (0 .. 181, every one non-empty); cut from the first
    submission, 181."""
    path = need(HPC2N)
    t = read_trace("swf", str(path))
    assert t.meta["header"]["UnixStartTime"] == 1027839845 and t.meta["time_origin"] == "UnixStartTime (header)"
    plan = _trace_plan(path, window_length=604800.0, window="all", window_origin="header")
    assert sorted(pt.params["window"] for pt in plan.points) == list(range(182))
    assert len(_trace_plan(path, window_length=604800.0, window="all").points) == 181
