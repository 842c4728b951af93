"""`schedlab workloads inspect` on the real traces (figures from PROVENANCE.md)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
FB2010 = DATA / "swim-facebook" / "FB-2010_samples_24_times_1hr_0.tsv.gz"
HPC2N = DATA / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"
pytestmark = pytest.mark.skipif(not HPC2N.exists(), reason="shared/data traces not present")


def inspect(*args, cache):
    return subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "workloads", "inspect", *args],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "SCHEDLAB_CACHE_DIR": str(cache)},
    )


def test_fb2010_figures(tmp_path):
    out = inspect(str(FB2010), "--format", "json", cache=tmp_path)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["jobs"] == 24442
    assert info["size"]["mean"] / 1e9 == pytest.approx(76.10, abs=0.005)
    text = inspect(str(FB2010), cache=tmp_path).stdout
    assert "mean 76.10 GB" in text and "max 85.21 TB" in text


def test_hpc2n_figures(tmp_path):
    info = json.loads(inspect(str(HPC2N), "--format", "json", cache=tmp_path).stdout)
    assert info["jobs"] == 202871 and info["MaxProcs"] == 240
    assert info["runtime"]["mean"] == pytest.approx(17024, abs=1)
    assert info["procs"]["mean"] == pytest.approx(6.36, abs=0.005)
    assert 0 < info["offered_load"] < 1


def test_errors(tmp_path):
    bad = tmp_path / "x.swf"
    bad.write_text("; MaxProcs: 4\n1 0 0 10 2\n")
    out = inspect(str(bad), cache=tmp_path)
    assert out.returncode == 2 and "x.swf:2:" in out.stderr and "Traceback" not in out.stderr
    out = inspect(str(tmp_path / "nope.swf"), cache=tmp_path)
    assert out.returncode == 2 and "no such file" in out.stderr
    odd = tmp_path / "jobs.dat"
    odd.write_text("1 2 3\n")
    out = inspect(str(odd), cache=tmp_path)
    assert out.returncode == 2 and "--reader" in out.stderr
