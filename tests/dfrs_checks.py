"""One check of a finished DFRS simulation (``snapshots=True``), shared by the
DFRS tests: every job finished no earlier than release + processing time with
exactly its work done, yields stayed in [0, 1], and between two events a job
progressed only while running outside its penalty, at most at its yield."""

from __future__ import annotations

import numpy as np

from schedlab.engines.dfrs.sim import RUNNING

YIELD_TOL = 1e-9  # yields are clipped to [0, 1]; allow round-off
PROGRESS_REL_TOL = 1e-9  # progress over [t0, t1] <= y (t1 - t0) up to round-off


def check_progress(res, rel, proc) -> None:
    s = res.state
    assert np.all(np.isfinite(s.end)) and np.all(s.end >= np.asarray(rel) + np.asarray(proc) - 1e-6)
    np.testing.assert_allclose(s.vt, proc)
    snaps = res.snapshots
    for (t0, vt0, status0, pen0, y0), (t1, vt1, _s1, _p1, _y1) in zip(snaps, snaps[1:]):
        assert np.all(y0 >= -YIELD_TOL) and np.all(y0 <= 1 + YIELD_TOL)
        for j in range(len(rel)):
            dv = vt1[j] - vt0[j]
            if status0[j] != RUNNING or pen0[j] > t0:
                assert dv == 0.0, (j, t0, t1)  # paused, waiting, or in its penalty
            else:
                assert -1e-12 <= dv <= y0[j] * (t1 - t0) * (1 + PROGRESS_REL_TOL) + 1e-9
