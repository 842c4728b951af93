"""SWIM Facebook reader: the real FB-2009/FB-2010 samples, crafted bad inputs,
garbage lines (hypothesis) and the Parquet cache."""

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
from schedlab.workloads.traces import swim
from schedlab.workloads.traces.registry import read_trace

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "swim-facebook"
FB2010 = DATA / "FB-2010_samples_24_times_1hr_0.tsv.gz"
FB2010_PATHS = DATA / "FB-2010_samples_24_times_1hr_withInputPaths_0.tsv.gz"
FB2009 = [DATA / "FB-2009_samples_24_times_1hr_0.tsv.gz", DATA / "FB-2009_samples_24_times_1hr_1.tsv.gz"]

needs_data = pytest.mark.skipif(not FB2010.exists(), reason=f"SWIM trace files not found in {DATA}")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path / "cache"))


def write(path: Path, lines: list[str], gz: bool = False) -> Path:
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


GOOD = [
    "job0\t9\t9\t1762\t0\t14347",
    "job1\t18\t9\t970\t609\t697",
    "job2\t20\t2\t53088744165\t1510005522\t5759777",
    "job3\t20\t0\t0\t0\t0",
    "job4\t31\t11\t100\t200\t300",
]


# ---------------------------------------------------------------- real files


@needs_data
def test_fb2010_matches_psbs_paper():
    tr = swim.read(FB2010)
    df = tr.jobs
    assert df.height == 24_442
    assert df["size"].mean() == pytest.approx(76.10e9, abs=0.005e9)  # paper: "76.1 GiB" (decimal GB)
    assert df["size"].max() == pytest.approx(85.21e12, abs=0.005e12)  # paper: "85.2 TiB" (decimal TB)
    # per-column means from PROVENANCE.md
    assert df["input_bytes"].mean() == pytest.approx(44.29e9, abs=0.005e9)
    assert df["shuffle_bytes"].mean() == pytest.approx(17.92e9, abs=0.005e9)
    assert df["output_bytes"].mean() == pytest.approx(13.89e9, abs=0.005e9)
    assert df.columns == ["job_id", "submit", "size", "name", "input_bytes", "shuffle_bytes", "output_bytes"]
    assert df.schema["job_id"] == pl.Int64 and df.schema["submit"] == pl.Float64 and df.schema["size"] == pl.Float64
    assert df["job_id"].to_list() == list(range(24_442))  # job0 ... job24441, in file order
    assert df["name"][0] == "job0" and df["name"][-1] == "job24441"
    assert tr.meta["job_id_from"] == "name"
    assert df["job_id"].n_unique() == df.height
    assert df["submit"].is_sorted()
    assert 0 <= df["submit"].min() and df["submit"].max() <= 86_408
    total = df["input_bytes"] + df["shuffle_bytes"] + df["output_bytes"]
    assert (df["size"] == total.cast(pl.Float64)).all()
    assert tr.counts == {
        "lines": 24_442,
        "jobs": 24_442,
        "skipped_bad_lines": 0,
        "zero_size": 127,
        "dropped_min_size": 0,
    }
    assert tr.meta["reader"] == "swim" and tr.meta["source"] == str(FB2010)
    assert tr.meta["options"]["size"] == "bytes"


@needs_data
def test_fb2010_min_size_drops_zero_jobs():
    tr = swim.read(FB2010, min_size=1)
    assert tr.jobs.height == 24_442 - 127
    assert tr.counts["dropped_min_size"] == 127 and tr.counts["zero_size"] == 127
    assert tr.jobs["size"].min() >= 1


@needs_data
@pytest.mark.parametrize(
    "path,jobs,mean,max_",
    [
        (FB2009[0], 5894, 9.49e9, 9.80e12),
        (FB2009[1], 6638, 8.56e9, 1.78e12),
    ],
)
def test_fb2009_parses(path, jobs, mean, max_):
    tr = swim.read(path)
    assert tr.jobs.height == tr.counts["jobs"] == tr.counts["lines"] == jobs
    assert tr.jobs["size"].mean() == pytest.approx(mean, abs=0.005e9)
    assert tr.jobs["size"].max() == pytest.approx(max_, abs=0.005e12)
    assert tr.jobs["submit"].is_sorted()


@needs_data
def test_with_input_paths_variant():
    tr = read_trace("swim", str(FB2010_PATHS))
    assert tr.jobs.height == 25_428
    assert tr.meta["fields_per_line"] == 9
    assert tr.jobs["input_path"][:2].to_list() == ["inputPath1", "inputPath2"]


@needs_data
def test_cache_second_read_is_equal_and_from_parquet(monkeypatch, tmp_path):
    first = swim.read(FB2010)
    assert len(list((tmp_path / "cache").glob("swim-*.parquet"))) == 1

    def no_parsing(*args, **kwargs):
        raise AssertionError("the cached read parsed the file again")

    monkeypatch.setattr(swim, "open_lines", no_parsing)
    second = swim.read(FB2010)
    assert second.jobs.equals(first.jobs)
    assert second.jobs.schema == first.jobs.schema
    assert second.meta == first.meta and second.counts == first.counts
    with pytest.raises(AssertionError, match="parsed the file again"):
        swim.read(FB2010, use_cache=False)
    with pytest.raises(AssertionError, match="parsed the file again"):  # other options: another entry
        swim.read(FB2010, min_size=1)


# ---------------------------------------------------------------- size options


def test_weighted_size_formula(tmp_path):
    p = write(tmp_path / "t.tsv", GOOD)
    df = swim.read(p, size="weighted", disk_network_ratio=2.5).jobs
    expect = df["input_bytes"] + df["output_bytes"] + 3.5 * df["shuffle_bytes"]
    assert df["size"].to_list() == pytest.approx(expect.to_list())
    default = swim.read(p, size="weighted")
    assert default.meta["options"]["disk_network_ratio"] == 4.0
    assert default.jobs["size"][1] == 970 + 697 + 5 * 609
    assert swim.read(p).jobs["size"][1] == 970 + 609 + 697


@pytest.mark.parametrize(
    "options,message",
    [
        ({"size": "weighted", "disk_network_ratio": 0}, "disk_network_ratio: must be > 0"),
        ({"size": "weighted", "disk_network_ratio": -1}, "disk_network_ratio: must be > 0"),
        ({"size": "weighted", "disk_network_ratio": "4"}, "disk_network_ratio: must be a finite number"),
        ({"size": "weighted", "disk_network_ratio": float("nan")}, "disk_network_ratio: must be a finite number"),
        ({"disk_network_ratio": 4}, 'disk_network_ratio: only used with size="weighted"'),
        ({"size": "tasks"}, "size: must be one of bytes, weighted"),
        ({"min_size": -1}, "min_size: must be >= 0"),
        ({"min_size": True}, "min_size: must be a finite number"),
        ({"sizes": "bytes"}, "sizes: unknown option of the swim reader"),
        ({"on_bad_line": "ignore"}, "on_bad_line: must be one of error, skip"),
    ],
)
def test_option_validation(tmp_path, options, message):
    p = write(tmp_path / "t.tsv", GOOD)
    with pytest.raises(UserError, match=re.escape(message)):
        swim.read(p, **options)


def test_min_size_leaving_nothing(tmp_path):
    p = write(tmp_path / "t.tsv", GOOD)
    with pytest.raises(UserError, match=re.escape(f"{p}: no jobs left: all 5 have size < min_size=1e+12")):
        swim.read(p, min_size=1e12)


# ---------------------------------------------------------------- ids, order


def test_non_integer_names_use_file_order(tmp_path):
    p = write(tmp_path / "t.tsv", ["a\t5\t5\t1\t1\t1", "b\t3\t0\t2\t2\t2", "c\t3\t0\t3\t3\t3"])
    tr = swim.read(p)
    assert tr.meta["job_id_from"] == "file_order"
    # sorted by submit, stable: b and c tie at 3 and keep file order
    assert tr.jobs["name"].to_list() == ["b", "c", "a"]
    assert tr.jobs["job_id"].to_list() == [1, 2, 0]
    assert tr.jobs["size"].to_list() == [6.0, 9.0, 3.0]


def test_duplicate_ids_use_file_order(tmp_path):
    p = write(tmp_path / "t.tsv", ["job7\t1\t1\t1\t1\t1", "7\t2\t1\t2\t2\t2"])
    tr = swim.read(p)
    assert tr.meta["job_id_from"] == "file_order"
    assert tr.jobs["job_id"].to_list() == [0, 1]


def test_plain_text_and_gzip_agree(tmp_path):
    a = swim.read(write(tmp_path / "a.tsv", GOOD), use_cache=False)
    b = swim.read(write(tmp_path / "b.tsv.gz", GOOD, gz=True), use_cache=False)
    assert a.jobs.equals(b.jobs)
    assert a.jobs["job_id"].to_list() == [0, 1, 2, 3, 4]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "bad_line,message",
    [
        ("job9\t40\t9\t1\t1", "expected 6 tab-separated fields, got 5"),
        ("job9\t40\t9\t1\t1\t1\tx\t\t", "expected 6 tab-separated fields, got 9"),
        ("", "expected 6 tab-separated fields, got 1"),
        ("job9\tsoon\t9\t1\t1\t1", "field 2 (submit time): not a number: 'soon'"),
        ("job9\t-4\t9\t1\t1\t1", "field 2 (submit time): must be a finite number >= 0; got '-4'"),
        ("job9\tinf\t9\t1\t1\t1", "field 2 (submit time): must be a finite number >= 0; got 'inf'"),
        ("job9\t40\tx\t1\t1\t1", "field 3 (inter-submit gap): not a number: 'x'"),
        ("job9\t40\t9\t1.5\t1\t1", "field 4 (input bytes): must be a non-negative integer; got '1.5'"),
        ("job9\t40\t9\t1\t-1\t1", "field 5 (shuffle bytes): must be a non-negative integer; got '-1'"),
        ("job9\t40\t9\t1\t1\tlots", "field 6 (output bytes): must be a non-negative integer; got 'lots'"),
        ("job9\t40\t9\t1\t1\t99999999999999999999", "field 6 (output bytes): too large"),
        ("\t40\t9\t1\t1\t1", "field 1 (job name): empty"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path, bad_line, message):
    lines = GOOD[:3] + [bad_line] + GOOD[3:]
    p = write(tmp_path / "t.tsv", lines)
    with pytest.raises(UserError) as err:
        swim.read(p)
    assert str(err.value).startswith(f"{p}:4: {message}")

    tr = swim.read(p, on_bad_line="skip")
    assert tr.counts["skipped_bad_lines"] == 1
    assert tr.counts["lines"] == 6 and tr.counts["jobs"] == 5
    assert tr.jobs["name"].to_list() == [line.split("\t")[0] for line in GOOD]
    assert tr.meta["first_skipped_bad_line"].startswith(f"{p}:4: {message}")


def test_bad_first_line(tmp_path):
    p = write(tmp_path / "t.tsv", ["job0 9 9 1 1 1"] + GOOD[1:])
    with pytest.raises(UserError, match=re.escape(f"{p}:1: expected 6 or 9 tab-separated fields, got 1")):
        swim.read(p)
    assert swim.read(p, on_bad_line="skip").counts["jobs"] == 4


def test_skip_counts_several_lines_in_gzip(tmp_path):
    lines = ["garbage", *GOOD[:2], "x\ty", GOOD[2], "job3\t1\t1\t1\t1\tz"]
    p = write(tmp_path / "t.tsv.gz", lines, gz=True)
    with pytest.raises(UserError, match=re.escape(f"{p}:1: ")):
        swim.read(p)
    tr = swim.read(p, on_bad_line="skip")
    assert tr.counts == {"lines": 6, "jobs": 3, "skipped_bad_lines": 3, "zero_size": 0, "dropped_min_size": 0}


def test_all_lines_bad(tmp_path):
    p = write(tmp_path / "t.tsv", ["x", "y"])
    with pytest.raises(UserError, match=re.escape(f"{p}: no valid job lines (2 bad lines skipped; first: {p}:1:")):
        swim.read(p, on_bad_line="skip")


@pytest.mark.parametrize("name,content", [("e.tsv", b""), ("e.tsv.gz", gzip.compress(b""))])
def test_empty_file(tmp_path, name, content):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(UserError, match=re.escape(f"{p}: empty file (no jobs)")):
        swim.read(p)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'nope.tsv'}: no such file")):
        swim.read(tmp_path / "nope.tsv")
    with pytest.raises(UserError, match=re.escape(f"{tmp_path}: is a directory")):
        swim.read(tmp_path)


def test_truncated_gzip(tmp_path):
    data = gzip.compress("".join(line + "\n" for line in GOOD * 200).encode())
    p = tmp_path / "t.tsv.gz"
    p.write_bytes(data[: len(data) // 2])
    for kwargs in ({}, {"on_bad_line": "skip"}, {"use_cache": False}):
        with pytest.raises(UserError, match=re.escape(str(p)) + ".*truncated"):
            swim.read(p, **kwargs)


def test_invalid_utf8_is_a_bad_line(tmp_path):
    p = tmp_path / "t.tsv"
    p.write_bytes(b"job0\t1\t1\t1\t1\t1\njob1\t2\t1\t\xff\xfe\t1\t1\n")
    with pytest.raises(UserError, match=re.escape(f"{p}:2: field 4 (input bytes)")):
        swim.read(p)


# ---------------------------------------------------------------- garbage (hypothesis)

_TOKENS = st.sampled_from(
    [
        "job1",
        "7",
        "-1",
        "0",
        "1.5",
        "1e400",
        "nan",
        "inf",
        "",
        " ",
        "x",
        "\u0663",
        "99999999999999999999999",
        "job",
        "\t",
        ",",
    ]
)
_FIELDISH = st.lists(
    _TOKENS | st.text(max_size=6).filter(lambda s: "\n" not in s and "\r" not in s), min_size=4, max_size=10
).map(lambda fs: "\t".join(fs).encode("utf-8", "surrogatepass"))
_TEXT = st.text(max_size=40).map(lambda s: s.replace("\n", "").replace("\r", "").encode("utf-8", "surrogatepass"))
_BYTES = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b""))
GARBAGE = st.lists(st.tuples(st.integers(1, len(GOOD)), _FIELDISH | _TEXT | _BYTES), min_size=1, max_size=5)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage=GARBAGE, gz=st.booleans())
def test_garbage_lines_give_user_error_or_counted_skip(garbage, gz):
    good = [line.encode() for line in GOOD]
    lines = list(good)
    for pos, junk in sorted(garbage, key=lambda g: g[0], reverse=True):
        lines.insert(pos, junk)  # never before line 1: the first line fixes the 6/9-field variant
    inserted = [i + 1 for i, line in enumerate(lines) if line not in good]
    data = b"".join(line + b"\n" for line in lines)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / ("t.tsv.gz" if gz else "t.tsv")
        p.write_bytes(gzip.compress(data) if gz else data)
        try:
            swim.read(p, use_cache=False)
        except UserError as err:
            m = re.match(re.escape(str(p)) + r":(\d+): ", str(err))
            assert m, str(err)
            assert int(m.group(1)) in inserted
        tr = swim.read(p, on_bad_line="skip", use_cache=False)
        assert tr.counts["lines"] == len(lines)
        assert tr.counts["jobs"] + tr.counts["skipped_bad_lines"] == len(lines)
        assert tr.counts["skipped_bad_lines"] <= len(garbage)
        assert {g.split("\t")[0] for g in GOOD} <= set(tr.jobs["name"].to_list())
        assert tr.jobs["job_id"].n_unique() == tr.jobs.height
        assert tr.jobs["submit"].is_sorted()


def test_cached_read_reports_its_own_path(tmp_path):
    a = write(tmp_path / "a.tsv", GOOD)
    b = write(tmp_path / "b.tsv", GOOD)  # same content: same cache entry
    assert swim.read(a).meta["source"] == str(a)
    assert swim.read(b).meta["source"] == str(b)
