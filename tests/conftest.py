"""Shared test helpers."""

import os
from pathlib import Path

import numpy as np
import pytest

from schedlab.engines.queue.policies import QUEUE_POLICIES
from schedlab.engines.queue.sim.engine import simulate

#: The queue engine's two paths: the Python reference and the compiled kernels
#: (schedlab.engines.queue.sim.fast). Queue tests run on both (the `engine_path` fixture).
PATHS = ("reference", "fast")

#: The Gymnasium environments look bare trace names up in $SCHEDLAB_DATA (schedlab.gym.common): the tests'
#: (and their subprocesses') data folder is the checkout's ../shared/data unless the caller set one.
os.environ.setdefault("SCHEDLAB_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
#: The same folder is the pipelines' data root ({data} in their specs, schedlab.pipelines.inputs), and the
#: repository's trained agent their agent ({agent}) for the tests that expand or run them in-process.
os.environ.setdefault("SCHEDLAB_AGENT", str(Path(__file__).resolve().parents[1] / "sweeps" / "rl"))
_current = ["reference"]


def run_both(policy: str, submit, size, estimate=None, weight=None, path: str | None = None, declinable: bool = False):
    """(completion times, events) of ``policy`` on the given arrays, on
    ``path`` (default: the one the `engine_path` fixture selected). The fast
    path must not decline: a test of the kernels must run the kernels. With
    ``declinable`` (a hypothesis property of any correct engine, not of the
    kernels), an example the kernel declines as AMBIGUOUS -- the engine then
    runs the reference -- is dropped with ``assume`` instead."""
    submit = np.asarray(submit, dtype=float)
    size = np.asarray(size, dtype=float)
    estimate = size if estimate is None else np.asarray(estimate, dtype=float)
    weight = np.ones_like(size) if weight is None else np.asarray(weight, dtype=float)
    cls = QUEUE_POLICIES[policy]
    if (path or _current[0]) == "fast":
        from schedlab.engines.queue.sim import fast as queue_fast

        out = queue_fast.simulate(policy, submit, size, estimate, weight)  # a built-in's name is its kernel's id
        if out is None and declinable:
            from hypothesis import assume

            assume(False)  # declined (AMBIGUOUS): the engine runs the reference, tested in test_queue_fast
        assert out is not None, f"{policy}: the fast path declined this workload"
        return out
    return simulate(submit, size, estimate, weight, cls)


def run(policy: str, submit, size, estimate=None, weight=None) -> np.ndarray:
    """Completion times of ``policy`` on the given arrays (on the path the
    `engine_path` fixture selected; the reference outside queue tests)."""
    return run_both(policy, submit, size, estimate, weight)[0]


def run_declinable(policy: str, submit, size, estimate=None, weight=None) -> np.ndarray:
    """`run` in a hypothesis property test of what any correct engine does: an
    example the fast path declines is dropped, not failed (`run_both`)."""
    return run_both(policy, submit, size, estimate, weight, declinable=True)[0]


@pytest.fixture(scope="module", params=PATHS)
def engine_path(request):
    """Run the module's tests once per engine path (module scope: hypothesis
    tests may use it)."""
    _current[0] = request.param
    yield request.param
    _current[0] = "reference"


@pytest.fixture
def run_policy():
    return run


# ---- the batch engine's two paths (schedlab.engines.batch.sim.fast) --------------------------------


def run_batch_table(jobs, policy_cls, *, path: str | None = None, **system):
    """``schedlab.engines.batch.run_table(jobs, policy_cls, **system)`` on
    ``path`` (default: the one the `engine_path` fixture selected; the
    reference outside it). On the fast path FCFS and EASY must run on their
    kernel, not fall back: the reference ``simulate_batch`` is made to fail
    for the call (a test of the kernels must run the kernels)."""
    from schedlab.engines import batch as batch_engine
    from schedlab.engines.batch.policies import BATCH_POLICIES
    from schedlab.engines.batch.sim import engine as batch

    path = path or _current[0]
    if path != "fast" or not any(policy_cls is c for c in BATCH_POLICIES.values()):
        return batch_engine.run_table(jobs, policy_cls, path=path, **system)

    def declined(*args, **kwargs):
        raise AssertionError(f"{policy_cls.name}: the batch fast path declined this workload")

    reference = batch.simulate_batch
    batch.simulate_batch = declined
    try:
        return batch_engine.run_table(jobs, policy_cls, path=path, **system)
    finally:
        batch.simulate_batch = reference
