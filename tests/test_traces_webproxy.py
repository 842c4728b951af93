"""Web-proxy readers: Squid native access.log and the BU98 ``seq id size``
trace. Real files (figures from their PROVENANCE.md), generated Squid logs,
crafted bad inputs, garbage lines, cache."""

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
from schedlab.workloads import transforms
from schedlab.workloads.traces import bu98, squid
from schedlab.workloads.traces.registry import read_trace

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SQUID_REAL = DATA / "web-proxy" / "squid-home-proxy-2020" / "squid-home-proxy-2020-03.access.log.gz"
BU98_REAL = DATA / "web-proxy" / "bu98-proxy-trace" / "bu98-usertrace-webcachesim.tr.gz"

SQUID_COLUMNS = ["job_id", "submit", "size", "elapsed", "http_status", "action", "method"]
SQUID_SCHEMA = [pl.Int64, pl.Float64, pl.Float64, pl.Int64, pl.Int64, pl.String, pl.String]
BU98_COLUMNS = ["job_id", "order", "object_id", "size"]


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"trace data not available: {path} (the shared data folder {DATA} is absent or incomplete)")
    return path


def write(path: Path, text: str | bytes, gz: bool = False) -> Path:
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
    return path


def accounted(trace) -> None:
    c = trace.counts
    assert c["lines"] == c["blank_lines"] + c["skipped_bad_lines"] + c["jobs"] + c["dropped_small"]
    assert c["jobs"] == trace.jobs.height
    assert trace.jobs["job_id"].n_unique() == trace.jobs.height


def squid_canonical(jobs: pl.DataFrame) -> None:
    assert jobs.columns == SQUID_COLUMNS
    assert list(jobs.schema.values()) == SQUID_SCHEMA
    assert np.all(np.diff(jobs["submit"].to_numpy()) >= 0)


def squid_line(
    t: str, size="1000", elapsed="120", code="TCP_MISS/200", method="GET", url="http://example.com/a"
) -> str:
    return f"{t} {elapsed:>6} 10.0.0.1 {code} {size} {method} {url} - DIRECT/1.2.3.4 text/html"


# ---------------------------------------------------------------- Squid: real file


def test_squid_real_file_matches_provenance():
    all_ = squid.read(need(SQUID_REAL), use_cache=False, min_bytes=0)
    jobs, c = all_.jobs, all_.counts
    squid_canonical(jobs)
    accounted(all_)
    assert c["lines"] == 1247 and jobs.height == 1247
    assert c["skipped_bad_lines"] == 0 and c["dropped_small"] == 0 and c["out_of_order"] == 0
    assert jobs["size"].mean() == pytest.approx(41_451, abs=0.5)
    assert jobs["size"].median() == 3806
    assert jobs["size"].max() == 5_098_485 and jobs["size"].min() == 0
    assert jobs["size"].sum() / 1e6 == pytest.approx(51.7, abs=0.05)
    assert dict(jobs["method"].value_counts().iter_rows()) == {"GET": 1086, "POST": 115, "CONNECT": 46}
    assert jobs.filter(pl.col("method") == "GET")["size"].mean() == pytest.approx(44_184, abs=0.5)
    assert set(jobs["action"]) == {"TCP_MISS"} and set(jobs["http_status"]) == {200}
    assert jobs["elapsed"].mean() == pytest.approx(814, abs=0.5)
    assert jobs["elapsed"].max() == 38_114
    assert jobs["submit"].max() - jobs["submit"].min() == pytest.approx(203_892, abs=1)
    assert jobs["submit"].min() == pytest.approx(1_583_861_727.504)  # 2020-03-10T17:35:27.504Z
    assert jobs["job_id"].to_list() == list(range(1, 1248))

    default = squid.read(SQUID_REAL, use_cache=False)  # min_bytes=1
    accounted(default)
    zero = int((jobs["size"] == 0).sum())
    assert zero >= 1  # the file's minimum size is 0
    assert default.counts["dropped_small"] == zero and default.jobs.height == 1247 - zero
    assert default.jobs["size"].min() >= 1
    assert default.meta["reader"] == "squid" and default.meta["options"] == {"on_bad_line": "error", "min_bytes": 1}
    assert read_trace("squid", str(SQUID_REAL), use_cache=False).jobs.height == 1247 - zero


# ---------------------------------------------------------------- Squid: generated logs

N_GEN = 300_000
CODES = ["TCP_MISS/200", "TCP_HIT/200", "TCP_REFRESH_MISS/304", "TCP_DENIED/403", "NONE/000"]
METHODS = ["GET", "POST", "CONNECT", "HEAD"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A 300k-line IRCache-style log (plain and gzip) and the table it must give."""
    rng = np.random.default_rng(7)
    t = 1_168_300_800.0 + np.cumsum(rng.exponential(0.3, N_GEN))
    late = rng.random(N_GEN) < 0.02  # logged late: out of time order in the file
    t[late] -= rng.uniform(0, 5, late.sum())
    t_str = [f"{x:.3f}" for x in t]
    elapsed = rng.integers(0, 60_000, N_GEN)
    size = np.where(rng.random(N_GEN) < 0.05, 0, rng.integers(1, 2_000_000, N_GEN))
    code = rng.integers(0, len(CODES), N_GEN)
    method = rng.integers(0, len(METHODS), N_GEN)
    lines = [
        f"{t_str[i]} {elapsed[i]:6d} 10.{i % 256}.0.1 {CODES[code[i]]} {size[i]} {METHODS[method[i]]} "
        f"http://h{i % 977}.example.com/p{i} - DIRECT/192.0.2.{i % 250} text/html\n"
        for i in range(N_GEN)
    ]
    text = "".join(lines).encode()
    base = tmp_path_factory.mktemp("squid")
    plain = write(base / "access.log", text)
    gz_data = gzip.compress(text, compresslevel=1)
    gz = write(base / "access.log.gz", gz_data)
    cut = write(base / "cut.log.gz", gz_data[: len(gz_data) // 2])
    expected = pl.DataFrame(
        {
            "job_id": np.arange(1, N_GEN + 1, dtype=np.int64),
            "submit": np.array(t_str, dtype=np.float64),
            "size": size.astype(np.float64),
            "elapsed": elapsed.astype(np.int64),
            "http_status": np.array([int(c.split("/")[1]) for c in CODES])[code].astype(np.int64),
            "action": np.array([c.split("/")[0] for c in CODES])[code],
            "method": np.array(METHODS)[method],
        }
    )
    ahead = np.maximum.accumulate(expected["submit"].to_numpy())
    out_of_order = int(np.count_nonzero(expected["submit"].to_numpy()[1:] < ahead[:-1]))
    return plain, gz, cut, expected, out_of_order


def test_squid_generated_log(generated):
    plain, gz, _, expected, out_of_order = generated
    t = squid.read(plain, use_cache=False)
    squid_canonical(t.jobs)
    accounted(t)
    small = int((expected["size"] < 1).sum())
    assert t.counts["lines"] == N_GEN
    assert t.counts["dropped_small"] == small > 0
    assert t.counts["jobs"] == N_GEN - small
    assert t.counts["out_of_order"] == out_of_order > 0
    want = expected.filter(pl.col("size") >= 1).sort("submit", maintain_order=True)
    assert_frame_equal(t.jobs, want)
    assert t.jobs["size"].sum() == expected["size"].sum()

    g = squid.read(gz, use_cache=False, min_bytes=0)
    assert g.counts["dropped_small"] == 0 and g.jobs.height == N_GEN
    assert_frame_equal(g.jobs, expected.sort("submit", maintain_order=True))


def test_squid_truncated_gzip(generated):
    _, _, cut, _, _ = generated
    for mode in ("error", "skip"):
        with pytest.raises(UserError, match=rf"^{re.escape(str(cut))}: .*truncated"):
            squid.read(cut, use_cache=False, on_bad_line=mode)


# ---------------------------------------------------------------- Squid: crafted files


def test_squid_tolerates_spaces_in_url_and_sorts(tmp_path):
    text = (
        "\n".join(
            [
                squid_line("100.5", size="10"),
                squid_line("99.25", size="20", url="http://x/a b c"),  # 12 fields
                squid_line("100.5", size="30", method="POST"),  # tie with line 1
                "",
                squid_line("50", size="0"),
            ]
        )
        + "\n"
    )
    t = squid.read(write(tmp_path / "a.log", text), use_cache=False)
    assert t.jobs["job_id"].to_list() == [2, 1, 3]
    assert t.jobs["size"].to_list() == [20.0, 10.0, 30.0]
    assert t.jobs["method"].to_list() == ["GET", "GET", "POST"]
    assert t.counts == {
        "lines": 5,
        "blank_lines": 1,
        "skipped_bad_lines": 0,
        "dropped_small": 1,
        "jobs": 3,
        "out_of_order": 2,
    }


LAYOUT = squid.LAYOUT


@pytest.mark.parametrize(
    "bad_line, message",
    [
        (squid_line("12.0").rsplit(" ", 1)[0], f"expected >= 10 fields ({LAYOUT}), got 9"),
        (squid_line("abc"), "field 1 (time) must be a finite number, got 'abc'"),
        (squid_line("nan"), "field 1 (time) must be a finite number, got 'nan'"),
        (squid_line("12.0", elapsed="12.5"), "field 2 (elapsed) must be an integer (ms), got '12.5'"),
        (
            squid_line("12.0", code="TCP_MISS"),
            "field 4 (action/code) must be an action/status code like TCP_MISS/200, got 'TCP_MISS'",
        ),
        (
            squid_line("12.0", code="TCP_MISS/abc"),
            "field 4 (action/code) must be an action/status code like TCP_MISS/200, got 'TCP_MISS/abc'",
        ),
        (squid_line("12.0", size="-5"), "field 5 (bytes) must be an integer >= 0, got '-5'"),
        (squid_line("12.0", size="1e3"), "field 5 (bytes) must be an integer >= 0, got '1e3'"),
    ],
)
def test_squid_bad_line_messages(tmp_path, bad_line, message):
    text = squid_line("10.0") + "\n" + squid_line("11.0") + "\n" + bad_line + "\n" + squid_line("13.0") + "\n"
    for gz in (False, True):
        p = write(tmp_path / ("b.log.gz" if gz else "b.log"), text, gz)
        with pytest.raises(UserError) as err:
            squid.read(p, use_cache=False)
        assert str(err.value) == f"{p}:3: {message}"
        t = squid.read(p, use_cache=False, on_bad_line="skip")
        assert t.counts["skipped_bad_lines"] == 1 and t.jobs["job_id"].to_list() == [1, 2, 4]
        assert t.meta["first_skipped"] == f"{p}:3: {message}"
        accounted(t)


def test_squid_reports_first_bad_line(tmp_path):
    # line 2 is only found bad after the bulk conversion, line 3 while reading
    text = squid_line("1") + "\n" + squid_line("x") + "\n" + "short line\n"
    p = write(tmp_path / "o.log", text)
    with pytest.raises(UserError, match=re.escape(f"{p}:2: field 1 (time)")):
        squid.read(p, use_cache=False)
    assert squid.read(p, use_cache=False, on_bad_line="skip").counts["skipped_bad_lines"] == 2


@pytest.mark.parametrize("reader", [squid, bu98])
def test_file_level_errors(tmp_path, reader):
    empty = write(tmp_path / "empty", "")
    with pytest.raises(UserError, match=re.escape(f"{empty}: no request lines (empty file)")):
        reader.read(empty)
    blank = write(tmp_path / "blank", "\n  \n")
    with pytest.raises(UserError, match=re.escape(f"{blank}: no request lines (empty file)")):
        reader.read(blank, use_cache=False)
    all_bad = write(tmp_path / "allbad", "x\ny\n")
    with pytest.raises(UserError, match=re.escape(f"{all_bad}: no valid request lines; 2 bad lines skipped")):
        reader.read(all_bad, use_cache=False, on_bad_line="skip")
    missing = tmp_path / "missing.log"
    with pytest.raises(UserError, match=re.escape(f"{missing}: no such file")):
        reader.read(missing)
    with pytest.raises(UserError, match=re.escape(f"{tmp_path}: is a directory")):
        reader.read(tmp_path)
    ok = write(tmp_path / "ok", "1 1 0\n" if reader is bu98 else squid_line("1", size="0") + "\n")
    with pytest.raises(UserError, match=r"every request was dropped by min_bytes=1 \(1 requests\)"):
        reader.read(ok, use_cache=False)
    with pytest.raises(UserError, match=r"^min_bytes: must be an integer >= 0"):
        reader.read(ok, min_bytes=-1)
    with pytest.raises(UserError, match=r"^min_bytes: must be an integer >= 0"):
        reader.read(ok, min_bytes=True)
    with pytest.raises(UserError, match=rf"^keep: unknown option for the {reader.NAME} reader"):
        reader.read(ok, keep=True)
    with pytest.raises(UserError, match=r"^on_bad_line: must be one of error, skip"):
        reader.read(ok, on_bad_line="warn")


# ---------------------------------------------------------------- BU98


def test_bu98_real_file_matches_provenance():
    t = bu98.read(need(BU98_REAL), use_cache=False)
    jobs = t.jobs
    assert jobs.columns == BU98_COLUMNS
    assert list(jobs.schema.values()) == [pl.Int64, pl.Int64, pl.Int64, pl.Float64]
    assert "submit" not in jobs.columns and t.meta["needs_arrivals"] is True
    accounted(t)
    assert t.counts["lines"] == 66_987 and jobs.height == 66_987
    assert t.counts["skipped_bad_lines"] == 0 and t.counts["dropped_small"] == 0
    assert jobs["job_id"].to_list() == list(range(1, 66_988))
    assert jobs["order"].to_list() == list(range(66_987))
    assert t.meta["objects"] == jobs["object_id"].n_unique() == 36_815
    assert jobs["size"].mean() == pytest.approx(7247.0, abs=0.05)
    assert jobs["size"].median() == 2416
    assert jobs["size"].max() == 4_092_928 and jobs["size"].min() == 1
    assert jobs["size"].sum() / 1e6 == pytest.approx(485.5, abs=0.05)
    assert int((jobs["size"] == 1).sum()) == 105
    # a sweep attaches arrivals before replaying it
    with_arrivals = transforms.attach_arrivals(jobs, np.random.default_rng(0), 0.9)
    assert with_arrivals["submit"][0] == 0 and np.all(np.diff(with_arrivals["submit"].to_numpy()) >= 0)


def test_bu98_crafted(tmp_path):
    p = write(tmp_path / "t.tr", "3 0 30\n1 1 10\n\n2 0 0\n4   2\t40\n")
    t = bu98.read(p, use_cache=False)
    assert t.jobs.rows() == [(1, 0, 1, 10.0), (3, 1, 0, 30.0), (4, 2, 2, 40.0)]
    assert t.counts == {
        "lines": 5,
        "blank_lines": 1,
        "skipped_bad_lines": 0,
        "dropped_small": 1,
        "jobs": 3,
        "out_of_order": 2,
    }
    assert bu98.read(p, use_cache=False, min_bytes=0).jobs["job_id"].to_list() == [1, 2, 3, 4]


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("1 2", "expected 3 integer fields (seq object_id size), got 2"),
        ("3 2 1 0", "expected 3 integer fields (seq object_id size), got 4"),
        ("3 x 5", "field 2 (object_id) must be an integer, got 'x'"),
        ("x 2 5", "field 1 (seq) must be an integer, got 'x'"),
        ("3 2 1.5", "field 3 (size) must be an integer, got '1.5'"),
        ("3 2 -4", "field 3 (size) must be >= 0, got -4"),
        ("1 9 9", "seq 1 repeats the request on line 1"),
    ],
)
def test_bu98_bad_line_messages(tmp_path, bad_line, message):
    text = "1 0 10\n2 1 20\n" + bad_line + "\n4 0 10\n"
    for gz in (False, True):
        p = write(tmp_path / ("b.tr.gz" if gz else "b.tr"), text, gz)
        with pytest.raises(UserError) as err:
            bu98.read(p, use_cache=False)
        assert str(err.value) == f"{p}:3: {message}"
        t = bu98.read(p, use_cache=False, on_bad_line="skip")
        assert t.counts["skipped_bad_lines"] == 1 and t.jobs["job_id"].to_list() == [1, 2, 4]
        assert t.meta["first_skipped"] == f"{p}:3: {message}"
        accounted(t)


def test_bu98_truncated_gzip(tmp_path):
    data = gzip.compress("".join(f"{i} {i % 97} {i * 13 % 5000 + 1}\n" for i in range(1, 100_001)).encode())
    p = write(tmp_path / "cut.tr.gz", data[: len(data) // 2])
    for mode in ("error", "skip"):
        with pytest.raises(UserError, match=rf"^{re.escape(str(p))}: .*truncated"):
            bu98.read(p, use_cache=False, on_bad_line=mode)


# ---------------------------------------------------------------- garbage lines

GARBAGE = st.one_of(
    st.text(max_size=120).map(lambda s: s.encode("utf-8")),
    st.binary(max_size=120),
    st.lists(
        st.sampled_from(["1", "-1", "2.5", "x", "nan", "1e3", "TCP_MISS/200", "/", "GET", ""]), min_size=2, max_size=12
    ).map(lambda xs: " ".join(xs).encode()),
)
BASES = {
    "squid": "".join(squid_line(f"{100 + i}.5", size=str(i * 100)) + "\n" for i in range(10)),
    "bu98": "".join(f"{i} {i % 3} {i * 100}\n" for i in range(1, 11)),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(BASES)),
    garbage=st.lists(st.tuples(st.integers(0, 10), GARBAGE), min_size=1, max_size=4),
    gz=st.booleans(),
)
def test_garbage_lines_never_crash(tmp_path_factory, name, garbage, gz):
    reader = {"squid": squid, "bu98": bu98}[name]
    chunks = [line.encode() for line in BASES[name].splitlines(keepends=True)]
    for pos, blob in sorted(garbage, key=lambda g: -g[0]):
        chunks.insert(pos, blob + b"\n")
    data = b"".join(chunks)
    p = write(tmp_path_factory.getbasetemp() / f"garbage-{name}{'.gz' if gz else ''}", data, gz)
    physical = data.count(b"\n") + (not data.endswith(b"\n"))  # only LF ends a line
    try:
        strict = reader.read(p, use_cache=False, min_bytes=0)
        strict_error = None
    except UserError as err:
        strict_error = str(err)
        # file:line, or -- when a plain file's first bytes look like gzip -- the file
        assert re.match(rf"^{re.escape(str(p))}:(\d+: | )", strict_error), strict_error
    try:
        t = reader.read(p, use_cache=False, min_bytes=0, on_bad_line="skip")
    except UserError as err:
        assert strict_error is not None and not re.match(rf"^{re.escape(str(p))}:\d+: ", str(err))
        return
    assert t.counts["lines"] == physical
    accounted(t)
    if name == "squid":
        squid_canonical(t.jobs)
    if strict_error is None:
        assert t.counts["skipped_bad_lines"] == 0
        assert_frame_equal(strict.jobs, t.jobs)
    else:
        assert t.counts["skipped_bad_lines"] >= 1
        assert t.meta["first_skipped"] == strict_error


# ---------------------------------------------------------------- cache


@pytest.mark.parametrize("reader", [squid, bu98])
def test_cache_roundtrip_and_option_keys(tmp_path, monkeypatch, reader):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(cache))
    if reader is squid:
        text = "\n".join(squid_line(f"{10 - i}.25", size=str(i * 7)) for i in range(6)) + "\n"
    else:
        text = "".join(f"{i} {i % 2} {i * 7 - 7}\n" for i in range(1, 7))
    p = write(tmp_path / "c.gz", text, gz=True)
    first = reader.read(p)
    assert len(list(cache.glob(f"{reader.NAME}-*.parquet"))) == 1

    def boom(*args, **kwargs):
        raise AssertionError("parsed again instead of reading the cache")

    with monkeypatch.context() as m:
        m.setattr(reader, "_parse", boom)
        second = reader.read(p)
    assert_frame_equal(first.jobs, second.jobs)
    assert second.counts == first.counts
    assert {k: v for k, v in second.meta.items() if k != "from_cache"} == first.meta

    changed = reader.read(p, min_bytes=0)
    assert changed.jobs.height == first.jobs.height + 1
    assert changed.meta["options"]["min_bytes"] == 0
    assert len(list(cache.glob(f"{reader.NAME}-*.parquet"))) == 2
    # a changed file is a new entry too
    write(p, text + ("\n" if reader is squid else "7 0 9\n"), gz=True)
    assert reader.read(p).counts["lines"] == first.counts["lines"] + 1
    assert len(list(cache.glob(f"{reader.NAME}-*.parquet"))) == 3
