"""Trace-reader speed: records/s for the first parse and for the cached read
(a benchmark: prints figures, asserts nothing).

    python benchmarks/trace_readers.py [--data ../shared/data] [--squid-lines 300000]

The Squid reader is also timed on a generated IRCache-format log of
--squid-lines requests (the real IRCache day is not obtainable; a user's own
file of hundreds of thousands of lines must replay fast).
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from schedlab.workloads.traces.registry import read_trace


def squid_log(path: Path, lines: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    t = 1168300800.0 + np.cumsum(rng.exponential(0.4, lines))
    size = np.maximum(1, rng.lognormal(8.0, 2.0, lines)).astype(np.int64)
    with gzip.open(path, "wt") as fh:
        for i in range(lines):
            fh.write(
                f"{t[i]:.3f} {int(rng.integers(1, 5000))} 10.0.0.{i % 250} TCP_MISS/200 {size[i]} GET "
                f"http://example.org/{i} - DIRECT/192.0.2.1 text/html\n"
            )


def timed(reader: str, path: Path, **options) -> tuple[int, float]:
    started = time.perf_counter()
    trace = read_trace(reader, str(path), **options)
    return trace.counts.get("lines", trace.jobs.height), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--squid-lines", type=int, default=300_000)
    args = parser.parse_args()
    data = Path(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SCHEDLAB_CACHE_DIR"] = str(Path(tmp) / "cache")
        generated = Path(tmp) / "ircache-like.access.log.gz"
        squid_log(generated, args.squid_lines)
        cases = [
            ("swf", data / "pwa-swf" / "HPC2N-2002-2.2-cln.swf.gz"),
            ("swf", data / "lublin" / "lublin_256.swf.gz"),
            ("swim", data / "swim-facebook" / "FB-2010_samples_24_times_1hr_0.tsv.gz"),
            ("squid", data / "web-proxy" / "squid-home-proxy-2020"),
            ("squid", generated),
            ("bu98", data / "web-proxy" / "bu98-proxy-trace"),
            ("google", data / "google-clusterdata-2011"),
        ]
        print(
            f"{'reader':7s} {'file':45s} {'records':>10s} {'parse rec/s':>12s} {'cached rec/s':>13s} {'speed-up':>9s}"
        )
        for reader, path in cases:
            if not path.exists():
                print(f"{reader:7s} {path.name:45s} (missing)")
                continue
            if path.is_dir() and reader != "google":
                files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.endswith(".md"))
                path = files[0]
            n, first = timed(reader, path)
            _, cached = timed(reader, path)
            print(
                f"{reader:7s} {path.name[:45]:45s} {n:10d} {n / first:12.0f} {n / cached:13.0f} {first / cached:8.1f}x"
            )


if __name__ == "__main__":
    main()
