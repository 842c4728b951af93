"""A real multi-node Ray cluster on one host: two raylets started with `ray start`
(head: 1 CPU + resource ``head``; second node: 1 CPU + resource ``worker2``),
a sweep submitted with ``schedlab run SPEC --address``, proof from Ray's state
API that tasks ran on both nodes, and the same rows as a local run.

Isolation from other Ray users of this machine (an in-process test Ray, another
engineer's cluster): every Ray process here runs with a private temp dir
(``--temp-dir`` / ``RAY_TMPDIR``, so no ``ray_current_cluster`` file is shared),
free ports, and in its own session (``start_new_session``); clean-up kills
exactly the processes of those sessions, never ``ray stop`` (which would stop
every Ray on the host).

Auth: Ray 2.60 enables token auth for new local clusters, and a node or driver
joining by address does not turn it on by itself, so every process gets
``RAY_AUTH_MODE=token`` and the same fresh ``RAY_AUTH_TOKEN`` (the user's
``~/.ray/auth_token`` is neither read nor written). ``RAY_AUTH_MODE=disabled``
for all processes also works.

The dashboard is on (on a free port, bound to 127.0.0.1) because Ray's state
API (`ray list tasks`), which reports the node of every task attempt, is served
by it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.processes import kill_session, session_members

RAY = shutil.which("ray")
pytestmark = pytest.mark.skipif(RAY is None, reason="the `ray` CLI is not installed")

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
TIMING = ["sim_seconds"]  # wall-clock columns: the only ones allowed to differ
START_TIMEOUT = 90.0  # seconds for one `ray start` on a busy 2-core machine
RUN_TIMEOUT = 150.0


# ---- processes ----------------------------------------------------------------------
@contextlib.contextmanager
def session(cmd: list[str], env: dict[str, str], log_dir: Path, name: str):
    """``cmd`` running in its own session, output in ``log_dir/name.{out,err}``;
    on the way out, whatever is left of the session (e.g. the Ray processes of
    an in-process ``ray.init``) is killed, whatever happened."""
    out, err = open(log_dir / f"{name}.out", "w"), open(log_dir / f"{name}.err", "w")
    proc = subprocess.Popen(cmd, env=env, cwd=log_dir, stdout=out, stderr=err, text=True, start_new_session=True)
    try:
        yield proc
    finally:
        kill_session(proc)
        out.close()
        err.close()


def wait_output(
    proc: subprocess.Popen, log_dir: Path, name: str, timeout: float = RUN_TIMEOUT
) -> subprocess.CompletedProcess:
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = None
    res = subprocess.CompletedProcess(
        proc.args, rc, (log_dir / f"{name}.out").read_text(), (log_dir / f"{name}.err").read_text()
    )
    if rc is None:
        pytest.fail(
            f"timed out after {timeout:.0f} s: {' '.join(proc.args)}\n--- stdout\n{res.stdout[-4000:]}"
            f"\n--- stderr\n{res.stderr[-4000:]}"
        )
    return res


def run_session(
    cmd: list[str], env: dict[str, str], log_dir: Path, name: str, timeout: float = RUN_TIMEOUT
) -> subprocess.CompletedProcess:
    with session(cmd, env, log_dir, name) as proc:
        return wait_output(proc, log_dir, name, timeout)


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def ray_env(tmpdir: str | Path) -> dict[str, str]:
    """Environment for every Ray process of a test: private temp dir, no
    inherited cluster address, token auth with a fresh token."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_"))}
    env.update(
        RAY_TMPDIR=str(tmpdir),
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN=secrets.token_hex(32),
        RAY_USAGE_STATS_ENABLED="0",
        PYTHONUNBUFFERED="1",
        SCHEDLAB_TEST_IMPORT_LOG=str(Path(tmpdir) / "user-imports.log"),
    )
    return env


# ---- the cluster ----------------------------------------------------------------------
@dataclass
class Cluster:
    address: str  # GCS address, for `schedlab run --address`
    dashboard: str  # state API, for `ray list --address`
    env: dict[str, str]
    temp_dir: str
    log_dir: Path
    raylets: list[subprocess.Popen]  # the `ray start --block` processes, each the leader of its session


#: docs/cluster.md §4: a `ray start --address` that keeps a 127.0.0.1 address as given. Ray rewrites a
#: loopback address to the host's routable one unless multi-node clusters are off, and with them off
#: `ray start --address` refuses to run; this runs Ray's own CLI with the rewrite left out.
RAY_START_LOOPBACK = [
    sys.executable,
    "-c",
    "import sys, ray._private.services as s; s.resolve_ip_for_localhost = lambda host: host; "
    "from ray.scripts.scripts import main; sys.exit(main())",
]
#: The head of docs/cluster.md §4: multi-node clusters off for its processes, so Ray keeps 127.0.0.1
#: as its IP and every server of the head listens there only.
HEAD_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def _start_raylet(
    args: list[str], env: dict[str, str], log: Path, started: list, head: bool = False
) -> subprocess.Popen:
    fh = open(log, "w")
    command = [RAY, "start", *args, "--block"] if head else [*RAY_START_LOOPBACK, "start", *args, "--block"]
    try:
        proc = subprocess.Popen(
            command,
            env={**env, **HEAD_ENV} if head else env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        fh.close()
    started.append(proc)
    deadline = time.monotonic() + START_TIMEOUT
    while "Ray runtime started" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"`ray start {' '.join(args[:2])}` did not come up:\n{log.read_text()[-4000:]}")
        time.sleep(0.25)
    return proc


@contextlib.contextmanager
def ray_cluster(log_dir: Path):
    # Unix socket paths under the temp dir must stay short (< 108 bytes), so not tmp_path.
    temp_dir = tempfile.mkdtemp(prefix="slray-", dir="/tmp")
    env = ray_env(temp_dir)
    gcs, dashboard, client = free_ports(3)
    common = [
        "--num-cpus",
        "1",
        "--temp-dir",
        temp_dir,
        "--object-store-memory",
        str(256 * 2**20),
        "--disable-usage-stats",
    ]
    started: list[subprocess.Popen] = []
    try:
        _start_raylet(
            [
                "--head",
                "--node-ip-address",
                "127.0.0.1",
                "--port",
                str(gcs),
                "--resources",
                '{"head": 1}',
                *common,
                "--include-dashboard",
                "true",
                "--dashboard-host",
                "127.0.0.1",
                "--dashboard-port",
                str(dashboard),
                "--ray-client-server-port",
                str(client),
            ],
            env,
            log_dir / "ray-head.log",
            started,
            head=True,
        )
        _start_raylet(
            ["--address", f"127.0.0.1:{gcs}", "--resources", '{"worker2": 1}', *common],
            env,
            log_dir / "ray-worker2.log",
            started,
        )
        yield Cluster(f"127.0.0.1:{gcs}", f"http://127.0.0.1:{dashboard}", env, temp_dir, log_dir, started)
    finally:
        for proc in reversed(started):
            kill_session(proc)
        shutil.rmtree(temp_dir, ignore_errors=True)


def ray_list(cluster: Cluster, what: str, *extra: str) -> list[dict]:
    res = run_session(
        [RAY, "list", what, "--address", cluster.dashboard, "--format", "json", "--limit", "10000", *extra],
        cluster.env,
        cluster.log_dir,
        f"ray-list-{what}",
        timeout=60,
    )
    assert res.returncode == 0, f"ray list {what} failed:\n{res.stderr[-3000:]}"
    return json.loads(res.stdout)


def alive_nodes(cluster: Cluster, want: int) -> list[dict]:
    deadline = time.monotonic() + 60
    while True:
        nodes = [n for n in ray_list(cluster, "nodes", "--detail") if n["state"] == "ALIVE"]
        if len(nodes) >= want or time.monotonic() > deadline:
            return nodes
        time.sleep(1)


def finished_tasks(cluster: Cluster, name: str, want: int) -> list[dict]:
    """FINISHED attempts of tasks called ``name``. Workers report task events
    to the GCS about once a second, so poll until ``want`` are visible."""
    deadline = time.monotonic() + 60
    while True:
        tasks = ray_list(cluster, "tasks", "--detail", "--filter", f"name={name}")
        done = [t for t in tasks if t["state"] == "FINISHED"]
        if len(done) >= want or time.monotonic() > deadline:
            return done
        time.sleep(1)


# ---- the one-host recipe stays on loopback --------------------------------------------------

#: Local addresses `ss` prints for loopback listeners (IPv4, IPv4-mapped IPv6, IPv6).
LOOPBACK = ("127.0.0.1", "[::ffff:127.0.0.1]", "[::1]")


def listening(pids: set[int]) -> list[tuple[str, str, str]]:
    """(protocol, local address:port, process) of every TCP/UDP socket that
    one of ``pids`` listens on (``ss -ltnup``: listening TCP, bound UDP)."""
    import re

    out = subprocess.run(["ss", "-H", "-l", "-t", "-u", "-n", "-p"], capture_output=True, text=True, check=True)
    found = []
    for line in out.stdout.splitlines():
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            fields = line.split()
            name = re.findall(r'\(\("([^"]+)"', line)
            found.append((fields[0], fields[4], name[0] if name else "?"))
    return found


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs `ss` (iproute2) to list listening sockets")
def test_one_host_recipe_listens_on_loopback_only(tmp_path):
    """docs/cluster.md §4 as the tests run it: every socket that the head's and
    the second raylet's processes (GCS, raylets, dashboard and its agents, the
    Ray Client server, workers) listen on is bound to a loopback address."""
    with ray_cluster(tmp_path) as cluster:
        assert len(alive_nodes(cluster, 2)) == 2
        time.sleep(5.0)  # agents open their ports a moment after `ray start` says it started
        pids = {pid for proc in cluster.raylets for pid in session_members(proc.pid)}
        sockets = listening(pids)
    print("\n".join(f"{proto} {addr} {name}" for proto, addr, name in sockets))
    gcs_port = cluster.address.rsplit(":", 1)[1]
    assert any(addr.endswith(f":{gcs_port}") for _, addr, _ in sockets), sockets
    assert len({name for _, _, name in sockets}) >= 3, sockets  # the GCS, raylets and the dashboard at least
    outside = [s for s in sockets if s[1].rsplit(":", 1)[0] not in LOOPBACK]
    assert not outside, f"listening outside loopback: {outside}"


# ---- the sweep --------------------------------------------------------------------------
USER_POLICY = "userlib/mypsbs.py"  # a user's file: a verbatim copy of the built-in PSBS, beside the spec


def write_user_policy(spec_dir: Path) -> None:
    """A user's policy file outside the repository, which logs where each
    process imported it from (``SCHEDLAB_TEST_IMPORT_LOG``, set in every Ray
    process's environment) so the test can see that workers on both nodes
    imported the copy Ray shipped, not the driver's file."""
    import schedlab

    source = (Path(schedlab.__file__).parent / "engines" / "queue" / "policies" / "fsp.py").read_text()
    target = spec_dir / USER_POLICY
    target.parent.mkdir(parents=True, exist_ok=True)
    log = (
        'import os\nif "SCHEDLAB_TEST_IMPORT_LOG" in os.environ:\n'
        '    with open(os.environ["SCHEDLAB_TEST_IMPORT_LOG"], "a") as _log:\n'
        '        _log.write(f"{os.getpid()} {__file__}\\n")\n'
    )
    future = "from __future__ import annotations\n"
    target.write_text(source.replace(future, future + log, 1))


def write_spec(path: Path, out_dir: Path) -> Path:
    # Tasks of ~1 s (20k jobs x four slower policies, one instance per task):
    # Ray packs leases onto the driver's node while it can, so tasks must outlast
    # the second node's worker start-up for the test to see both nodes used.
    write_user_policy(path.parent)
    path.write_text(
        textwrap.dedent(f"""\
        name = "cluster-e2e"
        engine = "queue"
        seed = 11
        policies = ["LAS", "PSBS", "SRPTE+LAS", {{name = "MyPSBS", use = "{USER_POLICY}:PSBS"}}]

        [workload]
        kind = "synthetic"
        njobs = 20000
        shape = [0.25, 1.0]
        sigma = 1.0

        [replications]
        n = 4

        [outputs]
        dir = "{out_dir}"

        [tracking]
        enabled = false

        [execution]
        task_jobs = 1
        retries = 2
        """)
    )
    return path


def summary_rows(results_dir: Path) -> pl.DataFrame:
    import schedlab

    return schedlab.load(results_dir).collect().drop(TIMING).sort("config_id", "replication")


def test_sweep_on_two_node_cluster_matches_local_run(tmp_path):
    from schedlab.platform.planning.plan import Plan, build_plan
    from schedlab.platform.planning.validate import load_spec

    cluster_spec = write_spec(tmp_path / "cluster.toml", tmp_path / "out-cluster")
    local_spec = write_spec(tmp_path / "local.toml", tmp_path / "out-local")
    spec = load_spec(cluster_spec)
    expected_rows = len(build_plan(spec).configs) * spec.replications.n
    expected_tasks = len(Plan.tasks(build_plan(spec).instances(range(spec.replications.n)), spec.execution.task_jobs))
    assert expected_tasks >= 8

    # The same spec on local Ray (in-process, started by the driver), in another
    # dir, runs meanwhile: it shares nothing with the cluster.
    local_env = ray_env(tempfile.mkdtemp(prefix="slray-", dir="/tmp"))
    try:
        with session(
            [*SCHEDLAB, "run", str(local_spec), "--no-tracking", "--no-progress"], local_env, tmp_path, "local-run"
        ) as local_run:
            with ray_cluster(tmp_path) as cluster:
                nodes = alive_nodes(cluster, 2)
                assert len(nodes) == 2, nodes
                node_of = {}
                for n in nodes:
                    res = n["resources_total"]
                    node_of[n["node_id"]] = "head" if "head" in res else "worker2" if "worker2" in res else None
                assert sorted(node_of.values()) == ["head", "worker2"], nodes

                res = run_session(
                    [
                        *SCHEDLAB,
                        "run",
                        str(cluster_spec),
                        "--address",
                        cluster.address,
                        "--no-tracking",
                        "--no-progress",
                    ],
                    cluster.env,
                    tmp_path,
                    "cluster-run",
                )
                assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr[-4000:]}"
                assert f"{expected_rows} rows written" in res.stdout

                tasks = finished_tasks(cluster, "run_instances", expected_tasks)
                assert len(tasks) >= expected_tasks, tasks
                used = {node_of.get(t["node_id"], t["node_id"]) for t in tasks}
                print(
                    "run_instances attempts per node:",
                    {role: sum(node_of.get(t["node_id"]) == role for t in tasks) for role in ("head", "worker2")},
                )
                assert used == {"head", "worker2"}, f"run_instances ran on {used} only"
                # The user's file reached the workers as Ray's shipped copy (py_modules), on both nodes.
                imports = Path(cluster.env["SCHEDLAB_TEST_IMPORT_LOG"]).read_text().split("\n")
                shipped = {line.split()[1] for line in imports if "_ray_pkg_" in line}
                # Ray's state API may not have a task attempt's worker pid yet (None): those say nothing.
                worker_pids = {t["worker_pid"] for t in tasks if t["worker_pid"] is not None}
                shipped_pids = {int(line.split()[0]) for line in imports if "_ray_pkg_" in line}
                print("user-code imports:", imports)
                assert shipped and worker_pids and worker_pids <= shipped_pids, (worker_pids, imports)
            res = wait_output(local_run, tmp_path, "local-run")
    finally:
        shutil.rmtree(local_env["RAY_TMPDIR"], ignore_errors=True)
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr[-4000:]}"

    on_cluster, local = summary_rows(tmp_path / "out-cluster"), summary_rows(tmp_path / "out-local")
    assert on_cluster.height == expected_rows
    assert on_cluster.select("config_id", "replication").is_duplicated().sum() == 0
    assert sorted(on_cluster.columns) == sorted(local.columns)
    assert_frame_equal(on_cluster, local.select(on_cluster.columns), check_exact=True)
    # The user's verbatim copy of PSBS gives PSBS's numbers, and its rows carry the file's digest.
    metrics = ["mst", "slowdown_mean", "slowdown_p99", "events", "shape", "replication"]
    mine = on_cluster.filter(pl.col("policy") == "MyPSBS")
    assert mine.height == expected_rows // 4 and mine["code_sha256"].n_unique() == 1
    assert_frame_equal(
        mine.select(metrics).sort("shape", "replication"),
        on_cluster.filter(pl.col("policy") == "PSBS").select(metrics).sort("shape", "replication"),
        check_exact=True,
    )
