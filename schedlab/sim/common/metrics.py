"""Per-job and summary metrics of a queue-engine run (the PSBS paper's §5.2).

Slowdown is sojourn / size, floored at 1: a job can never finish faster than
alone on the server, and a value below 1 can only come from the clock's
floating-point resolution when a tiny job (Weibull shape 0.125 draws sizes
down to 1e-30) finishes at a large clock value. The floor removes exactly
that artefact and nothing else.

Jobs of size 0 (real traces have them: 127 in Facebook FB-2010) count in the
MST but have no slowdown (NaN); slowdown statistics are over the others.

Percentiles use numpy's default linear interpolation.
"""

from __future__ import annotations

import math

import numpy as np

CONDITIONAL_BINS = 100
#: The slowdown percentiles of a summary (p50, p99), taken in one call.
PERCENTILES = (50, 99)


def slowdown(sojourn: np.ndarray, size: np.ndarray) -> np.ndarray:
    """max(1, sojourn / size); NaN for jobs of size 0."""
    positive = size > 0
    if positive.all():  # the usual case: no masked copies
        return np.maximum(sojourn / size, 1.0)
    out = np.full(len(size), np.nan)
    out[positive] = np.maximum(sojourn[positive] / size[positive], 1.0)
    return out


def queue_summary(
    size: np.ndarray,
    sojourn: np.ndarray,
    weight_class: np.ndarray | None = None,
    slowdowns: np.ndarray | None = None,
) -> dict[str, float]:
    """MST, slowdown statistics and MST per weight class. ``slowdowns``:
    `slowdown` (sojourn, size) when the caller has it already.

    Every value is computed by the same numpy reduction over the same values
    in the same order as the plain definition (np.mean of each class's
    sojourns in job order, np.percentile's linear interpolation), so results
    are bit-identical to it; only the passes differ: the two percentiles come
    from one partition (`linear_percentiles`), and the classes from one stable
    sort instead of a mask per class (`_class_means`)."""
    sd = slowdown(sojourn, size) if slowdowns is None else slowdowns
    nan = np.isnan(sd)
    if nan.any():  # the usual case (no job of size 0) needs no masked copy: the same values
        sd = sd[~nan]
    if sd.size == 0:
        sd = np.array([np.nan])
    p50, p99 = linear_percentiles(sd, PERCENTILES)
    out = {
        "n_jobs": float(len(size)),
        "mst": mean(sojourn),
        "slowdown_mean": mean(sd),
        "slowdown_p50": float(p50),
        "slowdown_p99": float(p99),
        "slowdown_max": float(sd.max()),
    }
    if weight_class is not None:
        for c, class_mean in _class_means(np.asarray(weight_class), sojourn):
            out[f"mst_class_{c}"] = class_mean
    return out


def mean(values: np.ndarray) -> float:
    """``float(np.mean(values))`` of a 1-d float64 array, to the bit, without
    its wrapper (a tenth of a small summary's time): numpy's mean is the
    same pairwise ``np.add.reduce`` divided by the count in float64, which a
    Python float division is too. An empty array: numpy's own answer (NaN,
    a warning)."""
    n = values.size
    if n == 0 or values.dtype != np.float64:
        return float(np.mean(values))
    return float(np.add.reduce(values)) / n


def linear_percentiles(values: np.ndarray, percentiles: tuple[float, ...]) -> list[float]:
    """``np.percentile(values, percentiles)`` (numpy's default "linear"
    method) to the bit, without numpy's array bookkeeping around the two
    numbers a summary needs (most of its time at 10k values). The steps are
    numpy's: virtual index (n - 1) q; its neighbouring ranks, both -1 (the
    last) at or past the end, where gamma is measured from -1; one
    ``np.partition`` at numpy's very ranks (0 and -1 included, so ties such as
    0.0 and -0.0 or several NaNs land alike); the NaN at the end if there is
    one; else numpy's ``_lerp`` (a + d t, or b - d (1 - t) for t >= 0.5,
    d = b - a) in the same float64 operations."""
    n = values.size
    if n == 0:
        return [float(np.percentile(values, p)) for p in percentiles]  # numpy's own answer (NaN, a warning)
    picks = []
    for p in percentiles:
        virtual = (n - 1) * (p / 100)
        if virtual >= n - 1:
            picks.append((-1, -1, virtual + 1.0))  # numpy: previous = next = -1, gamma = virtual - (-1)
        else:
            lo = math.floor(virtual)
            picks.append((lo, lo + 1, virtual - lo))
    # numpy's very ranks (0 and -1 included), so that ties (0.0 and -0.0, NaNs) land alike
    ranks = np.array(sorted({0, -1, *(k for lo, hi, _ in picks for k in (lo, hi))}))  # as np.unique gives them
    ordered = np.partition(values, ranks)
    if math.isnan(ordered[-1]):  # NaN sorts last: numpy answers that NaN
        return [float(ordered[-1])] * len(percentiles)
    out = []
    for lo, hi, gamma in picks:
        a, b = float(ordered[lo]), float(ordered[hi])
        d = b - a
        out.append(b - d * (1 - gamma) if gamma >= 0.5 else a + d * gamma)
    return out


def _class_means(weight_class: np.ndarray, values: np.ndarray) -> list[tuple[int, float]]:
    """(class, np.mean of its values in job order) for each class present,
    ascending. Integer classes in a narrow range (the usual: 1..5) are
    grouped by one stable radix sort (a uint8/uint16 key) and each mean is
    taken over a contiguous slice: the same values in the same order as
    ``values[weight_class == c]``, so the same float. Other classes: a mask
    per class."""
    if weight_class.size and weight_class.dtype.kind in "iu":
        lo, hi = int(weight_class.min()), int(weight_class.max())
        if hi - lo < 2**16:
            key = (weight_class - lo).astype(np.uint8 if hi - lo < 2**8 else np.uint16)
            grouped = values[np.argsort(key, kind="stable")]
            counts = np.bincount(key)
            ends = np.cumsum(counts)
            return [
                (lo + k, mean(grouped[end - count : end]))
                for k, (end, count) in enumerate(zip(ends.tolist(), counts.tolist(), strict=True))
                if count
            ]
    return [(int(c), mean(values[weight_class == c])) for c in np.unique(weight_class)]


def conditional_slowdown(
    size: np.ndarray, slowdowns: np.ndarray, bins: int = CONDITIONAL_BINS
) -> tuple[np.ndarray, np.ndarray]:
    """Mean size and mean slowdown in ``bins`` equal-count classes of jobs sorted
    by size (the paper's Fig. 7). Ties in size keep job-table order (stable
    sort); with n not a multiple of ``bins`` the classes differ by at most one
    job (numpy.array_split)."""
    keep = ~np.isnan(slowdowns)
    size, slowdowns = size[keep], slowdowns[keep]
    order = np.argsort(size, kind="stable")
    parts = np.array_split(order, min(bins, len(size)))
    return (
        np.array([size[p].mean() for p in parts]),
        np.array([slowdowns[p].mean() for p in parts]),
    )
