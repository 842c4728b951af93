"""Screenshots to look at: each engine's schedule page (two policies on one instance,
``tests/view_cases.CASES``), one sweep figure per engine (``schedlab plot``, 2
replications: the small-n rule on show) and a whole-run page of 10,000 queue jobs
(PSBS vs SRPTE, shape 0.25: the overview), rendered in headless Chromium as
tests/test_views_look.py renders them (a figure's own 300-dpi PNG is its picture).
Writes PNGs (and the pages) to OUT.

    python benchmarks/view_screenshots.py [--out view-shots]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ from the checkout


from views import queue_jobs  # noqa: E402  (benchmarks/views.py: the 10k-job psbs-shape case)

from tests.view_cases import ARGS, CASES, open_page, results_dir  # noqa: E402


def main() -> None:
    from playwright.sync_api import sync_playwright

    from schedlab.plotting import plot
    from schedlab.views import replay as rp
    from schedlab.views.page import write_page
    from schedlab.views.replay import record_run

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="view-shots")
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for engine, case in CASES.items():
        root = results_dir(engine, out / "results")
        x = case["x"]
        a = rp.select(root, policy=case["policies"][0], where={x: str(case["workload"][x][0])})
        runs = [rp.replay(a), rp.replay(rp.partner(a, case["policies"][1]))]
        command = f"schedlab view {root} --config {a.config_id} --replication {a.replication}"
        title = f"{engine}: " + " vs ".join(r.label for r in runs)
        files.append(
            write_page(runs, out / f"{engine}-page.html", window=None, color_by=None, title=title, command=command)
        )
        files.append(plot(root, x=x, y=case["y"], out=out / f"{engine}-figure.svg").vector)
    runs = [record_run("queue", queue_jobs(10_000), p) for p in ("PSBS", "SRPTE")]
    runs[0].label, runs[1].label = "PSBS", "SRPTE"
    files.append(write_page(runs, out / "queue-10k-whole-run.html", window=None, color_by=None, title="10,000 jobs"))
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        for f in files:
            if f.suffix == ".svg":  # its 300-dpi PNG is beside it (a screenshot of an SVG document stalls)
                print(f.with_suffix(".png"))
                continue
            errors: list[str] = []
            page = open_page(browser, f, errors)
            png = f.with_suffix(".png")
            page.screenshot(path=str(png), full_page=True, timeout=600_000)
            page.close()
            print(png, "errors: " + "; ".join(errors) if errors else "")
        browser.close()


if __name__ == "__main__":
    main()
