"""The batch engine's ``estimates`` option (docs/dfrs.md, row 19): EASY
backfills with the users' requested times (default) or with the actual
runtimes, as the DFRS authors' simulator did (its input has no requested
time)."""

from __future__ import annotations

import polars as pl
import pytest

from schedlab.engines import get_engine
from schedlab.errors import UserError

SYSTEM = {"model": "nodes", "nodes": 2}


def jobs(requested: bool = True) -> pl.DataFrame:
    """J0 (1 node, runs 10 s, asks 100 s); J1 (2 nodes) waits for J0; J2 (1
    node, 20 s) can backfill only if J0's estimate ends after J2 would."""
    t = pl.DataFrame(
        {"job_id": [0, 1, 2], "submit": [0.0, 1.0, 2.0], "runtime": [10.0, 10.0, 20.0], "procs": [1, 2, 1]}
    )
    return t.with_columns(pl.Series("requested_time", [100.0, 10.0, 20.0])) if requested else t


def starts(table, system) -> list[float]:
    return [float(x) for x in get_engine("batch").run(table, "EASY", None, system).jobs["start"]]


def test_requested_times_by_default():
    # J1's reservation at J0's requested end (100 s): J2 (ends at 22 s) backfills at once
    assert starts(jobs(), SYSTEM) == starts(jobs(), {**SYSTEM, "estimates": "requested"}) == [0.0, 22.0, 2.0]


def test_exact_estimates_are_the_runtimes():
    # J1's reservation at J0's actual end (10 s): J2 would delay it, so it waits for J1
    exact = starts(jobs(), {**SYSTEM, "estimates": "exact"})
    assert exact == starts(jobs(requested=False), SYSTEM) == [0.0, 10.0, 20.0]


def test_bad_value_is_one_line():
    with pytest.raises(UserError, match="estimates"):
        starts(jobs(), {**SYSTEM, "estimates": "perfect"})
