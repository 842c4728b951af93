"""A frozen copy of the DFRS engine and policies as they were before the
speed-up (commit 3aa6bc9: schedlab/engines/dfrs/sim.py, schedlab/engines/dfrs/policies/
greedy.py, mcb8.py, stretch.py, imports redirected here; the policy seam,
base.py, which the speed-up left as it was, is imported from schedlab). The
reference the fast code must reproduce bit for bit (tests/test_dfrs_speed.py).
Do not edit: it is the specification of the schedules."""

from tests.dfrs_reference.greedy import (
    GREEDY_PER_LIMIT_POLICIES,
    GREEDY_PER_POLICIES,
    GREEDY_POLICIES,
    MCB8_POLICIES,
    NO_STAR_PER_POLICIES,
)
from tests.dfrs_reference.stretch import STRETCH_PER_POLICIES

REF_POLICIES: dict[str, type] = {**GREEDY_POLICIES, **GREEDY_PER_POLICIES, **GREEDY_PER_LIMIT_POLICIES, **MCB8_POLICIES,
                                 **NO_STAR_PER_POLICIES, **STRETCH_PER_POLICIES}
