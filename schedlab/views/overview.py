"""What a whole run looks like at a glance: aggregates that keep their meaning
for 10^4-10^6 jobs, and the windows worth opening at job level.

A Gantt of 10,000 jobs is a diagonal line and its server panel a barcode: at
that scale a reader sees classes, not jobs. `class_load` is each panel's
content summed per colour class (the classes of ``--color-by``: size, width,
demand ...) and averaged per time bin: jobs in the system per class on a
panel of job lanes, the share of the resource held per class on a panel of
processors, servers, nodes or the server. `propose_windows` finds where the
job-level drawing is worth a look: where the two runs' first series (jobs
present, queue length) differ most, or for one run where it is highest, as
windows holding about `WINDOW_JOBS` arrivals each.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.views.schedule import LIFE, PENALTY, RUN, Schedule, step_count

#: Time bins of a whole-run aggregate (each bin the time-average over it).
OVERVIEW_BINS = 600
#: Fine bins `propose_windows` scores the run on.
SCORE_BINS = 2000
#: A proposed window holds about this many arrivals: what a job-level drawing shows legibly.
WINDOW_JOBS = 150
#: A proposed window spans at most this share of the run (a small run: its busiest quarter).
MAX_WINDOW_SHARE = 0.25
#: Windows proposed.
PROPOSED = 3


def binned_mean(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-average per bin ``[edges[i], edges[i + 1])`` of the step function
    (t, v) (v[i] from t[i] to t[i + 1], 0 before t[0], v[-1] after t[-1])."""
    if len(t) == 0:
        return np.zeros(len(edges) - 1)
    # integral of the step function from edges[0] to each edge
    durations = np.diff(t)
    cum = np.r_[0.0, np.cumsum(v[:-1] * durations)]  # integral from t[0] to t[i]

    def integral(x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(t, x, side="right") - 1
        before = i < 0
        i = np.clip(i, 0, len(t) - 1)
        out = cum[i] + v[i] * (x - t[i])
        out[before] = 0.0
        return out

    widths = np.diff(edges)
    return np.diff(integral(edges)) / np.where(widths > 0, widths, 1.0)


def is_job_panel(schedule: Schedule, panel: int) -> bool:
    """A panel of job lanes (one lane per job: queue and DFRS) rather than of a resource."""
    return schedule.panels[panel].y_title == "job"


def class_load(
    schedule: Schedule, panel: int, codes: np.ndarray, classes: int, edges: np.ndarray
) -> tuple[np.ndarray, str]:
    """(classes x bins array, y title): per colour class and time bin, the jobs in
    the system (a panel of job lanes: its "in system" boxes) or the share of the
    panel's resource held (the boxes' heights over the panel's lanes)."""
    b = schedule.boxes
    on = b["panel"] == panel
    if is_job_panel(schedule, panel):
        sel = on & (b["kind"] == LIFE)
        weight = np.ones(int(sel.sum()))
        title = "jobs"
    else:
        sel = on & ((b["kind"] == RUN) | (b["kind"] == PENALTY))
        weight = (b["y1"][sel] - b["y0"][sel]) / max(schedule.panels[panel].lanes, 1e-12)
        title = "share held"
    cls = codes[b["row"][sel]]
    out = np.zeros((classes, len(edges) - 1))
    t0, t1 = b["t0"][sel], b["t1"][sel]
    for c in range(classes):
        m = cls == c
        if m.any():
            t, v = step_count(t0[m], t1[m], weight[m])
            out[c] = binned_mean(t, v, edges)
    return out, title


def score(schedules: list[Schedule], edges: np.ndarray) -> np.ndarray:
    """Per bin: |difference| of the two runs' first series (time-averaged), or for
    one run (or two identical there) the series itself: where the job-level
    drawing has the most to show."""
    first = [next(iter(s.series.values()), (np.zeros(0), np.zeros(0))) for s in schedules]
    values = [binned_mean(t, v, edges) for t, v in first]
    if len(values) == 2 and np.any(values[1] != values[0]):
        return np.abs(values[1] - values[0])
    return values[0]  # one run, or two that never differ there: where it is busiest


def propose_windows(schedules: list[Schedule], k: int = PROPOSED) -> list[tuple[float, float]]:
    """Up to ``k`` disjoint windows, in time order, each holding about
    `WINDOW_JOBS` arrivals (at most `MAX_WINDOW_SHARE` of the run), where
    `score` sums highest (ties: the earliest)."""
    s = schedules[0]
    lo, hi = min(x.span()[0] for x in schedules), max(x.span()[1] for x in schedules)
    if not hi > lo:
        return []
    edges = np.linspace(lo, hi, SCORE_BINS + 1)
    per_bin = score(schedules, edges) * np.diff(edges)
    width = (hi - lo) * min(MAX_WINDOW_SHARE, WINDOW_JOBS / max(s.n_jobs, 1))
    m = int(min(max(math.ceil(width / (edges[1] - edges[0])), 1), SCORE_BINS))
    sums = np.convolve(per_bin, np.ones(m), mode="valid")  # sums[i]: bins i .. i + m - 1
    taken = np.zeros(len(sums), dtype=bool)
    out: list[tuple[float, float]] = []
    for i in np.argsort(-sums, kind="stable"):
        if len(out) == k or sums[i] <= 0:
            break
        if taken[i]:
            continue
        out.append((float(edges[i]), float(edges[i + m])))
        taken[max(i - m + 1, 0) : i + m] = True
    return sorted(out)


def time_percentiles(t: np.ndarray, v: np.ndarray, qs: tuple[float, ...] = (50, 99)) -> list[float]:
    """Percentiles of the step function's value over time (each value weighted by
    how long it holds): "half the time at most p50 jobs were present"."""
    if len(t) < 2:
        return [float(v[0]) if len(v) else math.nan for _ in qs]
    dur = np.diff(t)
    order = np.argsort(v[:-1], kind="stable")
    cum = np.cumsum(dur[order])
    total = cum[-1]
    if total <= 0:
        return [float(v[0]) for _ in qs]
    return [float(v[:-1][order][min(np.searchsorted(cum, q / 100 * total), len(order) - 1)]) for q in qs]
