"""The engine-independent half of ``schedlab check-policy``: invariants,
violations, workloads as small tables, the report, and the hypothesis search.

Why hypothesis: random workloads find a violation; *shrinking* turns it into
the smallest workload that still violates the same invariant (fewer jobs,
simpler numbers), which is what a researcher can read and debug. The search
is seeded (``hypothesis.seed``), has no example database (``database=None``:
nothing is read from or written to disk), does not draw constants from the
loaded modules' source (:func:`_no_local_constants`) and uses no global
random state of ours, so the same seed gives the same answer in every
process (with the same hypothesis version).

Each invariant raises its own :class:`Violation` subclass: hypothesis tells
failures apart by exception type and, with ``report_multiple_bugs=True``,
shrinks each kind on its own, so shrinking a capacity violation never slips
into a smaller workload that merely crashes, and the workload reported is
minimal *for the invariant named*. When several invariants fail, the one
with the smallest workload is reported (then the first in the engine's
list).

Hypothesis deletes a list element only if it spans a few choices (a job here
spans up to ~10: gap, size, estimate, weight, each a pick or a float), so its
shrinking can stop at several jobs of which most are irrelevant. After it, a
deterministic pass (:func:`minimise`) deletes one job at a time while the
same invariant still fails, until no single job can go: the table printed is
1-minimal in jobs, with values as small as hypothesis made them.
"""

from __future__ import annotations

import math
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Largest workload generated: small enough to read, large enough for ties,
#: queues and contention.
MAX_JOBS = 12
#: Replays of the reported workload: a policy whose failure does not repeat
#: (state kept across runs, randomness) is reported as not deterministic.
REPLAYS = 2


@dataclass(frozen=True)
class Invariant:
    name: str  # short, stable: what tests and users grep for
    text: str  # one line: what holds for every correct policy of the engine


class Violation(Exception):
    """An invariant failed on one workload (``workload`` is filled in by the
    runner)."""

    def __init__(self, invariant: str, message: str) -> None:
        super().__init__(f"{invariant}: {message}")
        self.invariant = invariant
        self.message = message
        self.workload: Workload | None = None


_KINDS: dict[str, type[Violation]] = {}


def arrivals(jobs) -> list[float]:
    """Submit times from drawn job tuples whose first element is the gap to
    the previous arrival (the strategies draw gaps so that 0.0 -- coincident
    arrivals -- is common)."""
    submit, t = [], 0.0
    for gap, *_ in jobs:
        t += gap
        submit.append(t)
    return submit


def violation(invariant: str, message: str) -> Violation:
    """A :class:`Violation` of a subclass particular to ``invariant`` (see the
    module docstring: distinct types keep shrinking on one invariant)."""
    kind = _KINDS.get(invariant)
    if kind is None:
        name = "".join(p.capitalize() for p in invariant.replace("-", " ").split()) + "Violation"
        kind = _KINDS[invariant] = type(name, (Violation,), {"__module__": __name__})
    return kind(invariant, message)


_PACKAGE = str(Path(__file__).resolve().parent.parent)


def crashed(err: BaseException) -> Violation:
    """The ``runs`` violation for an exception the policy raised (or an
    engine refusal no other invariant covers): type, message and the line of
    the policy's own code that raised, if any."""
    frames = traceback.extract_tb(err.__traceback__)
    mine = [f for f in frames if not str(Path(f.filename).resolve()).startswith(_PACKAGE + "/")]
    at = (mine or frames)[-1:] if frames else []
    where = f" (at {at[0].filename}:{at[0].lineno} in {at[0].name})" if at else ""
    return violation("runs", f"{type(err).__name__}: {err}{where}")


def swallowed_reads(guard, invariant: str) -> None:
    """Raise ``invariant``'s violation if the policy read through a guard of
    ``guard`` (a :func:`schedlab.checks.guard.hider`) and caught the error
    it raised: the read counts all the same."""
    for g in getattr(guard, "made", ()):
        if g.reads:
            raise violation(
                invariant, f"{g.reads[0]} read {g._what} (and the policy caught the error the guard raised)"
            )


def first_difference(label: str, a, b) -> str | None:
    """None if ``a`` and ``b`` (per-job float arrays) are bit-identical, else
    a sentence naming the first job that differs."""
    import numpy as np

    a = np.asarray(a)
    b = np.asarray(b)
    if a.tobytes() == b.tobytes():
        return None
    for j, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        if repr(x) != repr(y):
            return f"job {j}: {label} {x!r} on one run, {y!r} on a second run of the same workload"
    return f"{label} differ between two runs of the same workload"


def fmt(x: Any) -> str:
    """A number as the table shows it: exact (repr) but without a trailing
    '.0'; None as '-'."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, float):
        if math.isfinite(x) and x.is_integer() and abs(x) < 1e15:
            return str(int(x))
        return repr(x)
    return str(x)


@dataclass
class Workload:
    """One generated workload: job-table columns (display order) and the
    system it runs on (servers, capacity, nodes, ...)."""

    columns: dict[str, list]
    system: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def table(self, **rename: str):
        """The workload as the job table its engine reads (``job`` is
        ``job_id``; ``rename``: other columns' names there), the table
        ``schedlab.engines.instance.start_instance`` builds the checked run from."""
        import polars as pl

        names = {"job": "job_id", **rename}
        return pl.DataFrame({names.get(name, name): values for name, values in self.columns.items()})

    def without(self, k: int) -> Workload:
        """The same workload without job ``k`` (jobs renumbered)."""
        cols = {name: values[:k] + values[k + 1 :] for name, values in self.columns.items()}
        if "job" in cols:
            cols["job"] = list(range(self.n - 1))
        return Workload(cols, dict(self.system))

    def render(self, indent: str = "  ") -> str:
        lines = []
        if self.system:
            lines.append(indent + "system: " + ", ".join(f"{k}={fmt(v)}" for k, v in self.system.items()))
        cells = [[name] + [fmt(v) for v in values] for name, values in self.columns.items()]
        widths = [max(len(c) for c in col) for col in cells]
        for row in range(self.n + 1):
            lines.append(indent + "  ".join(col[row].rjust(w) for col, w in zip(cells, widths)).rstrip())
        return "\n".join(lines)


@dataclass
class Failure:
    invariant: Invariant
    message: str
    workload: Workload
    first_seen: int  # the failing workload's rank in the search (1-based), before shrinking


@dataclass
class CheckReport:
    """What ``check_policy`` found. ``ok`` is True when no workload violated
    an invariant; otherwise ``failure`` holds the smallest failing workload."""

    engine: str
    policy: str
    params: dict[str, Any]
    seed: int
    examples: int  # workloads asked for
    workloads: int  # workloads run (generation; shrinking not counted)
    checked: tuple[str, ...]  # invariants checked
    skipped: dict[str, str]  # invariant -> why it does not apply to this policy
    failure: Failure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def render(self) -> str:
        if self.failure is None:
            return f"ok ({self.workloads} workloads)"
        f = self.failure
        n = f.workload.n
        return "\n".join(
            [
                f"FAIL {self.policy} ({self.engine}): invariant {f.invariant.name} violated",
                f"  invariant: {f.invariant.text}",
                f"  {f.message}",
                f"smallest failing workload: {n} job{'s' if n != 1 else ''} (shrunk from workload {f.first_seen} "
                f"of the search, seed {self.seed})",
                f.workload.render(),
            ]
        )


class EngineCheck:
    """One engine's invariants for one policy class and its params.

    Subclasses set ``engine`` and ``invariants`` and implement
    ``workloads()`` (a hypothesis strategy of :class:`Workload`) and
    ``check(workload)`` (raise :func:`violation` on the first invariant that
    fails). ``skipped`` names invariants that do not apply to the policy
    (e.g. an exact-size queue policy may read sizes)."""

    engine: str = ""
    invariants: tuple[Invariant, ...] = ()

    def __init__(self, cls: type, params: dict[str, Any]) -> None:
        self.cls = cls
        self.params = params
        self.skipped: dict[str, str] = {}

    def workloads(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def check(self, workload: Workload) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def invariant(self, name: str) -> Invariant:
        return next(i for i in self.invariants if i.name == name)


def _violations_in(err: BaseException) -> list[Violation]:
    """The Violations inside an exception (group): hypothesis raises one
    group for several distinct failures, and Flaky is a group too."""
    if isinstance(err, Violation):
        return [err]
    return [v for sub in getattr(err, "exceptions", ()) for v in _violations_in(sub)]


def minimise(check: EngineCheck, found: Violation) -> Violation:
    """Delete jobs from ``found.workload`` one at a time while ``check``
    still fails the same invariant (see the module docstring); the
    violation on the smallest workload reached."""
    best, workload = found, shown_on(found)
    progress = True
    while progress and workload.n > 1:
        progress = False
        for k in range(workload.n):
            smaller = workload.without(k)
            try:
                check.check(smaller)
            except Violation as v:
                if v.invariant == best.invariant:
                    v.workload = smaller
                    best, workload, progress = v, smaller, True
                    break
    return best


def shown_on(v: Violation) -> Workload:
    """The workload a violation was found on (set by the runner before a
    violation reaches minimising, confirming or a report)."""
    if v.workload is None:
        raise ValueError(f"violation of {v.invariant} carries no workload") from v
    return v.workload


def confirm(check: EngineCheck, found: Violation) -> Violation:
    """Replay ``found.workload`` ``REPLAYS`` times: the same invariant must
    fail every time, otherwise the policy's behaviour is not a function of
    its input -- a ``deterministic`` violation on that workload."""
    for _ in range(REPLAYS):
        try:
            check.check(shown_on(found))
            other = "passed on another"
        except Violation as v:
            if v.invariant == found.invariant:
                continue
            other = f"violated {v.invariant} on another ({v.message})"
        again = violation(
            "deterministic", f"this workload violated {found.invariant} on one run ({found.message}) and {other}"
        )
        again.workload = found.workload
        return again
    return found


@contextmanager
def _no_local_constants():
    """Hypothesis (>= 6.13x) sometimes draws a constant mined from the source
    of every *local* module loaded in the process (schedlab itself when
    installed editable, the user's file, whatever else was imported), so the
    same seed would give different workloads in different processes. For
    the length of a check the pool of local constants is empty (and the cache
    of permitted constants cleared before and after), which makes the search
    a function of the seed, the strategies and the hypothesis version only.
    Not thread-safe: one check at a time per process. Versions without these
    internals do not mine constants, and nothing is changed."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants

        original = providers._get_local_constants
        cache = providers.CONSTANTS_CACHE.cache
    except (ImportError, AttributeError):  # pragma: no cover - other hypothesis versions
        yield
        return
    empty = Constants()
    cache.clear()
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.clear()


def run_check(check: EngineCheck, label: str, examples: int, seed: int) -> CheckReport:
    """Search ``examples`` seeded random workloads for violations of
    ``check``'s invariants; shrink each invariant's failures, report the
    smallest (minimised in jobs, then replayed: see :func:`confirm`)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as fixed_seed
    from hypothesis.errors import Flaky

    generated = 0
    first_seen: int | None = None

    def prop(workload: Workload) -> None:
        nonlocal generated, first_seen
        if first_seen is None:
            generated += 1
        try:
            check.check(workload)
        except Violation as v:
            if first_seen is None:
                first_seen = generated
            v.workload = workload
            raise

    test = fixed_seed(seed)(
        settings(
            max_examples=examples,
            database=None,
            deadline=None,
            derandomize=False,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            report_multiple_bugs=True,
            print_blob=False,
        )(given(check.workloads())(prop))
    )
    report = CheckReport(
        check.engine,
        label,
        dict(check.params),
        seed,
        examples,
        0,
        tuple(i.name for i in check.invariants if i.name not in check.skipped),
        dict(check.skipped),
    )
    order = [i.name for i in check.invariants]
    try:
        with _no_local_constants():
            test()
    except Flaky as err:
        # A shrunk workload failed once and passed when hypothesis ran it
        # again: the policy's behaviour is not a function of its input.
        found = [v for v in _violations_in(err) if v.workload is not None]
        if not found:
            raise
        v = min(found, key=lambda v: shown_on(v).n)
        report.failure = Failure(
            check.invariant("deterministic"),
            f"this workload violated {v.invariant} on one run ({v.message}) and passed on another",
            shown_on(v),
            first_seen or 1,
        )
    except BaseException as err:  # a Violation, or a group of them (several invariants failed)
        found = [v for v in _violations_in(err) if v.workload is not None]
        if not found:
            raise
        v = confirm(check, minimise(check, min(found, key=lambda v: (shown_on(v).n, order.index(v.invariant)))))
        report.failure = Failure(check.invariant(v.invariant), v.message, shown_on(v), first_seen or 1)
    report.workloads = generated
    return report


__all__ = [
    "MAX_JOBS",
    "REPLAYS",
    "CheckReport",
    "EngineCheck",
    "Failure",
    "Invariant",
    "Violation",
    "Workload",
    "crashed",
    "confirm",
    "first_difference",
    "fmt",
    "minimise",
    "run_check",
    "swallowed_reads",
    "violation",
]
