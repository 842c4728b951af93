"""DFRS task-mapping policies (Stillwell et al., dfrs-vs-batch-scheduling §4), by registry name.

Engine: ``schedlab.engines.dfrs.sim``. ``DFRS_POLICIES`` maps the paper's names
(§4.5) to policy classes: Greedy*/OPT=MIN, Greedy*/OPT=AVG, GreedyP*/OPT=MIN,
GreedyP*/OPT=AVG, GreedyPM*/OPT=MIN, GreedyPM*/OPT=AVG and the periodic-MCB8
forms Greedy*/per/OPT=MIN, ..., GreedyPM*/per/OPT=AVG (see ``greedy``; the
/per names need ``mcb8``), and these /per forms with the migration limits of
§4.3, e.g. GreedyPM*/per/OPT=MIN/MINVT=600 (MINVT or MINFT = 300 or 600);
MCB8 on submission and completion: MCB8*/OPT=MIN, MCB8*/OPT=AVG,
MCB8*/per/OPT=MIN, MCB8*/per/OPT=AVG, each also with the MINVT / MINFT limits;
and the /per forms without '*' (Greedy/per, GreedyP/per, GreedyPM/per,
MCB8/per and /per alone), completing the paper's 13 basic algorithms.
``mcb8`` holds the MCB8 vector-packing heuristic (a pure function).

And (``stretch``, §4.7) the /stretch-per algorithms: the paper's bare
/stretch-per (RR-7659 Table 1's 14th row, nothing on submission or
completion), e.g. /stretch-per/OPT=MAX/MINVT=600 (Table 2's last row), and
schedlab's combinations with a submission policy, e.g.
GreedyPM*/stretch-per/OPT=MAX/MINVT=600: MCB8-stretch periodically, OPT=MAX
/ OPT=AVG on the expected stretch (``STRETCH_PER_POLICIES``).

So every algorithm the long version (RR-7659) names exists: Table 1's 14
combinations, each with OPT=MIN and OPT=AVG (/stretch-per: OPT=MAX and
OPT=AVG), the last 11 also with MINVT / MINFT = 300 / 600 -- its
3 x 2 + 11 x 2 x 5 = 116 algorithms, Table 2's 18 DFRS rows among them
(tests/test_dfrs_names.py).
"""

from __future__ import annotations

from schedlab.engines.dfrs.policies.greedy import (
    GREEDY_PER_LIMIT_POLICIES,
    GREEDY_PER_POLICIES,
    GREEDY_POLICIES,
    MCB8_POLICIES,
    NO_STAR_PER_POLICIES,
    GreedyPMStar,
    GreedyPStar,
    GreedyStar,
)
from schedlab.engines.dfrs.policies.stretch import STRETCH_PER_POLICIES

DFRS_POLICIES: dict[str, type] = {
    **GREEDY_POLICIES,
    **GREEDY_PER_POLICIES,
    **GREEDY_PER_LIMIT_POLICIES,
    **MCB8_POLICIES,
    **NO_STAR_PER_POLICIES,
    **STRETCH_PER_POLICIES,
}

__all__ = ["DFRS_POLICIES", "STRETCH_PER_POLICIES", "GreedyPMStar", "GreedyPStar", "GreedyStar"]
