"""The DFRS paper's published numbers, transcribed from the long version
(Stillwell, Vivien, Casanova, INRIA RR-7659, 2011;
/work/shared/papers/dfrs-rr7659-long-version.txt), so the pipelines can put
schedlab's measurements next to them row by row.

* ``TABLE2`` -- Table 2, "Degradation from bound results for all three trace
  sets, with a 5-minute rescheduling penalty": per algorithm and trace set,
  (average, standard deviation, maximum) of max stretch / Theorem 1's bound
  over the set's instances (182 HPC2N weeks, 100 unscaled and 900 scaled
  synthetic traces). Algorithm names are the paper's with the spaces removed
  ("GreedyP */per/OPT = MIN/MINVT =600" -> "GreedyP*/per/OPT=MIN/MINVT=600"),
  which is how schedlab's registry spells them (tests/test_dfrs_names.py).
* ``TABLE4`` -- Table 4, average normalized underutilization (§6.4.2) of EASY
  and the two best algorithms.
* ``FIG1_BEST`` -- §6.1 on Fig. 1: the best algorithm "is about a factor 3
  away from the bound at low loads, and a factor 7.5 away from it at high
  loads" (the figure itself is only a plot).
* ``INSTANCES`` -- the instance count behind each set's averages.

Transcription check: tests/test_pipelines_dfrs.py asserts 20 rows x 3 sets
and that every name is a registered policy.
"""

from __future__ import annotations

from typing import NamedTuple


class Stat(NamedTuple):
    avg: float
    std: float
    max: float


SETS = ("hpc2n", "unscaled", "scaled")
INSTANCES = {"hpc2n": 182, "unscaled": 100, "scaled": 900}

_ROWS = [  # name; then (avg, std, max) for real-world, unscaled synthetic, scaled synthetic
    ("FCFS", (3578.5, 3727.8, 21718.4), (5457.2, 2958.5, 15102.7), (5869.3, 2789.1, 17403.3)),
    ("EASY", (3041.9, 3438.0, 21317.4), (4955.4, 2730.6, 14036.8), (5262.0, 2588.9, 14534.1)),
    ("Greedy*/OPT=MIN", (949.8, 1828.5, 11778.4), (2435.0, 2285.6, 11229.9), (3204.3, 2517.5, 19129.2)),
    ("GreedyP*/OPT=MIN", (13.5, 68.0, 819.2), (37.5, 156.0, 1204.9), (115.7, 644.0, 10354.2)),
    ("GreedyPM*/OPT=MIN", (13.8, 68.2, 819.2), (33.8, 154.0, 1321.7), (124.0, 673.5, 9598.8)),
    ("Greedy/per/OPT=MIN", (28.3, 24.9, 163.7), (30.1, 10.2, 58.1), (29.3, 14.3, 153.2)),
    ("GreedyP/per/OPT=MIN", (18.5, 18.6, 152.4), (20.1, 7.3, 38.1), (17.8, 9.6, 84.6)),
    ("GreedyPM/per/OPT=MIN", (18.4, 18.8, 158.7), (20.2, 7.3, 38.1), (17.9, 9.8, 93.0)),
    ("Greedy*/per/OPT=MIN", (24.3, 15.9, 81.6), (30.4, 9.7, 65.7), (29.1, 12.3, 101.4)),
    ("GreedyP*/per/OPT=MIN", (17.9, 19.6, 213.5), (20.3, 6.8, 32.0), (17.9, 8.6, 89.9)),
    ("GreedyPM*/per/OPT=MIN", (17.9, 19.3, 198.6), (20.3, 6.9, 32.0), (17.9, 8.6, 89.9)),
    ("GreedyP/per/OPT=MIN/MINVT=600", (8.9, 18.9, 152.4), (5.9, 4.5, 38.1), (7.3, 8.5, 96.8)),
    ("GreedyPM/per/OPT=MIN/MINVT=600", (8.8, 18.9, 158.7), (5.9, 4.5, 38.1), (7.3, 8.1, 96.8)),
    ("GreedyP*/per/OPT=MIN/MINVT=600", (6.9, 14.2, 149.3), (4.9, 2.9, 19.2), (6.1, 6.3, 103.5)),
    ("GreedyPM*/per/OPT=MIN/MINVT=600", (6.9, 14.4, 149.6), (4.8, 2.4, 13.6), (6.1, 5.4, 90.2)),
    ("MCB8*/OPT=MIN/MINVT=600", (12.0, 32.8, 370.0), (6.9, 5.4, 44.4), (13.2, 21.6, 270.9)),
    ("MCB8/per/OPT=MIN/MINVT=600", (10.8, 25.3, 287.6), (8.1, 6.6, 53.3), (11.0, 12.6, 127.5)),
    ("MCB8*/per/OPT=MIN/MINVT=600", (13.6, 30.2, 318.9), (7.8, 3.9, 21.9), (12.2, 15.3, 195.7)),
    ("/per/OPT=MIN/MINVT=600", (105.0, 445.6, 5011.9), (43.0, 19.7, 134.7), (40.4, 25.0, 238.3)),
    ("/stretch-per/OPT=MAX/MINVT=600", (105.0, 445.6, 5011.9), (43.0, 19.6, 134.7), (40.2, 24.8, 236.9)),
]

#: Table 2 of RR-7659: {algorithm: {set: Stat}}, in the paper's row order.
TABLE2: dict[str, dict[str, Stat]] = {name: dict(zip(SETS, (Stat(*v) for v in vals))) for name, *vals in _ROWS}
BATCH = ("FCFS", "EASY")
DFRS = tuple(n for n in TABLE2 if n not in BATCH)

#: Table 4 of RR-7659 (§6.4.2): average normalized underutilization at the default 600 s period.
TABLE4: dict[str, dict[str, float]] = {
    "EASY": {"hpc2n": 0.064, "unscaled": 0.349, "scaled": 0.384},
    "GreedyP*/per/OPT=MIN/MINVT=600": {"hpc2n": 0.344, "unscaled": 0.497, "scaled": 0.607},
    "GreedyPM*/per/OPT=MIN/MINVT=600": {"hpc2n": 0.344, "unscaled": 0.497, "scaled": 0.608},
}

#: §6.1 on Fig. 1: the best algorithm's average degradation at low (0.1) and high (0.9) load.
FIG1_BEST = {0.1: 3.0, 0.9: 7.5}

#: Fig. 1's legend, in the paper's order, as schedlab names (all OPT=MIN, MINVT=600 where "minvt"
#: is written; /stretch-per uses OPT=MAX -- the caption).
FIG1_LEGEND = (
    "FCFS",
    "EASY",
    "Greedy*/OPT=MIN",
    "GreedyPM*/OPT=MIN",
    "Greedy*/per/OPT=MIN",
    "GreedyPM*/per/OPT=MIN",
    "GreedyPM*/per/OPT=MIN/MINVT=600",
    "MCB8*/per/OPT=MIN/MINVT=600",
    "/per/OPT=MIN/MINVT=600",
    "/stretch-per/OPT=MAX/MINVT=600",
)

__all__ = ["BATCH", "DFRS", "FIG1_BEST", "FIG1_LEGEND", "INSTANCES", "SETS", "Stat", "TABLE2", "TABLE4"]
