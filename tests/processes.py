"""Process-session helpers for tests (and benchmarks) that start `schedlab run`
or `ray start` as subprocesses. Each is started with ``start_new_session=True``;
its Ray processes (GCS, raylet, workers) get their own process groups but stay
in that session, so killing the session -- never ``ray stop``, which would stop
every Ray on the host -- cleans up exactly what it started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

#: The checkout these helpers belong to.
CHECKOUT = Path(__file__).resolve().parent.parent


def checkout_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with this checkout first
    on ``PYTHONPATH``: a subprocess then runs the schedlab of the checkout it
    was started from, not whichever one pip installed (a benchmark run from
    a second worktree measured the installed one)."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(CHECKOUT), env.get("PYTHONPATH", "")) if p)
    return env


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, session id) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[3])


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes of session ``sid``."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = proc_stat(int(entry))
            if stat is not None and stat[1] == sid and stat[0] != "Z":
                out.append(int(entry))
    return out


def kill_session(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """SIGKILL every process of ``proc``'s session and wait until they are gone."""
    deadline = time.monotonic() + timeout
    while True:
        members = session_members(proc.pid)
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.2)
        if not members or time.monotonic() > deadline:
            break
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def sigint_as_at_a_terminal() -> None:
    """``preexec_fn`` of a driver a test will Ctrl-C: SIGINT's default action,
    as a command typed at a terminal has. A test suite run in the background
    (``nohup``, ``cmd &``) starts with SIGINT ignored, every child inherits
    that, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
