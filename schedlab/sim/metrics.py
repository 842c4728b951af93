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

import numpy as np

CONDITIONAL_BINS = 100


def slowdown(sojourn: np.ndarray, size: np.ndarray) -> np.ndarray:
    """max(1, sojourn / size); NaN for jobs of size 0."""
    out = np.full(len(size), np.nan)
    positive = size > 0
    out[positive] = np.maximum(sojourn[positive] / size[positive], 1.0)
    return out


def queue_summary(size: np.ndarray, sojourn: np.ndarray, weight_class: np.ndarray | None = None) -> dict[str, float]:
    """MST, slowdown statistics and MST per weight class."""
    sd = slowdown(sojourn, size)
    sd = sd[~np.isnan(sd)]
    if sd.size == 0:
        sd = np.array([np.nan])
    out = {
        "n_jobs": float(len(size)),
        "mst": float(np.mean(sojourn)),
        "slowdown_mean": float(np.mean(sd)),
        "slowdown_p50": float(np.percentile(sd, 50)),
        "slowdown_p99": float(np.percentile(sd, 99)),
        "slowdown_max": float(np.max(sd)),
    }
    if weight_class is not None:
        for c in np.unique(weight_class):
            out[f"mst_class_{int(c)}"] = float(np.mean(sojourn[weight_class == c]))
    return out


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
