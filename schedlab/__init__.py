"""schedlab: sweeps of scheduling policies over synthetic workloads and trace replays.

Import-light on purpose: the CLI imports this package at start-up, so nothing
here may pull in ray, mlflow or polars.
"""

__version__ = "0.1.0"


def load(results_dir, table: str = "summary"):
    """A sweep's results as a polars LazyFrame (table: summary, jobs or failures)."""
    from schedlab.platform.store import load as _load

    return _load(results_dir, table)


def compare(results_dir, baseline: str, metric: str = "mst", by=None, ratio: bool = False):
    """Paired comparison of every policy with ``baseline`` (same workload point
    and replication = a pair): per workload point (``by``) and policy, the
    mean difference or geometric mean ratio, its 95 % t interval, n pairs and
    Holm-adjusted p values, as a polars DataFrame
    (``schedlab.platform.compare``)."""
    from schedlab.platform.compare import compare as _compare

    return _compare(results_dir, baseline, metric=metric, by=by, ratio=ratio)
