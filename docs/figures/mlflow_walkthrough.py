"""The screenshots of docs/guide/tracking.md's walk-through, taken for real.

Runs the README's first sweep (``schedlab run sweeps/psbs-shape.toml``) in a
temporary folder, tracked into a real ``mlflow server`` on 127.0.0.1 (a
free port, a SQLite store), opens the link schedlab prints in headless
Chromium (Debian's, driven by playwright) and saves, next to this script:

* ``mlflow-runs.png`` -- the Runs table the link opens;
* ``mlflow-charts.png`` -- the saved view's charts (parallel coordinates,
  MST against the swept shape);
* ``mlflow-parent.png`` -- the sweep's parent run's artifacts: results.csv
  (one line per configuration) beside the headline figure.

MLflow's assistant panel is closed first (it takes a third of the page).
Each PNG is reduced to a 256-colour palette to stay small (< 300 KB).

    python docs/figures/mlflow_walkthrough.py
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
VIEWPORT = {"width": 1440, "height": 900}
WAIT_MS = 120_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    out.pop("MLFLOW_TRACKING_URI", None)
    return out


def start_server(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
        + ["--backend-store-uri", f"sqlite:///{work}/mlflow.db", "--artifacts-destination", str(work / "artifacts")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
        cwd=work,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(uri + "/health", timeout=2):
                return proc, uri
        except OSError:
            time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGTERM)
    raise SystemExit("mlflow server did not start")


def close_assistant(page) -> None:  # noqa: ANN001 - playwright's Page
    button = page.locator("button[aria-label='Close']").last
    try:
        button.click(timeout=5000)
    except Exception:  # noqa: BLE001 - no panel to close in this MLflow
        pass


def save(page, name: str) -> None:  # noqa: ANN001 - playwright's Page
    from PIL import Image

    path = OUT / name
    page.screenshot(path=str(path))
    Image.open(path).convert("RGB").quantize(256).save(path, optimize=True)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")


def parent_artifacts(uri: str, sweep: str) -> str:
    """The address of the sweep's parent run's artifacts (found by its ``schedlab.sweep`` tag)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(sweep)
    parent = client.search_runs([exp.experiment_id], f"tags.`schedlab.sweep` = '{sweep}'")[0]
    return f"{uri}/#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}/artifacts?workflowType=machine_learning"


def main() -> None:
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="schedlab-mlflow-walkthrough-"))
    proc, uri = start_server(work)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "schedlab.cli", "run", str(ROOT / "sweeps" / "psbs-shape.toml")]
            + ["--tracking-uri", uri, "--no-progress"],
            env=env(),
            cwd=work,
            capture_output=True,
            text=True,
            check=True,
        )
        link = re.search(r"MLflow: browse the runs: (\S+)", run.stdout)
        if link is None:
            raise SystemExit(f"no link in the run's output:\n{run.stdout}")
        print(link.group(0))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(link.group(1))
            page.wait_for_selector("[role=row][row-index] >> text=/ shape=/", timeout=WAIT_MS)
            close_assistant(page)
            time.sleep(2)
            save(page, "mlflow-runs.png")
            page.goto(link.group(1) + "&compareRunsMode=CHART")
            page.wait_for_selector("svg .xtitle >> text=shape", timeout=WAIT_MS)
            time.sleep(3)
            save(page, "mlflow-charts.png")
            page.goto(parent_artifacts(uri, "psbs-shape"))
            page.get_by_text("results.csv", exact=True).first.click(timeout=WAIT_MS)
            page.wait_for_selector("text=config_id", timeout=WAIT_MS)
            close_assistant(page)
            time.sleep(2)
            save(page, "mlflow-parent.png")
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server's own session
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
