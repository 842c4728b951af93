"""Shared by tests/test_examples.py and tests/test_docs.py: loading the
example project's code the way a spec does, and an independent reference
for conservative backfilling with exact requested times."""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def load_example(ref: str):
    """The object a spec's ``use = ref`` names, resolved against examples/
    (so a package module is imported as the spec's run imports it)."""
    from schedlab.usercode import resolve

    return resolve(ref, EXAMPLES, f"examples: {ref}").load()


def conservative_reference(submit, runtime, need, capacity: int) -> np.ndarray:
    """Start times of conservative backfilling when every requested time is
    exact, computed without a profile or any event loop: with exact times no
    job ends early, so no reservation ever moves, and job k (in submission
    order) starts at the earliest t >= submit[k] at which its need fits next
    to every earlier job's [start, start + runtime) during [t, t + runtime).
    Candidates are submit[k] and the earlier jobs' ends (the only times at
    which free units increase). O(n^2 log n); for tests."""
    submit = np.asarray(submit, dtype=float)
    runtime = np.asarray(runtime, dtype=float)
    need = np.asarray(need, dtype=np.int64)
    n = len(submit)
    start = np.full(n, np.nan)
    for k in np.argsort(submit, kind="stable"):
        placed = ~np.isnan(start)
        s, e, u = start[placed], start[placed] + runtime[placed], need[placed]
        for t in sorted({submit[k], *e[e > submit[k]].tolist()}):
            end = t + runtime[k]
            overlap = (s < end) & (e > t) if end > t else (s <= t) & (e > t)
            points = np.concatenate(([t], s[overlap & (s > t)]))  # usage only rises at starts
            used = max(int(u[overlap & (s <= p) & (e > p)].sum()) for p in points)
            if used + need[k] <= capacity:
                start[k] = t
                break
    return start
