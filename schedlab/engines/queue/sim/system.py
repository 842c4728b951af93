"""The queue engine's ``[system]`` declaration: it takes no parameters."""

from __future__ import annotations

from schedlab.sim.system.schema import (
    SystemSchema,
)

QUEUE = SystemSchema("queue")
