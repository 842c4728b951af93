"""A sweep on a one-host Ray cluster whose raylets are killed and restarted
while it runs (issue 42), and the checks on its rows: shared by
`benchmarks/ray_chaos.py` (the full size: 8 raylets, 100,000 configurations,
a kill every 20 s) and `tests/test_ray_chaos.py` (a short real version).

The cluster is `tests/test_platform_cluster.py`'s recipe (docs/cluster.md §4):
a private temp dir, free ports, token auth with a fresh token, everything on
127.0.0.1, each `ray start --block` in its own session. The head has no CPUs,
so every task runs on a raylet that may be killed; the driver
(`schedlab run --address`) attaches to the head, which is never killed. A kill
is a node's loss: every process of that raylet's session (the raylet, its
agents, its workers) gets SIGKILL by PID (`processes.kill_session`); a
replacement joins with `ray start --address` meanwhile (`Chaos`: at most half
the raylets down at once). Clean-up kills the
sessions this module started and removes its temp dir, never `ray stop`.

The checks: the sweep's rows against the same spec run in one process
(backend "local", one CPU: in the driver's own process) -- every
configuration's key exactly once, no failure records, and the two frames,
sorted by key and without `VARYING` (wall-clock columns), equal bit for bit.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.processes import checkout_env, cmdline, kill_session, proc_stat, session_members
from tests.test_platform_cluster import HEAD_ENV, RAY, RAY_START_LOOPBACK, free_ports, ray_env

#: Ray's CLI: on PATH, or beside this interpreter (a virtualenv run without activating it); None: absent.
RAY_CLI = RAY or next((str(p) for p in [Path(sys.executable).with_name("ray")] if p.exists()), None)

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
#: Columns that legitimately differ between two runs of the same spec: wall-clock times
#: (the rows carry no host or node names). Every other column must be bit-identical.
VARYING = ("sim_seconds",)
#: The sweep's policies: every configuration is one policy on one workload point.
POLICIES = ("FIFO", "PS")
#: Jobs per simulated queue.
NJOBS = 50
#: Seconds one `ray start` may take to say it started, on a loaded 2-core machine.
START_TIMEOUT = 120.0
#: Object store of each raylet (shared memory, touched as used): small, there are many raylets.
OBJECT_STORE_BYTES = 128 * 2**20
#: Seconds a starting raylet waits for the GCS to list it (Ray's default, 30 s, is too short when
#: raylets start while a sweep keeps both cores busy).
RAYLET_REGISTER_SECONDS = 120


# ---- the spec -----------------------------------------------------------------------------
def grid(points: int) -> tuple[list[float], list[float]]:
    """Load and sigma values whose product has ``points`` workload points: the
    divisor of ``points`` nearest its square root is the length of the sigma axis."""
    n_sigma = max(d for d in range(1, int(points**0.5) + 1) if points % d == 0)
    n_load = points // n_sigma
    loads = [round(0.1 + 0.8 * i / n_load, 9) for i in range(n_load)]
    sigmas = [round(0.1 + 1.9 * i / n_sigma, 9) for i in range(n_sigma)]
    return loads, sigmas


def spec_text(configs: int, seed: int, out: Path, *, name: str, execution: dict[str, object]) -> str:
    """A queue sweep of ``configs`` configurations (an even number): FIFO and PS
    on ``configs / 2`` synthetic workload points of `NJOBS` jobs, one replication,
    no tracking; ``execution`` is its ``[execution]`` table."""
    if configs < 2 or configs % 2:
        raise ValueError(f"configurations must be even and >= 2 (two policies a point), not {configs}")
    loads, sigmas = grid(configs // 2)
    table = "\n".join(f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in execution.items())
    return (
        f'name = "{name}"\nengine = "queue"\nseed = {seed}\npolicies = {list(POLICIES)!r}\n\n'
        f'[workload]\nkind = "synthetic"\nnjobs = {NJOBS}\nload = {loads!r}\nsigma = {sigmas!r}\n\n'
        f'[replications]\nn = 1\n\n[outputs]\ndir = "{out}"\n\n[tracking]\nenabled = false\n\n'
        f"[execution]\n{table}\n"
    ).replace("'", '"')


# ---- the cluster --------------------------------------------------------------------------
@dataclass
class Node:
    """One `ray start --block` process (the leader of its session) and its log."""

    proc: subprocess.Popen
    log: Path


class ChaosCluster:
    """A head (no CPUs, never killed) and raylets that `Chaos` kills and
    restarts. Every `ray start` it ran is the leader of its own session;
    `close` kills them all (a half-started raylet too) and refuses to start more."""

    def __init__(self, address: str, env: dict[str, str], temp_dir: str, log_dir: Path, cpus: int) -> None:
        self.address, self.env, self.temp_dir, self.log_dir, self.cpus = address, env, temp_dir, log_dir, cpus
        self.raylets: list[Node] = []  # alive (not killed) raylets, the head aside
        self.sessions: list[subprocess.Popen] = []  # every `ray start` run, the head's first
        self.pids: list[int] = []  # their PIDs (= session ids), kept after `close`
        self.started = 0  # raylets started, the first ones included
        self.closed = False
        self.lock = threading.Lock()

    def start(self, command: list[str], env: dict[str, str], log: Path) -> Node:
        """``command`` (a `ray start --block`) in a session of its own; returns once
        Ray says it started, raises RuntimeError if it does not within `START_TIMEOUT`."""
        with self.lock:
            if self.closed:
                raise RuntimeError("the cluster is closed")
            with open(log, "w") as fh:
                proc = subprocess.Popen(command, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
            self.sessions.append(proc)
            self.pids.append(proc.pid)
        deadline, raylet = time.monotonic() + START_TIMEOUT, None
        while "Ray runtime started" not in log.read_text():
            raylet = raylet or _raylet_of(proc.pid)
            state = proc_stat(raylet) if raylet is not None else ("R", 0)
            died = state is None or state[0] == "Z"  # `ray start` reaps its raylet only when it gives up
            if died or proc.poll() is not None or time.monotonic() > deadline:
                kill_session(proc)
                why = "its raylet died" if died else "exited" if proc.poll() is not None else "timed out"
                raise RuntimeError(f"{log.name}: `ray start` did not come up ({why})")
            time.sleep(0.25)
        return Node(proc, log)

    def start_raylet(self) -> Node:
        """A raylet joining the head with `ray start --address` (docs/cluster.md §4's loopback
        one-liner); it counts among the alive raylets once Ray says it started."""
        with self.lock:
            self.started += 1
            log = self.log_dir / f"raylet-{self.started}.log"
        command = [*RAY_START_LOOPBACK, "start", "--address", self.address, "--num-cpus", str(self.cpus)]
        node = self.start([*command, *_common(self.temp_dir), "--block"], self.env, log)
        with self.lock:
            self.raylets.append(node)
        return node

    def kill_one(self, rng: random.Random) -> bool:
        """SIGKILL every process of an alive raylet picked by ``rng`` (False: none alive)."""
        with self.lock:
            if not self.raylets:
                return False
            victim = self.raylets.pop(rng.randrange(len(self.raylets)))
        kill_session(victim.proc)
        return True

    def close(self) -> None:
        with self.lock:
            self.closed = True
            sessions, self.sessions, self.raylets = self.sessions, [], []
        for proc in reversed(sessions):
            kill_session(proc)


def _raylet_of(session: int) -> int | None:
    """The PID of the raylet binary in ``session``, once `ray start` has started it."""
    for pid in session_members(session):
        if "/raylet/raylet " in cmdline(pid):
            return pid
    return None


def _common(temp_dir: str) -> list[str]:
    return ["--temp-dir", temp_dir, "--object-store-memory", str(OBJECT_STORE_BYTES), "--disable-usage-stats"]


@contextlib.contextmanager
def chaos_cluster(raylets: int, cpus: int, log_dir: Path) -> Iterator[ChaosCluster]:
    """A head and ``raylets`` raylets of ``cpus`` logical CPUs each; everything
    started here is killed on the way out, and its temp dir removed."""
    temp_dir = tempfile.mkdtemp(prefix="slchaos-", dir="/tmp")  # Unix socket paths must stay short
    env = checkout_env(ray_env(temp_dir))
    env["RAY_raylet_start_wait_time_s"] = str(RAYLET_REGISTER_SECONDS)
    env["RAY_DEDUP_LOGS"] = "0"  # every retry Ray reports reaches the driver's output as its own line
    gcs, client = free_ports(2)
    cluster = ChaosCluster(f"127.0.0.1:{gcs}", env, temp_dir, log_dir, cpus)
    try:
        head = [str(RAY_CLI), "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(gcs)]
        head += [
            "--num-cpus",
            "0",
            "--include-dashboard",
            "false",
            "--ray-client-server-port",
            str(client),
            *_common(temp_dir),
        ]
        cluster.start([*head, "--block"], {**env, **HEAD_ENV}, log_dir / "head.log")
        for _ in range(raylets):  # one at a time: raylets registering at once overload a busy GCS
            cluster.start_raylet()
        yield cluster
    finally:
        cluster.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


# ---- the chaos ----------------------------------------------------------------------------
class Chaos(threading.Thread):
    """Every ``every`` seconds, on a fixed clock: SIGKILL every process of an
    up raylet picked at random (seeded), and start its replacement with `ray
    start --address` beside the clock (again until it comes up: under load a
    new raylet may abort because its dashboard agent did not write its port
    file within Ray's fixed 15 s, ray-project/ray#65983; each failed attempt
    is in ``errors``). At most half the raylets (at least one) are down or
    starting at once: a tick that would exceed it kills nothing
    (``deferred``). Without that bound, kills faster than a loaded machine
    restarts raylets left only raylets too young to finish a task: no
    progress, which says nothing about the platform."""

    def __init__(self, cluster: ChaosCluster, every: float, seed: int, raylets: int) -> None:
        super().__init__(name="chaos", daemon=True)
        self.cluster, self.every, self.rng = cluster, every, random.Random(seed)
        self.max_down = max(1, raylets // 2)
        self.stopping = threading.Event()
        self.kills = self.restarts = self.deferred = 0
        self.down = 0  # raylets killed whose replacement is not up yet
        self.errors: list[str] = []
        self.kill_times: list[float] = []
        self.lock = threading.Lock()

    def run(self) -> None:
        start, tick = time.monotonic(), 1
        while not self.stopping.wait(max(0.0, start + tick * self.every - time.monotonic())):
            tick += 1
            with self.lock:
                if self.down >= self.max_down:
                    self.deferred += 1
                    continue
            if not self.cluster.kill_one(self.rng):
                self.deferred += 1
                continue
            with self.lock:
                self.down += 1
                self.kills += 1
                self.kill_times.append(time.monotonic())
            threading.Thread(target=self._replace, name="replace", daemon=True).start()

    def _replace(self) -> None:
        while not self.stopping.is_set():
            try:
                self.cluster.start_raylet()
            except RuntimeError as err:
                if not self.stopping.is_set():  # not the clean-up's doing
                    self.errors.append(str(err))
                continue
            with self.lock:
                self.down -= 1
                self.restarts += 1
            return

    @property
    def intervals(self) -> float:
        """Mean seconds between kills (nan with fewer than two)."""
        times = self.kill_times
        return (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else float("nan")

    def stop(self) -> None:
        """No more kills nor restarts (a replacement still starting is killed by `ChaosCluster.close`)."""
        self.stopping.set()


# ---- the run ------------------------------------------------------------------------------
#: What Ray prints to the driver (``log_to_driver``) for each retry of a task whose worker or node died.
RETRY_LINE = re.compile(r"Task run_instances failed\. There are \d+ retries remaining")


@dataclass
class Outcome:
    """What `run_chaos` measured and checked."""

    configs: int
    raylets: int
    kills: int  # raylets killed while the sweep ran
    restarts: int  # replacements that came up while it ran
    interval: float  # mean seconds between kills (`Chaos.intervals`)
    deferred: int  # ticks that killed nothing: half the raylets down already (`Chaos`)
    restart_errors: list[str]
    sweep_wall: float  # seconds of the `schedlab run --address` process
    reference_wall: float  # seconds of the one-process run
    summary: str  # the sweep's summary line
    ray_retries: int  # retries Ray reported to the driver (`RETRY_LINE`)
    rows: int  # rows on disk after the sweep
    duplicates: int  # keys on disk more than once
    missing: int  # keys of the one-process run without a row
    failures: int  # failure records on disk
    identical: bool  # the sorted frames, without `VARYING`, equal
    returncode: int  # of `schedlab run --address`
    sessions: list[int]  # the sessions of every `ray start` and `schedlab run` the run started

    @property
    def ok(self) -> bool:
        return (
            self.returncode == 0
            and self.rows == self.configs
            and not self.duplicates
            and not self.missing
            and not self.failures
            and self.identical
        )


def _run(
    command: list[str], env: dict[str, str], log: Path, timeout: float, started: list[int]
) -> tuple[int, str, float]:
    """``command`` in a session of its own (its id appended to ``started``); (exit code,
    output, wall seconds). Its session is killed at its end or at ``timeout`` (exit code -1)."""
    t = time.monotonic()
    with open(log, "w") as fh:
        proc = subprocess.Popen(command, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    started.append(proc.pid)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = -1
    finally:
        kill_session(proc)
    return rc, log.read_text(), time.monotonic() - t


def run_chaos(work: Path, *, configs: int, raylets: int, cpus: int, every: float, seed: int, timeout: float) -> Outcome:
    """The sweep (``[execution]`` defaults: Ray's retries as a user gets them) on
    a cluster losing a raylet every ``every`` seconds, then the same spec in one
    process, and the checks (module docstring)."""
    import polars as pl

    import schedlab

    work.mkdir(parents=True, exist_ok=True)
    on_ray, in_process = work / "out-ray", work / "out-one"
    ray_spec, one_spec = work / "ray.toml", work / "one.toml"
    ray_spec.write_text(spec_text(configs, seed, on_ray, name="chaos", execution={"backend": "ray"}))
    one = {"backend": "local", "num_cpus": 1}
    one_spec.write_text(spec_text(configs, seed, in_process, name="chaos", execution=one))
    started: list[int] = []  # sessions of the `schedlab run`s
    with chaos_cluster(raylets, cpus, work) as cluster:
        chaos = Chaos(cluster, every, seed, raylets)
        chaos.start()
        try:
            rc, output, wall = _run(
                [*SCHEDLAB, "run", str(ray_spec), "--address", cluster.address, "--no-tracking", "--no-progress"],
                cluster.env,
                work / "sweep.log",
                timeout,
                started,
            )
        finally:
            chaos.stop()
        kills, restarts, deferred = chaos.kills, chaos.restarts, chaos.deferred  # while the sweep ran
    chaos.join()
    one_rc, one_output, one_wall = _run(
        [*SCHEDLAB, "run", str(one_spec), "--no-tracking", "--no-progress"],
        checkout_env(),
        work / "one.log",
        timeout,
        started,
    )
    if one_rc != 0:
        raise RuntimeError(f"the one-process run failed ({one_rc}):\n{one_output[-3000:]}")
    summary = next((line for line in output.splitlines() if " rows written" in line), output[-2000:])
    want = schedlab.load(in_process).collect().drop(VARYING).sort("config_id", "replication")
    got = schedlab.load(on_ray).collect() if (on_ray / "summary").exists() else want.clear()
    failures = pl.read_parquet(on_ray / "failures").height if (on_ray / "failures").exists() else 0
    keys = got.select("config_id", "replication")
    got = got.drop(VARYING, strict=False).sort("config_id", "replication")
    return Outcome(
        configs=configs,
        raylets=raylets,
        kills=kills,
        restarts=restarts,
        interval=chaos.intervals,
        deferred=deferred,
        restart_errors=chaos.errors,
        sweep_wall=wall,
        reference_wall=one_wall,
        summary=summary,
        ray_retries=len(RETRY_LINE.findall(output)),
        rows=keys.height,
        duplicates=int(keys.is_duplicated().sum()),
        missing=want.join(got, on=["config_id", "replication"], how="anti").height,
        failures=failures,
        identical=sorted(got.columns) == sorted(want.columns) and got.select(want.columns).equals(want),
        returncode=rc,
        sessions=[*cluster.pids, *started],
    )


def env_note() -> str:
    """The machine the figures were measured on."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} CPUs, load average {load}"
