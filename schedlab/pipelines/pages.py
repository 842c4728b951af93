"""Reproduction pages: a pipeline's finished run as a checked-in page.

`schedlab pipelines pages --results ROOT --to PAGES` turns each pipeline's
output dir (``ROOT/<name>``: report.md, its figures, the sweeps' results dirs
and ``runs.jsonl``, see `runlog`) into ``PAGES/<name>.md`` with its figures
beside it (``PAGES/<name>/``), and writes the index ``PAGES/README.md``: every
registered pipeline with its scale, cost and verdict counts, or "not run" for
one without output. The pages folder is always the caller's argument (the
command's default is the repository's docs/reproductions).

A page is data produced by the command it names: the report's own text (the
paper's setting and words, our numbers, each verdict with its interval),
headed by how it was made (exact command, commits, machine, invocations,
wall, driver CPU and the simulations' own wall seconds summed over the rows),
and followed by the explanation of every verdict that does not hold, read
from ``PAGES/notes/<name>.md`` -- hand-written, each reason shown
by a measured case with the command that measures it. A page with failing
verdicts and no note says so in bold: a failure is never left looking
explained.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import UserError
from schedlab.pipelines.runlog import NO_END, read_runs, unsettled

#: Beside the pages: the hand-written notes, ``<pages>/notes/<name>.md``.
NOTES_DIR = "notes"
INDEX = "README.md"
#: Beside each page's figures: its scale, cost and verdict counts, which the index reads.
SUMMARY = "page.json"
#: A verdict line of report.md's "Holds?" sections: ``- **<verdict>**[ (caveat)] — <claim>...``.
VERDICT_LINE = re.compile(r"^- \*\*([^*]+)\*\*", re.M)
#: A "Holds?" section of report.md: from its heading to the next heading.
HOLDS_SECTION = re.compile(r"^### Holds\?\n(.*?)(?=^#|\Z)", re.M | re.S)
#: The verdicts that count as holding; every other label (does not hold, fails, inconclusive) does not.
HOLDS = "holds"
#: The verdict of a claim whose interval straddles its bound: neither holds nor fails at the
#: replications run; its interval is on the page, and no explanation is asked of it.
INCONCLUSIVE = "inconclusive"
#: The section `decide` adds to the report of a run with ``--decide`` (the replications each claim took).
DECIDED = "## Replications per claim"
#: The budget the section `DECIDED` states (for a command not recorded in the run log).
BUDGET = re.compile(r"the budget of (\d+) replications per point")
#: Linked files of report.md (figures) copied beside a page: ``](file.png)`` or ``](file.pdf)``.
#: What a row's ``sim_seconds`` times, said on every page beside their sum.
ENGINE_TIME = (
    "the engines' own wall-clock time, without loading or compiling a kernel, building workloads or writing "
    "rows; on a core shared with other work it exceeds their CPU time"
)
LINK = re.compile(r"\]\(([^)/]+\.(?:png|pdf|svg|csv))\)")
#: report.md's line naming the sweeps it shows: ``Scale `paper`; sweeps: `name` (...), `name` (...)``.
SWEEPS_LINE = re.compile(r"^Scale `[^`]+`; sweeps: (.*)$", re.M)
SWEEP_NAME = re.compile(r"`([^`]+)` \(")
#: What a report shows when it is not a finished full run (the DFRS pipelines' coverage line, `dfrs_common`):
#: a seeded subset or a run in progress, with its cost paragraph; lifted to the top of the page.
SCOPE = re.compile(r"^\*\*(?:Seeded subset|Run in progress)\*\*.*?(?:\n\nSimulation cost:[^\n]*)?$", re.M | re.S)


@dataclass
class Page:
    """One pipeline's reproduction, as read from its output dir."""

    name: str
    out_dir: Path
    report: str
    runs: list[dict[str, Any]]
    verdicts: Counter[str]
    sim_seconds: float
    rows: int
    figures: list[str] = field(default_factory=list)
    #: Invocations logged in the same output dir that ran other sweeps (a subset of another fraction,
    #: e.g. the small one that measured the cost first): not this page's cost, but said on it.
    other_runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def scale(self) -> str:
        scales = sorted({str(r.get("scale", "?")) for r in self.runs})
        if not scales:  # a report from before run logs: its header names the scale
            m = re.search(r"^Scale `([^`]+)`", self.report, re.M)
            scales = [m.group(1)] if m else ["?"]
        subsets = sorted({str(f) for r in self.runs if (f := (r.get("overrides") or {}).get("subset"))})
        in_progress = "**Run in progress**" in (m.group(0) if (m := SCOPE.search(self.report)) else "")
        return (
            "/".join(scales) + "".join(f", subset {f}" for f in subsets) + (", run in progress" if in_progress else "")
        )

    @property
    def wall_seconds(self) -> float:
        return float(sum(r.get("wall_seconds", 0.0) for r in self.runs))

    @property
    def wall_is_lower_bound(self) -> bool:
        """Some invocation was killed outright: its wall counts to its last heartbeat (`runlog.settle_killed`)."""
        return any(r.get("wall_is_lower_bound") for r in self.runs)

    @property
    def failing(self) -> int:
        """Verdicts that fail ("fails", or a report's older "does not hold"): each needs a measured reason."""
        return sum(n for v, n in self.verdicts.items() if v not in (HOLDS, INCONCLUSIVE))

    @property
    def inconclusive(self) -> int:
        return self.verdicts.get(INCONCLUSIVE, 0)


def verdict_counts(report: str) -> Counter[str]:
    """How many verdicts of each label the report's "Holds?" sections give."""
    return Counter(
        m.group(1).strip() for sec in HOLDS_SECTION.finditer(report) for m in VERDICT_LINE.finditer(sec.group(1))
    )


def read_page(name: str, out_dir: Path) -> Page:
    """A pipeline's output dir read back; UserError when it holds no report."""
    import polars as pl

    from schedlab import load

    out_dir = Path(out_dir)
    report_path = out_dir / "report.md"
    if not report_path.exists():
        raise UserError(f"{report_path}: no report.md (run `schedlab pipelines run {name}` first)")
    report = report_path.read_text()
    shown = report_sweeps(report)
    sim, rows = 0.0, 0
    from schedlab.platform.storage.seam import is_results_dir

    for sweep_dir in sorted(d for d in out_dir.glob("*") if is_results_dir(d)):
        if shown and sweep_dir.name not in shown:
            continue  # another sweep in the same dir (a subset of another fraction): not this report's
        frame = load(sweep_dir).collect()
        rows += frame.height
        if "sim_seconds" in frame.columns and frame.height:
            sim += float(frame.select(pl.col("sim_seconds").cast(pl.Float64).fill_null(0.0).sum()).item())
    runs = read_runs(out_dir)
    killed = unsettled(out_dir)  # a run killed outright that no invocation has settled yet: its cost counts too
    runs += [killed] if killed is not None else []
    mine = [r for r in runs if ran_sweeps(r, shown)]
    return Page(
        name=name,
        out_dir=out_dir,
        report=report,
        runs=mine,
        verdicts=verdict_counts(report),
        sim_seconds=sim,
        rows=rows,
        figures=sorted({m.group(1) for m in LINK.finditer(report)}),
        other_runs=[r for r in runs if r not in mine],
    )


def report_sweeps(report: str) -> list[str]:
    """The sweeps a report shows, from its ``Scale ...; sweeps:`` line ([] when it has none)."""
    m = SWEEPS_LINE.search(report)
    return SWEEP_NAME.findall(m.group(1)) if m else []


def ran_sweeps(run: dict[str, Any], sweeps: list[str]) -> bool:
    """Whether a logged invocation ran the report's ``sweeps``: a DFRS subset
    of fraction F runs sweeps named ``...-subF``, a full run sweeps without;
    an invocation of another fraction in the same dir ran other sweeps."""
    if not sweeps:
        return True
    f = (run.get("overrides") or {}).get("subset")
    suffix = f"-sub{float(f):g}" if f not in (None, 1, 1.0) else None
    subsets = {m.group(1) for s in sweeps if (m := re.search(r"-sub([0-9.e-]+)$", s))}
    return (suffix is None and not subsets) or (suffix is not None and all(s.endswith(suffix) for s in sweeps))


def _duration(seconds: float) -> str:
    """Seconds said to two significant digits below 10 s (a compiled engine's
    simulations of a whole figure may take 0.07 s: never shown as "0 s"), whole
    seconds, minutes or hours above."""
    if seconds == 0:
        return "0 s"
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


#: The options of `pipelines run` naming a folder: one given as an absolute path is the machine's.
FOLDER_OPTIONS = ("--out", "--data", "--agent")


def rerunnable(command: str) -> str:
    """``command`` as a reader can run it from the repository root: a folder
    option (`FOLDER_OPTIONS`) naming an absolute path (a folder on the machine
    that ran it) is dropped, so the pipeline writes to its default
    ``results/pipelines/NAME`` and reads the default traces and agent; a
    relative one is kept."""
    words = command.split()
    kept: list[str] = []
    skip = False
    for i, w in enumerate(words):
        if skip:
            skip = False
            continue
        if w in FOLDER_OPTIONS and i + 1 < len(words) and Path(words[i + 1]).expanduser().is_absolute():
            skip = True
            continue
        option, eq, value = w.partition("=")
        if eq and option in FOLDER_OPTIONS and Path(value).expanduser().is_absolute():
            continue
        kept.append(w)
    return " ".join(kept)


def _command(page: Page) -> str:
    for r in reversed(page.runs):  # the last: a later invocation may have raised --decide's --budget
        if r.get("command"):
            return rerunnable(str(r["command"]))
    subset = next((r["overrides"].get("subset") for r in page.runs if r.get("overrides", {}).get("subset")), None)
    decided = BUDGET.search(page.report)
    return (
        f"schedlab pipelines run {page.name} --scale {page.scale}"
        + (f" --subset {subset}" if subset else "")
        + (f" --decide --budget {decided.group(1)}" if decided else "")
    )


def _how_made(page: Page) -> list[str]:
    if not page.runs:
        return [
            "| how it was made | |",
            "|---|---|",
            f"| command | `{_command(page)}` |",
            "| commit, machine, wall | not recorded: the run predates run logs (`runs.jsonl`) |",
            f"| simulation | {_duration(page.sim_seconds)} (`sim_seconds` summed over the {page.rows:,} rows: "
            f"{ENGINE_TIME}) |",
            "",
        ]
    commits = list(dict.fromkeys(str(r.get("commit")) for r in page.runs))
    m = page.runs[-1].get("machine", {})
    mem = m.get("memory_bytes")
    mem_s = f", {mem / 2**30:.0f} GiB" if mem else ""
    cpu = sum(r.get("driver_cpu_seconds", 0.0) for r in page.runs)
    rows_new = sum(r.get("rows_new", 0) for r in page.runs)
    failures = next((r["failures"] for r in reversed(page.runs) if "failures" in r), 0)  # a killed one's: not known
    at_least = "at least " if page.wall_is_lower_bound else ""
    command = _command(page)
    started = (
        "`--fresh`: its sweeps' earlier rows were discarded first"
        if "--fresh" in command.split()
        else "resumes: rows on disk are kept"
    )
    first, last = page.runs[0].get("started"), page.runs[-1].get("started")
    return (
        [
            "| how it was made | |",
            "|---|---|",
            f"| command | `{command}` (from the repository root; {started}) |",
            f"| commit | {', '.join(f'`{c}`' for c in commits)} |",
            f"| machine | {m.get('cores', '?')} cores{mem_s}, {m.get('processor') or 'processor not known'}; "
            f"{m.get('system', '')}, Python {m.get('python', '?')} |",
            f"| invocations | {len(page.runs)}{_interruptions(page.runs)}, first {first}, last {last} |",
            f"| wall | {at_least}{_duration(page.wall_seconds)} summed over the invocations |",
            f"| simulation | {_duration(page.sim_seconds)} (`sim_seconds` summed over the {page.rows:,} rows: "
            f"{ENGINE_TIME}) |",
            f"| driver CPU | {at_least}{_duration(cpu)} summed over the invocations (the `schedlab` process and the "
            "children it waited for; Ray's workers are not among them) |",
            f"| rows | {page.rows:,} ({rows_new:,} computed by the recorded invocations); failed simulations in the "
            f"last: {failures} |",
            "",
        ]
        + (
            [
                f"{page.rows - rows_new:,} of the rows were computed before the first recorded invocation: their wall "
                "time is not in the sum above; the simulation time counts every row.",
                "",
            ]
            if page.rows > rows_new
            else []
        )
        + _other_runs(page)
    )


def _interruptions(runs: list[dict[str, Any]]) -> str:
    """How many invocations were cut short, and by what (`runlog`): "" when none was;
    else e.g. " (2 ended by SIGTERM, 1 with no end recorded: its wall is a lower bound)"."""
    by = Counter(str(r.get("ended_by") or "") for r in runs if r.get("interrupted"))
    if not by:
        return ""
    said = []
    for end, n in sorted(by.items(), key=lambda kv: (kv[0] == NO_END, kv[0])):
        if end == NO_END:
            said.append(
                f"{n} with no end recorded: {'its wall is a lower bound' if n == 1 else 'their walls are lower bounds'}"
            )
        elif end:
            said.append(f"{n} ended by {end}")
        else:  # a record from before ended_by: Ctrl-C or an error
            said.append(f"{n} interrupted")
    return f" ({', '.join(said)})"


def _other_runs(page: Page) -> list[str]:
    """A line on the invocations of the same output dir that ran other sweeps ([] when none)."""
    if not page.other_runs:
        return []
    said = []
    for r in page.other_runs:
        f = (r.get("overrides") or {}).get("subset")
        at_least = "at least " if r.get("wall_is_lower_bound") else ""
        said.append(
            f"{f'`--subset {f}`' if f else 'the full sets'}, {at_least}{_duration(r.get('wall_seconds', 0.0))} wall"
        )
    return [
        f"{len(page.other_runs)} other invocation(s) in the same output dir ran other sweeps ({'; '.join(said)}): "
        "not counted above.",
        "",
    ]


def render(page: Page, notes: str | None, notes_at: str | Path | None = None) -> str:
    """The page's markdown: how it was made, the report (figure links into
    ``<name>/``), then the explanation of the verdicts that do not hold
    (``notes_at``: where its notes belong, shown when there are none;
    default ``notes/<name>.md`` beside the page)."""
    body = LINK.sub(lambda m: f"]({page.name}/{m.group(1)})", page.report)
    lines = body.splitlines()
    title, rest = (lines[0], lines[1:]) if lines and lines[0].startswith("# ") else (f"# {page.name}", lines)
    counts = ", ".join(f"{n} {v}" for v, n in sorted(page.verdicts.items()))
    out = [title, "", f"Verdicts: {counts or 'none'}.", ""]
    scope = SCOPE.search(page.report)
    if scope:  # not a finished full run: said before anything else
        out += [scope.group(0), ""]
    out += [*_how_made(page), *rest, ""]
    if page.inconclusive and DECIDED in page.report:
        out += [
            f"{page.inconclusive} verdict(s) are still inconclusive at the budget of replications of `--decide`: "
            "the section *Replications per claim* gives for each how close its interval came to the bound and "
            "the replications the trend predicts (an extrapolation).",
            "",
        ]
    elif page.inconclusive:
        out += [
            f"{page.inconclusive} verdict(s) are inconclusive: their interval straddles the claim's bound at the "
            "replications run (each is shown with its verdict above), so the run neither confirms nor refutes "
            "them; more replications or instances would decide them.",
            "",
        ]
    if notes:  # measured reasons: required of every failing verdict, kept for any other the notes discuss
        out += ["## Why verdicts do not hold" if page.failing else "## Notes on the verdicts", "", notes.strip(), ""]
    elif page.failing:
        out += [
            "## Why verdicts do not hold",
            "",
            f"**Not explained yet:** {page.failing} verdict(s) do not hold and no measured explanation is "
            f"recorded (`{notes_at or Path(NOTES_DIR) / (page.name + '.md')}`).",
            "",
        ]
    return "\n".join(out)


def write_page(page: Page, pages_dir: Path) -> Path:
    """Write ``pages_dir/<name>.md`` and copy its linked figures to ``pages_dir/<name>/``."""
    pages_dir = Path(pages_dir)
    fig_dir = pages_dir / page.name
    fig_dir.mkdir(parents=True, exist_ok=True)
    for f in page.figures:
        src = page.out_dir / f
        if src.exists():
            shutil.copyfile(src, fig_dir / f)
    note_path = pages_dir / NOTES_DIR / f"{page.name}.md"
    notes = note_path.read_text() if note_path.exists() else None
    path = pages_dir / f"{page.name}.md"
    path.write_text(render(page, notes, note_path))
    summary = {
        "scale": page.scale,
        "wall_seconds": page.wall_seconds,
        "sim_seconds": round(page.sim_seconds, 3),
        "rows": page.rows,
        "rows_logged": sum(int(r.get("rows_new", 0)) for r in page.runs),
        "verdicts": dict(sorted(page.verdicts.items())),
        **({"wall_is_lower_bound": True} if page.wall_is_lower_bound else {}),
    }
    (fig_dir / SUMMARY).write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return path


def write_index(pages_dir: Path) -> Path:
    """``pages_dir/README.md``: every registered pipeline, its scale, cost and
    verdicts, from the summaries of the pages on disk (``<name>/page.json``)."""
    from schedlab.pipelines.registry import PIPELINES

    rows = [
        "# Reproductions",
        "",
        "Every pipeline of `schedlab pipelines list`, run at the scale shown, with our numbers beside the "
        "paper's. Each page names the command that made it, the commit and the machine; verdicts are read "
        "from intervals; a verdict that does not hold is explained on its page by a measured case. Pages are "
        "written by `schedlab pipelines pages --results DIR` from the pipelines' output dirs (which stay out "
        "of git). A pipeline run with `--decide` gave its inconclusive claims more replications, up to a budget: "
        "its page says per claim the replications it took, and how close one still inconclusive came.",
        "",
        "| pipeline | paper, figure | scale | wall | simulation (engine wall) | rows | verdicts |",
        "|---|---|---|---|---|---|---|",
    ]
    totals = Counter[str]()
    for name, pipe in PIPELINES.items():
        meta = Path(pages_dir) / name / SUMMARY
        if not meta.exists():
            rows.append(f"| {name} | {pipe.paper}, {pipe.figure} | not run | | | | |")
            continue
        page = json.loads(meta.read_text())
        totals.update(page["verdicts"])
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(page["verdicts"].items()))
        logged = page.get("rows_logged", page["rows"])
        at_least = "at least " if page.get("wall_is_lower_bound") else ""
        wall = (
            at_least + _duration(page["wall_seconds"])
            if logged >= page["rows"]
            else "not recorded (rows from before run logs)"
        )
        rows.append(
            f"| [{name}]({name}.md) | {pipe.paper}, {pipe.figure} | {page['scale']} "
            f"| {wall} | {_duration(page['sim_seconds'])} | {page['rows']:,} | {verdicts} |"
        )
    rows += ["", "All verdicts: " + (", ".join(f"{n} {v}" for v, n in sorted(totals.items())) or "none") + ".", ""]
    path = Path(pages_dir) / INDEX
    path.write_text("\n".join(rows))
    return path


def write_pages(results_root: Path, names: list[str] | None, pages_dir: Path) -> list[Path]:
    """Pages for ``names`` (default: every pipeline with a report under
    ``results_root``), and the index over every page in ``pages_dir``."""
    from schedlab.pipelines.registry import PIPELINES

    results_root = Path(results_root)
    if names:
        unknown = [n for n in names if n not in PIPELINES]
        if unknown:
            raise UserError(f"unknown pipeline(s): {', '.join(unknown)}; see `schedlab pipelines list`")
    chosen = names or [n for n in PIPELINES if (results_root / n / "report.md").exists()]
    if not chosen:
        raise UserError(f"{results_root}: no pipeline output dir with a report.md")
    pages_dir = Path(pages_dir)
    pages_dir.mkdir(parents=True, exist_ok=True)
    written = [write_page(read_page(n, results_root / n), pages_dir) for n in chosen]
    written.append(write_index(pages_dir))  # every page on disk, not only those written now
    return written
