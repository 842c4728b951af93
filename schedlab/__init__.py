"""schedlab: sweeps of scheduling policies over synthetic workloads and trace replays.

Import-light on purpose: the CLI imports this package at start-up, so nothing
here may pull in ray, mlflow or polars.
"""

__version__ = "0.1.0"


def load(results_dir, table: str = "summary"):
    """A sweep's results as a polars LazyFrame (table: summary, jobs or failures)."""
    from schedlab.platform.store import load as _load

    return _load(results_dir, table)
