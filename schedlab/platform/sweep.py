"""Running a sweep spec, whatever it asks for: `run_sweep`.

A plain spec goes to the runner (`schedlab.platform.execution.runner`); a
spec with ``[search]`` goes to its search (`schedlab.platform.search.loop`),
which runs its trials through the runner. The platform's top room: it may
import every room below, and nothing in the platform imports it (the runner
never imports the search that drives it). Figures are drawn above the
platform, so they are handed in: ``figures`` (a plain sweep's, for its MLflow
parent run) and ``draw`` (a search's convergence figure,
`schedlab.search_figure.convergence`); the CLI, `schedlab.run` and the
pipelines pass both.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from schedlab.platform.execution.runner import SweepReport
    from schedlab.platform.planning.spec import SweepSpec
    from schedlab.platform.search.loop import Draw


def run_sweep(
    spec: SweepSpec,
    *,
    address: str | None = None,
    backend: str | None = None,
    fresh: bool = False,
    tracking: bool | None = None,
    progress: Callable[[Any], None] | None = None,
    figures: Callable[[Path], list[Path]] | None = None,
    notify: Callable[[str], None] | None = None,
    draw: Draw | None = None,
) -> SweepReport:
    """Run (or resume) ``spec``: its search when it has ``[search]``, else its
    sweep; returns the run's report (a `SearchReport` for a search).
    ``figures``: a plain sweep's figures for its MLflow parent run, drawn
    from its results dir while tracking catches up (the runner's ``figures``);
    ``notify``: the runner's, a line said before a plain sweep starts;
    ``draw``: a search's convergence figure (none drawn without it)."""
    if spec.tracking.enabled if tracking is None else tracking:
        from schedlab.platform.tracking.process import warm

        warm()  # its MLflow import overlaps with planning (`schedlab.platform.tracking.process`)
    if spec.search is not None:
        from schedlab.platform.search.loop import run_search

        return run_search(
            spec, address=address, backend=backend, fresh=fresh, tracking=tracking, progress=progress, draw=draw
        )
    from schedlab.platform.execution.runner import run_sweep as run_plain

    return run_plain(
        spec,
        address=address,
        backend=backend,
        fresh=fresh,
        tracking=tracking,
        progress=progress,
        figures=figures,
        notify=notify,
    )
