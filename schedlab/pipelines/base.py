"""Paper-reproduction pipelines: sweep specs in, figures and a report out.

A pipeline (`declare.Declared`, read from its TOML file) knows nothing about
Ray, Parquet or MLflow. It builds plain sweep spec dicts
(`specs(scale, overrides)`) and turns finished results dirs into figures and
report sections (`report(results_dirs, out_dir)`). `run.run_pipeline` does the rest with the
platform: every spec goes through
`schedlab.platform.sweep.run_sweep` (so resume, Ray, MLflow and searches come for free),
then the figures and ``report.md`` are written to the pipeline's output dir
and, with tracking on, attached to each sweep's MLflow parent run. Every
figure is a PDF (vector, for the paper) with a 300-dpi PNG beside it (for
report.md), drawn in the one style of `schedlab.plotting`.

A verdict is read from intervals, never from a point estimate, and is one of
three (`OUTCOMES`): **holds** (the whole 95 % interval of every compared
quantity satisfies the claim), **fails** (an interval lies wholly on the
wrong side) or **inconclusive** (an interval straddles the bound, or there
is no interval: one sample, identical replications, a dominated mean).
report.md also flags a verdict checked on fewer than `MIN_REPLICATIONS`
independent instances per point instead of stating it flatly.

Scales: ``quick`` (minutes on a laptop), ``paper`` (the paper's settings as far
as they are stated) and ``smoke`` (hidden; tiny, for the test suite).

This module holds only the report types: it imports nothing of the pipelines, so the
registry and the runner can import it without a cycle.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import UserError

SCALES = ("quick", "paper")
HIDDEN_SCALES = ("smoke",)

#: Fewest independent instances per point (replications, or trace windows
#: replayed as replications) for a verdict to be stated without a caveat.
#: The 95 % t intervals the checks lean on are unreliable below it: the
#: t quantile is 12.7 at n = 2, 4.3 at n = 3 and 2.8 at n = 5, and the sample
#: standard deviation itself has a relative standard error of about
#: 1 / sqrt(2 (n - 1)) -- 71 % at n = 2, 50 % at n = 3, 35 % at n = 5 -- so
#: below 5 even the width of an interval is a guess, and one unlucky
#: replication can flip a claim.
MIN_REPLICATIONS = 5
#: The parameter columns whose values are trace windows: a sweep replaying a
#: trace window by window has its instances there, not in ``replication``;
#: so has one replaying fixed sequences of a trace (``sequence_start``: e.g.
#: RLScheduler's test sequences, rlsched-tables).
WINDOW_COLUMNS = ("window", "sequence_start")


HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"
#: A verdict's three values (see the module docstring).
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE)


@dataclass(frozen=True)
class Straddle:
    """An interval ``[low, high]`` around ``value`` that straddles ``bound``:
    why a verdict is inconclusive, and how far it is from being decided."""

    value: float
    low: float
    high: float
    bound: float

    @property
    def distance(self) -> float:
        """How far the estimate is from the bound."""
        return abs(self.value - self.bound)

    @property
    def reach(self) -> float:
        """How far the interval reaches from the estimate towards the bound
        (its half-width when symmetric; an interval of a ratio or a share is not)."""
        return self.high - self.value if self.bound >= self.value else self.value - self.low

    def predicted(self, n: int) -> float:
        """The instances per point at which the interval would just leave the
        bound, were it to shrink as 1 / sqrt(n) and the estimate to stay
        put: ``n (reach / distance)^2``, an extrapolation (inf when the
        estimate sits on the bound or has no interval)."""
        if not (math.isfinite(self.reach) and self.distance > 0):
            return math.inf
        return n * (self.reach / self.distance) ** 2


@dataclass
class Check:
    """One qualitative claim of the paper, checked on the measured intervals:
    ``outcome`` is one of `OUTCOMES`; ``detail`` shows the intervals."""

    claim: str
    outcome: str
    detail: str
    #: independent instances per point behind the verdict (None: the figure's)
    n: int | None = None
    #: an inconclusive verdict's closest call: the interval that straddles its bound (None: none judged)
    straddle: Straddle | None = None
    #: the sweeps the claim reads, by name prefix (empty: every sweep of the pipeline)
    reads: tuple[str, ...] = ()
    #: the policies it reads of those sweeps (empty: every one): ``--decide`` grows only theirs
    policies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:  # a bool from a point estimate is not a verdict
            raise TypeError(f"a Check's outcome is one of {OUTCOMES}, not {self.outcome!r}")

    @property
    def holds(self) -> bool:
        return self.outcome == HOLDS

    def too_few(self, n: int | None = None) -> bool:
        """Whether fewer than `MIN_REPLICATIONS` instances per point stand
        behind the verdict (``n``: the figure's count, unless the check has its own)."""
        n = self.n if self.n is not None else n
        return n is not None and n < MIN_REPLICATIONS

    def verdict(self, n: int | None = None) -> str:
        """The report's verdict: '**holds**' / '**fails**' / '**inconclusive**',
        followed by the caveat '(n = 2: too few replications to rely on)' when `too_few`."""
        word = f"**{self.outcome}**"
        if self.too_few(n):
            return f"{word} (n = {self.n if self.n is not None else n}: too few replications to rely on)"
        return word


#: Said under every list of verdicts: how they were read.
VERDICT_RULE = (
    "A verdict is read from the 95 % intervals shown, never from a mean alone: *holds* when every interval "
    "lies on the claim's side of its bound, *fails* when one lies wholly on the other side, *inconclusive* "
    "otherwise (an interval straddles the bound, or there is no interval). Two policies are compared by "
    "their paired interval where the claim names a ratio of policies, else by their two intervals "
    "(which must not overlap: a conservative test)."
)


def tally(checks: list[Check]) -> str:
    """'Claims checked: 3 hold, 1 fails, 2 inconclusive (of 6).'"""
    count = {o: sum(c.outcome == o for c in checks) for o in OUTCOMES}
    return (
        f"Claims checked: {count[HOLDS]} hold, {count[FAILS]} fail, {count[INCONCLUSIVE]} inconclusive "
        f"(of {len(checks)})."
    )


@dataclass
class FigureReport:
    """One reproduced figure: the PNG (its PDF beside it), the plotted series
    and the comparison."""

    key: str
    title: str
    png: Path
    series: list[str]
    paper_says: str
    measured: str  # markdown (a table of means with 95 % CIs)
    checks: list[Check] = field(default_factory=list)
    #: fewest independent instances per point behind the figure and its
    #: checks (None: `run_pipeline` fills it in from the sweeps' rows)
    replications: int | None = None

    @property
    def pdf(self) -> Path:
        """The vector figure `schedlab.plotting.save` writes beside the PNG."""
        return self.png.with_suffix(".pdf")

    def markdown(self) -> str:
        lines = [
            f"## {self.title}",
            "",
            f"![{self.key}]({self.png.name})",
            "",
            f"Vector figure: [{self.pdf.name}]({self.pdf.name}).",
            "",
            "### Paper says",
            "",
            self.paper_says,
            "",
            "### Measured",
            "",
            self.measured,
            "",
            "### Holds?",
            "",
        ]
        for c in self.checks:
            lines.append(f"- {c.verdict(self.replications)} — {c.claim}: {c.detail}")
        if self.checks:
            lines += ["", VERDICT_RULE]
        if any(c.too_few(self.replications) for c in self.checks):
            lines += [
                "",
                f"Verdicts marked *too few replications* rest on fewer than {MIN_REPLICATIONS} "
                "independent instances per point; rerun at a larger scale before relying on them.",
            ]
        lines.append("")
        return "\n".join(lines)


@dataclass
class PipelineResult:
    name: str
    scale: str
    out_dir: Path
    results_dirs: dict[str, Path]
    sweeps: list[Any]
    figures: list[FigureReport]
    report_md: Path
    wall_seconds: float
    failures: int = 0


def deep_merge(base: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of base with overrides merged in (nested dicts merged, rest replaced)."""
    out = copy.deepcopy(base)
    for k, v in (overrides or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def check_scale(scale: str) -> None:
    if scale not in SCALES + HIDDEN_SCALES:
        raise UserError(f"unknown scale {scale!r}; choose one of: {', '.join(SCALES)}")
