"""The signals that stop a sweep cleanly: Ctrl-C (SIGINT) and, while a caller
asks for it, SIGTERM handled the same way.

Ctrl-C raises KeyboardInterrupt in the driver; the runner then cancels the
executor's tasks (a pool's processes killed, Ray's tasks cancelled), commits
what arrived and raises `Interrupted`. SIGTERM -- how a session's or a batch
system's processes are ended -- kills a Python process outright by default,
so a long run (a 4-10 h pipeline) left nothing to say what it had done.
`sigterm_as_ctrl_c` makes SIGTERM raise the same KeyboardInterrupt while its
body runs, noting the signal's name for the caller's record, and restores the
handler it replaced (a library caller's handlers are never replaced for good).

Three places keep that true while a sweep runs:

* `held_back`: a batch being committed is never cut (the runner's commit);
  the Python handlers of SIGINT and SIGTERM run in the main thread whichever
  thread the signal reached, so blocking them in the main thread alone does
  not hold them back: their handlers are replaced by a note for the while,
  and a noted signal is handed to its handler right after;
* `noticed`: a task run in the driver's process may swallow the
  KeyboardInterrupt (numba loads a cached kernel through a ctypes callback
  that prints and drops it); the in-process executor raises it again;
* `keep_sigterm_handler`: ``ray.init`` installs Ray's own SIGTERM handlers
  (``sys.exit``, past the runner's clean-up); while `sigterm_as_ctrl_c` is in
  force its handler is put back.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

#: The signals a sweep's driver treats as Ctrl-C when their handler is a Python one.
STOPPING = (signal.SIGINT, signal.SIGTERM)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class SigtermAsCtrlC:
    """The SIGTERM handler `sigterm_as_ctrl_c` installs: it notes the signal
    (``received``) and raises KeyboardInterrupt, as Python's SIGINT handler does."""

    def __init__(self) -> None:
        self.received: list[str] = []

    def __call__(self, signum: int, frame: Any) -> None:
        self.received.append(signal.Signals(signum).name)
        signal.default_int_handler(signum, frame)

    @property
    def ended_by(self) -> str | None:
        """The first signal received ("SIGTERM"), or None."""
        return self.received[0] if self.received else None


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[SigtermAsCtrlC]:
    """While the body runs, SIGTERM is handled as Ctrl-C (see the module
    docstring); the handler before it is restored after. Off the main thread
    (where no handler can be installed) nothing changes and the handler
    yielded never fires."""
    handler = SigtermAsCtrlC()
    if not _main_thread():
        yield handler
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield handler
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def keep_sigterm_handler() -> Iterator[None]:
    """Around ``ray.init`` (which installs Ray's SIGTERM handlers): a
    `sigterm_as_ctrl_c` handler in force before is in force after. Any other
    handler is left as Ray sets it (Ray's clean-up of the cluster it started)."""
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if isinstance(before, SigtermAsCtrlC) and _main_thread() and signal.getsignal(signal.SIGTERM) is not before:
            signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def held_back() -> Iterator[None]:
    """Ctrl-C and SIGTERM held back while the body runs (main thread only):
    blocked in this thread, their Python handlers replaced by a note, and each
    noted signal handed to its handler when the body is done (so the
    KeyboardInterrupt comes right after, never inside it)."""
    if not _main_thread():
        yield
        return
    noted: list[int] = []
    handlers = {s: h for s in STOPPING if callable(h := signal.getsignal(s))}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(STOPPING))
    for s in handlers:
        signal.signal(s, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # a signal pending in this thread: its handler runs
        for signum in dict.fromkeys(noted):
            handlers[signal.Signals(signum)](signum, None)


@contextlib.contextmanager
def noticed() -> Iterator[list[int]]:
    """While an in-process task runs (main thread): every SIGINT whose handler
    is a Python one, and every SIGTERM handled as Ctrl-C (`sigterm_as_ctrl_c`;
    not a caller's own SIGTERM handler, which may mean something else), is
    noted (the list yielded) before that handler runs, so a KeyboardInterrupt
    the task swallowed can be raised again once it returns."""
    seen: list[int] = []
    handlers = {}
    if _main_thread():
        if callable(h := signal.getsignal(signal.SIGINT)):
            handlers[signal.SIGINT] = h
        if isinstance(h := signal.getsignal(signal.SIGTERM), SigtermAsCtrlC):
            handlers[signal.SIGTERM] = h
    for s, h in handlers.items():

        def note(signum: int, frame: Any, h: Any = h) -> None:
            seen.append(signum)
            h(signum, frame)

        signal.signal(s, note)
    try:
        yield seen
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
