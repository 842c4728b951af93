"""Processes the driver starts beside itself (the local pool's workers, the
tracking process): how they start and how they end.

They come from a forkserver or spawn (`start_method`), never a fork of a
driver that has threads; while they start, the driver's ``__main__`` file is
hidden (`main_not_reimported`); inside, `become_child` makes Ctrl-C the
driver's and ends the process when its parent is gone.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

#: Seconds between a child's checks that its parent is still alive.
ORPHAN_CHECK_SECONDS = 1.0


def start_method() -> str:
    """forkserver where there is one, else spawn."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def become_child() -> None:
    """In a child, first thing: ignore SIGINT (Ctrl-C is the driver's to
    handle: it stops its children itself) and exit when orphaned."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="schedlab-orphan-watch", daemon=True).start()


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while a spawned child starts (from the main thread; a
    no-op elsewhere): an ignored signal stays ignored through exec, and
    Python keeps it so at start-up, so a Ctrl-C while the child boots --
    before `become_child` -- cannot print a KeyboardInterrupt traceback from
    its bootstrap over the driver's one line. (A blocked mask would not do:
    spawn's exec starts the child with none.) A Ctrl-C within the few
    milliseconds of the start itself is dropped."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


@contextlib.contextmanager
def main_not_reimported() -> Iterator[None]:
    """While children start: hide the driver's ``__main__`` file, which a
    forkserver or spawn child would otherwise run again (a script calling
    ``schedlab.run`` without an ``if __name__ == "__main__"`` guard would run
    its sweep in every child). Children never need it: user code is loaded by
    its own path (`usercode`)."""
    main = sys.modules.get("__main__")
    file = getattr(main, "__file__", None)
    if main is None or file is None or getattr(main, "__spec__", None) is not None:
        yield  # `python -m ...` (a module spec): multiprocessing does not run a __main__ module again
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = file
