"""MLflow tracking throughput (a benchmark: prints figures, asserts nothing).

The issue's sweep of 600 small configurations -- FIFO and PS over 300 grid
points (10 loads x 6 shapes x 5 sigmas), 200 jobs, 1 replication -- is run
once with ``--no-tracking``; then ``schedlab track DIR`` (a fresh process,
the whole command: start-up, reading Parquet, logging, the final verify) is
timed into

  (a) a fresh SQLite store,
  (b) an ``mlflow server`` on SQLite (``infra/mlflow-server.sh``),
  (c) an ``mlflow server`` on PostgreSQL (``infra/mlflow-postgres.sh``), when
      PostgreSQL's binaries and psycopg2 are there,
  (d) that PostgreSQL directly (a ``postgresql+psycopg2://`` database URI, no
      server: a fresh database per timed run),

and configuration runs/s are printed, with runs per CPU-second of the
``schedlab track`` process (its own CPU, not the database's: on a shared
machine the steadier figure). For a server, and for PostgreSQL used
directly, the CPU its processes (the recipe's session: mlflow's workers; and
PostgreSQL's, found from its ``postmaster.pid``, with the backends it has
reaped) spent per configuration run is read from /proc before and
after each timed ``schedlab track``, next to the client's, and the ceiling
they set on this machine is printed as arithmetic: cores x 1000 / (server +
client CPU-ms per run) runs/s, what no concurrency setting can pass. ``--before REV`` also times the
schedlab of git revision REV (extracted to a temporary folder and put first
on PYTHONPATH) into the same targets, interleaved with the current code
(before, after, before, after, ... with ``--repeat``), each into a fresh
SQLite file or a fresh experiment of the same server, so both see the same
machine load; the ratio after/before is printed per target. The servers are
started with the recipes' default settings and stopped (their own session)
at the end. The machine is shared and noisy: the load average is printed.

``--configs N`` tracks a wider grid of N configurations instead (e.g. 10000, 100000: the rate at scale);
``--workers 4`` gives both servers that many workers (the rate and the ceiling per worker count).

    python benchmarks/tracking.py [--before REV] [--repeat 1] [--targets sqlite,server,postgres,postgres-db]
        [--configs 600] [--workers N] [--server-args ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N_CONFIGS = 600
SPEC = """
name = "track600"
engine = "queue"
seed = 1
policies = ["FIFO", "PS"]

[workload]
kind = "synthetic"
njobs = 200
load = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
shape = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
sigma = [0.25, 0.5, 1.0, 2.0, 4.0]

[replications]
n = 1

[outputs]
dir = "{out}"
per_job = false
"""
#: ``--configs N`` (N a multiple of 20, > 600): the same grid widened -- 10 loads x N/20 shapes x 1 sigma
#: x 2 policies, 20 jobs a configuration (the sweep is only the input here: tracking is timed).
BIG_SPEC = """
name = "track{n}"
engine = "queue"
seed = 1
policies = ["FIFO", "PS"]

[workload]
kind = "synthetic"
njobs = 20
load = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
shape = {shapes}
sigma = 1.0

[replications]
n = 1

[outputs]
dir = "{out}"
per_job = false
"""
SERVER_BOOT = 300.0
#: Seconds to wait, and between looks, for PostgreSQL to reap a timed client's backends (`Server.settle`).
SETTLE_WAIT = 30.0
SETTLE_POLL = 0.5
#: The issue's figures for the code before this work (one synchronous client, fixed 60 s cut-off).
ISSUE_BEFORE = {"sqlite": 24.0, "server": 5.0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_for(pythonpath: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(pythonpath),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def track(code: Path, results: Path, uri: str, experiment: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `schedlab track` process (exit 0 required). On a
    shared machine the CPU seconds are the steadier figure: wall time includes waiting for a core."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "schedlab.cli", "track", str(results), "--uri", uri, "--experiment", experiment],
        env=env_for(code),
        cwd=results.parent,  # `python -m` puts the working dir first on sys.path: in the checkout, it beat PYTHONPATH
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0 or f"{N_CONFIGS} configuration runs match" not in out.stdout.replace(",", ""):
        print(f"  schedlab track ({code}) into {uri} failed ({out.returncode}): {out.stderr.strip()[-400:]}")
        return float("inf"), cpu
    return took, cpu


CLK_TCK = os.sysconf("SC_CLK_TCK")


def processes() -> dict[int, tuple[int, int, float]]:
    """pid -> (parent pid, session id, CPU seconds) of every process, from /proc. A process's CPU
    includes its waited-for children's (cutime, cstime): PostgreSQL's postmaster reaps each
    connection's backend when it ends, so a direct client's backends, gone before they could be
    read, are still counted in the postmaster's figure."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        out[int(entry)] = (int(fields[1]), int(fields[3]), sum(int(f) for f in fields[11:15]) / CLK_TCK)
    return out


class Server:
    """A recipe from infra/ in its own session; its URI is its first stdout line.
    ``pg_dir``: the PostgreSQL cluster it runs (pg_ctl detaches PostgreSQL from
    the session: its processes are found from the postmaster's pid)."""

    def __init__(self, argv: list[str], env: dict[str, str], pg_dir: Path | None = None):
        self.pg_dir = pg_dir
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, start_new_session=True
        )
        got: list[str] = []
        first = threading.Event()

        def read() -> None:  # the URI, then drain: a full pipe would block the server's own prints
            got.append(self.proc.stdout.readline().decode().strip())
            first.set()
            for _ in self.proc.stdout:
                pass

        threading.Thread(target=read, daemon=True).start()
        first.wait(SERVER_BOOT)
        if not got or not got[0]:
            self.stop()
            raise SystemExit(f"{argv[1]} gave no URI in {SERVER_BOOT:g} s")
        self.uri = got[0]

    def wait_healthy(self) -> None:
        """/health answers, then every worker has opened the store: a worker still starting
        (its own store check) would slow the first timed requests."""
        import urllib.request

        deadline = time.monotonic() + SERVER_BOOT
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.uri + "/health", timeout=5):
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise SystemExit(f"{self.uri} not healthy")
        for _ in range(20):
            with urllib.request.urlopen(self.uri + "/api/2.0/mlflow/experiments/search?max_results=1", timeout=60):
                pass

    def cpu(self) -> float:
        """CPU seconds used so far by the server's live processes (and their descendants)."""
        procs = processes()
        roots = {pid for pid, (_, sid, _) in procs.items() if sid == self.proc.pid}
        pidfile = self.pg_dir / "postmaster.pid" if self.pg_dir is not None else None
        if pidfile is not None and pidfile.exists():
            roots.add(int(pidfile.read_text().split()[0]))
        total = 0.0
        for pid, (ppid, _, cpu) in procs.items():
            seen = 0
            while pid not in roots and ppid in procs and seen < 64:  # walk up to a root, if any
                pid, ppid, seen = ppid, procs[ppid][0], seen + 1
            if pid in roots:
                total += cpu
        return total

    def settle(self, database: str) -> None:
        """Wait (up to `SETTLE_WAIT` s) until no backend of ``database`` is left and the
        postmaster's reaped-children CPU has stopped moving: a direct client's backend reaches
        that figure only once the postmaster has reaped it, which can be seconds after the
        client exits (measured: 5.6 CPU-s of a 10,000-run `schedlab track` missing when read
        at once, there 5 s later; the next run's figure then carried it)."""
        if self.pg_dir is None:
            return
        pidfile = self.pg_dir / "postmaster.pid"
        if not pidfile.exists():
            return
        postmaster = int(pidfile.read_text().split()[0])
        deadline = time.monotonic() + SETTLE_WAIT
        last = -1.0
        while time.monotonic() < deadline:
            procs = processes()
            reaped = procs.get(postmaster, (0, 0, 0.0))[2]
            backends = 0
            for pid, (ppid, _, _) in procs.items():
                if ppid != postmaster:
                    continue
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        words = fh.read().decode(errors="replace").split()
                except OSError:
                    continue
                backends += len(words) > 2 and words[0] == "postgres:" and words[2] == database
            if backends == 0 and reaped == last:
                return
            last = reaped
            time.sleep(SETTLE_POLL)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the recipes stop their server (and PostgreSQL) on TERM
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def postgres_server(work: Path, extra: tuple[str, ...] = ()) -> tuple[Server, int]:
    """An `mlflow server` on a PostgreSQL cluster of its own under ``work/pg``
    (infra/mlflow-postgres.sh), healthy; and the database's port."""
    pg_port = free_port()
    srv = Server(
        ["bash", str(ROOT / "infra" / "mlflow-postgres.sh"), str(work / "pg"), str(pg_port), str(free_port()), *extra],
        env_for(ROOT),
        pg_dir=work / "pg" / "pg",
    )
    return srv, pg_port


def postgres_missing() -> str | None:
    sys.path.insert(0, str(ROOT))
    from tests.test_tracking_postgres import missing

    return missing()


def main() -> None:
    global N_CONFIGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="git revision whose schedlab is timed too (interleaved)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--targets", default="sqlite,server,postgres,postgres-db")
    ap.add_argument("--configs", type=int, default=N_CONFIGS, help="configurations (600: the issue's sweep)")
    ap.add_argument("--workers", type=int, help="the servers' worker processes (the recipes' MLFLOW_WORKERS)")
    ap.add_argument("--server-args", default="", help="extra `mlflow server` arguments for both recipes (shell words)")
    args = ap.parse_args()
    if args.workers:
        os.environ["MLFLOW_WORKERS"] = str(args.workers)
    work = Path(tempfile.mkdtemp(prefix="schedlab-bench-tracking-"))
    os.chmod(work, 0o755)  # the PostgreSQL recipe runs postgres as an unprivileged user under it
    servers: list[Server] = []
    try:
        codes = {"after": ROOT}
        if args.before:
            before = work / "before"
            before.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.before, "schedlab"], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
            codes = {"before": before, "after": ROOT}
        spec = work / "track600.toml"
        results = work / "results"
        if args.configs != N_CONFIGS:
            shapes = [round(0.25 + 0.01 * i, 2) for i in range(args.configs // 20)]
            spec.write_text(BIG_SPEC.format(n=args.configs, shapes=shapes, out=results))
            N_CONFIGS = 20 * len(shapes)
        else:
            spec.write_text(SPEC.format(out=results))
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "schedlab.cli", "run", str(spec), "--no-tracking", "--no-progress"],
            env=env_for(ROOT),
            check=True,
            capture_output=True,
        )
        print(
            f"sweep of {N_CONFIGS} configurations, --no-tracking: {time.perf_counter() - t0:.1f} s "
            f"(load average {os.getloadavg()[0]:.1f})"
        )
        # target -> (the URI of a timed run (which code, repeat) -> URI, the server whose CPU is read)
        targets: dict[str, tuple[Callable[[str, int], str], Server | None]] = {}
        wanted = args.targets.split(",")
        extra = shlex.split(args.server_args)
        if "sqlite" in wanted:
            targets["sqlite"] = (lambda which, i: f"sqlite:///{work}/{which}-{i}.db", None)
        if "server" in wanted:
            srv = Server(
                ["bash", str(ROOT / "infra" / "mlflow-server.sh"), str(free_port()), str(work / "srv"), *extra],
                env_for(ROOT),
            )
            servers.append(srv)
            srv.wait_healthy()
            targets["server"] = (lambda which, i, uri=srv.uri: uri, srv)
        if "postgres" in wanted or "postgres-db" in wanted:
            why = postgres_missing()
            if why:
                print(f"(c), (d) PostgreSQL: skipped ({why})")
            else:
                srv, pg_port = postgres_server(work, tuple(extra))
                servers.append(srv)
                srv.wait_healthy()
                if "postgres" in wanted:
                    targets["postgres"] = (lambda which, i, uri=srv.uri: uri, srv)
                if "postgres-db" in wanted:
                    from tests.test_tracking_postgres import fresh_database  # (postgres_missing put ROOT on the path)

                    # The server's CPU: its backends, counted in the postmaster's reaped-children time.
                    targets["postgres-db"] = (lambda which, i, port=pg_port: fresh_database(port, f"{which}_{i}"), srv)
        label = {
            "sqlite": "(a) fresh SQLite store",
            "server": "(b) mlflow server on SQLite",
            "postgres": "(c) mlflow server on PostgreSQL",
            "postgres-db": "(d) PostgreSQL directly, fresh database",
        }
        cores = os.cpu_count() or 1
        for name, (uri_of, server) in targets.items():
            times: dict[str, list[float]] = {k: [] for k in codes}
            cpus: dict[str, list[float]] = {k: [] for k in codes}
            server_cpus: dict[str, list[float]] = {k: [] for k in codes}
            for i in range(args.repeat):
                for which, code in codes.items():
                    target = uri_of(which, i)
                    busy = server.cpu() if server else 0.0
                    wall, cpu = track(code, results, target, f"track600-{which}-{i}")
                    if server is not None and name == "postgres-db":
                        server.settle(target.rsplit("/", 1)[1])
                    times[which].append(wall)
                    cpus[which].append(cpu)
                    server_cpus[which].append(server.cpu() - busy if server else 0.0)
            rates = {k: N_CONFIGS / min(v) for k, v in times.items()}  # 0.0: it failed
            line = f"{label[name]}: " + ", ".join(
                f"{k} {rates[k]:.1f} runs/s ({min(times[k]):.1f} s wall, {min(cpus[k]):.1f} s CPU in schedlab track: "
                f"{N_CONFIGS / min(cpus[k]):.0f} runs per CPU-second)"
                for k in codes
            )
            if "before" in rates:
                line += (
                    f", after/before {rates['after'] / rates['before']:.2f}x" if rates["before"] else ", before failed"
                )
                per_cpu = {k: N_CONFIGS / min(v) for k, v in cpus.items()}
                line += f", runs per CPU-second after/before {per_cpu['after'] / per_cpu['before']:.2f}x"
            elif name in ISSUE_BEFORE:
                line += f" (the issue's figure before: {ISSUE_BEFORE[name]:g} runs/s)"
            print(line + f" [load average {os.getloadavg()[0]:.1f}]", flush=True)
            if server is not None:
                for k in codes:
                    best = times[k].index(min(times[k]))
                    srv_ms = 1000 * server_cpus[k][best] / N_CONFIGS
                    cli_ms = 1000 * cpus[k][best] / N_CONFIGS
                    print(
                        f"    {k}: server {srv_ms:.1f} + client {cli_ms:.1f} CPU-ms per run "
                        f"-> ceiling on {cores} cores: {cores} x 1000 / {srv_ms + cli_ms:.1f} = "
                        f"{cores * 1000 / (srv_ms + cli_ms):.0f} runs/s",
                        flush=True,
                    )
    finally:
        for srv in servers:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
