"""Schedule views: see what a policy did in any run of any sweep
(``schedlab view``; docs/views.md). Layer: above the platform and the
engines, below the CLI. ``record_run`` records one policy on one job table;
``schedlab.views.replay.select`` + ``.replay`` re-run a stored run of a
sweep, checked against its row; ``write_page`` (Plotly, self-contained HTML), ``write_static``
(matplotlib PDF/PNG) and ``write_jobs_csv`` (Batsim's jobs.csv) draw or
export a :class:`Schedule`."""

from schedlab.views.batsim import write_jobs_csv
from schedlab.views.page import write_page
from schedlab.views.replay import record_run
from schedlab.views.schedule import Schedule
from schedlab.views.static import write_static

__all__ = ["Schedule", "record_run", "write_jobs_csv", "write_page", "write_static"]
