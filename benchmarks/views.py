"""Schedule views: what a user waits for with `schedlab view`.

For a queue run of 10,000 jobs (PSBS vs SRPTE, Weibull shape 0.25 at load 0.9:
psbs-shape's case), batch runs (EASY on 240 processors) of 10k and 200k jobs,
and the full HPC2N log when ../shared/data is there (202,871 jobs, EASY on its
240 processors), prints: the recording replay (reference engine with the
recorder), the page's build time and its size in bytes, and -- with Debian's
chromium and playwright installed -- the browser's time from navigation to a
drawn plot and for one pan (a mouse drag, until Plotly redraws), on this
machine. A page's build includes compressing plotly.js (once per process, as
in `schedlab view`). `--window` pages (2 days) are measured too: the job boxes at full
detail for a part of the big trace.

    python benchmarks/views.py [--sizes 10000,200000] [--no-browser] [--no-hpc2n] [--no-queue]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ from the checkout

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from tests.view_cases import ARGS  # noqa: E402  (headless Chromium as the page tests start it)

HPC2N = Path("../shared/data/pwa-swf/HPC2N-2002-2.2-cln.swf.gz")
PROCS = 240


def synthetic(n: int, seed: int = 0) -> pl.DataFrame:
    """Rigid jobs at offered load ~0.85 on PROCS processors (log-uniform sizes)."""
    rng = np.random.default_rng(seed)
    procs = np.minimum(2 ** rng.integers(0, 7, n), PROCS)
    runtime = rng.lognormal(6.0, 1.5, n) + 1.0
    rate = 0.85 * PROCS / float(np.mean(procs * runtime))
    return pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.cumsum(rng.exponential(1.0 / rate, n)),
            "runtime": runtime,
            "procs": procs,
            "requested_time": runtime * rng.uniform(1.0, 4.0, n),
        }
    )


def browser_times(page_file: Path) -> tuple[float, float] | None:
    """(seconds to a drawn plot, seconds for one pan) in headless chromium."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.perf_counter()
        page.goto(page_file.as_uri(), timeout=600_000)
        page.wait_for_selector(".plotly-graph-div .main-svg", timeout=600_000)
        page.wait_for_function("document.querySelectorAll('.plotly-graph-div canvas').length > 0", timeout=600_000)
        loaded = time.perf_counter() - t0
        page.evaluate(
            "window._redrawn = 0; document.getElementsByClassName('plotly-graph-div')[0]"
            ".on('plotly_relayout', () => { window._redrawn += 1; });"
        )
        t1 = time.perf_counter()
        page.mouse.move(700, 250)
        page.mouse.down()
        page.mouse.move(500, 250, steps=5)
        page.mouse.up()
        page.wait_for_function("window._redrawn > 0", timeout=600_000)
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        panned = time.perf_counter() - t1
        b.close()
    return loaded, panned


def queue_jobs(n: int, seed: int = 0) -> pl.DataFrame:
    """Weibull(0.25) sizes of mean 1 at load 0.9, log-normal(0.5) estimates (psbs-shape, shape 0.25)."""
    rng = np.random.default_rng(seed)
    size = rng.weibull(0.25, n)
    size /= size.mean()
    return pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit": np.cumsum(rng.exponential(1 / 0.9, n)),
            "size": size,
            "estimate": size * rng.lognormal(0, 0.5, n),
            "weight": np.ones(n),
        }
    )


def measure_queue(n: int, out: Path, browser: bool) -> None:
    """PSBS vs SRPTE on one instance, the whole run (the overview page)."""
    from schedlab.views import page as pg
    from schedlab.views.replay import record_run

    jobs = queue_jobs(n)
    t0 = time.perf_counter()
    runs = [record_run("queue", jobs, p) for p in ("PSBS", "SRPTE")]
    recorded = time.perf_counter() - t0
    runs[0].label, runs[1].label = "PSBS", "SRPTE"
    pg._plotly_gz.cache_clear()
    t1 = time.perf_counter()
    page = pg.write_page(runs, out / "queue-whole.html", window=None, color_by=None, title="PSBS vs SRPTE")
    built = time.perf_counter() - t1
    line = (
        f"{'queue ' + str(n // 1000) + 'k':>14} {'whole run':>12}: {2 * n:>7} jobs (2 runs), recording replay "
        f"{recorded:6.2f} s, page built in {built:6.2f} s, {page.stat().st_size:>11,} bytes"
    )
    times = browser_times(page) if browser else None
    if times is not None:
        line += f"; chromium: drawn in {times[0]:5.2f} s, one pan {times[1]:5.2f} s"
    print(line, flush=True)


def measure(label: str, jobs: pl.DataFrame, out: Path, browser: bool) -> None:
    from schedlab.views import page as pg
    from schedlab.views.replay import record_run

    t0 = time.perf_counter()
    s = record_run("batch", jobs, "EASY", system={"procs": PROCS, "oversize": "drop"})
    recorded = time.perf_counter() - t0
    s.label = f"EASY {label}"
    lo, _ = s.span()
    for what, window in (("whole run", None), ("2-day window", (lo + 30 * 86400, lo + 32 * 86400))):
        pg._plotly_gz.cache_clear()
        t1 = time.perf_counter()
        page = pg.write_page([s], out / f"{label}-{what[:5]}.html", window=window, color_by="procs", title=label)
        built = time.perf_counter() - t1
        line = (
            f"{label:>14} {what:>12}: {s.n_jobs:>7} jobs, recording replay {recorded:6.2f} s, "
            f"page built in {built:6.2f} s, {page.stat().st_size:>11,} bytes"
        )
        times = browser_times(page) if browser else None
        if times is not None:
            line += f"; chromium: drawn in {times[0]:5.2f} s, one pan {times[1]:5.2f} s"
        print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,200000")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--no-hpc2n", action="store_true")
    ap.add_argument("--no-queue", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        if not args.no_queue:
            measure_queue(10_000, out, not args.no_browser)
        for n in (int(x) for x in args.sizes.split(",")):
            measure(f"synthetic {n // 1000}k", synthetic(n), out, not args.no_browser)
        if not args.no_hpc2n and HPC2N.exists():
            from schedlab.workloads.traces.registry import read_trace

            measure("HPC2N", read_trace("swf", str(HPC2N)).jobs, out, not args.no_browser)


if __name__ == "__main__":
    main()
