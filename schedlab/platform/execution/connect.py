"""Joining a Ray cluster by address, within a bounded time and at Ctrl-C.

``ray.init(address=...)`` can wait a long time inside Ray's C++ client: a
GCS that is not there, or one that advertises an address the driver cannot
reach, is retried for minutes (10 were seen), and while the main thread
is in that C++ call neither Ctrl-C nor SIGTERM reaches Python. So the
driver (1) first checks that something accepts TCP connections at the
address's host:port, retrying until the deadline (a head that is still
starting comes up meanwhile), and (2) runs ``ray.init`` in a helper thread
while the main thread waits on it in short slices, where Ctrl-C is
delivered. Past the deadline, or at Ctrl-C, :class:`ConnectFailed` ends the
command with one line and exit 2; since the helper thread may still be
stuck inside Ray, the CLI leaves with ``os._exit`` (``hard_exit``) rather
than run interpreter shutdown (Ray's exit hook would wait on that thread).

Loopback: Ray rewrites a 127.0.0.1 / localhost address to the host's
routable address before it connects (``resolve_ip_for_localhost``) unless
multi-node clusters are disabled for the process. A driver given a loopback
address therefore connects with that switch off (``loopback_only``), so it
talks to 127.0.0.1, where a head started by docs/cluster.md's one-host
recipe listens, and never to an outside interface.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from schedlab.errors import UserError

#: Default of ``[execution] connect_timeout_seconds``.
DEFAULT_CONNECT_TIMEOUT_SECONDS = 60.0
#: The waits inside the deadline: between TCP probes, and the slices of the
#: main thread's wait on ``ray.init`` (how soon Ctrl-C is seen).
PROBE_EVERY = 0.5
WAIT_SLICE = 0.2
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class ConnectFailed(UserError):
    """The cluster could not be joined in time, or the user gave up (Ctrl-C).
    ``hard_exit``: the CLI leaves with ``os._exit`` (see the module docstring)."""

    hard_exit = True


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a ``host:port`` or ``ray://host:port`` address; None
    for the forms that name no port (``auto``, ``local``)."""
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def is_loopback(address: str) -> bool:
    hp = host_port(address)
    return hp is not None and (hp[0] in LOOPBACK_HOSTS or hp[0].startswith("127."))


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Ray with multi-node clusters switched off for this process (read at
    import by ``ray_constants`` and from the environment its processes
    inherit): a new local node takes 127.0.0.1 as its IP and listens there
    only, and a loopback address is not rewritten to the host's routable one."""
    import ray._private.ray_constants as ray_constants

    name = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    saved_env, saved = os.environ.get(name), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[name] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved
        if saved_env is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved_env


def probe(address: str, deadline: float, timeout: float) -> None:
    """Return once something accepts a TCP connection at the address's
    host:port; ConnectFailed at the deadline. Forms without a port pass."""
    hp = host_port(address)
    if hp is None:
        return
    last: OSError | None = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ConnectFailed(
                f"cannot connect to Ray at {address}: nothing accepts connections at {hp[0]}:{hp[1]} "
                f"after {timeout:g} s ({last}; [execution] connect_timeout_seconds; see docs/cluster.md)"
            )
        try:
            with socket.create_connection(hp, timeout=min(left, 5.0)):
                return
        except OSError as err:
            last = err
        time.sleep(min(PROBE_EVERY, max(deadline - time.monotonic(), 0.0)))


def init_bounded(ray: ModuleType, kwargs: dict[str, Any], address: str, timeout: float) -> None:
    """``ray.init(**kwargs)`` for a cluster at ``address``, ended by
    :class:`ConnectFailed` after ``timeout`` seconds or at Ctrl-C (see the
    module docstring); Ray's own errors propagate as they are."""
    started = time.monotonic()
    deadline = started + timeout
    scope = loopback_only() if is_loopback(address) else contextlib.nullcontext()
    with scope:
        try:
            probe(address, deadline, timeout)
        except KeyboardInterrupt:
            raise ConnectFailed(f"cannot connect to Ray at {address}: interrupted") from None
        outcome: dict[str, BaseException | None] = {}

        def connect() -> None:
            try:
                ray.init(**kwargs)
                outcome["error"] = None
            except BaseException as err:  # noqa: BLE001 - handed to the main thread
                outcome["error"] = err

        helper = threading.Thread(target=connect, name="schedlab-ray-connect", daemon=True)
        helper.start()
        try:
            while helper.is_alive() and time.monotonic() < deadline:
                helper.join(WAIT_SLICE)
        except KeyboardInterrupt:
            raise ConnectFailed(
                f"cannot connect to Ray at {address}: interrupted after {time.monotonic() - started:.0f} s"
            ) from None
    if helper.is_alive():
        raise ConnectFailed(
            f"cannot connect to Ray at {address}: no answer from its GCS within {timeout:g} s "
            f"([execution] connect_timeout_seconds; is the address the head's, and does the head advertise an "
            f"address this machine reaches? see docs/cluster.md)"
        )
    error = outcome.get("error")
    if error is not None:
        raise error


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_SECONDS",
    "ConnectFailed",
    "host_port",
    "init_bounded",
    "is_loopback",
    "loopback_only",
    "probe",
]
