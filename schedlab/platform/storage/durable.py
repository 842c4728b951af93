"""Durability on disk: what makes a rename or a deletion survive a crash of
the machine, not only of the process (used by the results store, compaction
and the MLflow store creation)."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make the renames and deletions in directory ``path`` durable (best
    effort: a filesystem that cannot fsync a directory is left as it is)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
