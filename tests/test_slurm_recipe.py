"""infra/slurm: the SLURM recipe (a Ray head on the allocation's first node,
a worker per other node, the driver on the head), checked as far as a host
without SLURM allows: the scripts' syntax, and the whole sbatch script run on
one host -- `scontrol` and `srun` replaced by two-line stand-ins that name
two nodes and run each job step here -- so its own commands start two
raylets on 127.0.0.1, wait for both, and run a sweep through them.

Isolation as in test_platform_cluster.py: private Ray temp dir, free port,
a fresh auth token, its own session (killed on the way out, never `ray
stop`)."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import schedlab
from tests.processes import kill_session

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "infra" / "slurm" / "ray-slurm.sh"
SBATCH = REPO / "infra" / "slurm" / "schedlab.sbatch"
TIMEOUT = 300.0

pytestmark = pytest.mark.skipif(
    shutil.which("ray", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")) is None,
    reason="the `ray` CLI is not installed",
)

SCONTROL = """#!/bin/bash
# stand-in for SLURM's scontrol: the allocation is two nodes
[ "$1 $2" = "show hostnames" ] && printf 'node-a\\nnode-b\\n'
"""
SRUN = """#!/bin/bash
# stand-in for SLURM's srun: note the node, run the step's command on this host
while [ $# -gt 0 ]; do
    case "$1" in
        -w) echo "step on $2" >> "$SRUN_LOG"; shift 2 ;;
        -*) shift ;;
        *) break ;;
    esac
done
exec "$@"
"""


def test_scripts_parse():
    for script in (LIB, SBATCH):
        out = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert out.returncode == 0, f"{script}: {out.stderr}"
    assert os.access(SBATCH, os.X_OK)
    assert "#SBATCH --nodes=" in SBATCH.read_text()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_sbatch_script_starts_two_raylets_and_runs_a_sweep(tmp_path):
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, text in (("scontrol", SCONTROL), ("srun", SRUN)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    out_dir = tmp_path / "results"
    (tmp_path / "sweep.toml").write_text(
        textwrap.dedent(f"""\
        name = "slurm-recipe"
        engine = "queue"
        seed = 4
        policies = ["FIFO", "PS"]
        [workload]
        kind = "synthetic"
        njobs = 200
        shape = [0.5, 1.0]
        [replications]
        n = 2
        [outputs]
        dir = "{out_dir}"
        """)
    )
    temp_dir = tempfile.mkdtemp(prefix="slslurm-", dir="/tmp")  # short: Ray's socket paths live under it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_", "SLURM_"))}
    env.update(
        PATH=os.pathsep.join([str(stubs), str(Path(sys.executable).parent), env.get("PATH", "")]),
        SLURM_JOB_NODELIST="node-[a-b]",
        SLURM_CPUS_PER_TASK="1",
        SLURM_SUBMIT_DIR=str(tmp_path),
        SCHEDLAB_SLURM_LIB=str(LIB),
        RAY_SLURM_IP="127.0.0.1",
        RAY_SLURM_TMP=temp_dir,
        RAY_SLURM_EXTRA=f"--object-store-memory {256 * 2**20}",
        RAY_PORT=str(free_port()),
        RAY_AUTH_TOKEN=secrets.token_hex(32),
        RAY_USAGE_STATS_ENABLED="0",
        SRUN_LOG=str(tmp_path / "srun.log"),
        PYTHONPATH=os.pathsep.join([str(Path(schedlab.__file__).parents[1]), env.get("PYTHONPATH", "")]),
    )
    log = open(tmp_path / "job.out", "w")
    proc = subprocess.Popen(
        ["bash", str(SBATCH), "sweep.toml", "--no-tracking", "--no-progress"],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        rc = proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        kill_session(proc)
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)
    text = (tmp_path / "job.out").read_text()
    assert rc == 0, text[-4000:]
    assert "ray_slurm_wait: 2 node(s) alive" in text, text[-4000:]
    assert (tmp_path / "srun.log").read_text().splitlines() == ["step on node-a", "step on node-b"]
    assert "8 rows written, 0 already on disk" in text, text[-4000:]
    assert schedlab.load(out_dir).collect().height == 8
