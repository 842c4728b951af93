"""Joining a cluster by ``--address`` ends within a bounded time and at
Ctrl-C, with one line and exit 2 (issue 26: a driver retried a GCS for 10
minutes and ignored SIGINT and SIGTERM). Every address here is on 127.0.0.1:
a port nothing listens on, and a listener of the test's own that accepts
connections and never answers (so Ray's client waits inside C++, the case a
plain port check cannot catch)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import schedlab
from schedlab.platform.execution.connect import (
    DEFAULT_CONNECT_TIMEOUT_SECONDS,
    host_port,
    is_loopback,
)
from schedlab.platform.planning.spec import ExecutionSpec
from tests.processes import sigint_as_at_a_terminal

SCHEDLAB = [sys.executable, "-m", "schedlab.cli"]
#: The spec's connect_timeout_seconds, and what a run may take beyond it
#: (interpreter, plan and `import ray` on a busy 2-core machine).
TIMEOUT = 4.0
STARTUP = 40.0


def write_spec(folder: Path, timeout: float) -> Path:
    spec = folder / "tiny.toml"
    spec.write_text(
        textwrap.dedent(f"""\
        name = "tiny"
        engine = "queue"
        policies = ["FIFO"]

        [workload]
        kind = "synthetic"
        njobs = 100

        [replications]
        n = 1

        [outputs]
        dir = "{folder / "out"}"

        [tracking]
        enabled = false

        [execution]
        connect_timeout_seconds = {timeout}
        """)
    )
    return spec


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_"))}
    out.update(PYTHONPATH=str(Path(schedlab.__file__).parent.parent), RAY_AUTH_MODE="disabled")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def silent_listener():
    """A TCP port on 127.0.0.1 that accepts connections and never says a
    word; yields (port, event set at the first connection)."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    connected = threading.Event()
    stop = threading.Event()
    held = []

    def accept():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)
            connected.set()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], connected
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        server.close()


def run(folder: Path, address: str, timeout: float = TIMEOUT) -> tuple[subprocess.CompletedProcess, float]:
    spec = write_spec(folder, timeout)
    started = time.monotonic()
    res = subprocess.run(
        [*SCHEDLAB, "run", str(spec), "--address", address, "--no-progress"],
        cwd=folder,
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout + STARTUP + 60,
        start_new_session=True,
    )
    return res, time.monotonic() - started


def test_addresses_and_defaults():
    assert host_port("127.0.0.1:6379") == ("127.0.0.1", 6379)
    assert host_port("ray://head.example:10001") == ("head.example", 10001)
    assert host_port("[::1]:6379") == ("::1", 6379)
    assert host_port("auto") is None and host_port("local") is None
    assert is_loopback("127.0.0.1:1") and is_loopback("localhost:2") and is_loopback("ray://127.0.0.1:3")
    assert not is_loopback("10.0.0.1:6379") and not is_loopback("auto")
    assert ExecutionSpec().connect_timeout_seconds == DEFAULT_CONNECT_TIMEOUT_SECONDS


def test_an_address_nothing_listens_on_ends_in_bounded_time(tmp_path):
    port = free_port()
    res, took = run(tmp_path, f"127.0.0.1:{port}")
    assert res.returncode == 2, res.stderr
    assert TIMEOUT <= took < TIMEOUT + STARTUP
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"schedlab: error: cannot connect to Ray at 127.0.0.1:{port}: nothing accepts connections at 127.0.0.1:{port}"
        f" after {TIMEOUT:g} s"
    ), res.stderr


def test_a_silent_gcs_ends_in_bounded_time(tmp_path):
    with silent_listener() as (port, connected):
        res, took = run(tmp_path, f"127.0.0.1:{port}")
    assert connected.is_set()
    assert res.returncode == 2, res.stderr
    assert TIMEOUT <= took < TIMEOUT + STARTUP
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"schedlab: error: cannot connect to Ray at 127.0.0.1:{port}: no answer from its GCS within {TIMEOUT:g} s"
    ), res.stderr


def test_ctrl_c_while_connecting_ends_at_once(tmp_path):
    """A long timeout; SIGINT once the driver is connecting (the silent port
    saw its first connection): one line, exit 2, within seconds."""
    spec = write_spec(tmp_path, 600.0)
    with silent_listener() as (port, connected):
        proc = subprocess.Popen(
            [*SCHEDLAB, "run", str(spec), "--address", f"127.0.0.1:{port}", "--no-progress"],
            cwd=tmp_path,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=sigint_as_at_a_terminal,
        )
        try:
            assert connected.wait(STARTUP), "the driver never tried the address"
            time.sleep(1.0)  # inside ray.init's wait by now
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert proc.returncode == 2, err
    assert took < 10.0
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(f"schedlab: error: cannot connect to Ray at 127.0.0.1:{port}: interrupted")
    ), err


@pytest.mark.parametrize("sig", [signal.SIGTERM])
def test_sigterm_while_connecting_ends_the_driver(tmp_path, sig):
    spec = write_spec(tmp_path, 600.0)
    with silent_listener() as (port, connected):
        proc = subprocess.Popen(
            [*SCHEDLAB, "run", str(spec), "--address", f"127.0.0.1:{port}", "--no-progress"],
            cwd=tmp_path,
            env=env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            assert connected.wait(STARTUP)
            time.sleep(1.0)
            proc.send_signal(sig)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                pytest.fail("the driver ignored SIGTERM")
    assert proc.returncode != 0
