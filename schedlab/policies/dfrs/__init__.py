"""DFRS task-mapping policies (Stillwell et al., dfrs-vs-batch-scheduling §4), by registry name.

Engine: ``schedlab.sim.dfrs``. ``DFRS_POLICIES`` maps the paper's names
(§4.5) to policy classes: Greedy*/OPT=MIN, Greedy*/OPT=AVG, GreedyP*/OPT=MIN,
GreedyP*/OPT=AVG, GreedyPM*/OPT=MIN, GreedyPM*/OPT=AVG and the periodic-MCB8
forms Greedy*/per/OPT=MIN, ..., GreedyPM*/per/OPT=AVG (see ``greedy``; the
/per names need ``mcb8``).
``mcb8`` holds the MCB8 vector-packing heuristic (a pure function).
"""

from __future__ import annotations

from schedlab.policies.dfrs.greedy import GREEDY_PER_POLICIES, GREEDY_POLICIES, GreedyPMStar, GreedyPStar, GreedyStar

DFRS_POLICIES: dict[str, type] = {**GREEDY_POLICIES, **GREEDY_PER_POLICIES}

__all__ = ["DFRS_POLICIES", "GreedyPMStar", "GreedyPStar", "GreedyStar"]
