"""Browsing a 10,000-configuration sweep in MLflow (a benchmark: prints figures, asserts nothing).

A results dir of ``--configs`` configurations (4 policies x loads x shapes x
sigmas, 2 replications each, rows written by hand: no simulation) is tracked
with ``schedlab track`` (a fresh process, the whole command) into

  (a) a SQLite file, then served by ``infra/mlflow-server.sh`` on that file;
  (b) PostgreSQL reached directly (``infra/mlflow-postgres.sh``'s database),
      then served by that recipe's ``mlflow server``,

and on each, directly and through the server, ``mlflow.search_runs`` is
timed for what a sweep's user asks: the runs where a swept value equals x,
ordered by the headline metric (``params.shape = '0.5'``, ``metrics.mst
ASC``), the same with a metric condition added (``and metrics.mst < 3``),
and -- once -- every run of the experiment. Each search is timed with
schedlab's indexes (`tracking_store.SEARCH_INDEXES`) and without them
(dropped, then created again), alternating, ``--repeat`` times each; the
best of each is printed and the ratio. Then headless Chromium opens the
link schedlab prints (`tracking_ui.experiment_url`) and the time until the
first configuration row is drawn is printed, with and without the indexes.

The machine is shared and noisy: the load average is printed with each
figure; compare the ratios, measured in one run.

    python benchmarks/tracking_browse.py [--configs 10000] [--targets sqlite,postgres] [--repeat 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from tracking import Server, env_for, free_port, postgres_missing, postgres_server  # noqa: E402  (benchmarks/tracking.py)

POLICIES = ["FIFO", "PS", "SRPT", "PSBS"]
LOADS = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
SIGMAS = [0.25, 0.5, 1.0, 2.0, 4.0, 0.125, 0.75, 1.5, 3.0, 6.0]
REPLICATIONS = 2
FILTER = "params.shape = '0.5'"
ORDER = ["metrics.mst ASC"]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def shapes(n_configs: int) -> list[float]:
    """As many shape values as make ``n_configs`` with the other axes (0.5 among them)."""
    per = max(1, n_configs // (len(POLICIES) * len(LOADS) * len(SIGMAS)))
    return [0.5] + [round(0.25 * k, 4) for k in range(3, per + 2)][: per - 1]


def write_results(d: Path, n_configs: int) -> int:
    """A results dir of the grid; returns its number of configurations."""
    import numpy as np
    import polars as pl

    grid = list(itertools.product(POLICIES, LOADS, shapes(n_configs), SIGMAS))
    configs = {
        f"c{i:05d}": {
            "engine": "queue",
            "policy": pol,
            "workload_kind": "synthetic",
            "params": {"load": load, "shape": shape, "sigma": sigma},
        }
        for i, (pol, load, shape, sigma) in enumerate(grid)
    }
    d.mkdir(parents=True)
    manifest = {
        "name": "browse10k",
        "engine": "queue",
        "spec_hash": "bench",
        "schedlab_version": "0.1.0",
        "created": "2026-01-01T00:00:00",
        "spec": {"name": "browse10k"},
        "param_columns": ["load", "shape", "sigma"],
        "configs": configs,
    }
    (d / "manifest.json").write_text(json.dumps(manifest))
    rng = np.random.default_rng(1)
    for pol in POLICIES:
        rows = [
            {
                "config_id": cid,
                "replication": r,
                "engine": "queue",
                "workload_kind": "synthetic",
                "seed": f"{cid}-{r}",
                **cfg["params"],
                "mst": float(rng.gamma(2.0, 2.0)),
                "slowdown_mean": float(rng.uniform(1, 5)),
            }
            for cid, cfg in configs.items()
            if cfg["policy"] == pol
            for r in range(REPLICATIONS)
        ]
        part = d / "summary" / f"policy={urllib.parse.quote(pol, safe='')}"
        part.mkdir(parents=True)
        pl.DataFrame(rows, schema_overrides={"replication": pl.Int64}).write_parquet(part / "part-0.parquet")
    return len(configs)


def track(results: Path, uri: str) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "track", str(results), "--uri", uri],
        env=env_for(ROOT),
        cwd=results.parent,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"schedlab track into {uri} failed: {out.stderr[-800:]}")
    return time.perf_counter() - t0


def set_indexes(db_uri: str, on: bool) -> None:
    """Create (``on``) or drop schedlab's search indexes in the database."""
    from sqlalchemy import create_engine, text

    from schedlab.platform.tracking.store import SEARCH_INDEXES

    engine = create_engine(db_uri)
    dialect = engine.dialect.name
    with engine.begin() as con:
        for statement in SEARCH_INDEXES[dialect]:
            if on:
                con.execute(text(statement))
            else:
                name = statement.split("IF NOT EXISTS ")[1].split()[0]
                con.execute(text(f"DROP INDEX IF EXISTS {name}"))
        if dialect == "sqlite":
            con.execute(text("ANALYZE"))
        else:
            con.execute(text("ANALYZE params; ANALYZE tags; ANALYZE latest_metrics; ANALYZE runs"))
    engine.dispose()


def timed(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, n = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = fn()
        best = min(best, time.perf_counter() - t0)
    return best, n


def searches(uri: str, experiment_id: str, repeat: int, everything: bool) -> dict[str, tuple[float, int]]:
    """name -> (best seconds, runs returned) of the searches, through ``mlflow.search_runs``."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    exp = [experiment_id]
    out = {
        "shape = 0.5 by mst": timed(lambda: len(mlflow.search_runs(exp, FILTER, order_by=ORDER)), repeat),
        "+ mst < 3": timed(
            lambda: len(mlflow.search_runs(exp, FILTER + " and metrics.mst < 3", order_by=ORDER)), repeat
        ),
    }
    if everything:
        out["every run"] = timed(lambda: len(mlflow.search_runs(exp)), 1)
    return out


def first_rows(url: str) -> tuple[float, float, float]:
    """Seconds from opening ``url`` in a fresh headless Chromium page to (its first configuration
    row, the page's scripts loaded (DOMContentLoaded), the server's answer to the runs search)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            marks: dict[str, float] = {}
            page.on("domcontentloaded", lambda _: marks.setdefault("dom", time.perf_counter()))
            page.on(
                "requestfinished",
                lambda r: marks.setdefault("search", time.perf_counter()) if "runs/search" in r.url else None,
            )
            t0 = time.perf_counter()
            page.goto(url)
            page.wait_for_selector("[role=row][row-index] >> text=/ shape=/", timeout=300_000)
            done = time.perf_counter() - t0
            return done, marks.get("dom", t0) - t0, marks.get("search", t0) - t0
        finally:
            browser.close()


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f}"


def measure(label: str, db_uri: str, server_uri: str, experiment_id: str, repeat: int) -> None:
    from schedlab.platform.tracking.ui import experiment_url

    url = experiment_url(server_uri, experiment_id)
    for uri in (db_uri, server_uri):  # warm: imports, connections, the server's first request
        searches(uri, experiment_id, 1, everything=False)
    results: dict[tuple[str, bool], dict[str, tuple[float, int]]] = {}
    pages: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    for i, on in enumerate([False, True] * repeat):
        set_indexes(db_uri, on)
        for where, uri in (("direct", db_uri), ("server", server_uri)):
            got = searches(uri, experiment_id, 1, everything=(i == 1 and where == "direct"))
            for name, (secs, n) in got.items():
                best = results.setdefault((where, on), {}).get(name, (float("inf"), n))
                results[(where, on)][name] = (min(best[0], secs), n)
        pages[on].append(first_rows(url))
    for where in ("direct", "server"):
        for name, (secs, n) in results[(where, True)].items():
            before = results.get((where, False), {}).get(name)
            ratio = f", without indexes {before[0]:.2f} s ({before[0] / secs:.1f}x)" if before else ""
            print(f"  {label} {where}: search_runs {name}: {secs:.2f} s ({n} runs){ratio} [{load()}]", flush=True)
    best, without = min(pages[True]), min(pages[False])
    print(
        f"  {label}: Chromium, link to first configuration row: {best[0]:.1f} s with indexes "
        f"(scripts loaded at {best[1]:.1f} s, runs search answered at {best[2]:.1f} s), "
        f"{without[0]:.1f} s without [{load()}]",
        flush=True,
    )


def experiment_of(uri: str, name: str) -> str:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri).get_experiment_by_name(name).experiment_id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", type=int, default=10_000)
    ap.add_argument("--targets", default="sqlite,postgres")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="schedlab-bench-browse-"))
    os.chmod(work, 0o755)  # the PostgreSQL recipe runs postgres as an unprivileged user under it
    servers: list[Server] = []
    try:
        results = work / "results"
        n = write_results(results, args.configs)
        print(f"{n} configurations x {REPLICATIONS} replications [{load()}]", flush=True)
        wanted = args.targets.split(",")
        if "sqlite" in wanted:
            db = work / "srv" / "mlflow.db"
            uri = f"sqlite:///{db}"
            secs = track(results, uri)
            print(f"(a) SQLite: schedlab track {n}: {secs:.1f} s, {n / secs:.0f} runs/s [{load()}]", flush=True)
            srv = Server(
                ["bash", str(ROOT / "infra" / "mlflow-server.sh"), str(free_port()), str(work / "srv")], env_for(ROOT)
            )
            servers.append(srv)
            srv.wait_healthy()
            measure("(a) SQLite", uri, srv.uri, experiment_of(uri, "browse10k"), args.repeat)
        if "postgres" in wanted:
            why = postgres_missing()
            if why:
                print(f"(b) PostgreSQL: skipped ({why})")
            else:
                srv, pg_port = postgres_server(work)
                servers.append(srv)
                srv.wait_healthy()
                uri = f"postgresql+psycopg2://mlflow@127.0.0.1:{pg_port}/mlflow"
                secs = track(results, uri)
                print(f"(b) PostgreSQL: schedlab track {n}: {secs:.1f} s, {n / secs:.0f} runs/s [{load()}]", flush=True)
                measure("(b) PostgreSQL", uri, srv.uri, experiment_of(uri, "browse10k"), args.repeat)
    finally:
        for srv in servers:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
