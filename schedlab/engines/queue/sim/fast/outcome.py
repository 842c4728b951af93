"""A kernel run's inputs checked and its summary made, each in one compiled call: sojourns, slowdowns and
``schedlab.sim.common.metrics.queue_summary``'s numbers, to the bit.

Why: at 50 jobs the summary's dozen numpy calls cost more than the
simulation (issue 42: a million configurations spent more time summarising
than simulating). This kernel computes the same floats by the same
operations in the same order:

* a mean is numpy's pairwise sum (``np.add.reduce`` of a contiguous float64
  array: eight running sums over blocks of at most 128, halves above, a plain
  loop under 8; ``schedlab.sim.common.jit.pairwise_sum``, which the DFRS
  allocations use too) divided by the count;
* a percentile is numpy's "linear" one (``np.percentile``'s default, as
  `linear_percentiles` spells it) over the sorted slowdowns: any exact sort
  gives the same order statistics;
* a weight class's mean is over its jobs' sojourns in job order.

Only the fast path's inputs reach it (sizes > 0 and finite: no NaN
slowdown), and only integer weight classes in a range of at most
`CLASS_SPAN`; the engine takes the numpy route otherwise.
tests/test_queue_outcome.py checks every number against ``queue_summary``
with hypothesis, sums against ``np.add.reduce``.
"""

from __future__ import annotations

import numpy as np

from schedlab.sim.common.jit import HOT, JIT, njit, pairwise_sum
from schedlab.sim.common.metrics import PERCENTILES

#: Weight classes the kernel groups: integer classes spanning fewer values than this (else numpy's route).
CLASS_SPAN = 1 << 16
#: The summary's slowdown percentiles, as floats (numba constants).
P50, P99 = (float(p) for p in PERCENTILES)
#: Positions in the kernel's stats array.
MST, SD_MEAN, SD_P50, SD_P99, SD_MAX, MAKESPAN = range(6)


@njit(**HOT)
def _percentile(ordered, p):
    """``np.percentile(values, p)`` from the sorted values (`linear_percentiles`' steps)."""
    n = ordered.shape[0]
    virtual = (n - 1) * (p / 100)
    if virtual >= n - 1:  # numpy: both neighbours are the last, gamma = virtual + 1
        a = ordered[n - 1]
        b = ordered[n - 1]
        gamma = virtual + 1.0
    else:
        k = int(np.floor(virtual))
        a = ordered[k]
        b = ordered[k + 1]
        gamma = virtual - k
    d = b - a
    if gamma >= 0.5:
        return b - d * (1 - gamma)
    return a + d * gamma


@njit(**JIT)
def inputs_ok(submit, size, estimate, weight):
    """Whether a run's columns are inside the kernels' remit: every value
    finite, sizes, estimates and weights > 0, submit times in order (what
    ``simulate`` checked with a dozen numpy calls, in one pass)."""
    n = submit.shape[0]
    for i in range(n):
        s, z, e, w = submit[i], size[i], estimate[i], weight[i]
        if not (np.isfinite(s) and np.isfinite(z) and np.isfinite(e) and np.isfinite(w)):
            return False
        if not (z > 0 and e > 0 and w > 0):
            return False
        if i and s < submit[i - 1]:
            return False
    return True


@njit(**JIT)
def _outcome(submit, size, completion, weight_class, classes):
    """(sojourn, slowdown, stats, class ids, class means) of a run; ``classes``:
    whether ``weight_class`` (int64) is the table's. Stats: `MST` ... `MAKESPAN`."""
    n = submit.shape[0]
    sojourn = np.empty(n)
    slowdowns = np.empty(n)
    makespan = completion[0]
    for i in range(n):
        sojourn[i] = completion[i] - submit[i]
        x = sojourn[i] / size[i]
        slowdowns[i] = x if x >= 1.0 else 1.0  # np.maximum(x, 1.0): x is not NaN (size > 0, finite)
        if completion[i] > makespan:
            makespan = completion[i]
    ordered = np.sort(slowdowns)
    stats = np.empty(6)
    stats[MST] = pairwise_sum(sojourn, 0, n) / n
    stats[SD_MEAN] = pairwise_sum(slowdowns, 0, n) / n
    stats[SD_P50] = _percentile(ordered, P50)
    stats[SD_P99] = _percentile(ordered, P99)
    stats[SD_MAX] = ordered[n - 1]
    stats[MAKESPAN] = makespan
    if not classes:
        return sojourn, slowdowns, stats, np.empty(0, np.int64), np.empty(0)
    low = weight_class[0]
    high = weight_class[0]
    for i in range(n):
        low = min(low, weight_class[i])
        high = max(high, weight_class[i])
    span = high - low + 1
    counts = np.zeros(span, np.int64)
    for i in range(n):
        counts[weight_class[i] - low] += 1
    starts = np.empty(span, np.int64)
    present = 0
    at = 0
    for c in range(span):
        starts[c] = at
        at += counts[c]
        if counts[c]:
            present += 1
    grouped = np.empty(n)  # each class's sojourns, in job order, one after another
    fill = starts.copy()
    for i in range(n):
        c = weight_class[i] - low
        grouped[fill[c]] = sojourn[i]
        fill[c] += 1
    ids = np.empty(present, np.int64)
    means = np.empty(present)
    k = 0
    for c in range(span):
        if counts[c]:
            ids[k] = low + c
            means[k] = pairwise_sum(grouped, starts[c], counts[c]) / counts[c]
            k += 1
    return sojourn, slowdowns, stats, ids, means


def summarise(
    submit: np.ndarray, size: np.ndarray, completion: np.ndarray, weight_class: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, dict[str, float]] | None:
    """(sojourn, slowdowns, summary) of a kernel's run, the summary as
    ``queue_summary`` gives it then ``makespan`` -- or None when the inputs
    are outside the kernel's remit (the caller takes numpy's route)."""
    submit, size = _own(submit), _own(size)  # one compiled version: writable arrays (JobArrays' are read-only)
    classes = _NO_CLASSES
    if weight_class is not None:
        if weight_class.dtype != np.int64 or weight_class.shape != size.shape or not weight_class.flags.c_contiguous:
            return None
        if weight_class.size and int(weight_class.max()) - int(weight_class.min()) >= CLASS_SPAN:
            return None
        classes = _own(weight_class)
    sojourn, slowdowns, stats, ids, means = _outcome(submit, size, completion, classes, weight_class is not None)
    s = stats.tolist()
    out = {
        "n_jobs": float(len(size)),
        "mst": s[MST],
        "slowdown_mean": s[SD_MEAN],
        "slowdown_p50": s[SD_P50],
        "slowdown_p99": s[SD_P99],
        "slowdown_max": s[SD_MAX],
    }
    for c, m in zip(ids.tolist(), means.tolist(), strict=True):
        out[f"mst_class_{c}"] = m
    out["makespan"] = s[MAKESPAN]
    return sojourn, slowdowns, out


_NO_CLASSES = np.empty(0, np.int64)


def _own(a: np.ndarray) -> np.ndarray:
    return a if a.flags.writeable else a.copy()


def warm() -> None:
    """Compile (or load) the kernels for the arrays the fast path hands them."""
    one = np.ones(3)
    inputs_ok(np.array([0.0, 0.5, 0.5]), one, one, one)
    summarise(np.array([0.0, 0.5, 0.5]), one, one * 2.0, np.array([1, 2, 1], np.int64))
    summarise(np.array([0.0, 0.5, 0.5]), one, one * 2.0, None)
