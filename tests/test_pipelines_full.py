"""Every pipeline the default run does not already run (tests/test_pipelines*.py),
at smoke scale: marked ``full``, run with ``python -m pytest -q -m full``."""

from __future__ import annotations

import pytest

from schedlab.pipelines.registry import PIPELINES
from tests.pipeline_outputs import check_outputs, run_smoke

#: Run at smoke scale by the default test run (test_pipelines.py, _tetris.py, _dfrs.py).
IN_DEFAULT_RUN = {
    "psbs-shape",
    "pg-fig4",
    "psbs-weights",
    "psbs-slowdown",
    "pg-fig3",
    "psbs-ircache",
    "tetris-packing",
    "tetris-fairness",
    "dfrs-fig1",
}
#: Run with -m full by test_pipelines_dfrs.py.
IN_DFRS_FULL = {"dfrs-table", "dfrs-period"}
REST = sorted(set(PIPELINES) - IN_DEFAULT_RUN - IN_DFRS_FULL)


def test_every_pipeline_is_covered():
    assert IN_DEFAULT_RUN | IN_DFRS_FULL | set(REST) == set(PIPELINES)
    assert not IN_DEFAULT_RUN & IN_DFRS_FULL


@pytest.mark.full
def test_pipelines_at_smoke_scale(tmp_path):
    for result in run_smoke(REST, tmp_path).values():
        check_outputs(result, None)
